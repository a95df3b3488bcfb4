# %% [markdown]
# # package — the version, and parameter documentation in help()
#
# > The package's `__init__`: its version, and an import hook that adds each signature's docments to the docstrings, so help() lists the parameters.

# %% [markdown]
# Every parameter in this library is documented once, where it is declared, as a *docment*: a comment after the
# parameter (`x:int=3, # what x is`). nbdev's `show_doc` turns them into the parameter tables of this website,
# but `help()`, IPython's `?` and Jupyter's inspector (Shift-Tab) read only `__doc__`. Writing the same text into
# each docstring as well would say everything twice, and the copies would drift apart.
#
# So when `trustlib` is imported it installs a small import hook. After a `trustlib.*` module has run, the hook
# reads the module's source once. For every function, class and method that the module defines, it appends a
# numpy-style `Parameters` section to `__doc__`, and a `Returns` section when the return annotation carries a
# docment. Each entry gives the name, the type as written, the default and the docment:
#
# ```
# tolerance : float, default 0.05
#     the largest allowed gap, >= 0
# ```
#
# A class is documented through its `__init__` (a dataclass through its fields), as numpydoc does. Which comment
# belongs to which parameter follows `fastcore.docments`, the rules behind the website's tables, and the tests
# check that the two agree. Parameters are keyed by line: a comment documents the last parameter on its line,
# and comment lines just above a parameter document it too.
#
# The hook leaves three things alone: a docstring that already has a `Parameters` section, a class whose
# `__doc__` is computed (each `BaseConfig` lists its own `param` help texts), and objects it cannot match to
# their source line.
#
# The exported modules themselves stay exactly what `nbdev_export` writes. Only the live objects are
# documented, which is why editors that read the source without running it (static analysis) show the signature
# and its comments, but not these sections. The work is done object by object, from the code's own line
# numbers. A header without a `#` up to its first line ending in `:` is skipped at once; otherwise only the
# header is tokenized, up to the `:` that ends the signature. A header with comments is then parsed on its own, never the whole
# module.

# %%
#| default_exp __init__

# %%
#| export
import sys
import importlib.machinery

# %%
#| hide
from fastcore.test import test_eq, test_fail

# %% [markdown]
# ## One object's section
#
# `parameter_section(obj)` builds the section of one function or class from its source. The line comes from the
# code object, and for a dataclass from a scan for its `class` line. `_header` tokenizes forward from that line,
# stopping at the `:` that closes the signature, and collects the comments on the way. Only then is that header
# parsed on its own, so that the parameters, annotations and defaults can be read as written.

# %%
#| export
_SECTION = 'Parameters\n----------'

def _header(lines:list[str], start:int) -> tuple[int|None, dict]:
    "(last line of the `def`/`class` header that begins on line `start`, {line: comment text} up to it); lines are 1-based."
    import tokenize
    it = iter(lines[start - 1:])
    comments, depth, keyword, end = {}, 0, False, None
    try:
        for t in tokenize.generate_tokens(lambda: next(it, '')):
            ln = t.start[0] + start - 1
            if end is not None and (ln > end or t.type == tokenize.NEWLINE): break
            if t.type == tokenize.COMMENT: comments[ln] = t.string.strip()[1:]
            elif t.type == tokenize.NAME and depth == 0 and t.string in ('def', 'class'): keyword = True
            elif t.type == tokenize.OP:
                if t.string in '([{': depth += 1
                elif t.string in ')]}': depth -= 1
                elif t.string == ':' and depth == 0 and keyword: end = ln
    except (tokenize.TokenError, IndentationError, SyntaxError): pass
    return end, comments

def _comments(lines:list[str], start:int, end:int) -> dict[int, str]:
    "{line: comment text} of lines `start`..`end`."
    import io, tokenize
    res = {}
    try:
        for t in tokenize.generate_tokens(io.StringIO(''.join(lines[start - 1:end])).readline):
            if t.type == tokenize.COMMENT: res[t.start[0] + start - 1] = t.string.strip()[1:]
    except (tokenize.TokenError, IndentationError, SyntaxError): pass
    return res

