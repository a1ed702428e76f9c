"""Sparse (CSR) x dense matrix multiply, the message passing of GNN layers (PyG / DGL's
spmm "sum" aggregation, GCN's A_hat @ X) and the gather-reduce of sparse attention and MoE
dispatch, a bare @triton.jit kernel + its launcher.

    out[m, :] = sum_{p in indptr[m] .. indptr[m + 1] - 1} values[p] * b[indices[p], :]

A: [M, K] sparse in CSR: indptr [M + 1] int32 / int64 (nondecreasing, indptr[0] = 0),
indices [nnz] int32 (column ids, trusted: 0 <= id < K, not range-checked; duplicates add up;
sorted or not), values [nnz] in b's dtype; b: [K, N] dense, fp32 / bf16 / fp16, N contiguous
(rows may be strided); out: [M, N] fp32 or b's dtype, N contiguous. fp32 accumulation, one
rounding at the store. An empty row gives 0.

One CTA per (BLOCK_ROWS consecutive rows, BLOCK_N columns), 1-D grid, column tile fastest
(the CTAs that read one row group's indices and values run side by side). Two schedules,
chosen by the DOT flag:

* DOT = 0 (row by row): the CTA walks its rows one after another; for each it loads the
  two indptr entries and walks that row's nonzeros BLOCK_NNZ at a time: one coalesced load
  of BLOCK_NNZ column ids and values, a gather of BLOCK_NNZ rows of b ([BLOCK_NNZ, BLOCK_N],
  BLOCK_N contiguous elements a row, int64 row offsets), scaled by the values and added
  elementwise into a [BLOCK_NNZ, BLOCK_N] fp32 accumulator, reduced along the nonzeros once
  at the row's end and stored. A row shorter than BLOCK_NNZ runs one masked step.
* DOT = 1 (row group merged): the CTA streams the whole nonzero range of its row group,
  indptr[r0] .. indptr[r0 + BLOCK_ROWS], in full BLOCK_NNZ chunks regardless of where rows
  end (no per-row tail steps: short power-law rows share a chunk); each chunk's gathered b
  tile is reduced into the rows' [SEG_M, BLOCK_N] fp32 accumulator by one tl.dot with the
  chunk's segment matrix S[r, j] = values[p_j] if nonzero p_j belongs to row r else 0
  (SEG_M = max(16, BLOCK_ROWS): the dot's M side; rows past BLOCK_ROWS are zero rows of S).
  S is exact in b's dtype (the values share it), so bf16 / fp16 use the tensor cores with
  exact products and fp32 accumulation; fp32 uses 3xTF32 (input_precision "tf32x3", ~fp32
  accuracy). The CTA's work is its group's nonzero count.

Both nonzero loops are tl.range(num_stages=NUM_STAGES), the launch's num_stages passed as a
constexpr too (Triton pipelines a loop without a dot only when the loop asks): num_stages > 1
loads the next steps' column ids and values and gathers their b tiles into shared memory
ahead (cp.async); the row-by-row loop keeps num_stages - 1 b tiles in flight, the DOT loop
(triton 3.6) one: its gather (the address a load of the same step) goes one step ahead from
num_stages 2 on, its column ids two steps ahead from 3 on.

Row lengths are data (power-law degrees: a few hub rows hundreds of times the mean), so the
CTAs' work is uneven; BLOCK_ROWS > 1 spreads it over fewer, longer CTAs. The gathered b rows
are the traffic (nnz x N elements through L2; b itself read once from DRAM when it fits the
L2); BLOCK_NNZ x BLOCK_N elements in flight per step is the memory-level parallelism a CTA
offers. The N mask is dropped when BLOCK_N divides N (EVEN_N).

Tunables: BLOCK_ROWS, BLOCK_NNZ (>= 16), BLOCK_N (>= 16) (powers of two), DOT (0 / 1),
num_warps, num_stages (the nonzero loop's pipeline depth, both schedules).
Problem parameters (a workload point): M, K, N, deg (mean nonzeros a row: nnz = M x deg
exactly), law ("powerlaw": Pareto degrees capped at DEG_CAP x deg, at least 1, columns drawn
in proportion to a power-law popularity -- Chung-Lu, the row degrees themselves when M == K;
"uniform": degrees uniform in [deg / 2, 3 deg / 2], columns uniform), empty (share of empty
rows, default 0), dtype (b's and values'), out ("fp32" or b's dtype, default b's), index
(indptr's dtype, "int32" / "int64"). The sparsity structure is drawn on the CPU, fixed by the
seed (csr_structure).
"""

