"""How many global atomic adds a second does the L2 take, and in what unit -- a thread's element, a thread's
vector instruction, or the line a warp instruction touches? One fixed amount of work, 2^26 fp32 adds, scattered
by uniform random row ids into a table the L2 holds (16 MB), for rows of D = 1024, 32 and 8 fp32 and per-thread
vectors of VEC = 1, 2 and 4 elements (red.global.add.f32 / .v2.f32 / .v4.f32: the table's row pitch is given
only VEC-element aligned, so Triton vectorizes to VEC), on 4 and 8 warps; beside each, the same scatter with
plain stores (the traffic without the atomics). The ids are int32: uniform random (seed 0), or cyclic (token t to
row t mod V: the table written in order, over and over -- the same requests as a stream, no scatter).

    python3 scripts/atomic_rate_probe.py [--out FILE.json]          (GPU)
    occmodel rank --kernel scripts/atomic_rate_probe.py:row_scatter_add \\
        --launcher scripts/atomic_rate_probe.py --spec sm_90 -D VEC=1,2,4 --warps 4,8   (the model's view)

The file is also the kernel's launcher (POINTS, example_args with the ids as data, grid, bytes_moved). Medians
of triton.testing.do_bench (warm-up, its L2 flush before each repeat); the atomic results are checked against
torch's index_add_.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

import triton
import triton.language as tl

ELEMENTS = 1 << 26
TABLE = 1 << 22          # fp32 elements of the table: 16 MB, well inside an H100's / H200's 50 / 60 MB L2
POINTS = [{"D": d, "T": ELEMENTS // d, "V": TABLE // d, "order": o} for o in ("random", "cyclic") for d in (1024, 32, 8)]
BASELINE = {"VEC": 4, "ATOMIC": 1, "num_warps": 4, "num_stages": 1}
TILE = 2048              # elements a program: BLOCK_T x BLOCK_D


@triton.jit
def row_scatter_add(G, IDX, W, D: tl.constexpr, S: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr,
                    VEC: tl.constexpr, ATOMIC: tl.constexpr):
    """W[IDX[t], c] += G[t, c] (ATOMIC) or = G[t, c] for one [BLOCK_T, BLOCK_D] tile a program; W's row pitch S
    (a constexpr, as D) is a multiple of VEC elements and of no larger power of two, so each thread's atomics
    are VEC-wide."""
    ts = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cs = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(IDX + ts).to(tl.int64)
    g = tl.load(G + ts[:, None].to(tl.int64) * D + cs[None, :])
    rows = ids[:, None] * S
    if ATOMIC:
        tl.atomic_add(W + rows + cs[None, :], g, sem="relaxed")
    else:
        tl.store(W + rows + cs[None, :], g)


def pitch(d: int, vec: int) -> int:
    """The table's row pitch: a multiple of vec elements and of no larger power of two (up to 4)."""
    return d if vec >= 4 else d + vec


def tile(cfg, point) -> tuple[int, int]:
    bd = min(point["D"], 128)
    return TILE // bd, bd


@functools.lru_cache(maxsize=8)
def _ids(t: int, v: int, order: str = "random", device: str = "cpu"):
    import torch
    if order == "cyclic":
        return (torch.arange(t, dtype=torch.int64) % v).to(torch.int32).to(device)
    return torch.randint(0, v, (t,), generator=torch.Generator().manual_seed(0), dtype=torch.int32).to(device)


def example_args(cfg, point):
    """The ids on the CPU with the values the GPU run uses (rank counts the atomics' lines from them)."""
    import torch
    bt, bd = tile(cfg, point)
    s = pitch(point["D"], cfg["VEC"])
    return {"G": torch.empty((point["T"], point["D"]), dtype=torch.float32, device="meta"),
            "IDX": _ids(point["T"], point["V"], point["order"]),
            "W": torch.empty((point["V"] * s,), dtype=torch.float32, device="meta"), "D": point["D"], "S": s,
            "BLOCK_T": bt, "BLOCK_D": bd}


def grid(cfg, point):
    bt, bd = tile(cfg, point)
    return (point["T"] // bt, point["D"] // bd)


def loop_iterations(cfg, point):
    return 1


def bytes_moved(point):
    """The ids and G read once; the table (L2-resident) written back once."""
    return point["T"] * 4 + ELEMENTS * 4 + TABLE * 4


def flops(point):
    return ELEMENTS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON summary here too")
    args = ap.parse_args(argv)
    import torch
    from triton.testing import do_bench

    runs = []
    for pt in POINTS:
        d, t, v = pt["D"], pt["T"], pt["V"]
        g = torch.rand((t, d), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1)) * 1e-3
        ids = _ids(t, v, pt["order"], "cuda")
        ref = torch.zeros((v, d), device="cuda").index_add_(0, ids.long(), g)
        for vec in (1, 2, 4):
            s = pitch(d, vec)
            w = torch.zeros((v * s,), device="cuda")
            for warps in (4, 8):
                for atomic in (1, 0):
                    cfg = dict(BASELINE, VEC=vec, ATOMIC=atomic, num_warps=warps)
                    bt, bd = tile(cfg, pt)

                    def go():
                        row_scatter_add[grid(cfg, pt)](g, ids, w, d, s, BLOCK_T=bt, BLOCK_D=bd, VEC=vec, ATOMIC=atomic,
                                                       num_warps=warps, num_stages=1)

                    ok = None
                    if atomic:
                        w.zero_()
                        go()
                        ok = bool(torch.allclose(w.view(v, s)[:, :d], ref, rtol=1e-4, atol=1e-6))
                    t1 = do_bench(go, warmup=50, rep=300, return_mode="median")
                    t2 = do_bench(go, warmup=50, rep=300, return_mode="median")
                    run = {"D": d, "T": t, "V": v, "order": pt["order"], "VEC": vec, "pitch": s, "num_warps": warps, "atomic": atomic, "ok": ok,
                           "us": [round(t1 * 1e3, 2), round(t2 * 1e3, 2)],
                           "g_adds_per_s": round(ELEMENTS / (min(t1, t2) * 1e-3) / 1e9, 1)}
                    runs.append(run)
                    print(json.dumps(run), flush=True)
            del w
        del g, ref
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
           "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size, "elements": ELEMENTS, "runs": runs}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