def _parse(lines:list[str], start:int, end:int):
    "(first statement of lines `start`..`end` parsed on their own, offset from its line numbers to the file's); None if they do not parse."
    import ast
    text = ''.join(lines[start - 1:end])
    if not text.endswith('\n'): text += '\n'
    ind = text[:len(text) - len(text.lstrip(' \t'))]
    wrap = 'if 1:\n' if ind else ''                  # an indented header parses inside a block
    for extra in ('', ind + '    pass\n'):            # a header alone needs a body; a one-line def has one
        try: tree = ast.parse(wrap + text + extra)
        except SyntaxError: continue
        return (tree.body[0].body[0] if wrap else tree.body[0]), start - 1 - (1 if wrap else 0)
    return None

def _docment(line:int, comments:dict, param_lines:set, first:int) -> str|None:
    "As `fastcore.docments`: the comment on `line`, else the comment lines just above it (not above `first`)."
    from textwrap import dedent
    if line in comments: return comments[line].strip()
    res, line = [], line - 1
    while line >= first and line in comments and line not in param_lines:
        res.append(comments[line]); line -= 1
    return dedent('\n'.join(reversed(res))).strip() if res else None

def _seg(lines:list[str], node, off:int) -> str|None:
    "The source of `node` (parsed with line offset `off`) on one line; None for no node."
    if node is None: return None
    L = [l.encode() for l in lines[node.lineno + off - 1:node.end_lineno + off]]   # ast columns count UTF-8 bytes
    s = L[0][node.col_offset:node.end_col_offset] if len(L) == 1 else \
        b''.join([L[0][node.col_offset:]] + L[1:-1] + [L[-1][:node.end_col_offset]])
    return ' '.join(s.decode().split())

def _anno(lines, node, off) -> str|None:
    "An annotation as written (the text of a string annotation)."
    import ast
    if isinstance(node, ast.Constant) and isinstance(node.value, str): return ' '.join(node.value.split())
    return _seg(lines, node, off)

def _section(params, ret=(None, None)) -> str|None:
    "The numpy-style text of [(name, type, default, docment)] and (return type, docment); None when nothing has a docment."
    if not any(p[3] for p in params) and not ret[1]: return None
    out = []
    if params:
        out += _SECTION.split('\n')
        for nm, anno, default, doc in params:
            desc = ', '.join(filter(None, [anno, f'default {default}' if default is not None else None]))
            out.append(f'{nm} : {desc}' if desc else nm)
            if doc: out += ['    ' + l if l.strip() else '' for l in doc.splitlines()]
    if ret[1]:
        if out: out.append('')
        out += ['Returns', '-------', ret[0] or 'object'] + ['    ' + l if l.strip() else '' for l in ret[1].splitlines()]
    return '\n'.join(out)

def _may_have_comments(lines:list[str], start:int) -> bool:
    "False when the header that begins on line `start` surely has no comment: no `#` up to the first line ending in `:`."
    for l in lines[start - 1:]:
        if '#' in l: return True
        if l.rstrip().endswith(':'): return False
    return True

