"""A static throughput model: rank configs before any GPU run.

For one config at one workload point (all times in seconds)::

    slots      = SMs x B                     B = resident CTAs/SM (compiled n_regs / total_shared
                                             when compiled, else the card's model)
    waves      = ceil(grid / slots)          grid = card.grid(cfg, point); the last wave holds
    tail       = grid - (waves - 1) x slots  `tail` CTAs
    F          = tile x k                    bytes one CTA keeps in flight: tile = bytes its main
                                             loop loads per iteration, k = tiles ahead =
                                             max(1, min(num_stages - 1, n))   (n = loop iterations;
                                             the TTGIR's ring depth - 1 when compiled)
    bw(c)      = min(BW, c x F / L)          achievable bandwidth with c CTAs in flight (Little's law;
                                             L = loaded latency); per SM: F x B against BW x L / SMs
    mem(c)     = max(c x b_dram / bw(c),     b_dram = bytes_moved / grid (DRAM), b_loop = tile x n
                     c x b_loop / BW_L2)     (all loop loads pass L2)
    comp(c)    = ceil(c / SMs) x f / (P / SMs)   f = flops / grid; P = peak tensor FLOP/s
    wave(c)    = max(mem(c), comp(c))        the roofline of one wave
    waves_s    = (waves - 1) x wave(slots) + wave(tail)        (c) the tail wave's cost is explicit
    fill_s     = waves x (L + f / n / (P / slots))             (d) each wave waits one latency for its
                                             first tile and computes its last tile after the last load
    spill_s    = n_spills x 4 B x 2 x threads x n x grid / BW_L2   (e) stores + reloads, compiled only
    launch_s   = kernels x launch            (f)
    total      = waves_s + fill_s + spill_s + launch_s

Constants come from a :class:`~occmodel.calibrate.Calibration` (measured, or the
spec's datasheet with default latency and launch figures). Simple on purpose:
every term is in the :class:`Estimate`, so a wrong ranking can be read off.
Pure: no torch, no GPU (compiling is the caller's choice, see :func:`compiled_resources`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from .calibrate import Calibration
from .card import Config, KernelCard
from .model import predict
from .occupancy import occupancy
from .spec import HardwareSpec

KERNELS_PER_LAUNCH = {"decode_attention": 2, "decode_attention_nopipe": 2}   # the split kernel + combine


@dataclass(frozen=True)
class Resources:
    """What one CTA of a config holds and streams (compiled or modelled)."""

    blocks_per_sm: int
    threads: int
    tile_bytes: int          # bytes the main loop loads per iteration per CTA
    ahead: int               # tiles the pipeline keeps in flight beyond the one consumed (0: none)
    n_spills: int            # 0 unless compiled
    source: str              # "model" | "compiled"


@dataclass(frozen=True)
class Estimate:
    config: Config
    point: dict[str, Any]
    fits: bool
    source: str
    blocks_per_sm: int
    grid: int
    slots: int
    waves: int
    tail_ctas: int
    iterations: int
    tiles_in_flight: int
    inflight_per_sm: float          # bytes
    needed_per_sm: float            # bytes: BW x L / SMs
    achievable_gbs: float           # bandwidth of a full wave (or the whole grid if < one wave)
    roofline_mem_s: float           # (a) bytes_moved / BW
    roofline_comp_s: float          # (a) flops / P
    waves_s: float                  # (b)+(c): the wave-by-wave roofline with achievable bandwidth
    tail_s: float                   # the tail wave's share of waves_s
    fill_s: float                   # (d)
    prologue_share: float           # ahead / n (fill_rows's figure)
    spill_s: float                  # (e)
    launch_s: float                 # (f)
    total_s: float                  # the estimate (inf when the config does not fit)
    bound: str                      # "memory" | "latency" | "compute" | "does not fit"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------- resources
def loop_tile_bytes(card: KernelCard, cfg: Config, point: Mapping[str, Any]) -> int:
    """Bytes one CTA loads per main-loop iteration: the card's `loop_tile_bytes` if it has
    one, the built-in cards' tiles, else bytes_moved / (grid x iterations)."""
    hook = getattr(card, "loop_tile_bytes", None)
    if callable(hook):
        return int(hook(cfg))
    e = 2 if cfg.get("dtype") in ("fp16", "bf16") else 4
    if card.name.startswith("decode_attention"):
        return cfg["BLOCK_T"] * (cfg["D_LATENT"] + cfg["D_ROPE"]) * e
    if card.name == "matmul":
        return (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * e
    n = max(1, card.loop_iterations(cfg, point)) * max(1, card.grid(cfg, point))
    return max(1, card.bytes_moved(cfg, point) // n)


def model_resources(card: KernelCard, spec: HardwareSpec, cfg: Config, point: Mapping[str, Any]) -> Resources:
    """Resident CTAs from the card's model; tiles ahead num_stages - 1 (0 unpipelined)."""
    p = predict(card, spec, cfg)
    return Resources(p.occupancy.blocks_per_sm, p.threads, loop_tile_bytes(card, cfg, point),
                     max(int(cfg["num_stages"]) - 1, 0), 0, "model")


def compiled_resources(card: KernelCard, spec: HardwareSpec, cfg: Config, point: Mapping[str, Any],
                       res: Any) -> Resources:
    """From a CompileResult (keep_ir=True for the pipelining report): occupancy of its real
    n_regs / total_shared, its n_spills, and the main loop's pipelined slot bytes and depth."""
    if res is None or not res.ok:
        return model_resources(card, spec, cfg, point)
    threads = 32 * int(cfg["num_warps"])
    occ = occupancy(spec, threads, res.n_regs, res.total_shared, with_headroom=False)
    tile, ahead = loop_tile_bytes(card, cfg, point), max(int(cfg["num_stages"]) - 1, 0)
    if getattr(res, "ttgir", None):
        from .pipeline import analyze
        rep = analyze(res)
        main = rep.main
        piped = [ld for ld in (main.loads if main else ()) if ld.pipelined]
        ahead = rep.ahead
        if piped:
            tile = sum(ld.slot_bytes for ld in piped) or tile
    return Resources(occ.blocks_per_sm, threads, tile, ahead, int(res.n_spills or 0), "compiled")


# ------------------------------------------------------------------ model
def estimate(card: KernelCard, cal: Calibration, cfg: Config, point: Mapping[str, Any],
             res: Resources, peak_flops: float) -> Estimate:
    """The estimate and its terms (see the module docstring for the formula)."""
    point = dict(point)
    sms, bw, lat = cal.sms, cal.bandwidth_gbs * 1e9, cal.latency_ns * 1e-9
    l2bw = cal.l2_bandwidth_gbs * 1e9
    grid = max(1, int(card.grid(cfg, point)))
    n = max(1, int(card.loop_iterations(cfg, point)))
    nbytes, flops = float(card.bytes_moved(cfg, point)), float(card.flops(cfg, point))
    launch_s = KERNELS_PER_LAUNCH.get(card.name, 1) * cal.launch_us * 1e-6
    mem_roof, comp_roof = nbytes / bw, flops / peak_flops
    B = res.blocks_per_sm
    k = max(1, min(res.ahead, n))
    F = res.tile_bytes * k
    needed = bw * lat / sms
    common = dict(config=dict(cfg), point=point, source=res.source, blocks_per_sm=B, grid=grid, iterations=n,
                  tiles_in_flight=k, needed_per_sm=needed, roofline_mem_s=mem_roof, roofline_comp_s=comp_roof,
                  prologue_share=round(min(1.0, res.ahead / n), 4), launch_s=launch_s)
    if B <= 0:
        inf = math.inf
        return Estimate(fits=False, slots=0, waves=0, tail_ctas=0, inflight_per_sm=0.0, achievable_gbs=0.0,
                        waves_s=inf, tail_s=inf, fill_s=0.0, spill_s=0.0, total_s=inf, bound="does not fit",
                        **common)
    slots = sms * B
    waves = -(-grid // slots)
    tail = grid - (waves - 1) * slots
    b_dram, b_loop, f_cta = nbytes / grid, float(res.tile_bytes) * n, flops / grid

    def achievable(c: int) -> float:
        return min(bw, c * F / lat)

    def wave(c: int) -> tuple[float, str]:
        mem = max(c * b_dram / achievable(c), c * b_loop / l2bw)
        comp = -(-c // sms) * f_cta / (peak_flops / sms)
        if comp >= mem:
            return comp, "compute"
        return mem, "latency" if achievable(c) < bw else "memory"

    full_s, full_bound = wave(slots)
    tail_s, tail_bound = wave(tail)
    waves_s = (waves - 1) * full_s + tail_s
    fill_s = waves * (lat + f_cta / n / (peak_flops / slots))
    spill_s = res.n_spills * 4 * 2 * res.threads * n * grid / l2bw
    total = waves_s + fill_s + spill_s + launch_s
    c_main = slots if waves > 1 else tail
    return Estimate(fits=True, slots=slots, waves=waves, tail_ctas=tail, inflight_per_sm=float(min(B, -(-c_main // sms)) * F),
                    achievable_gbs=achievable(c_main) / 1e9, waves_s=waves_s, tail_s=tail_s, fill_s=fill_s,
                    spill_s=spill_s, total_s=total, bound=full_bound if waves > 1 else tail_bound, **common)


def peak_flops(spec: HardwareSpec, product: str | None = None) -> float:
    """Dense fp16 tensor-core peak of the spec's product (FLOP/s)."""
    return spec.product(product).fp16_tensor_tflops * 1e12


def estimate_many(card: KernelCard, spec: HardwareSpec, cal: Calibration, cfgs: Sequence[Config],
                  points: Sequence[Mapping[str, Any]], compiled: Sequence[Any] | None = None,
                  product: str | None = None) -> list[list[Estimate]]:
    """estimates[i][j] for config i at point j; `compiled[i]` a CompileResult or None."""
    peak = peak_flops(spec, product)
    out = []
    for i, cfg in enumerate(cfgs):
        row = []
        for pt in points:
            r = (compiled_resources(card, spec, cfg, pt, compiled[i]) if compiled is not None
                 else model_resources(card, spec, cfg, pt))
            row.append(estimate(card, cal, cfg, pt, r, peak))
        out.append(row)
    return out


# ---------------------------------------------------------------- ranking
def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank (smallest value = rank 1)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            out[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson on tie-averaged ranks); nan if < 2 values or constant."""
    if len(a) != len(b):
        raise ValueError(f"spearman needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return math.nan
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else math.nan


def best_in_top(measured: Sequence[float], estimated: Sequence[float], k: int = 3) -> bool:
    """Is the measured-fastest item among the k smallest estimates? (ties on the estimate
    at the k-th place count as inside)."""
    if not measured:
        return False
    best = min(range(len(measured)), key=lambda i: measured[i])
    cut = sorted(estimated)[min(k, len(estimated)) - 1]
    return estimated[best] <= cut


def aggregate_rank(per_point_totals: Sequence[Sequence[float]]) -> list[float]:
    """One score per config over points: the geometric mean of total / best total at each
    point (1.0 = fastest everywhere); inf for a config that does not fit somewhere."""
    n_cfg = len(per_point_totals)
    if not n_cfg:
        return []
    n_pt = len(per_point_totals[0])
    logs = [0.0] * n_cfg
    for j in range(n_pt):
        col = [per_point_totals[i][j] for i in range(n_cfg)]
        best = min((v for v in col if math.isfinite(v)), default=math.inf)
        for i, v in enumerate(col):
            logs[i] += math.log(v / best) if math.isfinite(v) and math.isfinite(best) else math.inf
    return [math.exp(s / max(1, n_pt)) if math.isfinite(s) else math.inf for s in logs]
