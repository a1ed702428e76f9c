"""Benchmark: vectorised occupancy over a 1,000,000-point grid (target: under 1 s on 2 cores).

    python benchmarks/bench_occupancy_grid.py [--spec sm_120] [--repeats 7]

The grid: 100 block sizes x 100 register counts x 100 shared-memory sizes,
carveout = driver default. Prints the median of `--repeats` timed runs after
one warm-up, and the min/max spread.
"""

import argparse
import statistics
import time

import numpy as np

from occmodel import load_spec, occupancy_grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="sm_120")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    threads = np.linspace(32, 1024, 100).astype(np.int64)[:, None, None]
    regs = np.linspace(16, 255, 100).astype(np.int64)[None, :, None]
    smem = np.linspace(0, spec.sm.shared_memory_per_block_optin, 100).astype(np.int64)[None, None, :]
    occupancy_grid(spec, threads, regs, smem)                       # warm-up
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out = occupancy_grid(spec, threads, regs, smem)
        times.append(time.perf_counter() - t0)
    n = out["blocks_per_sm"].size
    print(f"{n:,} points on {spec.name}: median {statistics.median(times) * 1e3:.0f} ms "
          f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}; {args.repeats} runs), "
          f"{n / statistics.median(times) / 1e6:.1f} M points/s")


if __name__ == "__main__":
    main()
