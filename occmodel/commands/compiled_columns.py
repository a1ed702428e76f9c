"""What a real compile gives, as plain numbers beside the model's (shared by
``table --compiled``, ``compile`` and ``accuracy``).

* :func:`compile_configs`: compile card configs for ``spec.arch`` with
  ``compile_many`` (parallel; progress bar only on a TTY); a CompileError that
  stops the sweep (an arch the installed Triton cannot target) propagates.
* :func:`actual`: the compiled kernel's occupancy from its real ``n_regs`` and
  ``total_shared`` (static + dynamic).
* :func:`model_values`: predicted shared / registers / blocks for configs; a card
  whose register model is not written yet (NotImplementedError) gives None there.
* :func:`add_compiled_columns`: the hook ``occmodel table --compiled`` calls.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import sympy

from ..card import Config, KernelCard
from ..errors import CompileError
from ..occupancy import LIMITERS, occupancy
from ..spec import HardwareSpec

COLUMNS = [("c_shared", "actual shared (B)"), ("c_regs", "n_regs"), ("c_spills", "n_spills"),
           ("c_blocks", "actual blocks/SM"), ("c_occupancy", "actual occupancy"), ("c_status", "compile")]


def compile_configs(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config], keep_ir: bool = False,
                    progress: bool = True) -> list:
    """One CompileResult per config, compiled for spec.arch in parallel (cache hits are free)."""
    from ..compile_pool import CompileJob
    jobs = [CompileJob(card.kernel, signature=card.signature(c), constexprs=card.constexprs(c), arch=spec.arch,
                       num_warps=int(c["num_warps"]), num_stages=int(c["num_stages"]), keep_ir=keep_ir)
            for c in cfgs]
    return compile_jobs(jobs, progress)


def compile_jobs(jobs: list, progress: bool = True) -> list:
    """compile_many, with a CompileError that every job shares (bad arch, signature) said once."""
    from ..compile_pool import compile_many
    if not jobs:
        return []
    try:
        return compile_many(jobs, progress=progress)
    except CompileError as exc:
        text = str(exc)
        raise CompileError(re.sub(r"^job \d+: ", "", text)) from None


def actual(spec: HardwareSpec, res: Any, num_warps: int, carveout: int | None = None) -> dict[str, Any]:
    """Status, resources and occupancy of one CompileResult (resource keys None unless ok)."""
    out: dict[str, Any] = {"status": res.status, "message": res.message, "shared": None, "static_shared": None,
                           "n_regs": None, "n_spills": None, "blocks_per_sm": None, "warps_per_sm": None,
                           "occupancy": None, "limiter": None}
    if not res.ok:
        return out
    occ = occupancy(spec, 32 * num_warps, res.n_regs, res.total_shared, carveout, with_headroom=False)
    out.update(shared=res.total_shared, static_shared=res.static_shared, n_regs=res.n_regs,
               n_spills=res.n_spills, blocks_per_sm=occ.blocks_per_sm, warps_per_sm=occ.warps_per_sm,
               occupancy=round(occ.occupancy, 4), limiter=occ.limiter if occ.fits else "-",
               reason=occ.reason)
    return out


def model_values(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config],
                 carveout: int | None = None) -> list[dict[str, Any]]:
    """Per config: shared, regs_estimate, blocks_per_sm, warps_per_sm, occupancy, limiter
    from the card's model; register-dependent values are None when the card has no
    register model yet."""
    from ..model import predict_many
    if not cfgs:
        return []
    try:
        p = predict_many(card, spec, list(cfgs), carveout)
    except NotImplementedError:
        return [{"shared": s, "regs_estimate": None, "blocks_per_sm": None, "warps_per_sm": None,
                 "occupancy": None, "limiter": None} for s in _shared_only(card, spec, cfgs)]
    out = []
    for i in range(len(cfgs)):
        fits = bool(p["fits"][i])
        out.append({"shared": int(p["shared"][i]), "regs_estimate": int(p["regs_estimate"][i]),
                    "blocks_per_sm": int(p["blocks_per_sm"][i]), "warps_per_sm": int(p["warps_per_sm"][i]),
                    "occupancy": round(float(p["occupancy"][i]), 4),
                    "limiter": LIMITERS[int(p["limiter"][i])] if fits else "-"})
    return out


def has_register_model(card: KernelCard, spec: HardwareSpec, cfg: Config) -> bool:
    try:
        card.registers(spec.compute_capability, cfg)
    except NotImplementedError:
        return False
    return True


def _shared_only(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config]) -> list[int | None]:
    out = []
    for cfg in cfgs:
        try:
            expr = sympy.sympify(card.shared_memory(spec.compute_capability, cfg))
        except NotImplementedError:
            out.append(None)
            continue
        subs = {sym: cfg[name] for name, sym in card.symbols().items()}
        out.append(int(np.round(float(expr.subs(subs)))))
    return out


def add_compiled_columns(card: KernelCard, spec: HardwareSpec, entries: list, rows: list[dict],
                         carveout: int | None) -> list[tuple[str, str]]:
    """Compile every valid row of a table for spec.arch and add the actual columns to
    its row dict (rows and entries correspond one to one); returns the added columns."""
    valid = [(row, cfg) for (_, cfg, _), row in zip(entries, rows) if cfg is not None]
    results = compile_configs(card, spec, [cfg for _, cfg in valid])
    for (row, cfg), res in zip(valid, results):
        a = actual(spec, res, int(cfg["num_warps"]), carveout)
        row.update(c_shared=a["shared"], c_regs=a["n_regs"], c_spills=a["n_spills"],
                   c_blocks=a["blocks_per_sm"], c_occupancy=a["occupancy"],
                   c_status=res.status if res.ok else f"{res.status}: {res.message}")
    return list(COLUMNS)
