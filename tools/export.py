"""The project's export command (`make export`, `make sync`, the pre-commit hook and the tests run it; use it instead
of a bare `nbdev_export`): nbdev's own export with one more export processor, `docments_docstring`.

Parameters are documented once, in the notebooks, as docments (a `# comment` after each parameter). nbdev's
`show_doc` renders them on the website, but `help()` and IDE hovers read only the docstring. At export time,
`docments_docstring` appends a numpy-style "Parameters" section (name, type, default, docment) to the docstring of
every exported function, method and class whose signature (a class: its `__init__`, or a dataclass: its fields)
carries docments, and a "Returns" section when the return annotation has one. It rewrites only the exported copy
of the cell (`trustlib/*.py`); the notebooks are never changed. Which comment belongs to which parameter follows
`fastcore.docments` (the same rules `show_doc` uses; `tests/test_docstrings.py` checks they agree), so `help()`
and the website say the same. A docstring that already has a "Parameters" section is left alone, and so is a
`BaseConfig` subclass (its `__doc__` lists the `param` help texts at run time). `show_doc`
shows only the summary of a numpy docstring (its table comes from the docments), so the website is unchanged.

    python tools/export.py [PATH]    # PATH: a notebook or folder, as for `nbdev_export` (default: all of nbs/)
"""
from __future__ import annotations
import ast, functools, inspect, io, os, sys, tokenize
from textwrap import dedent

__all__ = ['docments_docstring', 'add_parameter_sections', 'export']

_EXPORTS = ('export', 'exports', 'exporti')
_SECTION = 'Parameters\n----------'

def _comments(src:str) -> dict[int, str]:
    "Line number -> text after the `#` of each comment in `src` (as `fastcore.docments` cleans it)."
    res = {}
    try:
        for t in tokenize.generate_tokens(io.StringIO(src).readline):
            if t.type == tokenize.COMMENT: res[t.start[0]] = t.string.strip()[1:]
    except (tokenize.TokenError, IndentationError, SyntaxError): pass
    return res

def _docment(line:int, comments:dict, param_lines:set, first:int) -> str|None:
    "`fastcore.docments._get_comment`: the comment on `line`, else the comment lines just above it (not above `first`)."
    if line in comments: return comments[line].strip()
    res, line = [], line - 1
    while line >= first and line in comments and line not in param_lines:
        res.append(comments[line]); line -= 1
    return dedent('\n'.join(reversed(res))).strip() if res else None

@functools.lru_cache(maxsize=8)
def _lines(src:str) -> list[bytes]: return [l.encode() for l in src.splitlines(True)]

def _seg(src:str, node) -> str|None:
    "Source of `node` on one line (None for no node); `ast.get_source_segment` without re-splitting `src` each time."
    if node is None: return None
    L = _lines(src)
    if node.lineno == node.end_lineno: s = L[node.lineno - 1][node.col_offset:node.end_col_offset]
    else: s = b''.join([L[node.lineno - 1][node.col_offset:]] + L[node.lineno:node.end_lineno - 1] + [L[node.end_lineno - 1][:node.end_col_offset]])
    return ' '.join(s.decode().split())

def _anno(src:str, node) -> str|None:
    "An annotation as written (the text of a string annotation)."
    if isinstance(node, ast.Constant) and isinstance(node.value, str): return ' '.join(node.value.split())
    return _seg(src, node)

def _start(node) -> int:
    "First line of `node` as `inspect.getsource` returns it (its first decorator)."
    return min([node.lineno] + [d.lineno for d in getattr(node, 'decorator_list', [])])

