"""Model expressions as a person writes them.

sympy prints ``Piecewise((51200, Eq(num_stages, 1)), (Max(32768, 18432*num_stages + 512), True))``;
a kernel engineer writes ``18,432 × num_stages + 512 for num_stages ≥ 2; 51,200 at 1``. Two steps:

* :func:`prune` drops what cannot matter over the values a parameter can take (``domain``:
  name -> the values to consider): a ``Max``/``Min`` argument that never wins, a ``Piecewise``
  branch that never applies. It only evaluates the expression at those points (no
  ``sympy.simplify``, which costs seconds), so it is exact on the domain and says nothing
  outside it.
* :func:`fmt` prints the result: thousands separators, ``×``, ``≥``, ``max(a, b)``, ``⌈x⌉``,
  and a piecewise of one parameter as its general case first, then the exceptions.

Pure: nothing is imported at module load (sympy is already loaded by whoever built the
expression); :func:`fmt` reads sympy objects through their class names and ``args``.
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

MAX_POINTS = 512          # domain points :func:`prune` evaluates at most (the product of the value lists)

_REL = {"Equality": "=", "Unequality": "≠", "GreaterThan": "≥", "LessThan": "≤",
        "StrictGreaterThan": ">", "StrictLessThan": "<"}
_FUNC = {"Max": "max", "Min": "min", "Mod": "mod", "sqrt": "√"}


def _kind(e) -> str:
    return type(e).__name__


# ------------------------------------------------------------------ pruning
def _points(expr, domain: Mapping[str, Sequence[int]]) -> list[dict]:
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    if any(s.name not in domain for s in free):
        return []                      # a symbol with no known values: prune nothing
    lists = [list(domain[s.name]) for s in free]
    total = 1
    for values in lists:
        total *= len(values)
    if not free or total > MAX_POINTS:
        return []
    return [dict(zip(free, combo)) for combo in itertools.product(*lists)]


def _value(e, point: dict) -> Any:
    v = e.xreplace(point)
    if getattr(v, "is_number", False) or _kind(v) in ("BooleanTrue", "BooleanFalse"):
        return v
    try:
        return v.doit()
    except Exception:                  # noqa: BLE001 - an unevaluable point: treat as unknown
        return None


def _always(cond, points: list[dict]) -> bool | None:
    """True / False if cond is that at every point, else None."""
    if _kind(cond) in ("BooleanTrue", "BooleanFalse"):
        return _kind(cond) == "BooleanTrue"
    seen = {str(_value(cond, p)) for p in points}
    return True if seen == {"True"} else False if seen == {"False"} else None


def prune(expr, domain: Mapping[str, Sequence[int]]):
    """`expr` with the Max/Min arguments and Piecewise branches that never matter over
    `domain` removed (equal to `expr` at every point of the domain). A Piecewise inside
    a sum or product is first pulled to the top (``sympy.piecewise_fold``, cheap)."""
    from sympy import Piecewise, piecewise_fold     # loaded already: expr is a sympy object
    if _kind(expr) != "Piecewise" and expr.has(Piecewise):
        expr = piecewise_fold(expr)
    return _prune(expr, _points(expr, domain), domain)


def _prune(e, points: list[dict], domain):
    if not points or not getattr(e, "args", ()) or _kind(e) in ("Symbol", "Integer", "Rational"):
        return e
    kind = _kind(e)
    if kind == "Piecewise":
        kept = []
        live = points
        for value, cond in e.args:
            here = [p for p in live if _always(cond, [p]) is not False]
            if not here:
                continue                       # never reached on the domain
            kept.append((_prune(value, here, domain), cond))
            live = [p for p in live if _always(cond, [p]) is False]
            if not live:
                break
        if len(kept) == 1:
            return kept[0][0]
        if kept and _kind(kept[-1][1]) != "BooleanTrue":
            kept[-1] = (kept[-1][0], True)      # the last reachable branch is the otherwise case
        return type(e)(*kept)
    args = [_prune(a, points, domain) for a in e.args]
    if kind in ("Max", "Min"):
        sign = 1 if kind == "Max" else -1
        vals = [[_value(a, p) for p in points] for a in args]
        keep = []
        for i, vi in enumerate(vals):
            if any(v is None for v in vi):
                keep.append(i)
                continue
            beaten = any(j != i and all(w is not None and sign * (w - v) >= 0 for v, w in zip(vi, vj))
                         and (j < i or any(sign * (w - v) > 0 for v, w in zip(vi, vj)))
                         for j, vj in enumerate(vals))
            if not beaten:
                keep.append(i)
        args = [args[i] for i in keep]
        if len(args) == 1:
            return args[0]
    try:
        return e.func(*args)
    except Exception:                  # noqa: BLE001 - a class that will not rebuild: keep it
        return e


# ----------------------------------------------------------------- printing
def _int(n: int) -> str:
    return f"{n:,}" if abs(n) >= 10000 else str(n) if abs(n) < 1000 else f"{n:,}"


def _number(e) -> str:
    if _kind(e) in ("Integer", "Zero", "One", "NegativeOne") or getattr(e, "is_Integer", False):
        return _int(int(e))
    if getattr(e, "is_Rational", False):
        p, q = int(e.p), int(e.q)
        d = q
        for f in (2, 5):
            while d % f == 0:
                d //= f
        if d == 1:                       # a terminating decimal: 25/8 -> 3.125
            return f"{p / q:g}"
        return f"{p}/{q}"
    if getattr(e, "is_Float", False):
        return f"{float(e):g}"
    return str(e)


def fmt(e) -> str:
    """`e` as a person writes it (see the module docstring)."""
    return _piecewise(e) if _kind(e) == "Piecewise" else _fmt(e, 0)


def _paren(e, level: int, above: int) -> str:
    text = _fmt(e, level)
    return f"({text})" if level < above else text


def _prec(e) -> int:
    k = _kind(e)
    if k == "Add":
        return 1
    if k == "Mul":
        return 2
    if k == "Pow":
        return 3
    if getattr(e, "is_Rational", False) and not getattr(e, "is_Integer", False):
        return 2
    if getattr(e, "is_number", False) and getattr(e, "is_negative", False):
        return 1
    return 4


def _fmt(e, _level: int) -> str:
    k = _kind(e)
    if isinstance(e, (bool, int)):
        return str(e)
    if k in ("BooleanTrue", "BooleanFalse"):
        return "always" if k == "BooleanTrue" else "never"
    if getattr(e, "is_Number", False):
        return _number(e)
    if k == "Symbol":
        return e.name
    if k == "Add":
        terms = e.as_ordered_terms()
        out = _fmt(terms[0], 1)
        for t in terms[1:]:
            coeff, rest = t.as_coeff_Mul()
            if coeff < 0:
                out += " - " + _fmt(-t, 1)
            else:
                out += " + " + _fmt(t, 1)
        return out
    if k == "Mul":
        coeff, rest = e.as_coeff_Mul()
        if coeff < 0:
            return "-" + _paren(-e, _prec(-e), 2)
        num, den = [], []
        for f in (rest.args if _kind(rest) == "Mul" else (rest,)):
            if _kind(f) == "Pow" and getattr(f.exp, "is_negative", False):
                den.append(f.base ** -f.exp)
            else:
                num.append(f)
        if getattr(coeff, "is_Rational", False) and not coeff.is_Integer and abs(coeff.p) == 1:
            den.insert(0, coeff.q)               # BLOCK_H / 4, not 0.25 × BLOCK_H
            coeff = 1
        parts = ([] if coeff == 1 else [_number(coeff)]) + [_paren(f, _prec(f), 2) for f in num]
        text = " × ".join(parts) or "1"
        if den:
            text += " / " + " / ".join(_int(d) if isinstance(d, int) else _paren(d, _prec(d), 3) for d in den)
        return text
    if k == "Pow":
        base, exp = e.args
        if exp == -1:
            return f"1 / {_paren(base, _prec(base), 3)}"
        if getattr(exp, "is_Rational", False) and exp == 0.5:
            return f"√({_fmt(base, 0)})"
        return f"{_paren(base, _prec(base), 4)}^{_paren(exp, _prec(exp), 4)}"
    if k in _REL:
        return f"{_fmt(e.args[0], 0)} {_REL[k]} {_fmt(e.args[1], 0)}"
    if k in ("And", "Or"):
        word = " and " if k == "And" else " or "
        return word.join(_paren(a, 1 if _kind(a) in ("And", "Or") else 4, 2) for a in e.args)
    if k == "Not":
        return f"not ({_fmt(e.args[0], 0)})"
    if k == "floor":
        return f"⌊{_fmt(e.args[0], 0)}⌋"
    if k == "ceiling":
        return f"⌈{_fmt(e.args[0], 0)}⌉"
    if k == "Mod":
        return f"{_paren(e.args[0], _prec(e.args[0]), 2)} mod {_paren(e.args[1], _prec(e.args[1]), 2)}"
    if k == "Piecewise":                 # nested: in parentheses (the top level is fmt's)
        return f"({_piecewise(e)})"
    name = _FUNC.get(k, k.lower() if k in ("Max", "Min") else k)
    return f"{name}({', '.join(_fmt(a, 0) for a in e.args)})"


def _eq_on(cond) -> tuple[str, Any] | None:
    """(symbol name, value) if cond is ``Eq(symbol, number)``."""
    if _kind(cond) != "Equality":
        return None
    a, b = cond.args
    if _kind(a) == "Symbol" and getattr(b, "is_Number", False):
        return a.name, b
    if _kind(b) == "Symbol" and getattr(a, "is_Number", False):
        return b.name, a
    return None


def _piecewise(e) -> str:
    branches = list(e.args)
    *special, (default, last) = branches
    eqs = [_eq_on(c) for _, c in special]
    if _kind(last) == "BooleanTrue" and special and all(eqs) and len({n for n, _ in eqs}) == 1:
        # one parameter with exceptions: the general case first, then "VALUE at X"
        name = eqs[0][0]
        values = sorted(int(v) for _, v in eqs)
        lowest_run = 1
        while lowest_run in values:
            lowest_run += 1
        if values == list(range(1, lowest_run)):
            head = f"{_fmt(default, 0)} for {name} ≥ {lowest_run}"
        else:
            head = f"{_fmt(default, 0)} for other {name}"
        tail = [f"{_fmt(v, 0)} at {_int(int(x))}" for (v, _), (_, x) in zip(special, eqs)]
        return "; ".join([head, *tail])
    parts = [f"{_fmt(v, 0)} if {_fmt(c, 0)}" for v, c in special]
    parts.append(f"{_fmt(default, 0)} otherwise" if _kind(last) == "BooleanTrue"
                 else f"{_fmt(default, 0)} if {_fmt(last, 0)}")
    return "; ".join(parts)