def _func_section(lines:list[str], start:int, skip_first:bool) -> str|None:
    "The section of the function whose `def` (or first decorator) is on line `start`."
    if not _may_have_comments(lines, start): return None
    end, comments = _header(lines, start)
    if end is None or not comments: return None        # no comment in the header: no docment
    parsed = _parse(lines, start, end)
    if parsed is None: return None
    fn, off = parsed
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    items = [(p.arg, p, d) for p, d in zip(pos, defaults)]
    if a.vararg: items.append(('*' + a.vararg.arg, a.vararg, None))
    items += [(p.arg, p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    # keyed by line, as fastcore does: a comment documents the last parameter on its line, or the return
    # annotation when that shares the line; `**kwargs` only when it has a line of its own
    owner = {p.lineno + off: nm for nm, p, _ in items}
    if a.kwarg:
        items.append(('**' + a.kwarg.arg, a.kwarg, None))
        owner.setdefault(a.kwarg.lineno + off, '**' + a.kwarg.arg)
    if fn.returns is not None: owner[fn.returns.lineno + off] = 'return'
    docs = {nm: _docment(ln, comments, set(owner), start) for ln, nm in owner.items()}
    if skip_first and pos: items = items[1:]
    params = [(nm, _anno(lines, p.annotation, off), _seg(lines, d, off), docs.get(nm)) for nm, p, d in items]
    return _section(params, (_anno(lines, fn.returns, off), docs.get('return')) if fn.returns is not None else (None, None))

def _class_start(lines:list[str], cls) -> int|None:
    "The first line (its first decorator) of `class <name>` for `cls`, at the indentation its nesting implies."
    import re
    depth, pat = cls.__qualname__.count('.'), re.compile(r'[ \t]*class[ \t]+' + re.escape(cls.__name__) + r'\b')
    for i, l in enumerate(lines):
        if pat.match(l) and (len(l) - len(l.lstrip())) // 4 == depth:
            while i > 0 and lines[i - 1].lstrip().startswith('@'): i -= 1
            return i + 1
    return None

def _field_default(lines, value, off):
    "The default of a dataclass field: `x`, `field(default=x)` or `field(default_factory=f)` (shown as `f()`)."
    import ast
    if isinstance(value, ast.Call) and (getattr(value.func, 'id', None) or getattr(value.func, 'attr', None)) == 'field':
        kw = {k.arg: k.value for k in value.keywords}
        if 'default' in kw: return _seg(lines, kw['default'], off)
        return _seg(lines, kw['default_factory'], off) + '()' if 'default_factory' in kw else None
    return _seg(lines, value, off)

def _dataclass_section(lines:list[str], cls) -> tuple[str|None, bool]:
    "(section, has a docstring in its source) of dataclass `cls`, from its `__init__` fields as `fastcore.docments` reads them."
    import ast, dataclasses
    start = _class_start(lines, cls)
    end = _header(lines, start)[0] if start else None
    if end is None: return None, False
    ind, last = len(lines[end - 1]) - len(lines[end - 1].lstrip()), end
    for i in range(end, len(lines)):                    # the field block ends at the first def, decorator or class
        l = lines[i]
        if not l.strip(): continue
        k = len(l) - len(l.lstrip())
        if k <= ind or (k == ind + 4 and l.lstrip().startswith(('def ', 'async def ', '@', 'class '))): break
        last = i + 1
    parsed = _parse(lines, start, last) if any('#' in l for l in lines[start - 1:last]) else None
    if parsed is None: return None, False
    node, off = parsed
    b = node.body[0] if node.body else None
    has_doc = isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)
    names = {f.name for f in dataclasses.fields(cls) if f.init}          # no ClassVar, InitVar or init=False
    fields = [n for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id in names]
    owner = {n.lineno + off: n.target.id for n in fields}
    comments = _comments(lines, start, last)
    docs = {nm: _docment(ln, comments, set(owner), start) for ln, nm in owner.items()}
    params = [(n.target.id, _anno(lines, n.annotation, off), _field_default(lines, n.value, off), docs.get(n.target.id)) for n in fields]
    return _section(params), has_doc

def _code(f):
    "The code object of the function that `f` wraps (through `__wrapped__`: a decorated def's own lines), or None."
    for _ in range(100):
        if not hasattr(f, '__wrapped__'): break
        f = f.__wrapped__
    return getattr(f, '__code__', None)

def parameter_section(obj, # a function, or a class (documented through its `__init__`, a dataclass through its fields)
                      method:bool|None=None, # drop the first parameter (None: when `obj` is defined in a class)
                      ) -> tuple[str|None, bool]: # (the section or None, whether `obj` has a docstring of its own)
    "The numpy-style Parameters/Returns section built from the docments of `obj`, read from its source."
    import linecache
    if isinstance(obj, type):
        if '__dataclass_params__' in vars(obj):
            lines = linecache.getlines(getattr(sys.modules.get(obj.__module__), '__file__', None) or '')
            return _dataclass_section(lines, obj) if lines else (None, False)
        code = _code(vars(obj)['__init__']) if '__init__' in vars(obj) else None
        has_doc = vars(obj).get('__doc__') is not None
        return (_func_section(linecache.getlines(code.co_filename), code.co_firstlineno, True) if code else None), has_doc
    code = _code(obj)
    if code is None: return None, False
    if method is None: method = '.' in obj.__qualname__ and '<locals>' not in obj.__qualname__
    lines = linecache.getlines(code.co_filename)
    return (_func_section(lines, code.co_firstlineno, method) if lines else None), obj.__doc__ is not None


# %% [markdown]
# The example mixes a function with a comment line shared by two parameters, `*args` and `**kw`, a class
# documented through its `__init__`, a dataclass (default factory, a `ClassVar` left out, a comment above a
# field, a method), a static method, a method without docments, a decorated function and one without comments.
# They live in a module file, because the section is read from the source.

# %%
import importlib.util, inspect, tempfile, pathlib
from textwrap import dedent


# %%
def _load(src, name):
    p = pathlib.Path(tempfile.mkdtemp()) / f'{name}.py'; p.write_text(src)
    spec = importlib.util.spec_from_file_location(name, p)
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m)
    return m

