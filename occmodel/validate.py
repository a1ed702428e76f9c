"""Validate premises on a GPU: baseline vs candidates at workload points.

Order of work, per DESIGN.md's verdicts:
1. static: predicted (model) and compiled (real Triton compile for the spec's
   arch) occupancy of each config -> does the premise's mechanism happen?
2. correctness gate: each config's output against the torch reference on fresh
   random inputs; a wrong kernel is never timed;
3. timing: rounds of A B A' C ... interleaved (baseline twice per round for
   the A/A band), each sample one CUDA-graph replay after an L2 flush;
4. verdicts: stats.compare per point, stats.overall per candidate.

`plan()` is pure and runs anywhere (--dry-run); `run()` needs a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .card import Config, KernelCard
from .errors import NoGPUError
from .model import predict
from .occupancy import occupancy
from .premise import DOES_NOT_FIT, MECHANISM_FAILS, StaticPremise, static_premise
from .spec import HardwareSpec
from .stats import Outcome, compare, overall

SETUP_S_PER_CONFIG_POINT = 1.5      # inputs, graph capture, correctness (measured on an H200, see notes)
COMPILE_S_PER_CONFIG = 4.0


@dataclass
class StaticRow:
    name: str                      # "baseline" or the candidate's lever
    config: Config
    predicted_shared: int
    predicted_regs: int
    predicted_warps_per_sm: int
    compiled: dict[str, Any] | None = None     # shared, n_regs, n_spills, warps_per_sm, status


@dataclass
class Plan:
    card: KernelCard
    spec: HardwareSpec
    baseline: Config
    candidates: list[Config]
    points: list[dict[str, Any]]
    rounds: int
    static: list[StaticRow]
    premises: list[StaticPremise]
    est_device_s: float


@dataclass
class PointResult:
    point: dict[str, Any]
    base_throughput: float | None = None
    base_bytes: int = 0
    correctness: dict[str, Any] = field(default_factory=dict)     # config name -> Correctness as dict
    outcomes: dict[str, Outcome] = field(default_factory=dict)    # candidate name -> Outcome
    torch_ref_s: float | None = None


@dataclass
class Result:
    plan: Plan
    env: dict[str, Any]
    points: list[PointResult]
    overall: dict[str, str]
    copy_bandwidth: float
    device_seconds: float


def name_of(base: Config, cand: Config) -> str:
    from .premise import lever
    return lever(base, cand)


def plan(card: KernelCard, spec: HardwareSpec, baseline: Config, candidates: list[Config],
         points: list[Mapping[str, Any]], rounds: int, compiled: bool = True) -> Plan:
    """Static analysis and the device-time estimate; compiles for spec.arch if `compiled`."""
    rows, premises = [], []
    configs = [("baseline", baseline)] + [(name_of(baseline, c), c) for c in candidates]
    for name, cfg in configs:
        p = predict(card, spec, cfg)
        row = StaticRow(name, cfg, p.shared, p.regs_estimate, p.occupancy.warps_per_sm)
        if compiled:
            row.compiled = compiled_occupancy(card, spec, cfg)
        rows.append(row)
    base_row = rows[0]
    for row in rows[1:]:
        source = "predicted"
        bw, cw = base_row.predicted_warps_per_sm, row.predicted_warps_per_sm
        bs, cs = base_row.predicted_shared, row.predicted_shared
        if all(r.compiled and r.compiled["status"] == "ok" for r in (base_row, row)):
            source = "compiled"
            bw, cw = base_row.compiled["warps_per_sm"], row.compiled["warps_per_sm"]
            bs, cs = base_row.compiled["shared"], row.compiled["shared"]
        prefetch = operands = None
        changed = {k for k in row.config if row.config[k] != baseline.get(k)}
        if compiled and changed == {"num_stages"}:
            from .pipeline import compiled_prefetch      # the TTGIR says which loads got deeper rings
            prefetch = compiled_prefetch(card, spec, baseline, row.config)
        if compiled and changed == {"num_warps"}:
            from .pipeline import compiled_operand_reads  # the TTGIR's dot layouts: operand reads per warp
            operands = compiled_operand_reads(card, spec, baseline, row.config)
        premises.append(static_premise(baseline, row.config, base_warps=bw, cand_warps=cw, base_shared=bs,
                                       cand_shared=cs, cand_fits=cw > 0, source=source, prefetch=prefetch,
                                       operands=operands))
    n_cfg = len(configs)
    est = 0.0
    for point in points:
        per_launch = estimate_launch_s(card, spec, baseline, point)
        est += rounds * (n_cfg + 1) * max(1e-3, per_launch) + n_cfg * SETUP_S_PER_CONFIG_POINT
    est += n_cfg * COMPILE_S_PER_CONFIG
    return Plan(card, spec, baseline, candidates, [dict(p) for p in points], rounds, rows, premises, est)


def estimate_launch_s(card: KernelCard, spec: HardwareSpec, cfg: Config, point: Mapping[str, Any]) -> float:
    """Roofline lower bound of one launch from the spec's first product (a planning figure)."""
    prod = spec.product()
    return max(card.bytes_moved(cfg, point) / (prod.memory_bandwidth_gbs * 1e9),
               card.flops(cfg, point) / (prod.fp16_tensor_tflops * 1e12))


