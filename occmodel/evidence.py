"""One home for what occmodel knows about each config of a kernel: its evidence.

    evs = gather(kernel, spec, cfgs)              # compiled once each (cached, parallel), or modelled
    ev = evs[0]
    ev.source                                     # "compiled" | "card model"
    ev.shared, ev.regs, ev.spills, ev.occupancy   # resources and exact occupancy on `spec`
    ev.pipeline                                   # compiled: every scf.for loop's loads, rings, dots
    judge(base_ev, cand_ev)                       # the premise of that change, decided from this evidence

Contracts:

* a compile keeps its IR (``keep_ir=True``), so one cache entry serves the
  resources, the pipelining of every loop and the dot operand reads: no consumer
  compiles a config twice, and ``--pipeline`` reuses what a plain compile cached;
* :func:`from_result` is the one conversion of a CompileResult to occupancy
  (registers from the cubin, static + dynamic shared memory, the carveout);
* :func:`gather` picks the source per config: compiled when asked (or when the
  kernel has no hand model, as a bare kernel), else the card's hand model. Every
  Evidence says which in ``source``;
* a compile that fails is Evidence with its status and message, never an exception
  (a CompileError that every job shares -- an arch the installed Triton cannot
  target, a bad signature -- propagates once).

Pure apart from compiling: no torch, no GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from .card import Config, KernelCard
from .errors import CompileError, ConfigError
from .occupancy import Occupancy, occupancy
from .spec import HardwareSpec

COMPILED, CARD_MODEL, DERIVED = "compiled", "card model", "derived"


@dataclass(frozen=True)
class Evidence:
    """Resources and occupancy of one config, and where they come from."""

    config: Config
    source: str                       # COMPILED | CARD_MODEL | DERIVED
    status: str                       # "ok" | "out_of_resources" | "compile_error" | "no model"
    message: str = ""
    shared: int | None = None         # static + dynamic bytes of one block
    static_shared: int | None = None  # compiled only
    regs: int | None = None           # registers per thread (compiled n_regs, or the estimate capped at 255)
    regs_estimate: int | None = None  # a model's uncapped estimate (> 255 predicts spills)
    spills: int | None = None         # compiled n_spills (local bytes / 4); None for a model
    occupancy: Occupancy | None = None
    pipeline: Any = None              # occmodel.pipeline.PipelineReport (compiled only)
    result: Any = None                # the CompileResult (compiled only)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.occupancy is not None

    @property
    def fits(self) -> bool:
        return self.ok and self.occupancy.fits

    @property
    def blocks_per_sm(self) -> int | None:
        return self.occupancy.blocks_per_sm if self.occupancy else None

    @property
    def warps_per_sm(self) -> int | None:
        return self.occupancy.warps_per_sm if self.occupancy else None

    @property
    def limiter(self) -> str | None:
        if self.occupancy is None:
            return None
        return self.occupancy.limiter if self.occupancy.fits else "-"

    @property
    def reason(self) -> str:
        """Why it does not fit or was not measured ('' when it fits)."""
        if self.occupancy is None:
            return self.message
        return self.occupancy.reason

    @property
    def spills_predicted(self) -> bool:
        return self.regs_estimate is not None and self.regs_estimate > 255

    @property
    def outcome(self) -> str:
        """What a person needs first: ``ok``, ``spills`` (fits but spills registers to local
        memory), ``over limit`` (shared memory above the per-block opt-in limit), ``no block
        fits`` (another limit: registers, threads), or the compiler's own failure status
        (``out_of_resources``, ``compile_error``, ``no model``)."""
        if self.status != "ok" or self.occupancy is None:
            return self.status
        if not self.occupancy.fits:
            return "over limit" if self.occupancy.limits.get("shared_memory") == 0 else "no block fits"
        if self.spills or self.spills_predicted:
            return "spills"
        return "ok"

    def as_dict(self) -> dict[str, Any]:
        """One config's numbers, typed, for JSON (``configs``, predict's ``baseline`` /
        ``candidate``): docs/json_schema.md, "one object per config"."""
        o = self.occupancy
        return {"config": dict(self.config), "source": self.source, "status": self.outcome,
                "shared": self.shared, "static_shared": self.static_shared, "regs": self.regs,
                "regs_estimate": self.regs_estimate, "spills": self.spills,
                "threads": 32 * int(self.config["num_warps"]) if "num_warps" in self.config else None,
                "blocks_per_sm": o.blocks_per_sm if o else None, "warps_per_sm": o.warps_per_sm if o else None,
                "occupancy": o.occupancy if o else None, "limiter": self.limiter, "fits": self.fits,
                "why": self.reason}

    def row(self) -> dict[str, Any]:
        """Plain fields for a report row or JSON."""
        o = self.occupancy
        return {"source": self.source, "status": self.status, "shared": self.shared, "regs": self.regs,
                "spills": self.spills, "blocks_per_sm": o.blocks_per_sm if o else None,
                "warps_per_sm": o.warps_per_sm if o else None,
                "occupancy": round(o.occupancy, 4) if o else None, "limiter": self.limiter,
                "message": self.message or (o.reason if o else "")}


# ----------------------------------------------------------------- sources
def from_result(spec: HardwareSpec, res: Any, cfg: Config | None = None, carveout: int | None = None,
                pipeline: bool = True) -> Evidence:
    """Evidence of one CompileResult: occupancy from its real registers and all shared
    memory of a block (static + dynamic); the TTGIR's pipelining when it was kept."""
    cfg = dict(cfg if cfg is not None else {"num_warps": res.num_warps, "num_stages": res.num_stages})
    if not res.ok:
        return Evidence(cfg, COMPILED, res.status, res.message, result=res)
    threads = 32 * int(res.num_warps)
    try:
        occ = occupancy(spec, threads, min(res.n_regs, spec.sm.max_registers_per_thread), res.total_shared,
                        carveout, with_headroom=False)
    except ConfigError as exc:            # e.g. more threads than the spec allows per block
        return Evidence(cfg, COMPILED, "ok", str(exc), res.total_shared, res.static_shared, res.n_regs,
                        spills=res.n_spills, result=res)
    rep = None
    if pipeline and getattr(res, "ttgir", None):
        from .pipeline import analyze
        rep = analyze(res)
    return Evidence(cfg, COMPILED, "ok", "", res.total_shared, res.static_shared, res.n_regs, None,
                    res.n_spills, occ, rep, res)


