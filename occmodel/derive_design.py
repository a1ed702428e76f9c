"""The designed sample a derived model is built from, and :func:`derive_model`.

A sample chosen to separate each parameter's effect, not at random:

1. **base + one at a time**: a middle config, then each other value of each swept
   parameter with the rest at the base -- every buffer dimension's dependence on each
   parameter is then pinned (a monomial needs two values per parameter);
2. **each code path**: once the first round shows which parameters change the buffer
   list (usually num_stages=1), a config nearest the base for every value of that
   parameter -- only when one parameter decides it: buffers that come and go with
   combinations of parameters are each modelled on their own (their presence,
   :meth:`DerivedModel._present`) and left to the active round;
3. **active**: while a config of the sweep is not covered by the model fitted so far
   (a buffer's size ambiguous where it decides the total, an unseen code path), compile
   one -- among the configs refused for the reason most share, the one that shows the
   most value pairs not yet seen; then, while
   a config's code path was never sampled with its (parameter, num_warps) value pair
   (:meth:`DerivedModel.layout_gap`: layouts, hence buffers, follow both), compile it;
4. **pairs**: a config covering as many not-yet-seen value pairs as possible (so an
   interaction such as Min(BLOCK_T, 8 x num_warps) that happens to fit a monomial on
   the sample shows), then round 3 again (a new point can unsettle a form), until the
   budget or no pair is left unseen.

The budget is ``fraction`` of the sweep (rounds 1-2 may exceed it; the model reports
the fraction it used).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any, Callable, Mapping, Sequence

from .derive import DerivedModel, Sampled, _structural, read_compile
from .errors import ConfigError


def swept_params(sweep: Sequence[Mapping[str, Any]]) -> list[str]:
    """Parameters that take more than one value in the sweep (numeric only; ConfigError else)."""
    if not sweep:
        raise ConfigError("the sweep is empty")
    keys = list(sweep[0])
    out = []
    for k in keys:
        vals = {c.get(k) for c in sweep}
        if len(vals) > 1:
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                raise ConfigError(f"parameter {k!r} takes non-numeric values {sorted(map(str, vals))}; "
                                  "a derived model sweeps numeric parameters only")
            out.append(k)
    return out


def _base(sweep, params) -> int:
    target = {}
    for p in params:
        vals = sorted({c[p] for c in sweep})
        if p == "num_stages" and len(vals) > 2 and vals[0] <= 1:
            vals = vals[1:]                      # the base pipelines
        target[p] = vals[(len(vals) - 1) // 2]
    return min(range(len(sweep)), key=lambda i: (sum(sweep[i][p] != target[p] for p in params), i))


def _neighbours(sweep, center: int, params, vary) -> list[int]:
    """Configs that differ from sweep[center] in exactly one parameter of `vary`."""
    c = sweep[center]
    return [i for i, o in enumerate(sweep)
            if sum(o[p] != c[p] for p in params) == 1 and any(o[p] != c[p] for p in vary)]


def _pairs(cfg, params) -> set:
    return {((p, cfg[p]), (q, cfg[q])) for p, q in itertools.combinations(params, 2)}


def derive_model(jobs_for: Callable[[Mapping[str, Any]], Any], sweep: Sequence[Mapping[str, Any]],
                 arch: Any = "sm_120", fraction: float = 0.3, sample: Sequence[Mapping[str, Any]] | None = None,
                 compile: Callable | None = None, progress: bool = False) -> DerivedModel:
    """Compile a designed sample of `sweep` (or the given `sample`) and derive the model.
    ``compile`` (default :func:`occmodel.compile_pool.compile_many`) takes a job list."""
    from .compile import parse_arch
    from .compile_pool import _as_job, compile_many
    if not 0 < fraction <= 1:
        raise ConfigError(f"fraction {fraction} is out of range; allowed 0 < fraction <= 1")
    sweep = [dict(c) for c in sweep]
    params = swept_params(sweep)
    cc = parse_arch(arch)
    run = compile or (lambda jobs: compile_many(jobs, progress=progress))
    got: dict[int, Sampled | None] = {}
    failed: list[str] = []

    def take(idx: Sequence[int]) -> None:
        idx = [i for i in dict.fromkeys(idx) if i not in got]
        if not idx:
            return
        jobs = [dataclasses.replace(_as_job(jobs_for(sweep[i])), keep_ir=True) for i in idx]
        for i, res in zip(idx, run(jobs)):
            got[i] = read_compile(res, sweep[i], cc) if res.ok else None
            if not res.ok:
                failed.append(f"{sweep[i]}: {res.status}")

    if sample is not None:
        index = {tuple(sorted(c.items())): i for i, c in enumerate(sweep)}
        take([index.get(tuple(sorted(dict(c).items()))) for c in sample if tuple(sorted(dict(c).items())) in index])
    else:
        budget = max(1, math.floor(fraction * len(sweep)))
        base = _base(sweep, params)
        take([base] + _neighbours(sweep, base, params, params))                     # round 1
        for _ in range(3):                                                          # round 2
            ok = [s for s in got.values() if s is not None]
            if not ok:
                break
            sset = _structural(ok, params)[0]
            if len(sset) != 1:
                break                            # several: per-buffer presence and the active round
            combos = sorted({tuple(c[p] for p in sset) for c in sweep})
            centers = []
            for combo in combos:
                same = [i for i, c in enumerate(sweep) if tuple(c[p] for p in sset) == combo]
                centers.append(min(same, key=lambda i: (sum(sweep[i][p] != sweep[base][p] for p in params), i)))
            new = [i for i in dict.fromkeys(centers) if i not in got][:max(0, budget - len(got))]
            if not new:
                break
            take(new)
        seen = set().union(*[_pairs(sweep[i], params) for i in got]) if got else set()
        while len(got) < budget:
            while len(got) < budget:                                                # round 3: active
                ok = [s for s in got.values() if s is not None]
                dm = DerivedModel(params, ok, f"sm_{cc}").fit()
                open_ = [i for i in range(len(sweep)) if i not in got and dm.shared(sweep[i]) is None]
                open_ = open_ or [i for i in range(len(sweep)) if i not in got and dm.layout_gap(sweep[i])]
                if not open_:
                    break
                # the reason most refused configs share first (one compile often settles all of them)
                reasons = {i: dm.why_not(sweep[i]) or dm.layout_gap(sweep[i]) for i in open_}
                count: dict[str, int] = {}
                for r in reasons.values():
                    count[r] = count.get(r, 0) + 1
                top = max(count, key=lambda r: (count[r], r))
                pick = min([i for i in open_ if reasons[i] == top],
                           key=lambda i: (-len(_pairs(sweep[i], params) - seen), i))
                take([pick])
                seen |= _pairs(sweep[pick], params)
            cand = [i for i in range(len(sweep)) if i not in got]                   # round 4: pairs
            if len(got) >= budget or not cand:
                break
            best = max(cand, key=lambda i: (len(_pairs(sweep[i], params) - seen), -i))
            if not _pairs(sweep[best], params) - seen:
                break
            take([best])                # then back to round 3: a new point can unsettle a form
            seen |= _pairs(sweep[best], params)
    ok = [s for s in got.values() if s is not None]
    if len(ok) < 2:
        raise ConfigError(f"only {len(ok)} sampled config(s) compiled; a derived model needs 2 or more"
                          + (f" ({failed[0]})" if failed else ""))
    dm = DerivedModel(params, ok, f"sm_{cc}")
    dm.fraction = len(got) / len(sweep)
    dm.failed = failed
    dm.sample_index = sorted(got)
    return dm.fit()
