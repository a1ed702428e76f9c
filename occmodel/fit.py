"""Fit shared-memory and register expressions of a kernel without a card, from a
sample of real compiles. Pure: numpy and sympy, no triton.

    idx = choose_sample(configs, fraction=0.35)
    f = fit_expression(sample_cfgs, sample_values, swept=["BK", "num_stages"], target="shared")
    f.expr            # e.g. 256*BK*(num_stages - 1)
    f.predict(cfg)    # a float; round it for bytes / registers

Method (simple and stated): ordinary least squares over a small basis built from
the swept numeric parameters -- 1, each parameter, products of two and three of
them, each of those times a stage factor (num_stages or Max(1, num_stages-1)),
and for registers each product divided by num_warps (work spread over threads).
Terms are added greedily (forward selection, the term that cuts the squared
error most); the number of terms is the one with the smallest leave-one-out
error (ties: fewer terms). Coefficients become integers or small fractions when
that keeps every sample exact. For shared memory, when no expression is exact,
up to a quarter of the samples may be set aside (largest residual first) if the
rest then fit exactly; they are reported as outliers (a Max() between a ring and
an epilogue buffer). What stays outside the basis (that Max(), ptxas's register
allocation) shows up as error on the held-out configs, which the caller measures.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np
import sympy

TARGETS = ("shared", "regs")


@dataclass(frozen=True)
class Fit:
    target: str                     # "shared" | "regs"
    expr: sympy.Expr                # over positive-integer symbols named like the parameters
    terms: tuple[str, ...]          # the basis terms kept, in the order forward selection added them
    samples: int
    sample_max_error: float         # max |fitted - actual| over the sample
    loo_rmse: float                 # leave-one-out root-mean-square error of the chosen size
    outliers: tuple[int, ...] = ()  # sample indices the expression leaves out (shared memory only)

    @property
    def exact(self) -> bool:
        """The expression reproduces every sampled value but the outliers (after rounding)."""
        return self.sample_max_error < 0.5

    def predict(self, cfg: Mapping[str, Any]) -> float:
        subs = {s: cfg[s.name] for s in self.expr.free_symbols}
        return float(self.expr.subs(subs))


def choose_sample(configs: Sequence[Mapping[str, Any]], fraction: float = 0.35, minimum: int = 6,
                  seed: int = 0) -> list[int]:
    """Indices of ~`fraction` of the configs (at least `minimum`, at most all): first enough
    to show every value of every parameter, then seeded-random ones."""
    n = len(configs)
    k = min(n, max(minimum, int(np.ceil(fraction * n))))
    order = list(range(n))
    random.Random(seed).shuffle(order)
    picked, seen = [], set()
    for i in order:                                   # cover each (parameter, value) pair once
        pairs = {(key, repr(v)) for key, v in configs[i].items()}
        if not pairs <= seen:
            picked.append(i)
            seen |= pairs
    for i in order:
        if len(picked) >= k:
            break
        if i not in picked:
            picked.append(i)
    return sorted(picked)


def basis(swept: Sequence[str], target: str) -> list[tuple[str, sympy.Expr]]:
    """Candidate terms (name, expression), simplest first."""
    syms = {n: sympy.Symbol(n, integer=True, positive=True) for n in swept}
    plain = [syms[n] for n in swept if n != "num_stages"]
    products: list[sympy.Expr] = [sympy.Integer(1)]
    for r in (1, 2, 3):
        products += [sympy.Mul(*c) for c in itertools.combinations(plain, r)]
    factors = []
    if "num_stages" in syms:
        S = syms["num_stages"]
        factors = [S, sympy.Max(1, S - 1)]
    terms = list(products) + [f * p for f in factors for p in products]
    if target == "regs" and "num_warps" in syms:
        W = syms["num_warps"]
        terms += [t / W for t in terms if not t.has(W) and t != 1] + [1 / W]
    out, seen = [], set()
    for t in terms:
        key = sympy.srepr(t)
        if key not in seen:
            seen.add(key)
            out.append((str(t), t))
    return out


def _design(cfgs: Sequence[Mapping[str, Any]], terms: Sequence[tuple[str, sympy.Expr]]) -> np.ndarray:
    cols = []
    for _, t in terms:
        syms = sorted(t.free_symbols, key=lambda s: s.name)
        f = sympy.lambdify(syms, t, modules="numpy")
        col = [float(f(*[c[s.name] for s in syms])) for c in cfgs]
        cols.append(col)
    return np.array(cols, dtype=float).T.reshape(len(cfgs), len(terms))


def _loo(A: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-out RMSE of least squares on A (inf when a sample pins a coefficient)."""
    hat = A @ np.linalg.pinv(A)
    resid = y - hat @ y
    lever = 1.0 - np.diag(hat)
    if np.any(lever < 1e-9):
        return float("inf")
    return float(np.sqrt(np.mean((resid / lever) ** 2)))


