"""Batched searchsorted / bucketize (torch.searchsorted(boundaries, queries, right=RIGHT) with
[B, M] boundaries), a bare @triton.jit kernel + its launcher.

    out[b, i] = #{j : boundaries[b, j] <  queries[b, i]}     (right=False: the first j with
                                                               boundaries[b, j] >= the query)
    out[b, i] = #{j : boundaries[b, j] <= queries[b, i]}     (right=True)

boundaries: [B, M] sorted ascending along M (unit stride along M, any row stride), fp32,
int64 or int32 keys (duplicates allowed); queries: [B, N] of the same dtype (unit stride
along N, any row stride); out: [B, N] int64 (or int32: torch's out_int32), contiguous.
M >= 1, and 0 <= M < 2^31 - 2^20 so the int32 positions never overflow.

Grid (cdiv(N, BLOCK), B): program (x, b) owns BLOCK consecutive queries of row b (one
coalesced load, one coalesced store) and searches row b's boundaries for all of them at
once, every query running the same, static number of steps (no divergence; only the
addresses are data dependent). The search is a branchless "uniform" binary search: pos
counts the boundaries known to be < the query (<= for RIGHT); for step = 2^(S-1), ..., 2, 1
it gathers boundaries[pos + step - 1] (masked past the search range) and adds step when
that one is still < the query. S = bit_length(range) steps: log2(M) dependent gathers, each
one tl.load of BLOCK scattered addresses (small M: L1 / L2 hits; large M: the first levels
are shared by every query and stay in L2, the last ones are random DRAM sectors).

COARSE (the method knob) chooses the formulation:
  * COARSE = 0: the plain binary search over all M boundaries (bit_length(M) gathers).
  * COARSE = C > 0: a two-level search. A coarse pass compares every query with C
    splitters sampled every W = cdiv(M, C) boundaries (boundaries[W - 1], [2W - 1], ...):
    CHUNK splitters at a time are loaded (the same addresses for every query: broadcast
    loads, independent of the queries, so the loop's loads can be pipelined) and compared
    as a [BLOCK, CHUNK] tile, the counts summed into the query's bucket c. The fine pass
    then binary-searches only that bucket, [c W, min(c W + W - 1, M)): bit_length(W - 1)
    dependent gathers instead of bit_length(M) -- C compares a query buy log2(C) fewer
    gathers. With C >= M (a small bin table) W = 1 and the search is all compares, no gather.
    CHUNK = clamp(1024 num_warps / BLOCK, 1, C) keeps the compare tile at 32 values a thread.

Tunables: BLOCK (queries per CTA, power of two >= 16), COARSE (0 or a power of two >= 16),
num_warps, num_stages (nothing is pipelined: each gather's address depends on the previous
one, and triton 3.6 leaves the splitter loads alone; num_stages 1 and 3 give the same PTX).
Problem parameters (a workload point): B, M, N, dtype ("fp32" / "int64" / "int32"),
right (0 / 1), out_int32 (0 / 1, default 0).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(BND, Q, OUT, M, N, stride_bb, stride_qb, stride_ob, W, STEPS, TOP,
            RIGHT: tl.constexpr, BLOCK: tl.constexpr, COARSE: tl.constexpr, CHUNK: tl.constexpr):
    pid_n = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    offs = pid_n * BLOCK + tl.arange(0, BLOCK)
    q_ok = offs < N
    bnd = BND + row * stride_bb
    v = tl.load(Q + row * stride_qb + offs, mask=q_ok)

    if COARSE > 0:
        # coarse pass: the bucket = how many of the COARSE splitters lie below the query
        cnt = tl.zeros([BLOCK], dtype=tl.int32)
        for s0 in range(0, COARSE, CHUNK):
            sidx = (s0 + tl.arange(0, CHUNK) + 1) * W - 1
            s_ok = sidx < M
            sv = tl.load(bnd + sidx, mask=s_ok)
            if RIGHT:
                below = (sv[None, :] <= v[:, None]) & s_ok[None, :]
            else:
                below = (sv[None, :] < v[:, None]) & s_ok[None, :]
            cnt += tl.sum(below.to(tl.int32), axis=1)
        pos = cnt * W
        hi = tl.minimum(pos + W - 1, M)
    else:
        pos = tl.zeros([BLOCK], dtype=tl.int32)
        hi = tl.zeros([BLOCK], dtype=tl.int32) + M

    # fine pass: a uniform binary search of [pos, hi), STEPS dependent gathers
    for k in range(STEPS):
        step = TOP >> k
        idx = pos + step - 1
        ok = q_ok & (idx < hi)
        b = tl.load(bnd + idx, mask=ok)
        if RIGHT:
            go = ok & (b <= v)
        else:
            go = ok & (b < v)
        pos = tl.where(go, pos + step, pos)

    tl.store(OUT + row * stride_ob + offs, pos.to(OUT.dtype.element_ty), mask=q_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp32", "int64", "int32")
TUNABLES = ("BLOCK", "COARSE", "num_warps", "num_stages")
BASELINE = {"BLOCK": 1024, "COARSE": 0, "num_warps": 4, "num_stages": 1}

POINTS = [
    # histogram binning of activations (a calibration / observer pass): 255 sorted bin edges,
    # 64M fp32 values, int32 bin ids (bincount's input): 256 MiB in, 256 MiB out
    {"B": 1, "M": 255, "N": 64 * 2**20, "dtype": "fp32", "right": 1, "out_int32": 1},
    # per-row bucketize for hashed embedding-bag ids: 1024 rows of 4096 int64 bucket bounds
    # (32 MiB: fits L2), 8192 ids a row: 64 MiB in, 64 MiB out
    {"B": 1024, "M": 4096, "N": 8192, "dtype": "int64", "right": 0, "out_int32": 0},
    # one huge sorted key array (64 MiB fp32, larger than L2), 4M random queries: the last
    # levels of every search are random DRAM sectors
    {"B": 1, "M": 16 * 2**20, "N": 4 * 2**20, "dtype": "fp32", "right": 0, "out_int32": 0},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "int64": torch.int64, "int32": torch.int32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 8 if name == "int64" else 4


def _check_cfg(cfg) -> None:
    b, c = cfg["BLOCK"], cfg["COARSE"]
    if b < 16 or b & (b - 1):
        raise ValueError(f"BLOCK={b} must be a power of two >= 16")
    if c != 0 and (c < 16 or c & (c - 1)):
        raise ValueError(f"COARSE={c} must be 0 or a power of two >= 16")
    w = cfg.get("num_warps", 4)
    if w < 1 or w & (w - 1):
        raise ValueError(f"num_warps={w} must be a power of two")


def _chunk(cfg) -> int:
    """Splitters compared per coarse step: a [BLOCK, CHUNK] tile of 32 values a thread."""
    if cfg["COARSE"] == 0:
        return 1
    return max(1, min(cfg["COARSE"], 1024 * cfg.get("num_warps", 4) // cfg["BLOCK"]))


def search_plan(M: int, cfg) -> tuple[int, int, int]:
    """(W, STEPS, TOP): the splitter spacing (the bucket width), the fine pass's gathers
    and its first step (2^(STEPS-1), 0 when STEPS is 0)."""
    if cfg["COARSE"] == 0:
        W, rng = 1, M
    else:
        W = triton.cdiv(M, cfg["COARSE"])
        rng = W - 1
    steps = int(rng).bit_length()
    return W, steps, (1 << (steps - 1)) if steps else 0


def _kernel_args(bnd, q, out, right: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    M = bnd.shape[1]
    W, steps, top = search_plan(M, cfg)
    return dict(BND=bnd, Q=q, OUT=out, M=M, N=q.shape[1], stride_bb=bnd.stride(0), stride_qb=q.stride(0),
                stride_ob=out.stride(0), W=W, STEPS=steps, TOP=top, RIGHT=bool(right), BLOCK=cfg["BLOCK"],
                COARSE=cfg["COARSE"], CHUNK=_chunk(cfg))


def searchsorted(boundaries, queries, *, right=False, out_int32=False, BLOCK=1024, COARSE=0, num_warps=4,
                 num_stages=1):
    """torch.searchsorted(boundaries, queries, right=right, out_int32=out_int32) for
    boundaries [B, M] (or [M]) and queries [B, N] (or [N]) of one dtype: fp32 / int64 / int32."""
    import torch
    squeeze = boundaries.dim() == 1 and queries.dim() == 1
    if squeeze:
        boundaries, queries = boundaries[None], queries[None]
    if boundaries.dim() != 2 or queries.dim() != 2 or boundaries.shape[0] != queries.shape[0]:
        raise ValueError(f"expected boundaries [B, M] and queries [B, N]; got {tuple(boundaries.shape)}, "
                         f"{tuple(queries.shape)}")
    if boundaries.dtype not in (torch.float32, torch.int64, torch.int32) or queries.dtype != boundaries.dtype:
        raise ValueError(f"boundaries and queries must share one dtype of fp32 / int64 / int32; got "
                         f"{boundaries.dtype}, {queries.dtype}")
    B, M = boundaries.shape
    N = queries.shape[1]
    if M < 1 or M >= 2**31 - 2**20:
        raise ValueError(f"M={M} must be in [1, 2^31 - 2^20)")
    cfg = {"BLOCK": BLOCK, "COARSE": COARSE, "num_warps": num_warps}
    _check_cfg(cfg)
    if boundaries.stride(1) != 1:
        boundaries = boundaries.contiguous()
    if queries.stride(1) != 1:
        queries = queries.contiguous()
    out = torch.empty((B, N), dtype=torch.int32 if out_int32 else torch.int64, device=queries.device)
    if B and N:
        _kernel[(triton.cdiv(N, BLOCK), B)](**_kernel_args(boundaries, queries, out, right, cfg),
                                            num_warps=num_warps, num_stages=num_stages)
    return out[0] if squeeze else out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Sorted boundaries and queries drawn on the CPU (seeded), then moved. fp32: sorted
    normal keys, normal queries (a few beyond either end); int keys: sorted uniform ints
    over a range of ~4 M values (point "key_range" to change it: a small one gives many
    ties), queries over the same range widened by a tenth on both sides; every tenth query
    equal to a boundary of its row (exact hits, where RIGHT matters)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    B, M, N, dt = point["B"], point["M"], point["N"], _torch_dtype(point["dtype"])
    if dt == torch.float32:
        bnd = torch.randn((B, M), generator=gen).sort(dim=1).values
        q = torch.randn((B, N), generator=gen) * 1.2
    else:
        R = int(point.get("key_range", 4 * M))
        bnd = torch.randint(0, R, (B, M), generator=gen, dtype=torch.int64).sort(dim=1).values
        q = torch.randint(-(R // 10) - 1, R + R // 10 + 1, (B, N), generator=gen, dtype=torch.int64)
        bnd, q = bnd.to(dt), q.to(dt)
    hits = torch.randint(0, M, (B, (N + 9) // 10), generator=gen)
    q[:, ::10] = torch.gather(bnd, 1, hits)
    return {"boundaries": bnd.to(device), "queries": q.to(device), "right": bool(point.get("right", 0)),
            "out_int32": bool(point.get("out_int32", 0))}


def launch(inputs, cfg):
    return searchsorted(inputs["boundaries"], inputs["queries"], right=inputs["right"],
                        out_int32=inputs["out_int32"], BLOCK=cfg["BLOCK"], COARSE=cfg["COARSE"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """torch.searchsorted on the CPU, as int64 (exact: the indices are integers)."""
    import torch
    return torch.searchsorted(inputs["boundaries"].cpu(), inputs["queries"].cpu(),
                              right=inputs["right"]).to(inputs["queries"].device)


def torch_baseline(inputs):
    import torch
    return torch.searchsorted(inputs["boundaries"], inputs["queries"], right=inputs["right"],
                              out_int32=inputs["out_int32"])


def bytes_moved(point) -> int:
    """Queries read once, out written once, every boundary row read once (the least any search
    must touch when the queries cover the rows; at the huge-array point the random last
    levels fetch ~log2(M / N) more 32-byte sectors per query than this)."""
    B, M, N, e = point["B"], point["M"], point["N"], _elem_bytes(point["dtype"])
    ob = 4 if point.get("out_int32", 0) else 8
    return B * M * e + B * N * (e + ob)


def flops(point) -> int:
    """One compare per binary-search level and query (the plain search's count)."""
    return point["B"] * point["N"] * int(point["M"]).bit_length()


def grid(cfg, point) -> tuple[int, int]:
    """(cdiv(N, BLOCK), B): x walks a row's queries, y the rows."""
    return (triton.cdiv(point["N"], cfg["BLOCK"]), point["B"])


def loop_iterations(cfg, point) -> int:
    """Every CTA: COARSE / CHUNK coarse splitter steps plus the fine pass's dependent gathers."""
    _, steps, _ = search_plan(point["M"], cfg)
    coarse = cfg["COARSE"] // _chunk(cfg) if cfg["COARSE"] else 0
    return coarse + steps


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point["dtype"])
    B, M, N = point["B"], point["M"], point["N"]
    bnd = torch.empty((B, M), dtype=dt, device="meta")
    q = torch.empty((B, N), dtype=dt, device="meta")
    out = torch.empty((B, N), dtype=torch.int32 if point.get("out_int32", 0) else torch.int64, device="meta")
    return _kernel_args(bnd, q, out, bool(point.get("right", 0)), cfg)
