"""Everything that touches a GPU lives here: device facts, the correctness gate,
and timing (CUDA events around CUDA-graph replays, L2 flushed before every
sample, inputs rotated so repeated launches do not measure the cache).

Imports torch at module import: import this module only where a GPU is wanted
(validate). `require_gpu()` turns "no GPU" into a NoGPUError (exit 2).
"""

from __future__ import annotations

import gc
import math
import platform
import random
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch

from .card import Config, KernelCard
from .errors import NoGPUError

# relative L2 error vs a float32 reference, by the inputs' dtype. fp8 (e4m3 operands, the reference on the
# same quantised values): only accumulation error is left, but Hopper's fp8 MMA accumulates with about 14
# bits (DeepSeek-V3 technical report, sec. 3.3.2), so fp8 gets bf16's 2e-2, not fp32's 1e-4.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 2e-2, "fp8": 2e-2}


def require_gpu() -> torch.device:
    if not torch.cuda.is_available():
        raise NoGPUError("validate needs a CUDA GPU and none is visible (torch.cuda.is_available() is False); "
                         "use --dry-run to see the plan on this machine")
    return torch.device("cuda")


def device_info() -> dict[str, Any]:
    import triton
    props = torch.cuda.get_device_properties(0)
    info = {"gpu": props.name, "compute_capability": f"{props.major}.{props.minor}",
            "sms": props.multi_processor_count, "memory_gib": round(props.total_memory / 2**30, 1),
            "l2_bytes": getattr(props, "L2_cache_size", None), "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda, "triton": triton.__version__, "python": platform.python_version()}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().split(", ")
        info["driver"], info["max_sm_clock"] = out[0], out[1]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["driver"] = "unknown"
    return info


# --------------------------------------------------------------- correctness
@dataclass(frozen=True)
class Correctness:
    ok: bool
    rel_error: float          # ||out - ref|| / ||ref|| (nan when not checked)
    tolerance: float
    n_bad: int                # elements off by more than 10 x tolerance x max|ref|, or NaN
    n_total: int
    checked: bool = True      # False: the kernel has no reference; it ran but was not checked


def check_correct(card: KernelCard, cfg: Config, point: Mapping[str, Any], seed: int = 0) -> Correctness:
    """Run the kernel on fresh random inputs after poisoning the allocator with NaN,
    and compare with the kernel's float32 torch reference (without one: run it, and
    return checked=False)."""
    inputs = card.make_inputs(cfg, point, device="cuda", seed=seed)
    poison = torch.full((64 * 2**20,), float("nan"), device="cuda")     # 256 MB of NaN back into the cache
    del poison
    out = card.launch(inputs, cfg)
    torch.cuda.synchronize()
    if not card.has_reference():
        n = out.numel() if isinstance(out, torch.Tensor) else 0
        return Correctness(ok=True, rel_error=float("nan"), tolerance=float("nan"), n_bad=0, n_total=n, checked=False)
    return compare(out, card.reference(inputs), cfg, point)


def compare(out: torch.Tensor, ref: torch.Tensor, cfg: Config, point: Mapping[str, Any] | None = None) -> Correctness:
    """The correctness gate: `out` (the kernel's output) against `ref` (its float32 reference).
    ok when the relative L2 error over the reference's finite elements is within the tolerance (see
    `tolerance`), every infinite reference element (a masked logit's -inf) is matched by the same
    infinity, and no element is NaN or off by more than 10 x tolerance x max|finite ref|."""
    ref = ref.float()
    tol = tolerance(cfg, _dtype_name(out), point)   # the output's own dtype read before it is upcast
    out = out.float()
    inf = torch.isinf(ref)
    diff = torch.where(inf, torch.zeros_like(out), out - ref)
    diff = torch.nan_to_num(diff, nan=1e30, posinf=1e30, neginf=-1e30)   # out inf / NaN where ref is finite
    finite_ref = torch.where(inf, torch.zeros_like(ref), ref)
    rel = float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(finite_ref))
    scale = float(finite_ref.abs().max()) if ref.numel() else 0.0
    n_bad = int(((diff.abs() > 10 * tol * max(scale, 1e-6)) | torch.isnan(out) | (inf & (out != ref))).sum())
    return Correctness(ok=(rel <= tol and n_bad == 0 and math.isfinite(rel)), rel_error=rel, tolerance=tol,
                       n_bad=n_bad, n_total=out.numel())