def _func_params(src, fn, comments, skip_first:bool):
    "[(shown name, type, default, docment)] of function `fn` (without `self` if `skip_first`), and the return's (type, docment)."
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    items = [(p.arg, p, d) for p, d in zip(pos, defaults)]
    if a.vararg: items.append(('*' + a.vararg.arg, a.vararg, None))
    items += [(p.arg, p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    # as `fastcore.docments`: parameters are keyed by line, so the comment on a line documents the last parameter
    # on it, or the return annotation when that shares the line (the website shows the same); `**kwargs` only
    # when it has a line of its own
    owner = {p.lineno: nm for nm, p, _ in items}
    if a.kwarg:
        items.append(('**' + a.kwarg.arg, a.kwarg, None))
        owner.setdefault(a.kwarg.lineno, '**' + a.kwarg.arg)
    if fn.returns is not None: owner[fn.returns.lineno] = 'return'
    first, lines = _start(fn), set(owner)
    docs = {nm: _docment(ln, comments, lines, first) for ln, nm in owner.items()}
    if skip_first and pos: items = items[1:]
    params = [(nm, _anno(src, p.annotation), _seg(src, d), docs.get(nm)) for nm, p, d in items]
    ret = (_anno(src, fn.returns), docs.get('return')) if fn.returns is not None else (None, None)
    return params, ret

def _is_dataclass(cls) -> bool:
    for d in cls.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        if (isinstance(f, ast.Name) and f.id == 'dataclass') or (isinstance(f, ast.Attribute) and f.attr == 'dataclass'): return True
    return False

def _field_default(src, value):
    "Default of a dataclass field: `x`, `field(default=x)` or `field(default_factory=f)` (as `f()`); None if none."
    if value is None: return None
    if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)) and \
            (value.func.id if isinstance(value.func, ast.Name) else value.func.attr) == 'field':
        kw = {k.arg: k.value for k in value.keywords}
        if 'default' in kw: return _seg(src, kw['default'])
        if 'default_factory' in kw: return _seg(src, kw['default_factory']) + '()'
        return None
    return _seg(src, value)

def _dataclass_params(src, cls, comments):
    "[(name, type, default, docment)] of the init fields of dataclass `cls` (as `fastcore.docments` reads them)."
    fields = []
    for n in cls.body:
        if not (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)): continue
        anno = _anno(src, n.annotation)
        if anno and anno.split('[')[0].split('.')[-1] in ('ClassVar', 'InitVar'): continue
        v = n.value
        if isinstance(v, ast.Call) and any(k.arg == 'init' and isinstance(k.value, ast.Constant) and k.value.value is False for k in v.keywords): continue
        fields.append(n)
    owner = {n.lineno: n.target.id for n in fields}
    first, lines = _start(cls), set(owner)
    docs = {nm: _docment(ln, comments, lines, first) for ln, nm in owner.items()}
    return [(n.target.id, _anno(src, n.annotation), _field_default(src, n.value), docs.get(n.target.id)) for n in fields]

def _section(params, ret=(None, None)) -> str|None:
    "The numpy-style text, or None when no parameter (nor the return) has a docment."
    if not any(p[3] for p in params) and not ret[1]: return None
    out = []
    if params:
        out += ['Parameters', '----------']
        for nm, anno, default, doc in params:
            desc = ', '.join(filter(None, [anno, f'default {default}' if default is not None else None]))
            out.append(f'{nm} : {desc}' if desc else nm)
            if doc: out += ['    ' + l if l.strip() else '' for l in doc.splitlines()]
    if ret[1]:
        if out: out.append('')
        out += ['Returns', '-------', ret[0] or 'object'] + ['    ' + l if l.strip() else '' for l in ret[1].splitlines()]
    return '\n'.join(out)

def _literal(value:str) -> str:
    "A triple-quoted literal whose value is `value` (raw when that keeps backslashes readable)."
    if '\\' not in value and '"""' not in value and not value.endswith('"'): return f'"""{value}"""'
    if '"""' not in value and not value.endswith(('"', '\\')): return f'r"""{value}"""'
    return '"""' + value.replace('\\', '\\\\').replace('"""', '\\"\\"\\"') + '"""'

def _targets(body, comments, src, in_class=False):
    "Yield (node that owns the docstring, section) for the functions and classes of `body` (recursing into classes)."
    for n in body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if in_class and n.name == '__init__': continue   # documented on its class, as numpy does
            static = any(isinstance(d, ast.Name) and d.id == 'staticmethod' for d in n.decorator_list)
            params, ret = _func_params(src, n, comments, skip_first=in_class and not static)
            if (s := _section(params, ret)): yield n, s
        elif isinstance(n, ast.ClassDef):
            if any(_seg(src, b) == 'BaseConfig' or (_seg(src, b) or '').endswith('.BaseConfig') for b in n.bases): s = None   # documents itself (`param_docs`)
            elif _is_dataclass(n): s = _section(_dataclass_params(src, n, comments))
            else:
                init = next((f for f in n.body if isinstance(f, ast.FunctionDef) and f.name == '__init__'), None)
                s = _section(*_func_params(src, init, comments, skip_first=True)) if init else None
            if s: yield n, s
            yield from _targets(n.body, comments, src, in_class=True)

