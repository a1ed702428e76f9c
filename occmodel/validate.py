"""Validate premises on a GPU: baseline vs candidates at workload points.

Order of work, per DESIGN.md's verdicts:
1. static: the evidence of each config (occmodel.evidence: the card's model
   and one real compile for the spec's arch, which also gives the TTGIR) ->
   does the premise's mechanism happen?
2. correctness gate: each config's output against the torch reference on fresh
   random inputs; a wrong kernel is never timed (a kernel without a reference
   is timed and the report says "timed without a correctness check");
3. timing: the rounds split over independent blocks (stats.split_rounds); each
   block has fresh allocations and input sets (new seeds), new CUDA graphs and a
   re-warm; each round times the baseline twice (A and A', two instances: the
   A/A band) and every candidate once, in a random order (stats.block_schedule);
   each sample one CUDA-graph replay after an L2 flush (gpu.time_blocks);
4. verdicts: stats.compare per point (random-effects interval over blocks),
   stats.overall_detail per candidate (MIXED when points disagree).

`plan()` is pure and runs anywhere (--dry-run); `run()` needs a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from . import evidence as E
from .card import Config, KernelCard
from .errors import NoGPUError
from .premise import DOES_NOT_FIT, MECHANISM_FAILS, Premise, judge, lever_configs
from .spec import HardwareSpec
from .stats import DEFAULT_BLOCKS, Outcome, block_schedule, compare, overall_detail, split_rounds

SETUP_S_PER_CONFIG_POINT = 1.5      # inputs, graph capture, correctness (measured on an H200, see notes)
COMPILE_S_PER_CONFIG = 4.0
BLOCK_SETUP_S_PER_CONFIG = 0.3      # fresh input sets + graph capture + re-warm per block (an estimate, not yet measured)


@dataclass
class StaticRow:
    name: str                      # "baseline" or the candidate's lever
    config: Config
    model: E.Evidence | None = None        # the card's hand model (None: the kernel has none)
    compiled: E.Evidence | None = None     # a real compile for the spec's arch (None: --no-compile)

    @property
    def best(self) -> E.Evidence | None:
        """The compiled evidence when it compiled, else the model's."""
        if self.compiled is not None and self.compiled.ok:
            return self.compiled
        return self.model if self.model is not None else self.compiled


@dataclass
class Plan:
    card: KernelCard
    spec: HardwareSpec
    baseline: Config
    candidates: list[Config]
    points: list[dict[str, Any]]
    rounds: int
    static: list[StaticRow]            # baseline first, then every config a premise is about
    premises: list[Premise]            # per candidate: one per lever, then the combination
    est_device_s: float
    blocks: int = DEFAULT_BLOCKS   # independent blocks the rounds of a point are split over

    @property
    def timed(self) -> dict[str, Config]:
        """What is timed, by name: "baseline" and each premise's config."""
        return {row.name: row.config for row in self.static}


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
    overall_detail: dict[str, dict[str, Any]] = field(default_factory=dict)   # stats.Overall.as_dict() per premise


def name_of(base: Config, cand: Config) -> str:
    from .premise import lever
    return lever(base, cand)


def plan(card: KernelCard, spec: HardwareSpec, baseline: Config, candidates: list[Config],
         points: list[Mapping[str, Any]], rounds: int, compiled: bool = True, combined_only: bool = False,
         blocks: int = DEFAULT_BLOCKS) -> Plan:
    """Static analysis and the device-time estimate. Each candidate is one premise per lever it
    changes (the baseline with that lever alone) plus the combination; every such config is
    timed unless `combined_only`. Compiles each config for spec.arch once if `compiled` (a
    kernel without a hand model is always compiled)."""
    named: dict[str, Config] = {"baseline": baseline}
    for cand in candidates:
        levers = lever_configs(baseline, cand)
        for name, cfg in (levers[-1:] if combined_only else levers):
            named.setdefault(name, cfg)
    cfgs = list(named.values())
    has_model = all(card.has_model(spec.compute_capability, c) for c in cfgs)
    model = E.modelled(card, spec, cfgs) if has_model else [None] * len(cfgs)
    comp = E.compiled(card, spec, cfgs) if compiled or not has_model else [None] * len(cfgs)
    rows = [StaticRow(name, cfg, m, c) for (name, cfg), m, c in zip(named.items(), model, comp)]
    premises = [judge(rows[0].best, row.best) for row in rows[1:]]
    n_cfg = len(rows)
    est = 0.0
    for point in points:
        per_launch = estimate_launch_s(card, spec, baseline, point)
        est += rounds * (n_cfg + 1) * max(1e-3, per_launch) + n_cfg * SETUP_S_PER_CONFIG_POINT \
            + blocks * (n_cfg + 1) * BLOCK_SETUP_S_PER_CONFIG
    est += n_cfg * COMPILE_S_PER_CONFIG
    return Plan(card, spec, baseline, candidates, [dict(p) for p in points], rounds, rows, premises, est, blocks)


def check_target(spec: HardwareSpec, env: Mapping[str, Any]) -> None:
    """ConfigError unless the GPU that times is the spec the static premises describe."""
    from .errors import ConfigError
    cc = str(env.get("compute_capability", ""))
    want = "{}.{}".format(*spec.compute_capability)
    if cc and cc != want:
        major, _, minor = cc.partition(".")
        raise ConfigError(f"validate would time on {env.get('gpu', 'this GPU')} (sm_{major}{minor}) while --spec "
                          f"{spec.name} describes sm_{''.join(map(str, spec.compute_capability))}: the static premises "
                          f"and the timing must be about one target; use --spec sm_{major}{minor} here (or --dry-run "
                          f"for {spec.name}'s static picture)")


