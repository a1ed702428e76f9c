"""Sparse matrix x dense vector, y = A x, with A in sliced ELLPACK (SELL-C-sigma) -- the SpMV of cuSPARSE's
(deprecated) ELL / HYB formats, Ginkgo's Ell and Sellp matrices, PETSc's MATSELL (MATAIJSELL) and of the
iterative solvers (CG / GMRES / BiCGStab, Chebyshev smoothers) that run it on FEM / finite-difference and graph
Laplacian matrices -- a bare @triton.jit kernel + its launcher.

    y[perm[q]] = sum_{j < w(s)} val[e(q, j)] * x[col[e(q, j)]]      (col = -1: a padded slot, skipped)
    e(q, j) = slice_ptr[s] + j C + (q mod C),   s = q // C

The format: the rows, in stored order q (perm[q] the original row; sigma > 1 sorts the rows by length inside
windows of sigma rows, sigma = 1 keeps the natural order and has no perm), are cut into slices of C consecutive
rows; slice s is padded to the width w(s) of its longest row and stored slot-major -- slot j of its C rows
contiguous -- from element slice_ptr[s] = C sum_{t < s} w(t) of col (int32 column ids, -1 in a padded slot) and
val (the values, 0 in a padded slot). So a slot's column ids and values load coalesced along the rows, and
the x gather is the irregular part (its locality follows the matrix's bandwidth / ordering: a stencil's x reads
are three to nine streams of near-neighbours, a random graph's land anywhere). C = n_rows padded is plain
ELLPACK; C = 32 / 64 is Kreutzer et al.'s SELL-C-sigma / Ginkgo's SELL-P slices.

col: [total] int32 (total = slice_ptr[-1]; trusted: -1 or 0 <= id < n_cols, not range-checked); val: [total]
fp32 / fp16 / bf16; x: [n_cols] in val's dtype, contiguous; slice_ptr: [cdiv(n_rows, C) + 1] int32 (trusted:
multiples of C, nondecreasing, slice_ptr[-1] = total); perm: None or [n_rows] int32 (a permutation);
y: a fresh [n_rows] tensor in x's dtype. fp32 accumulation, one rounding at the store.

Work split: a 1-D grid of cdiv(n_rows, BLOCK_R) programs, program b owning stored rows b BLOCK_R ..
(b + 1) BLOCK_R - 1 (part of one slice when BLOCK_R < C, BLOCK_R / C whole slices when larger). A program loads
its rows' slice offsets and widths once, walks the slots up to the widest of its slices BLOCK_K at a time
(tl.range with the launch's num_stages: a step's column ids and values -- a [BLOCK_K, BLOCK_R] tile,
rows fastest, coalesced along each slice's rows -- then the gather of x through them, masked where the slot is
past the row's slice width or padded), multiply-adds into a [BLOCK_K, BLOCK_R] fp32 accumulator, reduces it
along the slots once at the end and stores one value a row (through perm when sigma > 1: a scattered store).
A row's slice width bounds its loop, so with sigma sorting the programs' work differs (a power-law graph's
hub-row slices run tens of steps, its leaf slices one): cta_iterations gives each program's steps.

How it differs from the closest examples/ kernels: examples/csr_spmm.py multiplies a CSR matrix by a dense
matrix, gathering whole rows of b (BLOCK_N columns a nonzero) row by row, its loop bounds from indptr; here the
right-hand side is one vector (one element gathered a nonzero: the loads of col / val are as large as the gather,
and the bytes are the index stream, not the gathered rows), the nonzeros are slot-major and padded so a step
covers BLOCK_R rows at once with coalesced index loads, and the loop bound is the slice width.
examples/embedding_bag.py pools gathered table rows per bag (ragged bags from offsets, a wide row a gather);
here each gathered element is a scalar of x scaled by its own value. examples/gemv.py is the dense y = W x
(W streamed row-major, x contiguous and reused by every program); here the matrix is sparse and x is gathered.

Tunables: BLOCK_R (rows a program: 32 / 64 / 128 -- a step's index loads and gathers in flight, against the
number of programs and how much padding a program's widest slice forces on it), BLOCK_K (slots a step: 4 / 8 /
16 -- 16 walks a 7-point row in one mostly-masked step), num_warps (4 / 8), num_stages (1 / 2 / 3: the slot loop
is a tl.range(num_stages=...), whose column-id and value loads and x gather the pipeliner issues ahead -- but the
loops are short, 1-7 steps at the points). On sm_90 every config of the sweep compiles at every point without
spills (the test file's test_example_compiles_sm90): registers 24-165 under triton 3.6.0 and 26-88 under 3.9
(the most for 128 rows x 16 slots on 4 warps at 3 stages), shared memory 512 B - 50 KiB under 3.6.0 and
16 B - 48 KiB under 3.9 (the pipelined steps' tiles and the end-of-loop reduction; the most for 128 x 16 at 3
stages in fp32). Left out: BLOCK_R 256 (256 rows x 16 slots on 8 warps at 2 stages spills 10 registers under 3.9
at the fp16 graph point; 189-191 registers on 4 warps under 3.6.0).
Problem parameters (a workload point): matrix ("lap7" / "lap27": a variable-coefficient 7 / 27-point
finite-difference operator on an nx^3 grid, natural order; "powerlaw": a graph of n nodes with Pareto degrees of
mean ~deg capped at kmax, columns drawn with a power-law popularity, nodes in random order), nx (stencils) or
n, deg, kmax (graph), C (slice height), sigma (sorting window; 1 = none), dtype (val's, x's and y's).
"""

