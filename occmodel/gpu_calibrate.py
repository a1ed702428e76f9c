"""The calibration micro-benchmarks (torch + Triton, on the local GPU; ~10-20 s).

* DRAM bandwidth: a device-to-device copy of 1 GiB (bytes read + written), as validate measures it.
* L2 bandwidth: a streaming-read Triton kernel whose 16 MiB working set stays in L2,
  many CTAs, pipelined.
* loaded latency: the same streaming kernel over 1 GiB (DRAM) with num_stages=1, so
  each CTA has exactly one tile in flight (in-order issue: the next load follows the
  add that waits for the previous one); Little's law read backwards gives
  latency = CTAs x tile bytes / measured bandwidth. Run at 1, 2, 4 and 8 CTAs per SM
  (4 KB tiles), and at 16 / 8 / 16 CTAs per SM with 4 / 16 / 16 KB tiles: the latency
  curve, latency against bytes in flight per SM (4 KB .. 256 KB), which rank reads at
  each config's own load. The single figure ``latency_ns`` (for files and models without
  the curve) is the latency at the heaviest 4 KB-tile load up to 8 CTAs/SM whose bandwidth
  stays under 85 % of the copy bandwidth.
* L2 latency: the same probe (one CTA per SM, one tile in flight) on the 16 MiB buffer.
* shared-memory bandwidth: 128 B per clock per SM x SMs x the max SM clock nvidia-smi
  reports (not a benchmark; the clock from the spec's product when nvidia-smi is absent).
* launch overhead: an empty kernel captured 200 times in a CUDA graph; replay time / 200.

Imports torch at import time: import it only through :func:`occmodel.calibrate.measure`.
"""

from __future__ import annotations

import statistics

import torch
import triton
import triton.language as tl

from . import gpu
from .calibrate import DEFAULT_CLOCK_MHZ, Calibration, CalibrationError, shared_bandwidth_gbs
from .errors import SpecError
from .spec import HardwareSpec


@triton.jit
def _stream(X, OUT, n_tiles, iters, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, iters):
        tile = (pid * iters + i) % n_tiles
        acc += tl.load(X + tile.to(tl.int64) * BLOCK + offs).to(tl.float32)
    tl.store(OUT + pid * BLOCK + offs, acc)


@triton.jit
def _empty(X):
    pass


def _time(fn, reps: int = 7) -> float:
    """Median seconds of fn() over reps, after one warm-up."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def stream_bandwidth(buf: torch.Tensor, ctas: int, block: int, iters: int, num_warps: int = 4,
                     num_stages: int = 1) -> float:
    """Bytes/s read by `ctas` CTAs each reading `iters` tiles of `block` fp32 from `buf` (wrapping)."""
    n_tiles = buf.numel() // block
    out = torch.empty(ctas * block, dtype=torch.float32, device=buf.device)

    def run():
        _stream[(ctas,)](buf, out, n_tiles, iters, BLOCK=block, num_warps=num_warps, num_stages=num_stages)

    t = _time(run)
    return ctas * iters * block * 4 / t


def launch_overhead(n: int = 200) -> float:
    """Seconds per empty-kernel launch inside a CUDA graph."""
    x = torch.empty(1, device="cuda")
    _empty[(1,)](x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        _empty[(1,)](x)
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(n):
                _empty[(1,)](x)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return _time(graph.replay) / n


def measure(spec: HardwareSpec, quick: bool = False, progress=None) -> Calibration:
    """All six figures on the local GPU (NoGPUError without one)."""
    gpu.require_gpu()
    say = progress or (lambda m: None)
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    if (props.major, props.minor) != tuple(spec.compute_capability):
        raise SpecError(f"the local GPU {props.name} is cc {props.major}.{props.minor}, spec {spec.name} is cc "
                        f"{spec.compute_capability[0]}.{spec.compute_capability[1]}; pass --spec "
                        f"sm_{props.major}{props.minor}")
    say("copy bandwidth")
    bw = gpu.copy_bandwidth(nbytes=(256 if quick else 1024) * 2**20, reps=5 if quick else 10)

    say("L2 bandwidth")
    small = torch.ones(4 * 2**20, dtype=torch.float32, device="cuda")        # 16 MiB: fits any L2 >= 24 MB
    l2 = stream_bandwidth(small, ctas=sms * 8, block=1024, iters=64 if quick else 256, num_stages=3)

    say("L2 latency")
    l2_lat = _latency(small, sms, per_sm=1, block=1024, total=2**22 if quick else 2**24)[0]
    del small

    say("loaded latency")
    big = torch.ones((256 if quick else 1024) * 2**18, dtype=torch.float32, device="cuda")
    lats, probes, curve = [], [], []
    for per_sm, block in CURVE_PROBES:               # one tile in flight per CTA
        lat, got = _latency(big, sms, per_sm, block=block, total=2**24 if quick else 2**26)
        probes.append(f"{per_sm}/SM x {block * 4 // 1024} KB: {lat * 1e9:.0f} ns at {got / 1e9:.0f} GB/s")
        curve.append((per_sm * block * 4, round(lat * 1e9, 1)))
        if block == 1024 and per_sm <= 8 and got < 0.85 * bw:
            lats.append(lat)
    del big
    if not lats:
        raise CalibrationError("the latency probe was never latency-bound (bandwidth above 85% of the copy figure)")

    say("launch overhead")
    launch = launch_overhead()
    product = spec.product_for_gpu(props.name)
    clock = _max_sm_clock_mhz() or (product.boost_clock_mhz if product else None) or DEFAULT_CLOCK_MHZ
    return Calibration(spec=spec.name, gpu=props.name, sms=sms, bandwidth_gbs=round(bw / 1e9, 1),
                       latency_ns=round(lats[-1] * 1e9, 1), launch_us=round(launch * 1e6, 3),
                       l2_bandwidth_gbs=round(l2 / 1e9, 1), l2_latency_ns=round(l2_lat * 1e9, 1),
                       shared_bandwidth_gbs=shared_bandwidth_gbs(sms, clock),
                       latency_curve=tuple(sorted(curve)),
                       source=f"measured on {props.name} (cc {props.major}.{props.minor}, {sms} SMs) with "
                              f"torch {torch.__version__}, triton {triton.__version__}"
                              + f"; latency probes ({'; '.join(probes)}): the heaviest under 85% of copy; "
                              f"L2 latency {l2_lat * 1e9:.0f} ns; SM clock {clock:g} MHz"
                              + (" (--quick)" if quick else ""))


# (CTAs per SM, fp32 elements per tile): bytes in flight per SM 4 KB .. 256 KB (the loads the
# configs of real kernels keep in flight: a 4 KB row chunk on one CTA up to 16 CTAs of 16 KB tiles)
CURVE_PROBES = ((1, 1024), (2, 1024), (4, 1024), (8, 1024), (16, 1024), (8, 4096), (16, 4096))


def _latency(buf: torch.Tensor, sms: int, per_sm: int, block: int, total: int) -> tuple[float, float]:
    """(latency s, bandwidth B/s) of sms x per_sm CTAs each with one `block`-float tile in flight."""
    ctas = sms * per_sm
    got = stream_bandwidth(buf, ctas=ctas, block=block, iters=max(16, total // (ctas * block)), num_stages=1)
    return ctas * block * 4 / got, got


def _max_sm_clock_mhz() -> float | None:
    """nvidia-smi's max SM clock (MHz), None when it cannot be read."""
    try:
        return float(str(gpu.device_info().get("max_sm_clock", "")).split()[0])
    except (ValueError, IndexError):
        return None