_src = dedent('''
    from dataclasses import dataclass, field
    from typing import ClassVar
    import functools
    def f(a:int, # the a
          *args, b="x", # the b
          **kw) -> float: # the result
        "Summary."
        return a
    class C:
        def __init__(self, x=1, # the \\\\x
                     ): pass
        def m(self): "No docments."
        @staticmethod
        def s(y, # the y
             ): return y
    @dataclass
    class D:
        "A record."
        u: int  # the u
        # the v, on the line above it
        v: list = field(default_factory=list)
        K: ClassVar[int] = 3
        def total(self, w:int=0, # added to u
                  ) -> int: return self.u + w
    @functools.lru_cache
    def cached(n:int, # how many
               ): return n
    import contextlib
    @contextlib.contextmanager
    def ctx(k, # the k
            ): yield k
    g = f
    def h(a, # the a
          ):
        pass
    h.__doc__ = "H.\\n\\n    Parameters\\n    ----------\\n    a : int\\n        by hand\\n    "
    def plain(x, y): return x
''')
_m = _load(_src, '_doc_demo')
test_eq(parameter_section(_m.f), ('Parameters\n----------\na : int\n    the a\n*args\nb : default "x"\n    the b\n**kw\n\n'
                                  'Returns\n-------\nfloat\n    the result', True))
test_eq(parameter_section(_m.C), ('Parameters\n----------\nx : default 1\n    the \\\\x', False))
test_eq(parameter_section(_m.C.s, method=False)[0], 'Parameters\n----------\ny\n    the y')   # a static method keeps its first parameter
test_eq(parameter_section(_m.D), ('Parameters\n----------\nu : int\n    the u\nv : list, default list()\n    the v, on the line above it', True))
test_eq(parameter_section(_m.D.total)[0], 'Parameters\n----------\nw : int, default 0\n    added to u')   # no Returns: its line has no comment
test_eq(parameter_section(_m.cached)[0], 'Parameters\n----------\nn : int\n    how many')    # through __wrapped__
test_eq(parameter_section(_m.ctx)[0], 'Parameters\n----------\nk\n    the k')                 # a wrapper with code of its own
test_eq(parameter_section(_m.plain), (None, False))          # no comment, no docstring
print(parameter_section(_m.f)[0])


# %% [markdown]
# ## Documenting a module
#
# `document_module(module)` walks the functions and classes that `module` defines, recursing into classes. An
# object counts as defined there when its `__module__` and `__qualname__` say so, so names imported from
# elsewhere and aliases are skipped, and each object is visited once. Every section found is appended to the
# object's `__doc__`. Applying it twice changes nothing, because a section already there counts as written.

# %%
#| export
def _members(module):
    "(object, is a method, is a static method) for each function and class `module` defines, recursing into classes; each once."
    seen = set()
    def walk(ns:dict, prefix:str):
        for name, o in list(ns.items()):
            f = o.__func__ if isinstance(o, (staticmethod, classmethod)) else o
            if id(f) in seen or getattr(f, '__module__', None) != module.__name__ or getattr(f, '__qualname__', None) != prefix + name: continue
            seen.add(id(f))
            if isinstance(f, type):
                yield f, False, False
                yield from walk(dict(vars(f)), f.__qualname__ + '.')
            elif callable(f) and not (prefix and name == '__init__'):    # an __init__ is documented on its class
                yield f, bool(prefix), isinstance(o, staticmethod)
    yield from walk(dict(vars(module)), '')