def _offset(lines_b:list[bytes], line:int, col:int) -> int:
    "Character offset in the joined text of (1-based line, UTF-8 byte column)."
    return sum(len(l.decode()) for l in lines_b[:line - 1]) + len(lines_b[line - 1][:col].decode())

def _docstring_node(n):
    b = n.body[0] if n.body else None
    return b if isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str) else None

def add_parameter_sections(src:str) -> str:
    "`src` (a cell's code) with a numpy-style Parameters section added to every docstring whose signature has docments."
    try: tree = ast.parse(src)
    except SyntaxError: return src
    comments = _comments(src)
    lines_b = _lines(src)
    edits, expect = [], {}
    for n, sec in _targets(tree.body, comments, src):
        d, body0 = _docstring_node(n), n.body[0]
        decs = getattr(body0, 'decorator_list', [])
        ln, col = (_start(body0), min(x.col_offset for x in decs if x.lineno == _start(body0)) - 1) if decs else (body0.lineno, body0.col_offset)
        prefix = lines_b[ln - 1][:col].decode()               # the text before the statement (before its `@`)
        own_line = prefix.strip() == ''                       # else a body on the header line: `def f(x): "doc"; ...`
        ind = prefix if own_line else ' ' * (n.col_offset + 4)
        sec = '\n'.join((ind + l) if l else '' for l in sec.splitlines()) + '\n' + ind
        if d is not None:
            if _SECTION in inspect.cleandoc(d.value.value): continue   # written by hand (or already added): leave it
            value = d.value.value.rstrip() + '\n\n' + sec
            edits.append((_offset(lines_b, d.lineno, d.col_offset), _offset(lines_b, d.end_lineno, d.end_col_offset), _literal(value)))
        elif own_line:                                        # no docstring: the section becomes one
            value = sec.lstrip()
            at = _offset(lines_b, ln, 0)
            edits.append((at, at, ind + _literal(value) + '\n'))
        else: continue
        expect[(n.lineno, n.name)] = value
    if not edits: return src
    for a, b, text in sorted(edits, reverse=True): src = src[:a] + text + src[b:]
    # the result must parse, and each docstring must be exactly the intended text
    new = ast.parse(src)
    got = {}
    def walk(body):
        for n in body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                got[n.name] = got.get(n.name, []) + [ast.get_docstring(n, clean=False)]
                if isinstance(n, ast.ClassDef): walk(n.body)
    walk(new.body)
    for (_, nm), v in expect.items(): assert v in got.get(nm, []), f"docments_docstring: failed to rewrite the docstring of {nm}"
    return src

def docments_docstring(cell):
    "nbdev export processor: add a numpy-style Parameters section, from the docments, to the docstrings of an exported cell."
    if cell.cell_type != 'code' or not any(d in getattr(cell, 'directives_', {}) for d in _EXPORTS): return
    cell.source = add_parameter_sections(cell.source)

def export(path:str|None=None):
    "`nbdev_export` (its default `black_format` processor, then `docments_docstring`) for the notebooks in `path`."
    from nbdev.config import get_config, add_init
    from nbdev.doclinks import nbglob, _build_modidx
    from nbdev.export import nb_export, black_format
    if os.environ.get('IN_TEST', 0): return               # as `nbdev_export`: a no-op inside `nbdev_test`
    files = nbglob(path=path, as_path=True).sorted('name')
    for f in files: nb_export(f, procs=[black_format, docments_docstring])
    add_init(get_config().lib_path)
    _build_modidx()

if __name__ == '__main__':
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith('-')): sys.exit(__doc__)
    export(sys.argv[1] if len(sys.argv) == 2 else None)