from __future__ import annotations

import functools
import itertools

import triton
import triton.language as tl


@triton.jit
def _kernel(COL, VAL, X, Y, SLICE_PTR, PERM, n_rows,
            SLICE: tl.constexpr, HAS_PERM: tl.constexpr, NUM_STAGES: tl.constexpr,
            BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)                 # stored (slice-ordered) rows
    r_ok = rows < n_rows
    s = rows // SLICE
    p0 = tl.load(SLICE_PTR + s, mask=r_ok, other=0)
    p1 = tl.load(SLICE_PTR + s + 1, mask=r_ok, other=0)
    width = (p1 - p0) // SLICE                                  # the row's slice width (0 past n_rows)
    kmax = tl.max(width, axis=0)
    base = p0 + rows % SLICE                                    # slot 0 of the row
    jj = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_K, BLOCK_R], dtype=tl.float32)
    for k0 in tl.range(0, kmax, BLOCK_K, num_stages=NUM_STAGES):
        kk = k0 + jj
        ok = kk[:, None] < width[None, :]
        off = base[None, :] + kk[:, None] * SLICE
        c = tl.load(COL + off, mask=ok, other=-1)
        v = tl.load(VAL + off, mask=ok, other=0.0)
        xv = tl.load(X + c, mask=c >= 0, other=0.0)
        acc += v.to(tl.float32) * xv.to(tl.float32)
    y = tl.sum(acc, axis=0)
    if HAS_PERM:
        dst = tl.load(PERM + rows, mask=r_ok, other=0)
    else:
        dst = rows
    tl.store(Y + dst, y.to(Y.dtype.element_ty), mask=r_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-35"
DTYPES = ("fp32", "fp16", "bf16")
MATRICES = ("lap7", "lap27", "powerlaw")
TUNABLES = ("BLOCK_R", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_R": 128, "BLOCK_K": 8, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 3 = 54 configs (32-128 rows x 4-16 slots a step, 4 / 8 warps, 1-3 stages of the
# slot loop). Left out: BLOCK_R 256 (spills under triton 3.9 at 256 x 16; module doc)
SWEEP_AXES = {"BLOCK_R": [32, 64, 128], "BLOCK_K": [4, 8, 16], "num_warps": [4, 8], "num_stages": [1, 2, 3]}
PARETO_ALPHA = 2.1            # the graph's degree law: P(deg > d) ~ d^-(alpha - 1)
POP_EXP = 3.0                 # column popularity: id = n u^POP_EXP before a random relabel (density ~ id^-2/3)
MAX_INDEX = 2**31 - 1

POINTS = [
    # a 27-point variable-coefficient operator (trilinear FEM Q1 / compact FD) on a 128^3 grid, fp32, SELL-32
    # in natural order: 2.1 M rows, 55.7 M nonzeros in 56.0 M slots (27 a row inside, fewer on the faces --
    # the slices at the boundary are padded to their widest row). col + val 448 MB, x / y 8.4 MB each: ~0.1 ms
    {"matrix": "lap27", "nx": 128, "C": 32, "sigma": 1, "dtype": "fp32"},
    # the 7-point Poisson / heat operator of a CG solve on a 256^3 grid, fp32, Ginkgo SELL-P's 64-row slices:
    # 16.8 M rows, 117 M nonzeros in 117.2 M slots: col + val 937 MB, x / y 67 MB each: ~0.2-0.3 ms
    {"matrix": "lap7", "nx": 256, "C": 64, "sigma": 1, "dtype": "fp32"},
    # a power-law graph (PageRank / GNN propagation / graph Laplacian smoothing): 4.2 M nodes, 33.6 M edges
    # (mean degree 8, capped at 256), fp16 edge weights and x, SELL-32-sigma with rows sorted by degree in
    # windows of 4096 (the scattered store through perm): 37.3 M slots (11 % padding), col + val 224 MB, x read
    # randomly (8.4 MB, L2-resident): >= 54 us
    {"matrix": "powerlaw", "n": 4_194_304, "deg": 8, "kmax": 256, "C": 32, "sigma": 4096, "dtype": "fp16"},
]

_ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v, lo: int, hi: int) -> bool:
    return _is_int(v) and lo <= v <= hi and not v & (v - 1)


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK_R"]
    if not _pow2(b, 16, 4096):
        raise ValueError(f"BLOCK_R={b!r} must be a power of two from 16 to 4096")
    k = cfg["BLOCK_K"]
    if not _pow2(k, 1, 64):
        raise ValueError(f"BLOCK_K={k!r} must be a power of two from 1 to 64")
    if b * k > 16384:
        raise ValueError(f"BLOCK_R x BLOCK_K = {b} x {k} is above 16384 elements a step")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1 or ns > 8:
        raise ValueError(f"num_stages={ns!r} must be an int from 1 to 8")


def _check_point(point) -> dict:
    P = {"dtype": "fp32", "sigma": 1, **point}
    m = P.get("matrix")
    if m not in MATRICES:
        raise ValueError(f"matrix {m!r} is not one of {', '.join(MATRICES)}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {', '.join(DTYPES)}")
    C, sigma = P.get("C"), P["sigma"]
    if not _pow2(C, 1, 1024):
        raise ValueError(f"C={C!r} must be a power of two from 1 to 1024 (the slice height)")
    if not _is_int(sigma) or sigma < 1:
        raise ValueError(f"sigma={sigma!r} must be a positive int (1: no sorting)")
    if m == "powerlaw":
        n, deg, kmax = P.get("n"), P.get("deg"), P.get("kmax")
        if not _is_int(n) or n < 1 or n > 2**30:
            raise ValueError(f"n={n!r} must be an int from 1 to {2**30}")
        if not _is_int(kmax) or kmax < 1 or kmax > 4096:
            raise ValueError(f"kmax={kmax!r} must be an int from 1 to 4096")
        if not isinstance(deg, (int, float)) or isinstance(deg, bool) or not 1 <= deg <= kmax:
            raise ValueError(f"deg={deg!r} must be a number from 1 to kmax={kmax}")
        if n * kmax > MAX_INDEX:
            raise ValueError(f"n x kmax = {n * kmax} slots could exceed {MAX_INDEX} (int32 slice offsets)")
    else:
        nx = P.get("nx")
        if not _is_int(nx) or nx < 1 or nx > 1024:
            raise ValueError(f"nx={nx!r} must be an int from 1 to 1024")
        if nx ** 3 * len(_offsets(m)) > MAX_INDEX:
            raise ValueError(f"nx={nx}: {nx ** 3 * len(_offsets(m))} slots exceed {MAX_INDEX}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


@functools.lru_cache(maxsize=None)
def _offsets(matrix: str) -> tuple:
    """The stencil's (dz, dy, dx) in increasing column order (the diagonal included)."""
    offs = list(itertools.product((-1, 0, 1), repeat=3))
    if matrix == "lap7":
        offs = [o for o in offs if sum(map(abs, o)) <= 1]
    return tuple(offs)


def _n_rows(P) -> int:
    return P["n"] if P["matrix"] == "powerlaw" else P["nx"] ** 3


# ---------------------------------------------------------------- building the matrix (any device)
def _stencil_valid(nx: int, o: tuple, device):
    """[nx^3] bool: the rows (z, y, x lexicographic, x fastest) whose neighbour at offset o is in the grid."""
    import torch
    ax = torch.arange(nx, device=device)
    ok = [(ax + d >= 0) & (ax + d < nx) for d in o]                 # per axis
    return (ok[0][:, None, None] & ok[1][None, :, None] & ok[2][None, None, :]).reshape(-1)


def _stencil_lengths(nx: int, matrix: str, device):
    import torch
    n = nx ** 3
    lengths = torch.zeros(n, dtype=torch.int32, device=device)
    for o in _offsets(matrix):
        lengths += _stencil_valid(nx, o, device)
    return lengths


def _pareto_degrees(n: int, deg: float, kmax: int, seed: int):
    """[n] int64 (CPU): floor(a x Pareto(alpha)) clamped to [1, kmax], a bisected so the mean is ~deg."""
    import torch
    g = torch.Generator().manual_seed(int(seed))
    raw = torch.rand(n, generator=g, dtype=torch.float64).clamp(min=1e-12).pow(-1.0 / (PARETO_ALPHA - 1.0))
    sample = raw[:1 << 16]                       # the scale from a sample: the same law at any n
    lo, hi = 1e-3, float(kmax)
    for _ in range(40):
        a = 0.5 * (lo + hi)
        mean = float(torch.floor(a * sample).clamp(1, kmax).mean())
        lo, hi = (a, hi) if mean < deg else (lo, a)
    return torch.floor(0.5 * (lo + hi) * raw).clamp(1, kmax).to(torch.int64)


@functools.lru_cache(maxsize=2)
def _graph_csr(n: int, deg: float, kmax: int, seed: int):
    """(lengths [n] int32, cols [nnz] int32), CPU: Pareto degrees, each row's columns drawn with a power-law
    popularity (id = n u^POP_EXP) through a random relabel of the nodes (hubs anywhere), in drawn order
    (unsorted within a row, as an edge list converts). Deterministic in the arguments."""
    import torch
    lengths = _pareto_degrees(n, deg, kmax, seed)
    g = torch.Generator().manual_seed(int(seed) + 7919)
    nnz = int(lengths.sum())
    relabel = torch.randperm(n, generator=g)
    u = torch.rand(nnz, generator=g, dtype=torch.float64)
    cols = relabel[(u.pow(POP_EXP) * n).long().clamp(max=n - 1)]
    return lengths.to(torch.int32), cols.to(torch.int32)


def _lengths(P, seed: int, device):
    """[n_rows] int32 row lengths on `device`."""
    if P["matrix"] == "powerlaw":
        return _graph_csr(P["n"], P["deg"], P["kmax"], int(seed))[0].to(device)
    return _stencil_lengths(P["nx"], P["matrix"], device)


def _slices(lengths, C: int, sigma: int):
    """(perm or None, inverse perm or None, widths [n_slices] int64, slice_ptr [n_slices + 1] int64) of the
    row lengths: rows sorted by length (longest first, stable) in windows of sigma, slices of C rows padded to
    their longest."""
    import torch
    n = lengths.numel()
    dev = lengths.device
    perm = inv = None
    ls = lengths.long()
    if sigma > 1 and n > 1:
        top = int(ls.max()) + 1
        key = (torch.arange(n, device=dev) // sigma) * top + (top - 1 - ls)
        perm = torch.sort(key, stable=True).indices
        inv = torch.empty_like(perm)
        inv[perm] = torch.arange(n, device=dev)
        ls = ls[perm]
    n_sl = triton.cdiv(n, C)
    widths = torch.nn.functional.pad(ls, (0, n_sl * C - n)).view(n_sl, C).amax(1)
    ptr = torch.zeros(n_sl + 1, dtype=torch.int64, device=dev)
    torch.cumsum(widths * C, 0, out=ptr[1:])
    return perm, inv, widths, ptr


def build_sell(point, seed: int = 0, device="cpu", values: bool = True) -> dict:
    """The point's matrix in SELL-C-sigma (module doc) on `device`: col [total] int32, val [total] in the
    point's dtype (None without `values`), slice_ptr int32, perm int32 or None, n_rows, C. Stencil values:
    off-diagonals -(0.5 + U(0, 1)), the diagonal (number of neighbours) + U(0, 1) (a variable-coefficient
    diffusion operator); graph edge weights U(0.5, 1.5) / deg. Drawn on `device` from a seeded generator."""
    import torch
    P = _check_point(point)
    dev = torch.device(device)
    C, n = P["C"], _n_rows(P)
    lengths = _lengths(P, seed, dev)
    perm, inv, widths, ptr = _slices(lengths, C, P["sigma"])
    total = int(ptr[-1])
    if total > MAX_INDEX:
        raise ValueError(f"the matrix needs {total} slots; at most {MAX_INDEX} (int32 offsets)")
    col = torch.full((total,), -1, dtype=torch.int32, device=dev)
    val = torch.zeros((total,), dtype=torch.float32, device=dev) if values else None
    g = torch.Generator(device=dev).manual_seed(int(seed)) if values else None
    q_all = torch.arange(n, device=dev) if inv is None else inv          # stored position of each row
    if P["matrix"] == "powerlaw":
        _, cols = _graph_csr(P["n"], P["deg"], P["kmax"], int(seed))
        ln = lengths.long()
        start = torch.zeros(n, dtype=torch.int64, device=dev)
        torch.cumsum(ln[:-1], 0, out=start[1:])
        nnz = cols.numel()
        step = 1 << 24                                                   # nonzeros at a time
        row_of = torch.repeat_interleave(torch.arange(n, device=dev), ln)
        for e0 in range(0, nnz, step):
            e = torch.arange(e0, min(nnz, e0 + step), device=dev)
            r = row_of[e0:e0 + e.numel()]
            q = q_all[r]
            pos = ptr[q // C] + (e - start[r]) * C + q % C
            col[pos] = cols[e0:e0 + e.numel()].to(dev)
            if values:
                val[pos] = (0.5 + torch.rand(e.numel(), generator=g, device=dev)) / P["deg"]
    else:
        nx = P["nx"]
        slot = torch.zeros(n, dtype=torch.int64, device=dev)
        base = ptr[q_all // C] + q_all % C
        idx = torch.arange(n, device=dev)
        diag = None
        for o in _offsets(P["matrix"]):
            ok = _stencil_valid(nx, o, dev)
            pos = (base + slot * C)[ok]
            col[pos] = (idx[ok] + (o[0] * nx + o[1]) * nx + o[2]).to(torch.int32)
            if values:
                if o == (0, 0, 0):
                    diag = pos
                else:
                    val[pos] = -(0.5 + torch.rand(pos.numel(), generator=g, device=dev))
            slot += ok
        if values:
            val[diag] = (lengths.float() - 1.0) + torch.rand(n, generator=g, device=dev)
    to32 = (lambda t: None if t is None else t.to(torch.int32))
    return {"col": col, "val": None if val is None else val.to(_torch_dtype(P["dtype"])),
            "slice_ptr": ptr.to(torch.int32), "perm": to32(perm), "n_rows": n, "C": C}


# ---------------------------------------------------------------- the kernel's launch
def _grid(n_rows: int, cfg) -> tuple:
    return (triton.cdiv(n_rows, cfg["BLOCK_R"]),)


def _kernel_args(col, val, x, y, slice_ptr, perm, C: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(COL=col, VAL=val, X=x, Y=y, SLICE_PTR=slice_ptr, PERM=perm, n_rows=y.shape[0], SLICE=C,
                HAS_PERM=perm is not None, NUM_STAGES=cfg["num_stages"], BLOCK_R=cfg["BLOCK_R"],
                BLOCK_K=cfg["BLOCK_K"])


def ell_spmv(col, val, x, slice_ptr, n_rows: int, C: int, perm=None, *, BLOCK_R: int = 128, BLOCK_K: int = 8,
             num_warps: int = 4, num_stages: int = 1):
    """y [n_rows] in x's dtype: A x for A in SELL-C-sigma (module doc) -- col [total] int32 (-1 padded),
    val [total] in x's dtype, slice_ptr [cdiv(n_rows, C) + 1] int32, perm None or [n_rows] int32 (stored row q
    is row perm[q]). x: fp32 / fp16 / bf16, contiguous. The format is trusted (no host synchronization): column
    ids below len(x), slice_ptr nondecreasing multiples of C ending at total. The tunables: the module doc."""
    import torch
    cfg = {"BLOCK_R": BLOCK_R, "BLOCK_K": BLOCK_K, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 1 or x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or not x.is_contiguous():
        raise ValueError(f"x must be a contiguous 1-d fp32 / fp16 / bf16 tensor; got {tuple(x.shape)} {x.dtype}")
    if x.numel() < 1 or x.numel() > MAX_INDEX:
        raise ValueError(f"x has {x.numel()} elements; from 1 to {MAX_INDEX}")
    if col.dim() != 1 or col.dtype != torch.int32 or not col.is_contiguous():
        raise ValueError(f"col must be a contiguous 1-d int32 tensor; got {tuple(col.shape)} {col.dtype}")
    if col.numel() > MAX_INDEX:
        raise ValueError(f"col has {col.numel()} slots; at most {MAX_INDEX}")
    if val.dtype != x.dtype or val.shape != col.shape or not val.is_contiguous():
        raise ValueError(f"val must be a contiguous {x.dtype} tensor of col's shape {tuple(col.shape)}; got "
                         f"{tuple(val.shape)} {val.dtype}")
    if not _pow2(C, 1, 1024):
        raise ValueError(f"C={C!r} must be a power of two from 1 to 1024 (the slice height)")
    if not _is_int(n_rows) or n_rows < 1 or n_rows > MAX_INDEX - 4096:
        raise ValueError(f"n_rows={n_rows!r} must be an int from 1 to {MAX_INDEX - 4096}")
    n_sl = triton.cdiv(n_rows, C)
    if slice_ptr.dim() != 1 or slice_ptr.dtype != torch.int32 or slice_ptr.numel() != n_sl + 1 \
            or not slice_ptr.is_contiguous():
        raise ValueError(f"slice_ptr must be a contiguous int32 [cdiv(n_rows, C) + 1 = {n_sl + 1}] tensor; got "
                         f"{tuple(slice_ptr.shape)} {slice_ptr.dtype}")
    if perm is not None and (perm.dim() != 1 or perm.dtype != torch.int32 or perm.numel() != n_rows
                             or not perm.is_contiguous()):
        raise ValueError(f"perm must be None or a contiguous int32 [n_rows={n_rows}] tensor; got "
                         f"{tuple(perm.shape)} {perm.dtype}")
    for name, t in (("col", col), ("val", val), ("slice_ptr", slice_ptr), ("perm", perm)):
        if t is not None and t.device != x.device:
            raise ValueError(f"{name} must be on x's device {x.device}; got {t.device}")
    y = torch.empty((n_rows,), dtype=x.dtype, device=x.device)
    _kernel[_grid(n_rows, cfg)](**_kernel_args(col, val, x, y, slice_ptr, perm, C, cfg), num_warps=num_warps,
                                num_stages=num_stages)
    return y


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """build_sell's matrix on the device, x ~ N(0, 1) [n_rows] in the point's dtype, and the same matrix as a
    torch sparse CSR tensor in the original row order (for torch_baseline)."""
    import torch
    P = _check_point(point)
    A = build_sell(P, seed, device)
    g = torch.Generator(device=torch.device(device)).manual_seed(int(seed) + 1)
    A["x"] = torch.randn((A["n_rows"],), generator=g, device=device).to(_torch_dtype(P["dtype"]))
    A["csr"] = _to_csr(A)
    return A


def _stored_products(inputs):
    """(stored row of each slot, its product val x x in float64) over the slots with a column."""
    import torch
    col, ptr, C = inputs["col"], inputs["slice_ptr"].long(), inputs["C"]
    dev = col.device
    widths = (ptr[1:] - ptr[:-1]) // C
    e = torch.arange(col.numel(), device=dev)
    s = torch.repeat_interleave(torch.arange(widths.numel(), device=dev), widths * C)
    q = s * C + (e - ptr[s]) % C
    ok = col >= 0
    return q[ok], col[ok].long(), ok


def _to_csr(inputs):
    """The matrix as a torch sparse CSR tensor [n_rows, len(x)] in val's dtype, original row order."""
    import torch
    q, c, ok = _stored_products(inputs)
    rows = q if inputs["perm"] is None else inputs["perm"].long()[q]
    n = inputs["n_rows"]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # "sparse CSR support is in beta", invariant checks
        coo = torch.sparse_coo_tensor(torch.stack([rows, c]), inputs["val"][ok], (n, n), check_invariants=False)
        return coo.coalesce().to_sparse_csr()


def launch(inputs, cfg):
    """y [n_rows] in x's dtype."""
    return ell_spmv(inputs["col"], inputs["val"], inputs["x"], inputs["slice_ptr"], inputs["n_rows"], inputs["C"],
                    inputs["perm"], BLOCK_R=cfg["BLOCK_R"], BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"])


def reference(inputs):
    """y [n_rows] in float64 from the stored format itself: every slot with a column, its stored row from the
    slot's position (slice from the slot's offset, lane = offset mod C), val x x[col] in float64 summed into
    that row (index_add), then placed at perm[q]."""
    import torch
    q, c, ok = _stored_products(inputs)
    n = inputs["n_rows"]
    prod = inputs["val"][ok].double() * inputs["x"].double()[c]
    ys = torch.zeros(triton.cdiv(n, inputs["C"]) * inputs["C"], dtype=torch.float64, device=prod.device)
    ys.index_add_(0, q, prod)
    if inputs["perm"] is None:
        return ys[:n]
    y = torch.empty(n, dtype=torch.float64, device=prod.device)
    y[inputs["perm"].long()] = ys[:n]
    return y


def torch_baseline(inputs):
    """torch's CSR SpMV (cuSPARSE on a GPU) of the same matrix in val's dtype (fp32 where the backend lacks
    it), cast to x's dtype."""
    import warnings
    import torch
    a, x = inputs["csr"], inputs["x"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            y = torch.mv(a, x)
        except (RuntimeError, NotImplementedError):
            y = torch.mv(a.to(torch.float32), x.float())
    return y.to(x.dtype)


@functools.lru_cache(maxsize=8)
def _widths(key: tuple):
    """Slice widths [n_slices] int64 (CPU) of the point `key` (seed 0)."""
    P = dict(key)
    import torch
    return _slices(_lengths(P, 0, torch.device("cpu")), P["C"], P["sigma"])[2]


def _point_widths(point):
    P = _check_point(point)
    return _widths(tuple(sorted(P.items())))


def bytes_moved(point) -> int:
    """col (4 B) and val read once for every stored slot, the padding included (a padded slot of a row shorter
    than its slice is read like any other; the last slice's rows past n_rows are counted too), slice_ptr once,
    x read once (n_rows elements: every column is referenced at the points), y written once, perm read once
    when sigma > 1 (seed-0 matrix's slice widths)."""
    P = _check_point(point)
    e = _ESIZE[P["dtype"]]
    n = _n_rows(P)
    w = _point_widths(P)
    slots = int(w.sum()) * P["C"]
    perm = 4 * n if P["sigma"] > 1 and n > 1 else 0
    return slots * (4 + e) + 4 * (w.numel() + 1) + 2 * e * n + perm


def flops(point) -> int:
    """One multiply-add a nonzero: 2 nnz."""
    P = _check_point(point)
    if P["matrix"] == "powerlaw":
        import torch
        return 2 * int(_lengths(P, 0, torch.device("cpu")).long().sum())
    nx = P["nx"]
    return 2 * sum(_axis_prod(nx, o) for o in _offsets(P["matrix"]))


def _axis_prod(nx: int, o: tuple) -> int:
    """Rows whose neighbour at offset o is inside the nx^3 grid."""
    r = 1
    for d in o:
        r *= max(nx - abs(d), 0)
    return r


def grid(cfg, point) -> tuple:
    """(cdiv(n_rows, BLOCK_R),)."""
    _check_cfg(cfg)
    return _grid(_n_rows(_check_point(point)), cfg)


def cta_iterations(cfg, point) -> list:
    """Each program's slot steps, in program order: cdiv(widest slice it touches, BLOCK_K) (seed-0 matrix)."""
    import torch
    _check_cfg(cfg)
    P = _check_point(point)
    w = _point_widths(P)
    C, R = P["C"], cfg["BLOCK_R"]
    n_prog = _grid(_n_rows(P), cfg)[0]
    if R >= C:
        k = R // C
        per = torch.nn.functional.pad(w, (0, n_prog * k - w.numel())).view(n_prog, k).amax(1)
    else:
        per = w.repeat_interleave(C // R)[:n_prog]
    return ((per + cfg["BLOCK_K"] - 1) // cfg["BLOCK_K"]).tolist()


def loop_iterations(cfg, point) -> int:
    """Slot steps a program, on average (rounded up) over the programs."""
    it = cta_iterations(cfg, point)
    return -(-sum(it) // len(it))


@functools.lru_cache(maxsize=3)
def _cpu_structure(key: tuple):
    A = build_sell(dict(key), 0, "cpu", values=False)
    return A["col"], A["slice_ptr"], A["perm"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: col, slice_ptr and perm with data (CPU, the
    seed-0 matrix: the programs' loop bounds and the x gather's addresses); val, x and y on the meta device."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    col, ptr, perm = _cpu_structure(tuple(sorted(P.items())))
    dt = _torch_dtype(P["dtype"])
    n = _n_rows(P)
    val = torch.empty(col.shape, dtype=dt, device="meta")
    x = torch.empty((n,), dtype=dt, device="meta")
    y = torch.empty((n,), dtype=dt, device="meta")
    return _kernel_args(col, val, x, y, ptr, perm, P["C"], cfg)
