"""A batched tridiagonal solver -- many independent systems A_s x_s = d_s, A_s tridiagonal of size N, solved by
the Thomas algorithm (forward elimination, back substitution) on a batch stored interleaved, system index
fastest (cuSPARSE's gtsvInterleavedBatch layout) -- a bare @triton.jit kernel + its launcher:

    row i of system s:   a[i, s] x[i-1, s] + b[i, s] x[i, s] + c[i, s] x[i+1, s] = d[i, s]      (0 <= i < N)

    forward   c'[0] = c[0] / b[0],  d'[0] = d[0] / b[0]
              m = b[i] - a[i] c'[i-1],  c'[i] = c[i] / m,  d'[i] = (d[i] - a[i] d'[i-1]) / m
    backward  x[N-1] = d'[N-1],  x[i] = d'[i] - c'[i] x[i+1]

a, b, c, d: [N, S] fp32 or fp64, the S systems fastest (unit system stride; any row stride: an image with a
row pitch, or the rows of a wider buffer, are read in place). a[0, :] and c[N-1, :] lie outside the matrix and
are never read (cuSPARSE asks them to be 0; here they may hold anything). x: [N, S] in the input dtype, a fresh
contiguous tensor or the caller's [N, S] buffer with unit system stride. The arithmetic runs in the input
dtype (fp64 systems are solved in fp64, as cuSPARSE's Dgtsv). No pivoting: the systems must be diagonally
dominant (or otherwise safe for Thomas), as those of the workloads below are.

Where it comes from: cuSPARSE gtsv2StridedBatch / gtsvInterleavedBatch (algorithm 0 is Thomas per system);
ADI (alternating-direction implicit) steps of 2-D / 3-D diffusion and heat solvers (Peaceman-Rachford, Douglas:
every grid line along one axis is one tridiagonal system, and the lines of a row-major grid solved along a
slow axis are interleaved by construction); Weickert's AOS (additive operator splitting) nonlinear diffusion
of images, whose column solves are exactly this layout; cubic-spline fitting (one system per curve);
Crank-Nicolson option pricing (one system per option per time step).

Work split: one program owns BLOCK_S consecutive systems (a lane a system, grid cdiv(S, BLOCK_S)) and walks
the N rows twice. The forward sweep steps ROWS rows at a time: it loads the [ROWS, BLOCK_S] tiles of a, b, c, d
of those rows (each row's BLOCK_S systems contiguous: coalesced), runs the recurrence through the ROWS rows in
registers (c'[i-1], d'[i-1] carried from the previous row, each row picked out of its tile with a where + a
sum over the tile's row axis, held in-thread), and stores the step's c' tile to a scratch [N, S] tensor and
its d' tile to x. A barrier, then the backward sweep steps the same ROWS-row tiles from the last down to the
first, loads c' and d' back, walks the tile's rows from its last to its first with x[i+1] carried, and stores
x over d'. A step's loads do not depend on the recurrence carried into it, so ROWS rows' loads (4 ROWS a lane
forward, 2 ROWS backward) are in flight together, and the pipeliner (num_stages) may issue the next steps'
loads ahead. Row tails past N load a = c = d = 0, b = 1 (c' = d' = 0: nothing carried into the real rows,
nothing stored); system tails past S are masked. Every element of a / b / c / d is read once; c' and d' make
one round trip through memory (written forward, read backward: 8 N x BLOCK_S bytes fp32 a program, far more
than the L2 holds over a wave at these sizes, so the round trip reaches DRAM -- the workspace cuSPARSE's gtsv
also needs).

How this differs from the closest examples/ kernels: examples/chunk_cumsum.py and examples/lookback_scan.py
scan one linear first-order recurrence (a sum) along a contiguous axis, one pass; examples/selective_scan.py
runs a first-order recurrence along L too, scanned in chunks with tl.associative_scan, its state in registers
and the input read once. Here the recurrence is a nonlinear one (a division a row, the Mobius-map composition
is not used: each lane walks its system's rows one at a time) along the *strided* axis -- a lane owns a whole
system and the parallelism is across systems only, the rows walked in order -- and it runs twice: a forward
sweep whose results cannot stay on chip (N x BLOCK_S values a program) and a backward sweep that reads them
back in reverse row order, so the kernel writes 3 and reads 6 arrays of the problem's size instead of reading
one and writing one.

Tunables: BLOCK_S (systems a program: 32-256; the grid is cdiv(S, BLOCK_S), so few programs at the image and
spline points), ROWS (rows a step: 1-4; loads in flight per lane grow with it, and so do the registers and the
where / sum row picks), EVICT (0: plain loads and stores; 1: the coefficients and the backward reads loaded
evict_first, the forward c' / d' stored evict_last -- an attempt to keep the round trip in L2), num_warps
(2 / 4: when a warp's vectorized row of BLOCK_S systems -- 4 fp32 / 2 fp64 systems a lane -- is narrower than
the program's threads, the tile's row axis spreads across lanes and warps and each row pick becomes a
cross-thread reduction, through shared memory across warps; 32 systems on 2-4 warps even replicate lanes),
and num_stages, kept at 1 (the row loops have no dot: neither triton 3.6 nor 3.9 pipelines their loads -- num_stages
1-3 compiled to the same registers and no shared buffers, checked on a subset of the configs).

Registers / shared memory (sm_90, all 48 sweep configs at the fp32 and the fp64 specialization, no spills):
triton 3.6.0 -- fp32 28-122 registers, fp64 40-180 (the most: 256 systems x 4 rows on 2 warps, 16 fp64 values
of each of the 4 tiles a lane); triton 3.9 -- fp32 31-118, fp64 40-180. Shared memory 0-2048 bytes under both
(0 where the row axis stays in-thread -- ROWS 1, or 256 fp32 / 128-256 fp64 systems on 2 warps -- else layout
conversions and cross-warp row picks). Dropped from the sweep: ROWS 8 (256 fp64 systems on 2 warps: 255
registers and 72 spills under 3.6) and 8 warps (256 fp64 systems x 2 or 4 rows: 2 spills under 3.9).

Problem parameters (POINTS): N (rows of a system), S (systems), dtype (fp32 / fp64), and the name of the
workload ("kind": "adi", "spline" or "aos"), which only shapes the coefficients make_inputs draws.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(A, B, C, D, X, CP, N, S, stride_a, stride_b, stride_c, stride_d, stride_x, stride_cp,
            BLOCK_S: tl.constexpr, ROWS: tl.constexpr, EVICT: tl.constexpr):
    pid = tl.program_id(0)
    rs = pid * BLOCK_S + tl.arange(0, BLOCK_S)
    s_ok = rs < S
    rr = tl.arange(0, ROWS)
    dt = A.dtype.element_ty
    cprev = tl.zeros([BLOCK_S], dtype=dt)
    dprev = tl.zeros([BLOCK_S], dtype=dt)
    n_steps = tl.cdiv(N, ROWS)
    # EVICT 1: the coefficients are streamed (evict_first), the c' / d' round trip is kept in L2 (evict_last)
    ld_pol: tl.constexpr = "evict_first" if EVICT else ""
    st_pol: tl.constexpr = "evict_last" if EVICT else ""
    # forward elimination: c' to the scratch, d' to x
    for t in range(0, n_steps):
        ri = t * ROWS + rr                                              # [ROWS] row indices
        r_ok = ri < N
        m = r_ok[:, None] & s_ok[None, :]
        r64 = ri.to(tl.int64)[:, None]
        a = tl.load(A + r64 * stride_a + rs[None, :], mask=m & (ri > 0)[:, None], other=0.0,
                    eviction_policy=ld_pol)
        b = tl.load(B + r64 * stride_b + rs[None, :], mask=m, other=1.0, eviction_policy=ld_pol)
        c = tl.load(C + r64 * stride_c + rs[None, :], mask=m & (ri < N - 1)[:, None], other=0.0,
                    eviction_policy=ld_pol)
        d = tl.load(D + r64 * stride_d + rs[None, :], mask=m, other=0.0, eviction_policy=ld_pol)
        cp_t = tl.zeros([ROWS, BLOCK_S], dtype=dt)
        dp_t = tl.zeros([ROWS, BLOCK_S], dtype=dt)
        for r in tl.static_range(ROWS):
            sel = (rr == r)[:, None]
            ar = tl.sum(tl.where(sel, a, 0.0), axis=0)
            br = tl.sum(tl.where(sel, b, 0.0), axis=0)
            cr = tl.sum(tl.where(sel, c, 0.0), axis=0)
            dr = tl.sum(tl.where(sel, d, 0.0), axis=0)
            inv = 1.0 / (br - ar * cprev)
            cprev = cr * inv
            dprev = (dr - ar * dprev) * inv
            cp_t = tl.where(sel, cprev[None, :], cp_t)
            dp_t = tl.where(sel, dprev[None, :], dp_t)
        tl.store(CP + r64 * stride_cp + rs[None, :], cp_t, mask=m, eviction_policy=st_pol)
        tl.store(X + r64 * stride_x + rs[None, :], dp_t, mask=m, eviction_policy=st_pol)
    tl.debug_barrier()                                                  # the backward loads read what the forward stored
    # back substitution: x over d', last rows first
    xnext = tl.zeros([BLOCK_S], dtype=dt)
    for t in range(0, n_steps):
        ri = (n_steps - 1 - t) * ROWS + rr
        r_ok = ri < N
        m = r_ok[:, None] & s_ok[None, :]
        r64 = ri.to(tl.int64)[:, None]
        cp = tl.load(CP + r64 * stride_cp + rs[None, :], mask=m, other=0.0, eviction_policy=ld_pol)
        dp = tl.load(X + r64 * stride_x + rs[None, :], mask=m, other=0.0, eviction_policy=ld_pol)
        x_t = tl.zeros([ROWS, BLOCK_S], dtype=dt)
        for k in tl.static_range(ROWS):
            r = ROWS - 1 - k
            sel = (rr == r)[:, None]
            cr = tl.sum(tl.where(sel, cp, 0.0), axis=0)
            dr = tl.sum(tl.where(sel, dp, 0.0), axis=0)
            xnext = dr - cr * xnext
            x_t = tl.where(sel, xnext[None, :], x_t)
        tl.store(X + r64 * stride_x + rs[None, :], x_t, mask=m)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-34"
DTYPES = ("fp32", "fp64")
KINDS = ("adi", "spline", "aos")
TUNABLES = ("BLOCK_S", "ROWS", "EVICT", "num_warps", "num_stages")
BASELINE = {"BLOCK_S": 128, "ROWS": 2, "EVICT": 0, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 3 x 2 x 2 = 48 configs (32-256 systems a program, 1-4 rows a step, plain / streaming
# cache hints, 2 / 4 warps). num_stages stays 1: neither triton 3.6 nor 3.9 pipelines these loads (no dot:
# num_stages 1-3 gave the same registers and no shared buffers). Left out: ROWS 8 (256 systems on 2 warps spill in fp64: 72 spills
# under triton 3.6) and 8 warps (256 systems x 2 or 4 rows in fp64 spill 2 under triton 3.9)
SWEEP_AXES = {"BLOCK_S": [32, 64, 128, 256], "ROWS": [1, 2, 4], "EVICT": [0, 1], "num_warps": [2, 4],
              "num_stages": [1]}
MAX_ELEMS = 2**40

POINTS = [
    # a 3-D ADI step of a heat / diffusion solver on a 256^3 grid (Douglas-Gunn, variable diffusivity), the
    # sweep along the slowest axis: 65,536 interleaved lines of 256 unknowns, fp32. 9 x 67 MB moved: ~0.13 ms
    {"N": 256, "S": 65_536, "dtype": "fp32", "kind": "adi"},
    # natural cubic-spline fitting of 32,768 curves of 1,024 knots each (irregular spacing), fp64 as scipy's
    # CubicSpline / cuSPARSE Dgtsv (128-1024 programs): 9 x 268 MB moved: ~0.5 ms
    {"N": 1024, "S": 32_768, "dtype": "fp64", "kind": "spline"},
    # AOS nonlinear (Perona-Malik) diffusion of a 4K RGB frame, the column solves: 3,840 x 3 = 11,520
    # interleaved channel columns of 2,160 pixels, fp32 (few programs: 45-360). 9 x 100 MB moved: ~0.19 ms
    {"N": 2160, "S": 11_520, "dtype": "fp32", "kind": "aos"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK_S"]
    if not _is_int(b) or b < 16 or b > 1024 or b & (b - 1):
        raise ValueError(f"BLOCK_S={b!r} must be a power of two from 16 to 1024")
    r = cfg["ROWS"]
    if not _is_int(r) or r < 1 or r > 16 or r & (r - 1):
        raise ValueError(f"ROWS={r!r} must be a power of two from 1 to 16")
    e = cfg["EVICT"]
    if e not in (0, 1) or not isinstance(e, (int, bool)):
        raise ValueError(f"EVICT={e!r} must be 0 or 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: dtype fp32, kind adi)."""
    P = {"dtype": "fp32", "kind": "adi", **point}
    N, S = P["N"], P["S"]
    if not _is_int(N) or N < 1 or N > 2**31 - 1:
        raise ValueError(f"N={N!r} must be an int from 1 to {2**31 - 1} (rows a system)")
    if not _is_int(S) or S < 1 or S > 2**31 - 1024:
        raise ValueError(f"S={S!r} must be an int from 1 to {2**31 - 1024} (systems)")
    if N * S > MAX_ELEMS:
        raise ValueError(f"N x S = {N * S} elements; at most {MAX_ELEMS}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    if P["kind"] not in KINDS:
        raise ValueError(f"kind {P['kind']!r} is not one of {KINDS}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp32": torch.float32, "fp64": torch.float64}[name]


def _elem(dtype: str) -> int:
    return 4 if dtype == "fp32" else 8


# ---------------------------------------------------------------- the kernel's launch
def _grid(S: int, cfg) -> tuple:
    return (triton.cdiv(S, cfg["BLOCK_S"]),)


def _kernel_args(a, b, c, d, x, cp, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    N, S = b.shape
    return dict(A=a, B=b, C=c, D=d, X=x, CP=cp, N=N, S=S, stride_a=a.stride(0), stride_b=b.stride(0),
                stride_c=c.stride(0), stride_d=d.stride(0), stride_x=x.stride(0), stride_cp=cp.stride(0),
                BLOCK_S=cfg["BLOCK_S"], ROWS=cfg["ROWS"], EVICT=int(cfg["EVICT"]))


def tridiag_solve(a, b, c, d, out=None, *, BLOCK_S: int = 128, ROWS: int = 2, EVICT: int = 0, num_warps: int = 4,
                  num_stages: int = 1):
    """x [N, S]: the solutions of the S interleaved tridiagonal systems (sub-diagonal a, diagonal b,
    super-diagonal c, right-hand side d; each [N, S] fp32 / fp64 with unit system stride, any row stride;
    a[0] and c[N-1] not read). out: None (a fresh contiguous tensor) or an [N, S] tensor of the inputs' dtype
    with unit system stride, written and returned. The tunables: the module doc."""
    import torch
    cfg = {"BLOCK_S": BLOCK_S, "ROWS": ROWS, "EVICT": EVICT, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if b.dim() != 2 or b.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"b must be a 2-d float32 / float64 tensor [N, S]; got {tuple(b.shape)} {b.dtype}")
    N, S = b.shape
    if N < 1 or N > 2**31 - 1 or S > 2**31 - 1024:
        raise ValueError(f"b must be [N, S] with 1 <= N < 2^31 rows and S < 2^31 - 1024 systems; got "
                         f"{tuple(b.shape)}")
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d)):
        if t.dim() != 2 or tuple(t.shape) != (N, S) or t.dtype != b.dtype:
            raise ValueError(f"{name} must be a {b.dtype} [N={N}, S={S}] tensor; got {tuple(t.shape)} {t.dtype}")
        if S > 1 and t.stride(1) != 1 or t.stride(0) < 0:
            raise ValueError(f"{name} must have a unit system stride (interleaved batch); got strides "
                             f"{t.stride()}")
        if t.device != b.device:
            raise ValueError(f"{name} must be on b's device {b.device}; got {t.device}")
    if out is None:
        out = torch.empty((N, S), dtype=b.dtype, device=b.device)
    elif (out.dim() != 2 or tuple(out.shape) != (N, S) or out.dtype != b.dtype
          or (S > 1 and out.stride(1) != 1) or out.device != b.device):
        raise ValueError(f"out must be a {b.dtype} [N={N}, S={S}] tensor with unit system stride on {b.device}; "
                         f"got {tuple(out.shape)} {out.dtype} strides {out.stride()} on {out.device}")
    if S:
        cp = torch.empty((N, S), dtype=b.dtype, device=b.device)          # the forward sweep's c'
        _kernel[_grid(S, cfg)](**_kernel_args(a, b, c, d, out, cp, cfg), num_warps=num_warps,
                               num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def _coefficients(P: dict, seed: int, device: str):
    """a, b, c, d [N, S] in float32 (cast to the point's dtype by the caller), drawn on `device` from a seeded
    generator, shaped by the point's kind (all strictly diagonally dominant, |b| >= |a| + |c| + margin):
      adi    -- an implicit diffusion line: a = c = -r (r = dt kappa / h^2 per point, 0.05-2.05, varying
                diffusivity), with a[i] = -r[i - 1/2] and c[i] = -r[i + 1/2] of its neighbouring faces,
                b = 1 + |a| + |c|; d the previous field, uniform in [-1, 1];
      spline -- natural cubic spline moments: h[i] knot spacings uniform 0.5-1.5, a = h[i-1], c = h[i],
                b = 2 (h[i-1] + h[i]); d = 6 times the divided-difference jumps of random data (uniform -1, 1);
      aos    -- AOS diffusion of an image column: conductivity g = 1 / (1 + |grad|^2 / k^2) on the faces
                (0.1-1), tau 0.25 x 2 (the 2 directions): a = -tau g[i - 1/2], c = -tau g[i + 1/2],
                b = 1 + tau (g[i - 1/2] + g[i + 1/2]); d the pixel intensities, uniform 0-1."""
    import torch
    N, S = P["N"], P["S"]
    g = torch.Generator(device=device).manual_seed(int(seed))

    def u(lo, hi, rows=N):
        return lo + (hi - lo) * torch.rand((rows, S), generator=g, device=device)

    kind = P["kind"]
    if kind == "spline":
        h = u(0.5, 1.5, N + 1)
        a, c = h[:N].clone(), h[1:].clone()
        b = 2 * (a + c)
        y = u(-1.0, 1.0, N + 2)
        dy = (y[1:] - y[:-1]) / h
        d = 6 * (dy[1:] - dy[:-1])
    else:
        if kind == "adi":
            f = u(0.05, 2.05, N + 1)
            d = u(-1.0, 1.0)
        else:
            f = 0.5 / (1 + (u(0.0, 3.0, N + 1)) ** 2)          # tau g, g from |grad| / k in 0-3
            f = f.clamp_min(0.05)
            d = u(0.0, 1.0)
        a, c = -f[:N], -f[1:]
        b = 1 + f[:N] + f[1:]
        a, c = a.clone(), c.clone()
    return a, b, c, d


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """a, b, c, d [N, S] in the point's dtype, drawn on `device` (see _coefficients); a[0] and c[N-1] hold the
    drawn values too (never read)."""
    P = _check_point(point)
    a, b, c, d = _coefficients(P, seed, device)
    t = _torch_dtype(P["dtype"])
    return {"a": a.to(t), "b": b.to(t), "c": c.to(t), "d": d.to(t)}


def launch(inputs, cfg):
    """x [N, S] in the inputs' dtype: the solutions."""
    return tridiag_solve(inputs["a"], inputs["b"], inputs["c"], inputs["d"], inputs.get("out"),
                         BLOCK_S=cfg["BLOCK_S"], ROWS=cfg["ROWS"], EVICT=cfg["EVICT"], num_warps=cfg["num_warps"],
                         num_stages=cfg["num_stages"])


def _thomas(a, b, c, d):
    """Thomas' algorithm over all systems at once (row by row, vectorized over the systems), in the inputs'
    dtype; a[0] and c[N-1] not used."""
    import torch
    N = b.shape[0]
    cp = torch.empty_like(b)
    dp = torch.empty_like(b)
    cp[0] = c[0] / b[0] if N > 1 else 0
    dp[0] = d[0] / b[0]
    for i in range(1, N):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = (c[i] / m) if i < N - 1 else 0
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = torch.empty_like(b)
    x[N - 1] = dp[N - 1]
    for i in range(N - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def reference(inputs):
    """x [N, S] in float64: Thomas' algorithm on the widened coefficients (the systems are diagonally
    dominant: Thomas is backward stable there, the float64 result is the reference)."""
    return _thomas(*(inputs[k].double() for k in ("a", "b", "c", "d")))


def torch_baseline(inputs):
    """What a torch user writes without a batched banded solver: the same Thomas loop, a row of all systems
    per step (a handful of small kernels a row), in the inputs' dtype."""
    return _thomas(inputs["a"], inputs["b"], inputs["c"], inputs["d"])


def bytes_moved(point) -> int:
    """a, b, c, d read once and x written (5 N S elements), plus the forward sweep's c' and d' written and read
    back (4 N S: the scratch and x's first write; N x BLOCK_S values a program cannot stay on chip): 9 N S
    elements of the dtype."""
    P = _check_point(point)
    return 9 * P["N"] * P["S"] * _elem(P["dtype"])


def flops(point) -> int:
    """Forward: a multiply-subtract and a reciprocal for m, two multiplies for c' and a multiply-subtract and a
    multiply for d' (8 a row, the reciprocal counted once); backward: a multiply-subtract (2): 10 N S."""
    P = _check_point(point)
    return 10 * P["N"] * P["S"]


def grid(cfg, point) -> tuple:
    """The launch grid (cdiv(S, BLOCK_S),)."""
    P = _check_point(point)
    _check_cfg(cfg)
    return _grid(P["S"], cfg)


def loop_iterations(cfg, point) -> int:
    """2 x cdiv(N, ROWS) row steps a program: cdiv(N, ROWS) forward (4 tiles loaded, 2 stored) and as many
    backward (2 loaded, 1 stored)."""
    grid(cfg, point)
    P = _check_point(point)
    return 2 * triton.cdiv(P["N"], cfg["ROWS"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: a, b, c, d, x and the c' scratch [N, S] of the
    point's dtype on the meta device (contiguous: row strides S)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    t = _torch_dtype(P["dtype"])
    a, b, c, d, x, cp = (torch.empty((P["N"], P["S"]), dtype=t, device="meta") for _ in range(6))
    return _kernel_args(a, b, c, d, x, cp, cfg)
