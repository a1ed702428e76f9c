"""The model: predicted shared memory, registers and occupancy of a card's configs.

A card states its shared memory and register need as sympy expressions over its
numeric parameters (``card.shared_memory(cc, cfg)``, ``card.registers(cc, cfg)``);
this module evaluates them (vectorised with lambdify for sweeps), feeds the
result to the exact occupancy rules, and answers the symbolic questions (largest
num_stages that fits, budget left for one more resident block). Pure: no torch,
no GPU; imports the card module (triton, for its @jit kernel) but compiles nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import sympy

from .card import Config, KernelCard
from .occupancy import LIMITERS, Occupancy, limits_arrays, occupancy
from .spec import HardwareSpec


@dataclass(frozen=True)
class Prediction:
    config: Config
    threads: int
    shared: int                 # predicted bytes of shared memory per block (static + dynamic)
    regs_estimate: int          # the register expression's value (may exceed 255: predicts spills)
    occupancy: Occupancy | None  # from the predicted registers (capped at 255) and shared memory
    fits: bool
    reason: str                 # why it does not fit ("" if it does)

    @property
    def regs(self) -> int:
        """Registers ptxas would allocate: the estimate, capped at 255."""
        return min(self.regs_estimate, 255)

    @property
    def spills_predicted(self) -> bool:
        return self.regs_estimate > 255


def _numeric(card: KernelCard, cfg: Config) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if not isinstance(v, str)}


def _key(card: KernelCard, cfg: Config) -> tuple:
    """Configs with equal string parameters (dtype...) share one expression."""
    return tuple(sorted((k, v) for k, v in cfg.items() if isinstance(v, str)))


_EXPR_CACHE: dict[tuple, tuple] = {}


def _compiled_exprs(card: KernelCard, cc: tuple[int, int], strkey: tuple):
    """(names, shared, regs, f_shared, f_regs), cached per card object, arch and string params."""
    key = (id(card), cc, strkey)
    hit = _EXPR_CACHE.get(key)
    if hit is not None and hit[0] is card:
        return hit[1]
    cfg = dict(strkey)
    for p in card.all_params:          # string params only come from strkey; numbers stay symbolic
        cfg.setdefault(p.name, p.default)
    syms = card.symbols()
    names = sorted(syms)
    shared = sympy.sympify(card.shared_memory(cc, cfg))
    regs = sympy.sympify(card.registers(cc, cfg))
    args = [syms[n] for n in names]
    value = (names, shared, regs,
             sympy.lambdify(args, shared, modules=[{"ceiling": np.ceil, "floor": np.floor}, "numpy"]),
             sympy.lambdify(args, regs, modules=[{"ceiling": np.ceil, "floor": np.floor}, "numpy"]))
    _EXPR_CACHE[key] = (card, value)
    return value


def expressions(card: KernelCard, spec: HardwareSpec, cfg: Config) -> tuple[sympy.Expr, sympy.Expr]:
    """(shared-memory bytes, registers per thread) as sympy expressions for this arch."""
    _, shared, regs, _, _ = _compiled_exprs(card, spec.compute_capability, _key(card, cfg))
    return shared, regs


def _evaluate(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config]) -> tuple[np.ndarray, np.ndarray]:
    shared = np.zeros(len(cfgs), dtype=np.int64)
    regs = np.zeros(len(cfgs), dtype=np.int64)
    groups: dict[tuple, list[int]] = {}
    for i, cfg in enumerate(cfgs):
        groups.setdefault(_key(card, cfg), []).append(i)
    for strkey, idx in groups.items():
        names, _, _, f_shared, f_regs = _compiled_exprs(card, spec.compute_capability, strkey)
        cols = [np.array([cfgs[i][n] for i in idx], dtype=np.int64) for n in names]
        shared[idx] = np.broadcast_to(np.asarray(f_shared(*cols), dtype=np.float64).round(), len(idx))
        regs[idx] = np.broadcast_to(np.asarray(f_regs(*cols), dtype=np.float64).round(), len(idx))
    return shared, regs


def predict(card: KernelCard, spec: HardwareSpec, cfg: Config, carveout: int | None = None) -> Prediction:
    """Predicted shared memory, registers and exact occupancy of one config."""
    shared, regs = (int(a[0]) for a in _evaluate(card, spec, [cfg]))
    threads = 32 * int(cfg["num_warps"])
    occ = occupancy(spec, threads=threads, regs=min(regs, 255), smem=shared, carveout=carveout)
    return Prediction(config=dict(cfg), threads=threads, shared=shared, regs_estimate=regs,
                      occupancy=occ, fits=occ.fits, reason=occ.reason)


def predict_many(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config],
                 carveout: int | None = None) -> dict[str, np.ndarray]:
    """Vectorised predictions for a sweep: arrays shared, regs_estimate, threads,
    blocks_per_sm, warps_per_sm, occupancy, limiter (index into LIMITERS), fits."""
    shared, regs = _evaluate(card, spec, cfgs)
    threads = np.array([32 * int(c["num_warps"]) for c in cfgs], dtype=np.int64)
    lim = limits_arrays(spec, threads, np.minimum(regs, 255), shared, carveout)
    blocks = lim["resident"]
    stacked = np.stack([lim[n] for n in LIMITERS])
    return {"shared": shared, "regs_estimate": regs, "threads": threads, "blocks_per_sm": blocks,
            "warps_per_sm": blocks * lim["warps_per_block"],
            "occupancy": blocks * lim["warps_per_block"] / spec.sm.max_warps_per_sm,
            "limiter": np.argmax(stacked == blocks, axis=0), "fits": blocks > 0}


def largest_fitting(card: KernelCard, spec: HardwareSpec, cfg: Config, param: str,
                    candidates: Iterable[int]) -> int | None:
    """The largest value of `param` (others as in cfg) whose predicted config still
    fits one block on an SM of `spec`; None if none of `candidates` fits."""
    values = sorted(set(int(v) for v in candidates))
    cfgs = [{**cfg, param: v} for v in values]
    fits = predict_many(card, spec, cfgs)["fits"]
    ok = [v for v, f in zip(values, fits) if f]
    return ok[-1] if ok else None