def document_module(module, # a module loaded from a `.py` file
                    ) -> int: # how many objects got a section
    "Append the docments' Parameters/Returns section to the `__doc__` of each function, class and method `module` defines."
    import inspect
    n = 0
    for o, is_method, static in _members(module):
        doc = vars(o).get('__doc__') if isinstance(o, type) else getattr(o, '__doc__', None)
        if doc is not None and not isinstance(doc, str): continue      # computed (a BaseConfig lists its params)
        if doc and _SECTION in inspect.cleandoc(doc): continue        # written by hand, or already added
        sec, has_doc = parameter_section(o, method=is_method and not static)
        if not sec: continue
        try: o.__doc__ = inspect.cleandoc(doc) + '\n\n' + sec if (doc and has_doc) else sec
        except (AttributeError, TypeError): continue                   # an object whose __doc__ is read-only
        n += 1
    return n


# %%
_sec_f = parameter_section(_m.f)[0]
test_eq(_m.f.__doc__, 'Summary.')                    # not documented yet: no hook for this module
test_eq(document_module(_m), 7)                       # f, C, C.s, D, D.total, cached, ctx; h already has a section
test_eq(inspect.getdoc(_m.f), 'Summary.\n\n' + _sec_f)
test_eq(inspect.getdoc(_m.C), 'Parameters\n----------\nx : default 1\n    the \\\\x')   # no docstring before: the section becomes one
test_eq(_m.C.m.__doc__, 'No docments.')
test_eq(inspect.getdoc(_m.C.s), 'Parameters\n----------\ny\n    the y')
test_eq(inspect.getdoc(_m.D), 'A record.\n\nParameters\n----------\nu : int\n    the u\nv : list, default list()\n    the v, on the line above it')
test_eq(inspect.getdoc(_m.h), 'H.\n\nParameters\n----------\na : int\n    by hand')   # a hand-written section is left alone
test_eq(document_module(_m), 0)                       # idempotent

# ## The import hook
#
# `_Finder` sits first on `sys.meta_path`, but it only answers for `trustlib.*` names. It asks Python's own path
# finder for the spec and swaps in a source loader that runs `document_module` after executing the module. A
# failure there never breaks an import: the module is then simply left as `nbdev_export` wrote it, and the tests
# fail instead. Modules loaded without source (a bytecode-only install) are not documented.

# %%
#| export
class _DocumentingLoader(importlib.machinery.SourceFileLoader):
    "Python's source loader, then `document_module` on the executed module."
    def exec_module(self, module):
        super().exec_module(module)
        try: document_module(module)
        except Exception: pass      # documentation must never break an import (the tests check every module)

class _Finder:
    "A `sys.meta_path` finder: `trustlib.*` modules found as the path finder does, the source ones loaded by `_DocumentingLoader`."
    def find_spec(self, name, path=None, target=None):
        if not name.startswith(__name__ + '.'): return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _DocumentingLoader(spec.loader.name, spec.loader.path)
        return spec

def _install():
    "Put `_Finder` first on `sys.meta_path` (once), and document this module (not from the notebook that defines it)."
    if __name__ == '__main__': return
    if not any(type(f).__name__ == '_Finder' and type(f).__module__ == __name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    document_module(sys.modules[__name__])   # imports `inspect`, which every trustlib module needs anyway

_install()

# %% [markdown]
# In this notebook the package is `trustlib` itself, imported from the library: every module imported from now
# on carries its sections.

# %%
import trustlib, trustlib.results
from trustlib.results import judge

# %%
test_eq(sum(type(f).__name__ == '_Finder' for f in sys.meta_path), 1)
assert 'Parameters\n----------' in inspect.getdoc(judge)
assert inspect.getdoc(trustlib.parameter_section).endswith('Returns\n-------\ntuple[str|None, bool]\n    (the section or None, whether `obj` has a docstring of its own)')
print(inspect.getdoc(judge)[:600])