def compile_jobs(kernel: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config]) -> list:
    """The CompileJob of each config (IR kept: see the module doc)."""
    from .compile_pool import CompileJob
    return [CompileJob(kernel.kernel, signature=kernel.signature(c), constexprs=kernel.constexprs(c),
                       arch=spec.arch, num_warps=int(c["num_warps"]), num_stages=int(c["num_stages"]),
                       keep_ir=True) for c in cfgs]


def compile_results(jobs: list, progress: bool = True) -> list:
    """compile_many, with a CompileError that every job shares (bad arch, signature) said once."""
    from .compile_pool import compile_many
    if not jobs:
        return []
    try:
        return compile_many(jobs, progress=progress)
    except CompileError as exc:
        raise CompileError(re.sub(r"^job \d+: ", "", str(exc))) from None


def compiled(kernel: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config], carveout: int | None = None,
             progress: bool = True) -> list[Evidence]:
    """Compile each config for spec.arch once (cached, parallel) and read its evidence."""
    results = compile_results(compile_jobs(kernel, spec, cfgs), progress)
    return [from_result(spec, r, c, carveout) for r, c in zip(results, cfgs)]


def modelled(kernel: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config],
             carveout: int | None = None) -> list[Evidence]:
    """The card's hand model for each config (vectorised); status "no model" where the
    card has no expression for this arch/config."""
    if not cfgs:
        return []
    cc = spec.compute_capability
    if not all(kernel.has_model(cc, c) for c in cfgs):
        return [Evidence(dict(c), CARD_MODEL, "no model",
                         f"{kernel.name} has no hand model of shared memory and registers; compile instead")
                for c in cfgs]
    from .model import predict_many
    p = predict_many(kernel, spec, list(cfgs), carveout)
    out = []
    for i, cfg in enumerate(cfgs):
        regs_est = int(p["regs_estimate"][i])
        occ = occupancy(spec, int(p["threads"][i]), min(regs_est, 255), int(p["shared"][i]), carveout,
                        with_headroom=False)
        out.append(Evidence(dict(cfg), CARD_MODEL, "ok", "", int(p["shared"][i]), None, min(regs_est, 255),
                            regs_estimate=regs_est, occupancy=occ))
    return out