from __future__ import annotations

import functools
import warnings

import triton
import triton.language as tl

PARETO_ALPHA = 2.1    # degree law exponent: P(deg > d) ~ d^-(alpha - 1), real graphs' 2-3
DEG_CAP = 64          # no row longer than DEG_CAP x the mean degree (a hub row)


@triton.jit
def _kernel(INDPTR, INDICES, VALUES, B, OUT, M, N, stride_bk, stride_om,
            EVEN_N: tl.constexpr, DOT: tl.constexpr, SEG_M: tl.constexpr, NUM_STAGES: tl.constexpr,
            BLOCK_ROWS: tl.constexpr, BLOCK_NNZ: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    row0 = (pid // n_tiles) * BLOCK_ROWS
    cols = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    if EVEN_N:
        n_ok = tl.full([BLOCK_N], 1, tl.int1)
    else:
        n_ok = cols < N
    jj = tl.arange(0, BLOCK_NNZ)
    b_col = B + cols[None, :]
    if DOT:
        # row group merged: stream the group's nonzeros, reduce each chunk with a segment-matrix dot
        rr = tl.arange(0, SEG_M)
        rows = row0 + rr
        r_ok = (rr < BLOCK_ROWS) & (rows < M)
        rs = tl.load(INDPTR + rows, mask=r_ok, other=0)
        re = tl.load(INDPTR + rows + 1, mask=r_ok, other=0)
        g_start = tl.load(INDPTR + row0)
        g_end = tl.load(INDPTR + tl.minimum(row0 + BLOCK_ROWS, M))
        acc = tl.zeros([SEG_M, BLOCK_N], tl.float32)
        for p0 in tl.range(g_start, g_end, BLOCK_NNZ, num_stages=NUM_STAGES):
            pos = p0 + jj
            ok = pos < g_end
            k = tl.load(INDICES + pos, mask=ok, other=0).to(tl.int64)
            v = tl.load(VALUES + pos, mask=ok, other=0.0)
            x = tl.load(b_col + k[:, None] * stride_bk, mask=ok[:, None] & n_ok[None, :], other=0.0)
            seg = (pos[None, :] >= rs[:, None]) & (pos[None, :] < re[:, None])
            s = tl.where(seg, v[None, :], 0.0).to(x.dtype)
            if x.dtype == tl.float32:
                acc = tl.dot(s, x, acc, input_precision="tf32x3")
            else:
                acc = tl.dot(s, x, acc)
        o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
        tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=r_ok[:, None] & n_ok[None, :])
    else:
        # row by row: each row's nonzeros in BLOCK_NNZ steps, one reduction at the row's end
        for r in range(BLOCK_ROWS):
            row = row0 + r
            if row < M:
                start = tl.load(INDPTR + row)
                end = tl.load(INDPTR + row + 1)
                acc = tl.zeros([BLOCK_NNZ, BLOCK_N], tl.float32)
                for p0 in tl.range(start, end, BLOCK_NNZ, num_stages=NUM_STAGES):
                    pos = p0 + jj
                    ok = pos < end
                    k = tl.load(INDICES + pos, mask=ok, other=0).to(tl.int64)
                    v = tl.load(VALUES + pos, mask=ok, other=0.0).to(tl.float32)
                    x = tl.load(b_col + k[:, None] * stride_bk, mask=ok[:, None] & n_ok[None, :], other=0.0)
                    acc += v[:, None] * x.to(tl.float32)
                out = tl.sum(acc, axis=0)
                tl.store(OUT + row.to(tl.int64) * stride_om + cols, out.to(OUT.dtype.element_ty), mask=n_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp32", "bf16", "fp16")
INDEX_DTYPES = ("int32", "int64")
LAWS = ("powerlaw", "uniform")
TUNABLES = ("BLOCK_ROWS", "BLOCK_NNZ", "BLOCK_N", "DOT", "num_warps", "num_stages")
BASELINE = {"BLOCK_ROWS": 1, "BLOCK_NNZ": 32, "BLOCK_N": 128, "DOT": 0, "num_warps": 4, "num_stages": 1}

POINTS = [
    # GCN / GraphSAGE aggregation on an ogbn-arxiv-sized citation graph (169,343 nodes, ~14
    # neighbours a node, 128-d fp32 features), power-law degrees, PyG's int64 indptr: b 86.7 MB
    # (> the 50 MB L2), out 86.7 MB, 2.37 M nonzeros gathering 1.2 GB of b rows
    {"M": 169343, "K": 169343, "N": 128, "deg": 14, "law": "powerlaw", "dtype": "fp32", "out": "fp32",
     "index": "int64"},
    # a uniform-degree graph (mesh / sampled neighbourhoods, 32-96 neighbours a node) with 256-d bf16
    # hidden features, int32 indptr (cuSPARSE / DGL): b 25.6 MB (L2-resident), 3.2 M nonzeros, 1.6 GB gathered
    {"M": 50000, "K": 50000, "N": 256, "deg": 64, "law": "uniform", "dtype": "bf16", "out": "bf16",
     "index": "int32"},
    # wide features: a 20k-node power-law graph with 1024-d bf16 embeddings (a sparse attention /
    # MoE-dispatch style gather of wide rows), fp32 output: b 41 MB, 640 k nonzeros, 1.3 GB gathered
    {"M": 20000, "K": 20000, "N": 1024, "deg": 32, "law": "powerlaw", "dtype": "bf16", "out": "fp32",
     "index": "int32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    try:
        return {"fp32": 4, "bf16": 2, "fp16": 2}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _out_name(point) -> str:
    """The output dtype's name: the point's "out", "fp32" or b's dtype (default b's)."""
    dt = point.get("dtype", "bf16")
    _elem_bytes(dt)
    out = point.get("out", dt)
    if out not in ("fp32", dt):
        raise ValueError(f"out {out!r} must be 'fp32' or b's dtype {dt!r}")
    return out


def _index_name(point) -> str:
    name = point.get("index", "int32")
    if name not in INDEX_DTYPES:
        raise ValueError(f"index {name!r} is not one of {', '.join(INDEX_DTYPES)} (indptr's dtype)")
    return name


def _law(point) -> str:
    law = point.get("law", "powerlaw")
    if law not in LAWS:
        raise ValueError(f"law {law!r} is not one of {', '.join(LAWS)}")
    return law


def _seg_m(cfg) -> int:
    """The DOT schedule's segment-matrix rows: BLOCK_ROWS, at least 16 (a tl.dot side)."""
    return max(16, cfg["BLOCK_ROWS"])


def _check_cfg(cfg) -> None:
    for name, least in (("BLOCK_ROWS", 1), ("BLOCK_NNZ", 16), ("BLOCK_N", 16)):
        v = cfg[name]
        if v < least or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= {least}")
    if cfg["DOT"] not in (0, 1):
        raise ValueError(f"DOT={cfg['DOT']!r} must be 0 (row by row) or 1 (row group merged, tl.dot)")


def _kernel_args(indptr, indices, values, b, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    M, N = out.shape
    return dict(INDPTR=indptr, INDICES=indices, VALUES=values, B=b, OUT=out, M=M, N=N,
                stride_bk=b.stride(0), stride_om=out.stride(0), EVEN_N=N % cfg["BLOCK_N"] == 0,
                DOT=int(cfg["DOT"]), SEG_M=_seg_m(cfg), NUM_STAGES=cfg["num_stages"], BLOCK_ROWS=cfg["BLOCK_ROWS"],
                BLOCK_NNZ=cfg["BLOCK_NNZ"], BLOCK_N=cfg["BLOCK_N"])


def csr_spmm(indptr, indices, values, b, *, out=None, out_dtype=None, BLOCK_ROWS=1, BLOCK_NNZ=32,
             BLOCK_N=128, DOT=0, num_warps=4, num_stages=1):
    """A @ b for A in CSR (indptr [M + 1] int32 / int64, indices [nnz] int32, values [nnz] in
    b's dtype) and b [K, N] fp32 / bf16 / fp16 (rows may be strided; a column-strided b is
    copied). Returns out [M, N] in out_dtype (b's dtype or torch.float32; default b's), or
    into `out` (N contiguous, rows may be strided). fp32 accumulation. Column ids are not
    range-checked, and indptr is trusted (indptr[0] = 0, nondecreasing, indptr[M] <= nnz)."""
    import torch
    if b.dim() != 2 or b.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"b must be a 2-D fp32 / bf16 / fp16 [K, N] tensor; got {b.dtype} {tuple(b.shape)}")
    if indptr.dim() != 1 or indptr.dtype not in (torch.int32, torch.int64) or indptr.numel() < 1:
        raise ValueError(f"indptr must be 1-D int32 / int64 [M + 1]; got {indptr.dtype} {tuple(indptr.shape)}")
    if indices.dim() != 1 or indices.dtype != torch.int32:
        raise ValueError(f"indices must be 1-D int32 [nnz]; got {indices.dtype} {tuple(indices.shape)}")
    if values.dtype != b.dtype or tuple(values.shape) != tuple(indices.shape):
        raise ValueError(f"values must be {b.dtype} [{indices.numel()}] (b's dtype, one per index); got "
                         f"{values.dtype} {tuple(values.shape)}")
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else b.dtype
    if out_dtype not in (b.dtype, torch.float32):
        raise ValueError(f"out_dtype {out_dtype} must be b's dtype {b.dtype} or torch.float32")
    cfg = {"BLOCK_ROWS": BLOCK_ROWS, "BLOCK_NNZ": BLOCK_NNZ, "BLOCK_N": BLOCK_N, "DOT": DOT, "num_stages": num_stages}
    _check_cfg(cfg)
    M, N = indptr.numel() - 1, b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype, device=b.device)
    elif tuple(out.shape) != (M, N) or out.dtype != out_dtype or (M * N and out.stride(1) != 1):
        raise ValueError(f"out must be a [{M}, {N}] {out_dtype} tensor with N contiguous; got "
                         f"{list(out.shape)} {out.dtype}")
    if M == 0 or N == 0:
        return out
    if indices.numel() == 0:
        return out.zero_()
    if b.stride(1) != 1:
        b = b.contiguous()
    args = _kernel_args(indptr.contiguous(), indices.contiguous(), values.contiguous(), b, out, cfg)
    _kernel[(triton.cdiv(M, BLOCK_ROWS) * triton.cdiv(N, BLOCK_N),)](**args, num_warps=num_warps,
                                                                   num_stages=num_stages)
    return out


@functools.lru_cache(maxsize=16)
def _degrees_cached(M: int, deg: int, law: str, empty: float, seed: int):
    import torch
    if M < 1 or deg < 1:
        raise ValueError(f"need M >= 1 and deg >= 1; got M={M}, deg={deg}")
    if not 0.0 <= empty < 1.0:
        raise ValueError(f"empty={empty} must be in [0, 1)")
    total = M * deg
    gen = torch.Generator().manual_seed(seed)
    is_empty = torch.rand(M, generator=gen) < empty
    if bool(is_empty.all()):
        is_empty[0] = False
    live = (~is_empty).nonzero().flatten()
    n = live.numel()
    cap = max(DEG_CAP * deg, -(-total // n))
    if law == "uniform":
        raw = torch.randint(deg // 2, deg + deg // 2 + 1, (n,), generator=gen).double() + 1e-9
    else:       # Pareto(x_m = 1, alpha): P(X > x) = x^-(alpha - 1)
        u = torch.rand(n, generator=gen, dtype=torch.float64).clamp(min=1e-12)
        raw = u.pow(-1.0 / (PARETO_ALPHA - 1.0))
    # sizes = 1 + share of the remaining total in proportion to raw, capped (water-filled: the cut
    # above the cap is given to the rest), floors lose < 1 a row, handed out one each at random
    w = raw * ((total - n) / float(raw.sum()))
    for _ in range(50):
        w = w.clamp(max=cap - 1)
        short = (total - n) - float(w.sum())
        if short < 0.5:
            break
        free = w < cap - 1
        w[free] += short * raw[free] / float(raw[free].sum())
    sizes = 1 + torch.floor(w).to(torch.int64)
    short = total - int(sizes.sum())
    order = torch.randperm(n, generator=gen)
    room = order[sizes[order] < cap]
    sizes[room[:short]] += 1
    out = torch.zeros(M, dtype=torch.int64)
    out[live] = sizes
    assert int(out.sum()) == total
    return out


def row_degrees(M: int, deg: int, law: str = "powerlaw", empty: float = 0.0, seed: int = 0):
    """[M] int64 (CPU) nonzeros a row summing to exactly M x deg: "powerlaw": 1 + a Pareto
    (alpha PARETO_ALPHA) share, capped at DEG_CAP x deg (the median row ~0.6 x the mean, the
    largest ~DEG_CAP x it); "uniform": uniform in [deg / 2, 3 deg / 2]; a share `empty` of the
    rows empty; in random row order. Deterministic in the arguments."""
    if law not in LAWS:
        raise ValueError(f"law {law!r} is not one of {', '.join(LAWS)}")
    return _degrees_cached(int(M), int(deg), law, float(empty), int(seed)).clone()


@functools.lru_cache(maxsize=4)
def _structure_cached(M: int, K: int, deg: int, law: str, empty: float, seed: int):
    import torch
    sizes = _degrees_cached(M, deg, law, empty, seed)
    nnz = int(sizes.sum())
    gen = torch.Generator().manual_seed(seed + 7919)
    if law == "uniform":
        cols = torch.randint(0, K, (nnz,), generator=gen)
    else:
        # Chung-Lu: a column is drawn in proportion to its popularity -- the node's own degree on a
        # square (graph) matrix, else a Pareto draw; the popular columns are the hub nodes
        if M == K:
            pop = sizes.double() + 0.5
        else:
            pop = torch.rand(K, generator=gen, dtype=torch.float64).clamp(min=1e-12).pow(-1.0 / (PARETO_ALPHA - 1.0))
        cols = torch.multinomial(pop, nnz, replacement=True, generator=gen)
    rows = torch.repeat_interleave(torch.arange(M), sizes)
    cols = torch.sort(rows * K + cols).values - rows * K          # column ids sorted within each row
    indptr = torch.zeros(M + 1, dtype=torch.int64)
    torch.cumsum(sizes, 0, out=indptr[1:])
    return indptr, cols.to(torch.int32)


def csr_structure(M: int, K: int, deg: int, law: str = "powerlaw", empty: float = 0.0, seed: int = 0):
    """(indptr [M + 1] int64, indices [M deg] int32), CPU: row_degrees' rows, each row's column
    ids in increasing order (duplicates possible: a drawn multigraph, they add up). Deterministic
    in the arguments, whatever device make_inputs then moves them to."""
    if law not in LAWS:
        raise ValueError(f"law {law!r} is not one of {', '.join(LAWS)}")
    if K < 1:
        raise ValueError(f"need K >= 1; got K={K}")
    indptr, indices = _structure_cached(int(M), int(K), int(deg), law, float(empty), int(seed))
    return indptr.clone(), indices.clone()


def _point_structure(point, seed: int = 0):
    return csr_structure(point["M"], point["K"], point["deg"], _law(point), float(point.get("empty", 0.0)), seed)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """csr_structure's indptr (in the point's index dtype) and indices, values ~ N(0, 1) / sqrt(deg)
    (so out is O(1) for any degree), b ~ N(0, 1) [K, N], both in the point's dtype."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    out_dt = _torch_dtype(_out_name(point))
    idx_dt = {"int32": torch.int32, "int64": torch.int64}[_index_name(point)]
    indptr, indices = _point_structure(point, seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    nnz, K, N = indices.numel(), point["K"], point["N"]
    values = (torch.randn((nnz,), generator=gen, device=device) * point["deg"] ** -0.5).to(dt)
    b = torch.randn((K, N), generator=gen, device=device).to(dt)
    return {"indptr": indptr.to(device=device, dtype=idx_dt), "indices": indices.to(device), "values": values,
            "b": b, "out_dtype": out_dt}


def launch(inputs, cfg):
    """The [M, N] output (the point's out dtype)."""
    return csr_spmm(inputs["indptr"], inputs["indices"], inputs["values"], inputs["b"],
                    out_dtype=inputs.get("out_dtype"), BLOCK_ROWS=cfg["BLOCK_ROWS"], BLOCK_NNZ=cfg["BLOCK_NNZ"],
                    BLOCK_N=cfg["BLOCK_N"], DOT=cfg["DOT"], num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [M, N]: each row's sum of values x b rows in fp64 from the same rounded values and b
    the kernel reads. Rows go in chunks of ~2^24 / N nonzeros, so the fp64 gathered rows stay
    ~128 MiB at any N."""
    import torch
    indptr, idx, val, b = inputs["indptr"].long().cpu(), inputs["indices"], inputs["values"], inputs["b"]
    M, N = indptr.numel() - 1, b.shape[1]
    dev = b.device
    sizes = indptr[1:] - indptr[:-1]
    ref = torch.zeros((M, N), dtype=torch.float64, device=dev)
    chunk = max(1, (1 << 24) // max(N, 1))
    r0 = 0
    while r0 < M:
        r1 = int(torch.searchsorted(indptr, indptr[r0] + chunk, right=True)) - 1
        r1 = min(M, max(r1, r0 + 1))
        lo, hi = int(indptr[r0]), int(indptr[r1])
        if hi > lo:
            rows = b[idx[lo:hi].long()].double() * val[lo:hi].double()[:, None]
            seg = torch.repeat_interleave(torch.arange(r0, r1), sizes[r0:r1]).to(dev)
            ref.index_add_(0, seg, rows)
        r0 = r1
    return ref.float()


def torch_baseline(inputs):
    """torch's CSR sparse-dense matmul (cuSPARSE SpMM on a GPU) in b's dtype, as a PyTorch user
    writes it (indptr and indices in one index dtype, int64); where the backend lacks the dtype
    (bf16 / fp16 on a CPU) it runs in fp32. Cast to the point's out dtype."""
    import torch
    indptr, b = inputs["indptr"].long(), inputs["b"]
    M, K = indptr.numel() - 1, b.shape[0]
    out_dt = inputs.get("out_dtype") or b.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # "sparse CSR support is in beta"
        a = torch.sparse_csr_tensor(indptr, inputs["indices"].long(), inputs["values"], (M, K),
                                    check_invariants=False)
        try:
            res = a @ b
        except (RuntimeError, NotImplementedError):
            res = a.to(torch.float32) @ b.float()
    return res.to(out_dt)


@functools.lru_cache(maxsize=16)
def _distinct_columns(M: int, K: int, deg: int, law: str, empty: float) -> int:
    import torch
    _, indices = _structure_cached(M, K, deg, law, empty, 0)
    return int(torch.unique(indices).numel())


def bytes_moved(point) -> int:
    """indptr ((M + 1) x 4 / 8 B), indices (nnz x 4 B) and values (nnz x e) read once, each b row
    that some nonzero references read once (the distinct column ids of make_inputs' seed-0
    structure: all but ~1 % of them at the POINTS; repeat
    references are L2 hits when b fits the 50 MB L2, else partly DRAM re-reads, not counted),
    out written once (M N in the out dtype)."""
    M, K, N, deg = point["M"], point["K"], point["N"], point["deg"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    eo = _elem_bytes(_out_name(point))
    ei = 4 if _index_name(point) == "int32" else 8
    nnz = M * deg
    cols = _distinct_columns(int(M), int(K), int(deg), _law(point), float(point.get("empty", 0.0)))
    return (M + 1) * ei + nnz * (4 + e) + cols * N * e + M * N * eo


def flops(point) -> int:
    """One multiply-add per gathered element: 2 nnz N."""
    return 2 * point["M"] * point["deg"] * point["N"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_ROWS rows x BLOCK_N columns (1-D grid, column tile fastest)."""
    return triton.cdiv(point["M"], cfg["BLOCK_ROWS"]) * triton.cdiv(point["N"], cfg["BLOCK_N"])


def _group_steps(cfg, point):
    """[cdiv(M, BLOCK_ROWS)] int64: each row group's main-loop steps (make_inputs' seed-0 degrees):
    DOT = 0: the sum over its rows of ceil(deg / BLOCK_NNZ); DOT = 1: ceil(group nnz / BLOCK_NNZ)."""
    import torch
    M = int(point["M"])
    sizes = _degrees_cached(M, int(point["deg"]), _law(point), float(point.get("empty", 0.0)), 0)
    br, bn = cfg["BLOCK_ROWS"], cfg["BLOCK_NNZ"]
    pad = triton.cdiv(M, br) * br - M
    if cfg["DOT"]:
        per_group = torch.nn.functional.pad(sizes, (0, pad)).view(-1, br).sum(1)
        return (per_group + bn - 1) // bn
    steps = (sizes + bn - 1) // bn
    return torch.nn.functional.pad(steps, (0, pad)).view(-1, br).sum(1)


def loop_iterations(cfg, point) -> int:
    """Main-loop steps per CTA (the nonzero loop), on average (rounded up) over the row groups
    (make_inputs' seed-0 degrees). A hub row takes up to DEG_CAP x deg / BLOCK_NNZ steps."""
    steps = _group_steps(cfg, point)
    return -(-int(steps.sum()) // steps.numel())


def cta_iterations(cfg, point) -> list[int]:
    """Main-loop steps of each CTA in launch order (program id = row group x column tiles, column
    tiles fastest): _group_steps of its row group (0 for a group of empty rows: it stores zeros)."""
    steps = _group_steps(cfg, point)
    return steps.repeat_interleave(triton.cdiv(point["N"], cfg["BLOCK_N"])).tolist()


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, K, N, deg = point["M"], point["K"], point["N"], point["deg"]
    idx_dt = {"int32": torch.int32, "int64": torch.int64}[_index_name(point)]
    _law(point)
    indptr = torch.empty((M + 1,), dtype=idx_dt, device="meta")
    indices = torch.empty((M * deg,), dtype=torch.int32, device="meta")
    values = torch.empty((M * deg,), dtype=dt, device="meta")
    b = torch.empty((K, N), dtype=dt, device="meta")
    out = torch.empty((M, N), dtype=_torch_dtype(_out_name(point)), device="meta")
    return _kernel_args(indptr, indices, values, b, out, cfg)