def point_context(plan: Plan, name: str, point: Mapping[str, Any], sms: int | None = None) -> str:
    """What explains an outcome at one point: loop iterations per CTA against the pipeline's tiles
    ahead, waves of CTAs, resident blocks there."""
    row = next(r for r in plan.static if r.name == name)
    ev = row.best
    card = plan.card
    parts = []
    n = card.loop_iterations(row.config, point)
    ahead = ev.pipeline.ahead if ev is not None and ev.pipeline is not None else None
    if n is not None:
        text = f"{n} loop iteration{'s' * (n != 1)}/CTA"
        if ahead:
            text += f" vs {ahead} tile{'s' * (ahead != 1)} ahead" + (" (too few to fill the pipeline)"
                                                                      if n <= ahead else "")
        parts.append(text)
    grid = card.grid(row.config, point)
    sms = sms or plan.spec.product().sms
    if grid is not None and ev is not None and ev.blocks_per_sm:
        waves = grid / (sms * ev.blocks_per_sm)
        parts.append(f"{grid:,} CTAs = {waves:.2f} waves at {ev.blocks_per_sm} block(s)/SM")
    return "; ".join(parts)


def estimate_launch_s(card: KernelCard, spec: HardwareSpec, cfg: Config, point: Mapping[str, Any]) -> float:
    """Roofline lower bound of one launch from the spec's first product (a planning figure;
    0 when the kernel states neither bytes moved nor flops)."""
    prod = spec.product()
    nbytes, flops = card.bytes_moved(cfg, point), card.flops(cfg, point)
    return max((nbytes or 0) / (prod.memory_bandwidth_gbs * 1e9), (flops or 0) / (prod.fp16_tensor_tflops * 1e12))


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


def point_label(point: Mapping[str, Any], points: list[Mapping[str, Any]]) -> str:
    """A point named by the workload parameters that vary across `points` ("C=8"), all of them
    when none varies."""
    varying = [k for k in point if len({repr(q.get(k)) for q in points}) > 1] or list(point)
    return ", ".join(f"{k}={point[k]}" for k in varying)


def run(p: Plan, seed: int = 0, progress=print) -> Result:
    """Correctness gate, timing in independent blocks, and verdicts on the local GPU."""
    from . import gpu
    gpu.require_gpu()
    t_start = gpu.wall_clock()
    env = gpu.device_info()
    l2 = env.get("l2_bytes") or 50 * 2**20
    copy_bw = gpu.copy_bandwidth()
    check_target(p.spec, env)
    base = p.baseline
    configs = p.timed
    results = []
    per_block = split_rounds(p.rounds, p.blocks)
    for i, point in enumerate(p.points):
        pr = PointResult(point=point, base_bytes=p.card.bytes_moved(base, point) or 0)
        progress(f"point {point}: correctness")
        for name, cfg in configs.items():
            c = gpu.check_correct(p.card, cfg, point, seed=seed)
            pr.correctness[name] = vars(c)
        if not pr.correctness["baseline"]["ok"]:
            results.append(pr)
            continue
        # A' is a second instance of the baseline (its own graph): the A/A pair sees what a candidate sees
        names = ["baseline", "baseline'"] + [n for n in configs if n != "baseline" and pr.correctness[n]["ok"]]

        def build(b: int, point=point, names=names) -> dict[str, Any]:
            """Block b's benches: fresh input sets (seeds new per block), shared by configs of one problem."""
            shared_sets, benches = {}, {}
            for name in names:
                cfg = configs["baseline" if name == "baseline'" else name]
                key = _problem_key(p.card, cfg)
                if key not in shared_sets:
                    shared_sets[key] = gpu.input_sets(p.card, cfg, point, l2, seed=seed + 100 + 1000 * b)
                benches[name] = gpu.Bench(lambda s, cfg=cfg: p.card.launch(s, cfg), shared_sets[key],
                                          flush_bytes=2 * l2)
            return benches

        progress(f"point {point}: timing {len(names) - 1} configs (baseline twice) in {p.blocks} blocks x "
                 f"{'/'.join(map(str, sorted(set(per_block))))} rounds")
        schedule = block_schedule(names, per_block, seed=seed + 7919 * i)
        samples = gpu.time_blocks(build, schedule, seed=seed + i)
        for name in names[2:]:
            pr.outcomes[name] = compare(samples["baseline"], samples["baseline'"], samples[name], seed=seed)
        all_base = sorted(t for blk in samples["baseline"] for t in blk)
        pr.base_throughput = p.card.work_units(point) / all_base[len(all_base) // 2]
        if p.card.has_torch_baseline():
            sets = gpu.input_sets(p.card, base, point, l2, seed=seed + 100)
            bench = gpu.Bench(lambda s: p.card.torch_baseline(s), sets, flush_bytes=2 * l2)
            pr.torch_ref_s = sorted(bench.sample() for _ in range(5))[2]
            del bench, sets
        results.append(pr)
    verdicts, details = {}, {}
    for premise in p.premises:
        name = premise.name
        point_verdicts = [(point_label(r.point, p.points), r.outcomes[name].verdict)
                          for r in results if name in r.outcomes]
        d = overall_detail(point_verdicts, premise.mechanism not in (MECHANISM_FAILS, DOES_NOT_FIT))
        verdicts[name], details[name] = d.text, d.as_dict()
    return Result(p, env, results, verdicts, copy_bw, gpu.wall_clock() - t_start, details)
