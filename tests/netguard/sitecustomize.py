"""Blocks network access in every Python process that has this folder on PYTHONPATH and
TRUSTLIB_NO_NETWORK=1 set (the notebook tests set both for the papermill kernels they start).
Loopback and Unix sockets stay allowed: Jupyter kernels talk to papermill over 127.0.0.1."""
import os
if os.environ.get("TRUSTLIB_NO_NETWORK") == "1":
    import socket
    _connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
    _LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}

    def _log(what):   # TRUSTLIB_NETLOG=FILE: every blocked attempt is also appended there (for tests of child processes)
        path = os.environ.get("TRUSTLIB_NETLOG")
        if path:
            try:
                with open(path, "a") as f: f.write(f"{os.getpid()} {what!r}\n")
            except OSError: pass

    def _check(sock, address):
        if sock.family == getattr(socket, "AF_UNIX", None): return
        host = address[0] if isinstance(address, tuple) else address
        if host not in _LOCAL:
            _log(address)
            raise ConnectionRefusedError(f"network access to {address!r} is blocked in trustlib tests (TRUSTLIB_NO_NETWORK=1)")

    def connect(self, address):
        _check(self, address); return _connect(self, address)

    def connect_ex(self, address):
        _check(self, address); return _connect_ex(self, address)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
    _gai = socket.getaddrinfo
    def getaddrinfo(host, *a, **k):
        if host not in _LOCAL and host is not None:
            _log(("dns", host))
            raise socket.gaierror(f"DNS lookup of {host!r} is blocked in trustlib tests (TRUSTLIB_NO_NETWORK=1)")
        return _gai(host, *a, **k)
    socket.getaddrinfo = getaddrinfo
