"""Does a scatter-add into a freshly zero-filled target pay to read the target back from DRAM once the target
outgrows the L2 (rank.atomic_fill_bytes)? One fixed job -- T token rows of D fp32 added with atomics into the
rows ids[t] of a [V, D] table that torch.zeros just wrote (an embedding's backward, Liger-Kernel's
embedding_backward_kernel's shape: one [BLOCK_T, BLOCK_D] tile a program, no loop) -- for tables of 32 MB to
1 GB. The ids are uniform over V (seed 0). Timed: the zero-fill and the scatter together, and the zero-fill
alone; their difference is the scatter's time in the launch it runs in.

    python3 scripts/atomic_fill_probe.py [--out FILE.json]          (GPU)
    occmodel rank --kernel scripts/atomic_fill_probe.py:row_scatter_add \\
        --launcher scripts/atomic_fill_probe.py --spec sm_90        (the model's view, any machine)

The file is also the kernel's launcher (POINTS, example_args with the ids as data, grid, bytes_moved,
secondary_kernels: the zero-fill). Medians of triton.testing.do_bench (warm-up, its L2 flush before each
repeat).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

import triton
import triton.language as tl

T, D = 65536, 1024
POINTS = [{"V": v, "T": T, "D": D} for v in (8192, 16384, 65536, 262144)]
BASELINE = {"BLOCK_T": 32, "BLOCK_D": 128, "num_warps": 4, "num_stages": 1}
FILL = 4096      # elements a CTA of the zero-fill, as declared to rank


@triton.jit
def row_scatter_add(G, IDX, W, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """W[IDX[t], :] += G[t, :] for one [BLOCK_T, BLOCK_D] tile a program (T a multiple of BLOCK_T, D of
    BLOCK_D)."""
    ts = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cs = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(IDX + ts).to(tl.int64)
    g = tl.load(G + ts[:, None].to(tl.int64) * D + cs[None, :])
    tl.atomic_add(W + ids[:, None] * D + cs[None, :], g, sem="relaxed")


@functools.lru_cache(maxsize=8)
def _ids(t: int, v: int, device: str = "cpu"):
    import torch
    return torch.randint(0, v, (t,), generator=torch.Generator().manual_seed(0), dtype=torch.int64).to(device)


def example_args(cfg, point):
    """The ids on the CPU with the values the GPU run uses (rank counts the atomics' lines from them)."""
    import torch
    return {"G": torch.empty((point["T"], point["D"]), dtype=torch.float32, device="meta"),
            "IDX": _ids(point["T"], point["V"]),
            "W": torch.empty((point["V"], point["D"]), dtype=torch.float32, device="meta"), "D": point["D"]}


def grid(cfg, point):
    return (point["T"] // cfg["BLOCK_T"], point["D"] // cfg["BLOCK_D"])


def loop_iterations(cfg, point):
    return 1


def bytes_moved(point):
    """The ids and G read once, the table written once (by its zero-fill, declared below)."""
    return point["T"] * (8 + 4 * point["D"]) + point["V"] * point["D"] * 4


def flops(point):
    return point["T"] * point["D"]


def secondary_kernels(cfg, point):
    n = point["V"] * point["D"]
    return [{"name": "zero_fill", "grid": -(-n // FILL), "iterations": 1, "tile_bytes": 4 * FILL, "dram_bytes": 4 * FILL}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON summary here too")
    args = ap.parse_args(argv)
    import torch
    from triton.testing import do_bench

    cfg = BASELINE
    runs = []
    g = torch.rand((T, D), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1)) * 1e-3
    for pt in POINTS:
        v = pt["V"]
        ids = _ids(T, v, "cuda")
        w = torch.empty((v, D), device="cuda")

        def both():
            w.zero_()
            row_scatter_add[grid(cfg, pt)](g, ids, w, D, BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"],
                                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])

        both()
        ref = torch.zeros((v, D), device="cuda").index_add_(0, ids, g)
        ok = bool(torch.allclose(w, ref, rtol=1e-5, atol=1e-6))
        t_both = do_bench(both, warmup=50, rep=400, return_mode="median")
        t_fill = do_bench(lambda: w.zero_(), warmup=50, rep=400, return_mode="median")
        t_both2 = do_bench(both, warmup=50, rep=400, return_mode="median")
        run = {"point": pt, "table_mb": round(v * D * 4 / 1e6, 1),
               "distinct_rows": int(torch.unique(ids).numel()), "ok": ok,
               "both_us": [round(t_both * 1e3, 2), round(t_both2 * 1e3, 2)], "fill_us": round(t_fill * 1e3, 2),
               "scatter_us": round((min(t_both, t_both2) - t_fill) * 1e3, 2)}
        runs.append(run)
        print(json.dumps(run), flush=True)
        del w, ref
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
           "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size, "config": cfg, "runs": runs}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