def tolerance(cfg: Config, out_dtype: str, point: Mapping[str, Any] | None = None) -> float:
    """The relative-error tolerance: of the inputs' dtype -- the config's dtype parameter (a card's), else
    the workload point's (a launcher's POINTS: fp32 states computed from bf16 inputs carry bf16's error)
    -- else of the kernel output's dtype (fp32 1e-4, fp16 1e-2, bf16 2e-2), else 1e-2."""
    for named in (cfg.get("dtype"), (point or {}).get("dtype")):
        if str(named) in TOLERANCE:
            return TOLERANCE[str(named)]
    return TOLERANCE.get(out_dtype, 1e-2)


def _dtype_name(t) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}.get(getattr(t, "dtype", None), "")


# -------------------------------------------------------------------- timing
class Bench:
    """Times one config at one workload point: a CUDA graph of `n` launches over
    rotating input sets, replayed after an L2 flush, timed with CUDA events."""

    def __init__(self, fn: Callable[[dict], Any], input_sets: list[dict], flush_bytes: int,
                 target_sample_s: float = 1e-3, max_launches: int = 200):
        self.fn, self.sets = fn, input_sets
        self.flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
        for s in input_sets:                     # warm-up: compile, autotune-free first launch
            fn(s)
        torch.cuda.synchronize()
        single = self._eager_time(3)
        self.n = int(min(max_launches, max(len(input_sets), math.ceil(target_sample_s / max(single, 1e-7)))))
        self.graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn(input_sets[0])                    # a launch on the side stream before capture
            with torch.cuda.graph(self.graph, stream=stream):
                for i in range(self.n):
                    fn(input_sets[i % len(input_sets)])
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()

    def _eager_time(self, reps: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for r in range(reps):
            self.flush.zero_()
            start.record()
            self.fn(self.sets[r % len(self.sets)])
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return sorted(times)[len(times) // 2]

    def sample(self) -> float:
        """Seconds per launch: one graph replay of n launches, L2 flushed before it."""
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush.zero_()
        start.record()
        self.graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / self.n


def fresh_memory(rng: random.Random) -> torch.Tensor:
    """GPU only. Start a block on fresh memory: give the caching allocator's free blocks back
    to the driver and hold a pad of random size (2-64 MiB), so the block's new allocations do
    not simply reuse the previous block's addresses. Keep the returned pad alive for the block."""
    gc.collect()
    torch.cuda.empty_cache()
    return torch.empty(rng.randrange(1, 33) * 2 * 2**20, dtype=torch.uint8, device="cuda")


def time_blocks(build: Callable[[int], Mapping[str, Any]], schedule: list[list[list[str]]], seed: int = 0,
                warm_replays: int = 2, new_block: Callable[[random.Random], Any] | None = None
                ) -> dict[str, list[list[float]]]:
    """Time independent blocks (stats' design). For block b: drop the previous block's benches,
    `new_block` (fresh memory), build(b) -> name -> Bench (fresh input sets and CUDA graphs;
    each Bench warms its config up), `warm_replays` untimed samples of each (re-warm), then the
    rounds of schedule[b], each timing every name once in its order (stats.block_schedule).
    Returns name -> per-block lists of seconds per launch. GPU only with the default
    `new_block` (fresh_memory); anything with .sample() works as a bench."""
    new_block = new_block or fresh_memory
    rng = random.Random(seed)
    samples: dict[str, list[list[float]]] = {}
    for b, rounds in enumerate(schedule):
        pad = new_block(rng)
        benches = build(b)
        for bench in benches.values():
            for _ in range(warm_replays):
                bench.sample()
        for order in rounds:
            for name in order:
                samples.setdefault(name, [[] for _ in schedule])[b].append(benches[name].sample())
        del benches, pad
    return samples


def input_sets(card: KernelCard, cfg: Config, point: Mapping[str, Any], l2_bytes: int, seed: int,
               budget_bytes: int = 8 * 2**30) -> list[dict]:
    """Enough distinct input sets that cycling through them touches >= 3 x L2."""
    first = card.make_inputs(cfg, point, device="cuda", seed=seed)
    per_set = max(1, card.bytes_moved(cfg, point) or _tensor_bytes(first))
    k = int(min(32, max(1, math.ceil(3 * l2_bytes / per_set)), max(1, budget_bytes // per_set)))
    return [first] + [card.make_inputs(cfg, point, device="cuda", seed=seed + 1 + i) for i in range(k - 1)]


def _tensor_bytes(inputs: Mapping[str, Any]) -> int:
    """Bytes of the tensors in an input set (when the kernel states no bytes_moved)."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def copy_bandwidth(nbytes: int = 2 * 2**30, reps: int = 20) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    del src, dst
    return 2 * nbytes / sorted(times)[len(times) // 2]


def wall_clock() -> float:
    torch.cuda.synchronize()
    return time.perf_counter()
