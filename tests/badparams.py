"""Bad-input cases generated from a `Config`'s declared parameters: for every field, a value of the wrong type,
a value just outside each declared bound (`ge`/`gt`/`le`/`lt`, and the soft `max` without `allow_large`), a
value outside its `choices`, and an unknown name where the field names a resource its `validate` resolves
(`allowed=` in words). Used by tests/test_bad_params.py and tools/attack_params.py; nothing is hand-listed per paper."""
import math, typing, types
from dataclasses import fields
from typing import Any, get_args, get_origin, get_type_hints

NO_SUCH = 'no_such_name_zz9'

def _strip_optional(tp):
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1: return args[0]
    return tp

def _item_type(tp):
    "(container kind, item type): kind None for a scalar, 'seq' for tuple[X, ...]/list[X], 'bare' for an untyped container."
    origin, args = get_origin(tp), get_args(tp)
    if origin in (tuple, list) or tp in (tuple, list):
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis: return 'seq', args[0]
        if origin is list and args: return 'seq', args[0]
        if origin is tuple and args: return 'fixed', args
        return 'bare', None
    if origin is dict or tp is dict: return 'dict', None
    return None, tp

def _outside(md, t):
    "Values just outside each declared bound of a number of type `t`, as (kind, value)."
    out = []
    isint = t is int
    def num(x): return int(math.floor(x)) if isint else float(x)
    if md.get('ge') is not None and math.isfinite(md['ge']): out.append(('range', num(md['ge'] - 1) if isint else md['ge'] - max(1.0, abs(md['ge']))))
    if md.get('gt') is not None and math.isfinite(md['gt']): out.append(('range', num(md['gt']) if not isint or float(md['gt']).is_integer() else math.floor(md['gt'])))
    if md.get('le') is not None and math.isfinite(md['le']): out.append(('range', (int(math.floor(md['le'])) + 1) if isint else md['le'] + max(1.0, abs(md['le']))))
    if md.get('lt') is not None and math.isfinite(md['lt']): out.append(('range', (int(math.ceil(md['lt']))) if isint else float(md['lt'])))
    if md.get('max') is not None and math.isfinite(md['max']): out.append(('soft max', (int(md['max']) * 2 + 1) if isint else md['max'] * 2 + 1.0))
    if md.get('choices'):
        ch = md['choices']
        if t is str: out.append(('choice', NO_SUCH))
        elif t in (int, float):
            nums = [c for c in ch if isinstance(c, (int, float)) and not isinstance(c, bool)]
            if nums: out.append(('choice', (max(nums) + 1) if isint else max(nums) + 0.5))
    elif t is str: out.append(('name', NO_SUCH))   # a str names something (a dataset, model, file) or has a form its `allowed=` declares: no str is free text

    return out

def bad_cases(Config) -> list[tuple[str, str, Any]]:
    "Every generated (parameter, kind, value) that `Config.from_params('smoke', parameter=value)` must refuse."
    hints, cases = get_type_hints(Config), []
    for f in fields(Config):
        if f.name == 'profile': continue
        tp, md = _strip_optional(hints[f.name]), f.metadata
        if tp is Any or tp is object or get_origin(tp) in (typing.Union, types.UnionType): continue
        kind, t = _item_type(tp)
        if kind is None:
            if t in (int, float): cases.append((f.name, 'type', 'not a number'))
            elif t is bool: cases.append((f.name, 'type', 'maybe'))
            elif t is str: cases.append((f.name, 'type', [1, 2]))
            elif get_origin(t) is typing.Literal: cases.append((f.name, 'choice', NO_SUCH)); continue
            cases += [(f.name, k, v) for k, v in _outside(md, t)]
        elif kind == 'seq':
            cases.append((f.name, 'type', 12345 if t is str else 'not a list'))
            t = _strip_optional(t)
            if t in (int, float): cases.append((f.name, 'item type', ['not a number']))
            elif t is str: cases.append((f.name, 'item type', [[1]]))
            elif t is bool: cases.append((f.name, 'item type', ['maybe']))
            if t in (int, float, str): cases += [(f.name, k, [v]) for k, v in _outside(md, t)]
        elif kind in ('bare', 'fixed'): cases.append((f.name, 'type', 'not a list'))
        elif kind == 'dict': cases.append((f.name, 'type', 'not a mapping'))
    return cases