def _rational(c: float) -> sympy.Expr:
    if abs(c - round(c)) < 1e-6 * max(1.0, abs(c)):
        return sympy.Integer(round(c))
    frac = Fraction(c).limit_denominator(64)
    if abs(float(frac) - c) < 1e-6 * max(1.0, abs(c)):
        return sympy.Rational(frac.numerator, frac.denominator)
    return sympy.Float(c, 4)


def _select(A: np.ndarray, y: np.ndarray, max_terms: int) -> tuple[list[int], float]:
    """Forward selection; returns (columns, leave-one-out RMSE) of the size with the lowest LOO error."""
    limit = max(1, min(max_terms, len(y) - 2, A.shape[1]))
    chosen: list[int] = []
    path: list[tuple[list[int], float]] = []
    for _ in range(limit):
        best, best_sse = None, None
        for j in range(A.shape[1]):
            if j in chosen:
                continue
            cols = chosen + [j]
            coef, *_ = np.linalg.lstsq(A[:, cols], y, rcond=None)
            sse = float(np.sum((A[:, cols] @ coef - y) ** 2))
            if best_sse is None or sse < best_sse - 1e-9 * (1 + best_sse):
                best, best_sse = j, sse
        chosen.append(best)
        path.append((list(chosen), _loo(A[:, chosen], y)))
        if best_sse < 1e-12 * (1 + float(np.sum(y ** 2))):
            break                                     # exact on the sample: more terms only overfit
    finite = [p for p in path if np.isfinite(p[1])] or path
    return min(finite, key=lambda p: (round(p[1], 9), len(p[0])))


def _finish(A: np.ndarray, y: np.ndarray, cols: list[int], cands) -> tuple[sympy.Expr, np.ndarray]:
    """The expression (integer / small-fraction coefficients when that stays as good) and its fitted values."""
    coef, *_ = np.linalg.lstsq(A[:, cols], y, rcond=None)
    exact_coef = [_rational(c) for c in coef]
    fitted = A[:, cols] @ np.array([float(c) for c in exact_coef])
    if np.max(np.abs(fitted - y)) >= 0.5 > np.max(np.abs(A[:, cols] @ coef - y)):
        exact_coef = [sympy.Float(c, 4) for c in coef]          # rounding would lose exactness
        fitted = A[:, cols] @ coef
    expr = sympy.Add(*[c * cands[j][1] for c, j in zip(exact_coef, cols)])
    return (sympy.simplify(expr) if len(cols) > 1 else expr), fitted


def fit_expression(cfgs: Sequence[Mapping[str, Any]], values: Sequence[float], swept: Sequence[str],
                   target: str = "shared", max_terms: int = 6) -> Fit:
    """Forward-selected least-squares fit of `values` over the basis of `swept` (see the module doc).

    Shared memory only: when no expression is exact on the whole sample, samples are set aside
    one by one (largest residual first, at most a quarter of them); if the rest then fit exactly,
    that expression is kept and the set-aside samples are reported in ``outliers`` (typically
    configs where another buffer wins a Max(), e.g. an epilogue larger than a small ring)."""
    if target not in TARGETS:
        raise ValueError(f"target {target!r}; valid: {', '.join(TARGETS)}")
    y = np.asarray(values, dtype=float)
    cands = basis(swept, target)
    A = _design(cfgs, cands)
    cols, loo = _select(A, y, max_terms)
    expr, fitted = _finish(A, y, cols, cands)
    outliers: list[int] = []
    if target == "shared" and np.max(np.abs(fitted - y)) >= 0.5:
        keep = list(range(len(y)))
        for _ in range(len(y) // 4):
            resid = np.abs(A[keep][:, cols] @ np.linalg.lstsq(A[keep][:, cols], y[keep], rcond=None)[0] - y[keep])
            keep.pop(int(np.argmax(resid)))
            sub_cols, sub_loo = _select(A[keep], y[keep], max_terms)
            sub_expr, sub_fit = _finish(A[keep], y[keep], sub_cols, cands)
            if np.max(np.abs(sub_fit - y[keep])) < 0.5 and len(keep) - len(sub_cols) >= 2:
                cols, loo, expr = sub_cols, sub_loo, sub_expr
                outliers = [i for i in range(len(y)) if i not in keep]
                break
            cols = sub_cols
    inliers = [i for i in range(len(y)) if i not in outliers]
    err = np.abs(np.array([float(expr.subs({sy: cfgs[i][sy.name] for sy in expr.free_symbols}))
                           for i in range(len(y))]) - y)
    return Fit(target, expr, tuple(cands[j][0] for j in cols), len(y), float(np.max(err[inliers])), loo,
               tuple(outliers))
