"""Brute-force k-nearest-neighbour search (a FAISS IndexFlatL2 / IndexFlatIP search, as a
retrieval or kNN-graph pipeline runs it on a GPU), a bare @triton.jit kernel + its merge kernel
+ the launcher.

    dist[i, :], idx[i, :] = the K best database vectors for query i, best first

queries Q: [M, D], database X: [N, D], both fp16 or both bf16 (rows may be strided, columns
contiguous), 1 <= D <= 256 (D is padded to BLOCK_D = the power of two >= max(D, 16) for the
dot, the pad masked to zero). Two metrics:
  "l2": the K smallest squared L2 distances d(i, j) = ||q_i||^2 - 2 q_i . x_j + ||x_j||^2, with the
        database norms ||x_j||^2 precomputed fp32 [N] (an index stores them once; make_inputs
        computes them from the rounded vectors) and ||q_i||^2 computed in the kernel, in fp32,
        from the loaded (rounded) query tile. d is clamped at 0 (the expansion can go a few ulps
        negative for a query equal to a database vector; FAISS clamps too).
  "ip": the K largest inner products q_i . x_j (maximum inner-product search), reported as the
        inner product, largest first.
dist: [M, K] fp32 (the kernel's fp32 distance as ranked: the dot in fp32 accumulation, then
fp32 adds), idx: [M, K] int64. Ties: among equal fp32 distances (exactly equal, as computed) the
smaller database index comes first -- exact duplicate database rows are reported in index order;
-0.0 never occurs (0 - s is used for "ip", the clamp gives +0 for "l2"). Needs 1 <= K <= 128
and K <= N (N < K is refused with a ValueError: there are not K neighbours to report), N < 2^31 - 128.

The selection key. Each (distance, column) pair is one int64 whose signed order is "smaller
distance, then smaller column": the fp32 bits with the magnitude bits flipped when the sign is
set (a monotone map of floats onto int32) in the high word, the column in the low word. The
running top-K of each query is a [BLOCK_M, K_PAD] int64 register tile (K_PAD = the power of two
>= K; the K_PAD - K spare slots hold INT64_MIN, so they are never the worst and never replaced);
its empty slots start as distinct sentinels above every real key (high word 0x7FFFFFFE, a NaN
pattern no finite distance maps to), and thr = its row maximum is the key a candidate must beat.

``_kernel``: grid (cdiv(M, BLOCK_M), SPLIT), the query tile fastest (CTAs running together walk
the same database span, so an X tile is read from DRAM once and from L2 by the other query
tiles). CTA (mt, s) loads its BLOCK_M queries once ([BLOCK_M, BLOCK_D], kept for the whole walk)
and walks split s's TILES_PER_SPLIT = cdiv(cdiv(N, BLOCK_N), SPLIT) database tiles of BLOCK_N
rows (the last split may get fewer, or none). Per tile: S = tl.dot(Q, X^T) (fp32 accumulation on
the tensor cores), the distances, their int32 monotone keys m [BLOCK_M, BLOCK_N] (padding rows /
columns get INT32_MAX, never a candidate), and per query the tile's best (min m, then the
smallest column holding it: two row reductions). The threshold filter: while some query's tile
best beats its thr (a CTA-wide any), insert it in place of that query's worst slot (the one equal
to thr: the keys are unique), recompute thr, strike the column from m and find the next best.
After the first few tiles nearly every tile ends at the filter (in random order ~K / t of the
t-th tile's columns beat a query's K-th best), so the walk costs the dot, the
key map and two row reductions a tile, like FAISS's WarpSelect behind its threshold.
With SPLIT == 1 the CTA sorts its top-K (tl.sort, descending, so the K real slots come first),
decodes it and writes dist / idx. With SPLIT > 1 it writes its K keys (unsorted) to a workspace
[M, SPLIT * K] int64, and ``_merge_kernel`` (one CTA a query) loads the query's SPLIT * K
candidates (<= MERGE_MAX candidates, one register tile) and runs K passes "smallest key above the
previous pick" (a CTA-wide min each), then decodes and writes the row.

The work is 2 M N D dot flops (tensor cores) + per (query, database row) ~10 integer / fp32 ops
(distance, key map, two reductions) + the insertions (~K (1 + ln(N / (SPLIT BLOCK_N))) a query a
split, each one reduction over the tile and one over the top-K). X is read once from DRAM (per
concurrently running query-tile wave), Q once per split.

Tunables: BLOCK_M (queries a CTA, power of two >= 16: a dot operand), BLOCK_N (database rows a
tile, power of two >= 16), SPLIT (database splits, >= 1, a launcher knob: the kernel sees only
FINAL = SPLIT == 1 and TILES_PER_SPLIT, so SPLIT 8 / 32 / 128 share a binary; > 1 adds the merge,
SPLIT * K <= MERGE_MAX), num_warps, num_stages (the walk holds a nested data-dependent while
loop, so triton's software pipeliner leaves it alone: with triton 3.6 for sm_90 num_stages 1, 2
and 3 give the same registers and shared memory -- the X-tile loads are not pipelined and their
latency is hidden by the other resident warps: 1-4 CTAs a SM at 64-220 registers).
Problem parameters (a workload point): M, N, D, K, dtype (fp16 / bf16), metric (l2 / ip).
Timing covers both kernels; grid / loop_iterations describe ``_kernel`` (its tile walk),
secondary_kernels the merge.
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_K = 128
MAX_D = 256
MERGE_MAX = 16384        # candidates (SPLIT * K) one merge CTA holds in registers (int64: 64 a thread at 8 warps)
MAX_N = 2**31 - 256      # columns fit the low word of a key, below the sentinels' INT32 range
METRICS = ("l2", "ip")
DTYPES = ("fp16", "bf16")


@triton.jit
def _decode_store(key, OUT_D, OUT_I, rows, pos, ok, stride_om, METRIC: tl.constexpr):
    """Keys -> (fp32 distance, int64 column) stored at [rows, pos] where ok."""
    hi = (key >> 32).to(tl.int32)
    bits = tl.where(hi < 0, hi ^ 0x7FFFFFFF, hi)
    d = bits.to(tl.float32, bitcast=True)
    if METRIC == 1:
        d = 0.0 - d                       # the key ranked -q.x: report q.x
    col = key & 0xFFFFFFFF
    off = rows[:, None].to(tl.int64) * stride_om + pos
    tl.store(OUT_D + off, d, mask=ok)
    tl.store(OUT_I + off, col, mask=ok)


@triton.jit
def _kernel(Q, X, XN, OUT_D, OUT_I, WS, M, N, D, stride_qm, stride_xn, stride_om, stride_wm, TILES_PER_SPLIT,
            K: tl.constexpr, K_PAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            BLOCK_D: tl.constexpr, FINAL: tl.constexpr, METRIC: tl.constexpr):
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    I32_MAX: tl.constexpr = 2147483647
    SENTINEL: tl.constexpr = 0x7FFFFFFE7FFFFFFF        # high word above every finite distance's key
    I64_MIN: tl.constexpr = -9223372036854775807 - 1

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    dk = tl.arange(0, BLOCK_D)
    d_ok = dk < D
    q = tl.load(Q + rows[:, None].to(tl.int64) * stride_qm + dk[None, :],
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    if METRIC == 0:
        qf = q.to(tl.float32)
        qn = tl.sum(qf * qf, axis=1)

    kar = tl.arange(0, K_PAD)
    slot = tl.where(kar < K, SENTINEL - kar.to(tl.int64), I64_MIN)     # distinct sentinels; spare slots never worst
    top = tl.zeros([BLOCK_M, K_PAD], tl.int64) + slot[None, :]
    thr = tl.max(top, axis=1)

    n_tiles = tl.cdiv(N, BLOCK_N)
    t_first = split * TILES_PER_SPLIT
    t_last = tl.minimum(t_first + TILES_PER_SPLIT, n_tiles)
    cn = tl.arange(0, BLOCK_N)
    x_ptr = X + (t_first * BLOCK_N + cn)[:, None].to(tl.int64) * stride_xn + dk[None, :]
    for t in range(t_first, t_last):
        cols = t * BLOCK_N + cn
        col_ok = cols < N
        x = tl.load(x_ptr, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        s = tl.dot(q, tl.trans(x))
        if METRIC == 0:
            xn = tl.load(XN + cols, mask=col_ok, other=0.0)
            dist = tl.maximum((qn[:, None] + xn[None, :]) - 2.0 * s, 0.0)
        else:
            dist = 0.0 - s
        b = dist.to(tl.int32, bitcast=True)
        m = tl.where(b < 0, b ^ 0x7FFFFFFF, b)
        m = tl.where(row_ok[:, None] & col_ok[None, :], m, I32_MAX)
        # the tile's best of each query: smallest key, then smallest column
        mb = tl.min(m, axis=1)
        ib = tl.min(tl.where(m == mb[:, None], cols[None, :], I32_MAX), axis=1)
        best = (mb.to(tl.int64) << 32) | ib.to(tl.int64)
        hit = best < thr
        while tl.max(hit.to(tl.int32), axis=0) > 0:
            top = tl.where(hit[:, None] & (top == thr[:, None]), best[:, None], top)
            thr = tl.max(top, axis=1)
            m = tl.where(hit[:, None] & (cols[None, :] == ib[:, None]), I32_MAX, m)
            mb = tl.min(m, axis=1)
            ib = tl.min(tl.where(m == mb[:, None], cols[None, :], I32_MAX), axis=1)
            best = (mb.to(tl.int64) << 32) | ib.to(tl.int64)
            hit = best < thr
        x_ptr += BLOCK_N * stride_xn

    if FINAL:
        srt = tl.sort(top, dim=1, descending=True)           # the K real slots first, worst first
        ok = row_ok[:, None] & (kar < K)[None, :]
        _decode_store(srt, OUT_D, OUT_I, rows, (K - 1 - kar)[None, :], ok, stride_om, METRIC)
    else:
        off = rows[:, None].to(tl.int64) * stride_wm + split * K + kar[None, :]
        tl.store(WS + off, top, mask=row_ok[:, None] & (kar < K)[None, :])


@triton.jit
def _merge_kernel(WS, OUT_D, OUT_I, NC, stride_wm, stride_om,
                  K: tl.constexpr, K_PAD: tl.constexpr, MERGE_BLOCK: tl.constexpr, METRIC: tl.constexpr):
    row = tl.program_id(0)
    I64_MAX: tl.constexpr = 9223372036854775807
    offs = tl.arange(0, MERGE_BLOCK)
    key = tl.load(WS + row.to(tl.int64) * stride_wm + offs, mask=offs < NC, other=I64_MAX)
    kar = tl.arange(0, K_PAD)
    head = tl.full([K_PAD], I64_MAX, tl.int64)
    prev = tl.full([], -9223372036854775807 - 1, tl.int64)
    for j in range(0, K):
        cur = tl.min(tl.where(key > prev, key, I64_MAX))
        head = tl.where(kar == j, cur, head)
        prev = cur
    rows = tl.full([1], 0, tl.int32) + row
    _decode_store(head[None, :], OUT_D, OUT_I, rows, kar[None, :], (kar < K)[None, :], stride_om, METRIC)


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_M", "BLOCK_N", "SPLIT", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 128, "SPLIT": 8, "num_warps": 8, "num_stages": 1}

# Three retrieval shapes. X is read once from DRAM: 268 MB, 67 MB and 134 MB (56, 14 and 28 us at
# 4.8 TB/s); the dot is 4.3, 275 and 137 GFLOP (~5, 280, 140 us at ~1 PFLOP/s dense fp16); the
# per-element key work (M N: 1.7e7, 1.1e9, 1.1e9 distances) and the insertions bind beside them.
#   online search: a batch of 16 queries against a 1M-vector fp16 index (SIFT1M / Deep1M-like,
#     D 128), top-10 L2: one query tile, so the database must be split over many CTAs and merged
#   batch maximum-inner-product search: 4096 bf16 query embeddings against 262144 passages (a
#     dense-retrieval shard, unit-norm D 128 embeddings), top-32 by inner product
#   kNN-graph construction / dedup: 1024 fp16 D 64 vectors against a 1M-vector base, top-64 L2:
#     the widest top-K (a [BLOCK_M, 64] int64 register tile) and the most insertions
POINTS = [
    {"M": 16, "N": 1048576, "D": 128, "K": 10, "dtype": "fp16", "metric": "l2"},
    {"M": 4096, "N": 262144, "D": 128, "K": 32, "dtype": "bf16", "metric": "ip"},
    {"M": 1024, "N": 1048576, "D": 64, "K": 64, "dtype": "fp16", "metric": "l2"},
]


def _torch_dtype(name: str):
    import torch
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (queries' and database's)")
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _metric_id(metric: str) -> int:
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r} is not one of {', '.join(METRICS)}")
    return METRICS.index(metric)


def _pow2(x: int) -> int:
    return 1 << max(0, int(x) - 1).bit_length()


def k_pad(k: int) -> int:
    """The power of two >= K that a query's running top-K tile holds."""
    return _pow2(k)