def compiled_occupancy(card: KernelCard, spec: HardwareSpec, cfg: Config) -> dict[str, Any]:
    from .compile import compile_kernel
    res = compile_kernel(card.kernel, signature=card.signature(cfg), constexprs=card.constexprs(cfg),
                         arch=spec.arch, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    out = {"status": res.status, "message": res.message,
           "versions": f"triton {res.triton_version}, ptxas {res.ptxas_version}"}
    if res.status == "ok":
        occ = occupancy(spec, 32 * cfg["num_warps"], res.n_regs, res.total_shared, with_headroom=False)
        out.update(shared=res.total_shared, n_regs=res.n_regs, n_spills=res.n_spills,
                   blocks_per_sm=occ.blocks_per_sm, warps_per_sm=occ.warps_per_sm)
    return out


def require_gpu() -> None:
    """NoGPUError (exit 2) unless torch is installed and sees a CUDA GPU."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise NoGPUError("validate needs torch with CUDA on a GPU machine; install it with "
                         "pip install 'occmodel[torch]' (or use --dry-run)") from None
    from . import gpu
    gpu.require_gpu()


def _problem_key(card: KernelCard, cfg: Config) -> tuple:
    return tuple(sorted((k, v) for k, v in cfg.items() if not card.param(k).tunable))


def run(p: Plan, seed: int = 0, progress=print) -> Result:
    """Correctness gate, interleaved timing and verdicts on the local GPU."""
    from . import gpu
    gpu.require_gpu()
    t_start = gpu.wall_clock()
    env = gpu.device_info()
    l2 = env.get("l2_bytes") or 50 * 2**20
    copy_bw = gpu.copy_bandwidth()
    base = p.baseline
    configs = {"baseline": base} | {name_of(base, c): c for c in p.candidates}
    results = []
    for point in p.points:
        pr = PointResult(point=point, base_bytes=p.card.bytes_moved(base, point))
        progress(f"point {point}: correctness")
        for name, cfg in configs.items():
            c = gpu.check_correct(p.card, cfg, point, seed=seed)
            pr.correctness[name] = vars(c)
        if not pr.correctness["baseline"]["ok"]:
            results.append(pr)
            continue
        benches, shared_sets = {}, {}
        for name, cfg in configs.items():
            if pr.correctness[name]["ok"]:
                key = _problem_key(p.card, cfg)          # configs of one problem time on the same inputs
                if key not in shared_sets:
                    shared_sets[key] = gpu.input_sets(p.card, cfg, point, l2, seed=seed + 100)
                benches[name] = gpu.Bench(lambda s, cfg=cfg: p.card.launch(s, cfg), shared_sets[key],
                                          flush_bytes=2 * l2)
        progress(f"point {point}: timing {len(benches)} configs x {p.rounds} rounds")
        samples: dict[str, list[float]] = {name: [] for name in benches} | {"baseline'": []}
        for _ in range(p.rounds):
            order = ["baseline"] + [n for n in benches if n != "baseline"]
            order.insert(len(order) // 2 + 1, "baseline'")      # A B A' C ...: A' in the middle
            for name in order:
                samples[name].append(benches["baseline" if name == "baseline'" else name].sample())
        for name in benches:
            if name != "baseline":
                pr.outcomes[name] = compare(samples["baseline"], samples["baseline'"], samples[name], seed=seed)
        t_base = sorted(samples["baseline"])[len(samples["baseline"]) // 2]
        pr.base_throughput = p.card.work_units(point) / t_base
        ref_fn = getattr(p.card, "torch_baseline", None)
        if ref_fn is not None:
            bench = gpu.Bench(lambda s: ref_fn(s), shared_sets[_problem_key(p.card, base)], flush_bytes=2 * l2)
            pr.torch_ref_s = sorted(bench.sample() for _ in range(5))[2]
        results.append(pr)
        del benches, shared_sets
    verdicts = {}
    for premise, cand in zip(p.premises, p.candidates):
        name = name_of(base, cand)
        point_verdicts = [r.outcomes[name].verdict for r in results if name in r.outcomes]
        verdicts[name] = overall(point_verdicts, premise.mechanism not in (MECHANISM_FAILS, DOES_NOT_FIT))
    return Result(p, env, results, verdicts, copy_bw, gpu.wall_clock() - t_start)
