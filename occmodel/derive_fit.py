"""Exact expressions for one integer quantity of a kernel (a buffer's dimension, its
scratch bytes, a value's registers per thread) over the swept parameters.

    cands = exact_forms(points, values, params)      # every simplest form that fits all points
    agree(cands, cfg)                                # the value they all predict, or None

Forms searched, simplest first (complexity = factors that are not 1, +1 for a
coefficient other than 1, +1 for a Min/Max):

* ``c * prod(atom_p)`` with, per parameter, atom ``1``, ``p``, ``p**2`` or ``1/p``;
  for ``num_stages`` also ``S - 2``, ``S - 1``, ``S + 1`` (ring depths); ``c`` a
  positive fraction;
* ``Min(m1, m2)`` and ``Max(m1, m2)`` of two such monomials (a scratch buffer that
  stops growing once a tile is covered).

Every form of the lowest complexity that reproduces *all* points is kept. The
caller predicts only where they agree: when the sample cannot tell two forms
apart and they differ at a config, the config is not covered -- no guess.
Pure: numpy and sympy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np
import sympy

STAGE = "num_stages"
_POWERS = (0, 1, -1, 2)
_SHIFTS = (-1, -2, 1)


@dataclass(frozen=True)
class Form:
    expr: sympy.Expr
    complexity: int

    def __call__(self, cfg: Mapping[str, Any]) -> float:
        subs = {s: cfg[s.name] for s in self.expr.free_symbols}
        return float(self.expr.subs(subs))

    def __str__(self) -> str:
        return str(self.expr)


def symbol(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, positive=True)


def _atoms(name: str) -> list[tuple[sympy.Expr, int, Any]]:
    """(expression, complexity, numpy function of the parameter column)."""
    s = symbol(name)
    out = [(sympy.Integer(1), 0, lambda x: np.ones_like(x)),
           (s, 1, lambda x: x), (1 / s, 1, lambda x: 1.0 / x), (s ** 2, 2, lambda x: x * x)]
    if name == STAGE:
        out += [(s + k, 1, (lambda k: lambda x: x + k)(k)) for k in _SHIFTS]
    return out


def _monomials(points: Sequence[Mapping[str, Any]], params: Sequence[str], limit: int = 3):
    """Yield (expr, complexity, column) of every product of atoms with at most `limit` factors."""
    cols = {p: np.array([float(c[p]) for c in points]) for p in params}
    per = [_atoms(p) for p in params]
    for combo in itertools.product(*per):
        if sum(1 for a in combo if a[1]) > limit:
            continue
        col = np.ones(len(points))
        for p, (_, _, f) in zip(params, combo):
            col = col * f(cols[p])
        if np.any(col <= 0):
            continue
        yield sympy.Mul(*[a[0] for a in combo]), sum(a[1] for a in combo), col


def _coef(r: float) -> Fraction | None:
    c = Fraction(r).limit_denominator(4096)
    return c if c > 0 and abs(float(c) - r) <= 1e-9 * max(1.0, abs(r)) else None


def exact_forms(points: Sequence[Mapping[str, Any]], values: Sequence[int], params: Sequence[str],
                minmax: bool = True) -> list[Form]:
    """All simplest forms (see the module doc) equal to `values` at every point; [] if none."""
    y = np.array(values, dtype=float)
    if len(y) == 0:
        return []
    if np.all(y == y[0]):
        return [Form(sympy.Integer(int(y[0])), 0)]
    if np.any(y <= 0):
        return []
    monos = list(_monomials(points, params))
    found: list[Form] = []
    best = None
    for expr, cx, col in monos:
        r = y / col
        if np.allclose(r, r[0], rtol=1e-9, atol=0):
            c = _coef(float(r[0]))
            if c is None:
                continue
            k = cx + (c != 1)
            if best is None or k < best:
                best, found = k, []
            if k == best:
                found.append(Form(sympy.Rational(c.numerator, c.denominator) * expr, k))
    if found or not minmax:
        return _dedupe(found, points)
    # Min / Max of two monomials: each point explained by one of them, the other bounds it
    full = (1 << len(y)) - 1
    for kind, pick in (("min", np.max), ("max", np.min)):    # Min: y <= c1 u1, so c1 = max(y / u1)
        table: dict[int, tuple[int, list[sympy.Expr]]] = {}     # hit mask -> (complexity, forms)
        for expr, cx, col in monos:
            r = y / col
            c = _coef(float(pick(r)))
            if c is None:
                continue
            hit = np.isclose(r, float(c), rtol=1e-9, atol=0)
            mask = int(sum(1 << i for i in np.flatnonzero(hit)))
            if mask == full:
                continue
            k = cx + (c != 1)
            e = sympy.Rational(c.numerator, c.denominator) * expr
            old = table.get(mask)
            if old is None or k < old[0]:
                table[mask] = (k, [e])
            elif k == old[0]:
                old[1].append(e)
        masks = list(table)
        for i, m1 in enumerate(masks):
            for m2 in masks[i + 1:]:
                if m1 | m2 != full:
                    continue
                k = table[m1][0] + table[m2][0] + 1
                if best is not None and k > best:
                    continue
                if best is None or k < best:
                    best, found = k, []
                for e1 in table[m1][1]:
                    for e2 in table[m2][1]:
                        found.append(Form((sympy.Min if kind == "min" else sympy.Max)(e1, e2), k))
    return _dedupe(found, points)


def _dedupe(forms: list[Form], points) -> list[Form]:
    out, seen = [], set()
    for f in forms:
        key = sympy.srepr(sympy.simplify(f.expr))
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def agree(forms: Sequence[Form], cfg: Mapping[str, Any]) -> int | None:
    """The integer every form predicts at `cfg`, or None (no form, or they disagree)."""
    if not forms:
        return None
    vals = {round(f(cfg), 6) for f in forms}
    if len(vals) != 1:
        return None
    v = vals.pop()
    return int(round(v)) if abs(v - round(v)) < 1e-6 else None