def block_d(d: int) -> int:
    """The dot's reduction width: the power of two >= max(D, 16)."""
    return max(16, _pow2(d))


def _check_problem(M: int, N: int, D: int, K: int) -> None:
    if M < 1 or N < 1:
        raise ValueError(f"empty search: M={M} queries, N={N} database vectors")
    if not 1 <= D <= MAX_D:
        raise ValueError(f"D={D} must be in 1..{MAX_D}")
    if not isinstance(K, int) or not 1 <= K <= MAX_K:
        raise ValueError(f"K={K} must be an int in 1..{MAX_K}")
    if K > N:
        raise ValueError(f"K={K} > N={N}: fewer database vectors than neighbours asked")
    if N > MAX_N:
        raise ValueError(f"N={N} exceeds {MAX_N} (a column must fit a key's low word)")


def _check_cfg(cfg, K: int) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand)")
    sp = cfg["SPLIT"]
    if not isinstance(sp, int) or sp < 1:
        raise ValueError(f"SPLIT={sp} must be an int >= 1")
    if sp > 1 and sp * K > MERGE_MAX:
        raise ValueError(f"SPLIT={sp} x K={K} = {sp * K} candidates a query exceed the merge's {MERGE_MAX}")


def plan(cfg, point) -> dict:
    """The launch plan of `cfg` at `point`: tiles, tiles per split, the query tiles, the merge's
    candidates NC and its tile / warps."""
    M, N, D, K = point["M"], point["N"], point["D"], point["K"]
    _check_problem(M, N, D, K)
    _check_cfg(cfg, K)
    n_tiles = -(-N // cfg["BLOCK_N"])
    sp = cfg["SPLIT"]
    per = -(-n_tiles // sp)
    nc = sp * K
    mb = max(64, _pow2(nc))
    return {"n_tiles": n_tiles, "TILES_PER_SPLIT": per, "m_tiles": -(-M // cfg["BLOCK_M"]), "K_PAD": k_pad(K),
            "BLOCK_D": block_d(D), "NC": nc, "MERGE_BLOCK": mb, "merge_warps": 4 if mb <= 1024 else 8,
            "METRIC": _metric_id(point.get("metric", "l2"))}


def _kernel_args(q, x, xn, out_d, out_i, ws, K, cfg, pl) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(Q=q, X=x, XN=xn, OUT_D=out_d, OUT_I=out_i, WS=ws, M=q.shape[0], N=x.shape[0], D=q.shape[1],
                stride_qm=q.stride(0), stride_xn=x.stride(0), stride_om=out_d.stride(0), stride_wm=ws.stride(0),
                TILES_PER_SPLIT=pl["TILES_PER_SPLIT"], K=K, K_PAD=pl["K_PAD"], BLOCK_M=cfg["BLOCK_M"],
                BLOCK_N=cfg["BLOCK_N"], BLOCK_D=pl["BLOCK_D"], FINAL=cfg["SPLIT"] == 1, METRIC=pl["METRIC"])


def _merge_kernel_args(ws, out_d, out_i, K, pl) -> dict:
    return dict(WS=ws, OUT_D=out_d, OUT_I=out_i, NC=pl["NC"], stride_wm=ws.stride(0), stride_om=out_d.stride(0),
                K=K, K_PAD=pl["K_PAD"], MERGE_BLOCK=pl["MERGE_BLOCK"], METRIC=pl["METRIC"])


def knn_topk(queries, database, k: int, db_norms=None, *, metric: str = "l2", BLOCK_M=64, BLOCK_N=128, SPLIT=8,
             num_warps=8, num_stages=1):
    """(dist [M, k] fp32, idx [M, k] int64): the k nearest database rows of each query (l2: the
    smallest squared L2 distances, ascending; ip: the largest inner products, descending), ties
    to the smaller database index. queries [M, D] and database [N, D] fp16 / bf16 (same dtype,
    unit column stride); db_norms [N] fp32 = ||x_j||^2 (l2 only; computed here when None)."""
    import torch
    mid = _metric_id(metric)
    if queries.dim() != 2 or database.dim() != 2:
        raise ValueError(f"queries and database must be 2-D; got {tuple(queries.shape)} and {tuple(database.shape)}")
    if queries.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"queries must be fp16 or bf16; got {queries.dtype}")
    if database.dtype != queries.dtype:
        raise ValueError(f"database dtype {database.dtype} differs from the queries' {queries.dtype}")
    if queries.shape[1] != database.shape[1]:
        raise ValueError(f"queries D={queries.shape[1]} differs from the database's D={database.shape[1]}")
    M, D = queries.shape
    N = database.shape[0]
    _check_problem(M, N, D, k)
    if queries.stride(1) != 1:
        queries = queries.contiguous()
    if database.stride(1) != 1:
        database = database.contiguous()
    if mid == 0:
        if db_norms is None:
            db_norms = database.float().pow(2).sum(1)
        if db_norms.dtype != torch.float32 or tuple(db_norms.shape) != (N,):
            raise ValueError(f"db_norms must be fp32 [N={N}]; got {db_norms.dtype} {tuple(db_norms.shape)}")
        db_norms = db_norms.contiguous()
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "SPLIT": SPLIT}
    pl = plan(cfg, {"M": M, "N": N, "D": D, "K": k, "metric": metric})
    dev = queries.device
    out_d = torch.empty((M, k), dtype=torch.float32, device=dev)
    out_i = torch.empty((M, k), dtype=torch.int64, device=dev)
    ws = out_i if SPLIT == 1 else torch.empty((M, pl["NC"]), dtype=torch.int64, device=dev)
    xn = db_norms if mid == 0 else out_d              # not read for ip
    _kernel[(pl["m_tiles"], SPLIT)](**_kernel_args(queries, database, xn, out_d, out_i, ws, k, cfg, pl),
                                    num_warps=num_warps, num_stages=num_stages)
    if SPLIT > 1:
        _merge_kernel[(M,)](**_merge_kernel_args(ws, out_d, out_i, k, pl), num_warps=pl["merge_warps"],
                            num_stages=1)
    return out_d, out_i


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """A clustered database (N / 64 Gaussian centres, up to 4096, plus N(0, 0.5^2) noise; unit-norm
    rows for "ip") and queries near database rows (a random row + N(0, 0.3^2) noise), drawn in fp32
    on the CPU (reproducible per seed), cast to the dtype; the database norms from the cast rows."""
    import torch
    M, N, D, K = point["M"], point["N"], point["D"], point["K"]
    _check_problem(M, N, D, K)
    _metric_id(point.get("metric", "l2"))
    dt = _torch_dtype(point.get("dtype", "fp16"))
    gen = torch.Generator().manual_seed(seed)
    n_c = max(1, min(4096, N // 64))
    centres = torch.randn((n_c, D), generator=gen)
    x = centres[torch.randint(n_c, (N,), generator=gen)]
    x += 0.5 * torch.randn((N, D), generator=gen)
    q = x[torch.randint(N, (M,), generator=gen)] + 0.3 * torch.randn((M, D), generator=gen)
    if point.get("metric", "l2") == "ip":
        x /= x.norm(dim=1, keepdim=True)
        q /= q.norm(dim=1, keepdim=True)
    x = x.to(dt)
    q = q.to(dt)
    xn = x.float().pow(2).sum(1)
    return {"queries": q.to(device), "database": x.to(device), "db_norms": xn.to(device), "k": K,
            "metric": point.get("metric", "l2")}


def run(inputs, cfg):
    """(dist, idx) of `cfg` on `inputs`."""
    return knn_topk(inputs["queries"], inputs["database"], inputs["k"], inputs["db_norms"], metric=inputs["metric"],
                    BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], SPLIT=cfg["SPLIT"], num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"])


def launch(inputs, cfg):
    """dist [M, K] fp32; the indices (the other output) are checked by the tests
    (tests/test_examples_round20_c.py, check_neighbours) against the exact distances."""
    return run(inputs, cfg)[0]


def exact_scores(inputs, rows=None):
    """fp64 distances (l2: ||q - x||^2 by the expansion in fp64; ip: q . x) of the queries `rows`
    (default all) to every database row, from the rounded inputs: [len(rows), N]."""
    q = inputs["queries"].double()
    if rows is not None:
        q = q[rows]
    x = inputs["database"].double()
    s = q @ x.T
    if inputs["metric"] == "ip":
        return s
    return (q.pow(2).sum(1)[:, None] + x.pow(2).sum(1)[None, :] - 2.0 * s).clamp_min(0.0)


def _reference(inputs):
    import torch
    M = inputs["queries"].shape[0]
    N = inputs["database"].shape[0]
    k = inputs["k"]
    ip = inputs["metric"] == "ip"
    step = max(1, (1 << 26) // N)                     # queries a chunk: <= 64M fp64 scores
    vals, idxs = [], []
    for r0 in range(0, M, step):
        sc = exact_scores(inputs, slice(r0, min(M, r0 + step)))
        order = sc.sort(dim=1, descending=ip, stable=True)[1][:, :k]
        vals.append(sc.gather(1, order))
        idxs.append(order)
    return torch.cat(vals).float(), torch.cat(idxs)


def reference(inputs):
    """dist [M, K] fp32: the exact (fp64, from the rounded inputs) K best distances, in order.
    Compared with launch's by value: a near-tie that the kernel's fp32 distance orders the other
    way swaps two indices but not the sorted distances (the index sets are checked apart, with a
    tolerance band, by the tests' check_neighbours)."""
    return _reference(inputs)[0]


def reference_indices(inputs):
    """idx [M, K] int64: a stable sort of the exact distances (ties to the smaller index)."""
    return _reference(inputs)[1]


def torch_baseline(inputs):
    """What a torch user writes (FAISS's GPU flat search in torch): S = Q @ X^T in the inputs'
    dtype (fp32 accumulation), l2: ||q||^2 + ||x||^2 - 2 S in fp32, then torch.topk (sorted)."""
    import torch
    q, x, k = inputs["queries"], inputs["database"], inputs["k"]
    s = (q @ x.T).float()
    if inputs["metric"] == "ip":
        return torch.topk(s, k, dim=1, largest=True, sorted=True)[0]
    d = (q.float().pow(2).sum(1)[:, None] + inputs["db_norms"][None, :] - 2.0 * s).clamp_min_(0.0)
    return torch.topk(d, k, dim=1, largest=False, sorted=True)[0]


def bytes_moved(point) -> int:
    """Queries and database read once, the database norms (l2) once, dist (fp32) and idx (int64)
    written once (the SPLIT > 1 workspace, M SPLIT K int64 written and read back from L2, and the
    re-reads of X by later query-tile waves are not counted)."""
    M, N, D, K = point["M"], point["N"], point["D"], point["K"]
    if point.get("dtype", "fp16") not in DTYPES:
        raise ValueError(f"dtype {point.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    norms = 4 * N if point.get("metric", "l2") == "l2" else 0
    return 2 * (M + N) * D + norms + M * K * (4 + 8)


def flops(point) -> int:
    """The dot: 2 M N D (the distance epilogue and the selection, integer work, not counted)."""
    return 2 * point["M"] * point["N"] * point["D"]


def grid(cfg, point) -> tuple:
    """(cdiv(M, BLOCK_M), SPLIT): CTA (mt, s) takes query tile mt and split s's database tiles."""
    pl = plan(cfg, point)
    return (pl["m_tiles"], cfg["SPLIT"])


def loop_iterations(cfg, point) -> int:
    """Database tiles a CTA walks: TILES_PER_SPLIT (the last split may get fewer)."""
    return plan(cfg, point)["TILES_PER_SPLIT"]


def cta_iterations(cfg, point) -> list:
    """Tiles of each CTA in launch order (the query tile fastest): split s walks
    min(TILES_PER_SPLIT, n_tiles - s TILES_PER_SPLIT), >= 0."""
    pl = plan(cfg, point)
    per, n = pl["TILES_PER_SPLIT"], pl["n_tiles"]
    out = []
    for s in range(cfg["SPLIT"]):
        out += [max(0, min(per, n - s * per))] * pl["m_tiles"]
    return out


def secondary_kernels(cfg, point) -> list:
    """The merge, when SPLIT > 1: one CTA a query, its SPLIT K int64 candidates (just written: from
    L2, dram_bytes 0) loaded once into one MERGE_BLOCK register tile, then K passes (a CTA-wide min
    each) in registers: iterations K, the 8 NC bytes spread over them."""
    if cfg["SPLIT"] == 1:
        return []
    pl = plan(cfg, point)
    K = point["K"]
    return [{"name": "_merge_kernel", "grid": point["M"], "iterations": K, "tile_bytes": -(-8 * pl["NC"] // K),
             "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    M, N, D, K = point["M"], point["N"], point["D"], point["K"]
    dt = _torch_dtype(point.get("dtype", "fp16"))
    pl = plan(cfg, point)
    q = torch.empty((M, D), dtype=dt, device="meta")
    x = torch.empty((N, D), dtype=dt, device="meta")
    out_d = torch.empty((M, K), dtype=torch.float32, device="meta")
    out_i = torch.empty((M, K), dtype=torch.int64, device="meta")
    xn = torch.empty((N,), dtype=torch.float32, device="meta") if pl["METRIC"] == 0 else out_d
    ws = out_i if cfg["SPLIT"] == 1 else torch.empty((M, pl["NC"]), dtype=torch.int64, device="meta")
    return _kernel_args(q, x, xn, out_d, out_i, ws, K, cfg, pl)