def derived(kernel: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config], fraction: float = 0.3,
            carveout: int | None = None, progress: bool = True) -> list[Evidence]:
    """Compile a designed sample of at most `fraction` of `cfgs` (occmodel.derive) and derive
    the rest: the sampled configs' evidence is compiled, the others' is DERIVED (exact shared
    memory from the allocated TTGIR, estimated registers), or status "not covered" with the
    reason where the model declines to answer."""
    from .derive import derive_model
    cfgs = [dict(c) for c in cfgs]
    dm = derive_model(lambda c: compile_jobs(kernel, spec, [c])[0], cfgs, arch=spec.arch, fraction=fraction,
                      compile=lambda jobs: compile_results(jobs, progress))
    sampled = set(dm.sample_index)
    comp = iter(compiled(kernel, spec, [cfgs[i] for i in sorted(sampled)], carveout, progress=False))
    out = []
    for i, cfg in enumerate(cfgs):
        if i in sampled:
            out.append(next(comp))
            continue
        shared, regs = dm.shared(cfg), dm.regs(cfg)
        if shared is None:
            out.append(Evidence(cfg, DERIVED, "not covered", dm.why_not(cfg), regs=regs, regs_estimate=regs))
            continue
        occ = occupancy(spec, 32 * int(cfg["num_warps"]), min(regs, 255), shared, carveout, with_headroom=False)
        out.append(Evidence(cfg, DERIVED, "ok", "", shared, None, min(regs, 255), regs_estimate=regs, occupancy=occ))
    return out


def gather(kernel: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config], *, compile: bool | None = None,
           carveout: int | None = None, progress: bool = True, derive: float | None = None) -> list[Evidence]:
    """Evidence for every config: compiled when `compile` is True, the hand model when it is
    False, and when None (the default) the hand model if the kernel has one, else compiled --
    or, with `derive` (a fraction), a designed sample compiled and the rest derived."""
    cfgs = list(cfgs)
    if compile is None:
        cc = spec.compute_capability
        compile = not all(kernel.has_model(cc, c) for c in cfgs)
    if derive is not None:
        return derived(kernel, spec, cfgs, derive, carveout, progress)
    if compile:
        return compiled(kernel, spec, cfgs, carveout, progress)
    return modelled(kernel, spec, cfgs, carveout)


# ----------------------------------------------------------------- premises
def judge(base: Evidence, cand: Evidence):
    """The premise of the change base -> cand (occmodel.premise.judge: one lever's rule, or the
    combination), decided from this evidence."""
    from .premise import judge as decide
    return decide(base, cand)


def premises(kernel: KernelCard, spec: HardwareSpec, base: Config, cand: Config, *, compile: bool | None = None,
             carveout: int | None = None, progress: bool = True):
    """One premise per lever of base -> cand (each judged with only that lever changed) plus the
    combination when two or more change, with the evidence gathered once for every config:
    (premises, {premise name: Evidence of its config}, Evidence of the baseline)."""
    from .premise import judge as decide
    from .premise import lever_configs
    levers = lever_configs(base, cand)
    evs = gather(kernel, spec, [base] + [c for _, c in levers], compile=compile, carveout=carveout,
                 progress=progress)
    base_ev = evs[0]
    return ([decide(base_ev, ev) for ev in evs[1:]], {name: ev for (name, _), ev in zip(levers, evs[1:])}, base_ev)
