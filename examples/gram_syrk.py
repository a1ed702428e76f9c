"""The batched Gram matrix G = X X^T as a symmetric rank-k update (SYRK), a bare @triton.jit kernel +
its launcher: the product at the heart of Muon's Newton-Schulz iteration (A = X X^T, then
B = b A + c A A, X <- a X + B X) and of Shampoo / SOAP's left preconditioner statistic (L += G G^T).

    X [B, M, K]  ->  G [B, M, M],   G[b, r, c] = sum_k X[b, r, k] X[b, c, k]   (fp32 accumulation)

X: bf16 / fp16, each matrix row-major with K contiguous (unit K stride; any row pitch and batch
stride: a slice of a wider buffer, the stacked weights of one layer type read in place). Muon
orients a matrix so that M <= K (the Gram matrix is the small side); the kernel takes either.
G: in X's dtype (Muon's A) or fp32 (`out_dtype`, a preconditioner statistic), a fresh contiguous
[B, M, M] tensor or `out` given by the caller: unit column stride, any row pitch and batch stride.

Work split: G is cut into T x T tiles of BLOCK_M x BLOCK_M (T = cdiv(M, BLOCK_M)); G is symmetric,
so only the T (T + 1) / 2 tile pairs (i, j) of the lower triangle, i >= j, are computed. The grid is
(T (T + 1) / 2, B): program_id(0) the tile pair, fastest in launch order (the CTAs that run together
work on one matrix: its row panels stay in L2), program_id(1) the matrix. Tile order, row by row of
the lower triangle: t = i (i + 1) / 2 + j, 0 <= j <= i, i.e. (0,0), (1,0), (1,1), (2,0), (2,1),
(2,2), ...; a CTA decodes i = floor((sqrt(8 t + 1) - 1) / 2) in fp32 and corrects it by one either
way in integers (exact for any T the launcher allows), then j = t - i (i + 1) / 2. The CTAs of one
triangle row i share row panel i (read once from DRAM, then from L2) and sweep panels 0..i.

The K loop (cdiv(K, BLOCK_K) steps, the same in every CTA) loads two [BLOCK_M, BLOCK_K] panels of
X -- rows i BLOCK_M.. of the tile's row block and rows j BLOCK_M.. of its column block -- and
accumulates tl.dot(panel_i, trans(panel_j)) in fp32 (a wgmma with both operands in shared memory on
sm_90: the transpose is the B operand's K-major view of the same row-major panel, no data moved).
The diagonal tile (i == j) loads its one panel twice rather than taking a second loop of its own:
the second load is an L1 / L2 hit, the kernel keeps one pipelined loop (one set of num_stages
shared-memory buffers), and the diagonal tiles are T of T (T + 1) / 2.

Epilogue: the fp32 accumulator is cast to G's dtype and stored as tile (i, j); an off-diagonal
tile is also stored transposed as tile (j, i) (tl.trans of the cast tile: a layout conversion
through shared memory, then row-major stores), so the whole of G is written, each element once,
and G[r, c] == G[c, r] bit for bit outside the diagonal tiles (inside them the two halves come
from the MMA's own sums, equal to rounding).

Masks: rows of X past M (the last row block when BLOCK_M does not divide M, EVEN_M = 0) are
clamped to row M - 1 for the loads (in bounds, no mask: they only feed G rows / columns past M)
and masked on the stores; columns past K (the last K step when BLOCK_K does not divide K,
EVEN_K = 0) are masked to zero on every step's loads (they enter the dot). EVEN_M and EVEN_K are
constexprs the launcher sets. Offsets: the matrix bases and X's row offsets int64 (a stack of
matrices, or one long-K matrix, passes 2^31 elements), the K offsets int32, and the offsets inside
one G matrix int32 (M x row pitch < 2^31, checked: 64-bit offsets for the two stored tiles took the
fp32-output 128 x 128 tile on 4 warps past 255 registers, spilling).

Tunables: BLOCK_M (the G tile's side: 64 or 128 -- the accumulator 16-128 fp32 registers a thread,
the operand reuse, BLOCK_M flops per loaded element, and T (T + 1) / 2 CTAs a matrix), BLOCK_K (the
K step: 32 or 64, the shared memory per stage 2 BLOCK_M BLOCK_K elements), num_warps (4: one
warpgroup, 8: two), num_stages (2-6: the depth of the K loop's pipelined loads, one buffer of both
panels a stage). Shared memory: num_stages x 2 x BLOCK_M x BLOCK_K x 2 B for the pipeline (the
epilogue's transpose reuses it), 16-192 KiB over the sweep, all within sm_90's 227 KiB; BLOCK_K 128
is not swept (128 x 128 at 4 stages would need 256 KiB). On sm_120 (99 KiB a block; no wgmma, a
cp.async pipeline of num_stages - 1 buffers) the configs past it would not fit: 128 x 64 at 5 and 6
stages (128, 160 KiB); 128 x 64 at 4 stages takes 96 KiB there. Registers on sm_90 (triton 3.6 and
3.9, every config at every point): 42-255, no spill; the most, 242-255, for the 128 x 128 tile on
4 warps at the GPT-2 XL point (fp32 G, ragged M: both stores masked). On sm_120 those configs spill
(4-24 registers).
Problem parameters (a workload point): B, M, K, dtype (bf16 / fp16), out_dtype (optional: fp32, or
the input's dtype when absent).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, G, M, K, stride_xb, stride_xm, stride_gb, stride_gm,
            EVEN_M: tl.constexpr, EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    t = tl.program_id(0)
    b = tl.program_id(1)

    # the tile pair (i, j), i >= j, of linear index t = i (i + 1) / 2 + j (row by row of the triangle)
    i = ((tl.sqrt((8 * t + 1).to(tl.float32)) - 1.0) * 0.5).to(tl.int32)
    i = tl.where((i + 1) * (i + 2) // 2 <= t, i + 1, i)
    i = tl.where(i * (i + 1) // 2 > t, i - 1, i)
    j = t - i * (i + 1) // 2

    r = tl.arange(0, BLOCK_M)
    rows_i = i * BLOCK_M + r
    rows_j = j * BLOCK_M + r
    if EVEN_M:
        li = rows_i
        lj = rows_j
    else:
        li = tl.minimum(rows_i, M - 1)                      # rows past M: load row M - 1
        lj = tl.minimum(rows_j, M - 1)
    xb = X + b.to(tl.int64) * stride_xb
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = xb + li.to(tl.int64)[:, None] * stride_xm + rk[None, :]
    b_ptrs = xb + lj.to(tl.int64)[:, None] * stride_xm + rk[None, :]

    acc = tl.zeros((BLOCK_M, BLOCK_M), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            bt = tl.load(b_ptrs)
        else:
            k_ok = (k0 + rk < K)[None, :]
            a = tl.load(a_ptrs, mask=k_ok, other=0.0)
            bt = tl.load(b_ptrs, mask=k_ok, other=0.0)
        acc = tl.dot(a, tl.trans(bt), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    c = acc.to(G.dtype.element_ty)
    gb = G + b.to(tl.int64) * stride_gb
    g_ptrs = gb + (rows_i[:, None] * stride_gm + rows_j[None, :])
    if EVEN_M:
        tl.store(g_ptrs, c)
    else:
        tl.store(g_ptrs, c, mask=(rows_i < M)[:, None] & (rows_j < M)[None, :])
    if i != j:                                              # the mirror tile (j, i)
        gt_ptrs = gb + (rows_j[:, None] * stride_gm + rows_i[None, :])
        if EVEN_M:
            tl.store(gt_ptrs, tl.trans(c))
        else:
            tl.store(gt_ptrs, tl.trans(c), mask=(rows_j < M)[:, None] & (rows_i < M)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-25"
DTYPES = ("bf16", "fp16")
OUT_DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_M", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
# the study's sweep: 2 x 2 x 2 x 5 = 40 configs, every one within sm_90's 227 KiB (the pipeline's
# num_stages x 2 x BLOCK_M x BLOCK_K x 2 B: 16-192 KiB). BLOCK_K 128 is left out: 128 x 128 at 4
# stages needs 256 KiB, and the sweep is a product of its axes; the deeper pipelines (5, 6 stages of
# 64-wide K steps) are Hopper's usual GEMM depths instead.
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [2, 3, 4, 5, 6]}

# Real Muon / Shampoo Gram products, each 0.14-0.24 TFLOP of the triangle's work (B M (M + 1) K
# flops), compute-bound at roughly 200-450 us on an H200. They differ in the batch (1 / 32 / 48),
# the Gram side M (4096 / 1024 / 1600: 128 divides it or not), the reduction K (14336 / 4096 / 1600,
# each a multiple of 64: the ragged K path is the tests'), the dtype and the output dtype.
POINTS = [
    # Muon's Newton-Schulz step on Llama-3-8B's MLP down_proj weight [4096, 14336] (already M <= K)
    # in bf16, one matrix at a time as Keller Jordan's (distributed) Muon runs it: X 117 MB read,
    # A = X X^T 34 MB written; 0.24 TFLOP
    {"B": 1, "M": 4096, "K": 14336, "dtype": "bf16"},
    # Muon on Llama-3.1-8B's 32 k_proj weights [1024, 4096] (8 KV heads x 128, hidden 4096) stacked
    # as one batch (the same-shaped matrices of one layer type), bf16: X 268 MB read, A 67 MB
    # written; 0.14 TFLOP
    {"B": 32, "M": 1024, "K": 4096, "dtype": "bf16"},
    # Shampoo / SOAP's left statistic G G^T of GPT-2 XL's 48 attention output projections
    # (attn.c_proj [1600, 1600]) from fp16 gradients (fp16 mixed precision), accumulated in fp32:
    # M = 1600 = 12.5 x 128 (a ragged last row block at BLOCK_M 128); G 246 MB read, L 492 MB
    # written in fp32; 0.20 TFLOP
    {"B": 48, "M": 1600, "K": 1600, "dtype": "fp16", "out_dtype": "fp32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(OUT_DTYPES)}") from None


def _elem_bytes(name: str, allowed=DTYPES) -> int:
    if name not in allowed:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(allowed)}")
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, str, str]:
    """(B, M, K, dtype, out_dtype), every field checked."""
    for k in ("B", "M", "K"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    dt = point.get("dtype", "bf16")
    _elem_bytes(dt)
    odt = point.get("out_dtype") or dt
    _elem_bytes(odt, OUT_DTYPES)
    return point["B"], point["M"], point["K"], dt, odt


def _check_cfg(cfg) -> None:
    if cfg["BLOCK_M"] not in (16, 32, 64, 128, 256) or not _is_int(cfg["BLOCK_M"]):
        raise ValueError(f"BLOCK_M={cfg['BLOCK_M']!r} must be one of 16, 32, 64, 128, 256")
    if cfg["BLOCK_K"] not in (16, 32, 64, 128, 256) or not _is_int(cfg["BLOCK_K"]):
        raise ValueError(f"BLOCK_K={cfg['BLOCK_K']!r} must be one of 16, 32, 64, 128, 256")
    if cfg["num_warps"] not in (1, 2, 4, 8, 16) or not _is_int(cfg["num_warps"]):
        raise ValueError(f"num_warps={cfg['num_warps']!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _tiles(M: int, BLOCK_M: int) -> int:
    """T = cdiv(M, BLOCK_M): the tile rows (and columns) of one Gram matrix."""
    return triton.cdiv(M, BLOCK_M)


def _grid(B: int, M: int, cfg) -> tuple[int, int]:
    _check_cfg(cfg)
    T = _tiles(M, cfg["BLOCK_M"])
    return (T * (T + 1) // 2, B)


def tile_pair(t: int) -> tuple[int, int]:
    """(i, j) of the lower-triangle tile pair of linear index t (row by row): t = i (i + 1) / 2 + j."""
    i = int(((8 * t + 1) ** 0.5 - 1) // 2)
    while (i + 1) * (i + 2) // 2 <= t:
        i += 1
    while i * (i + 1) // 2 > t:
        i -= 1
    return i, t - i * (i + 1) // 2


def _kernel_args(x, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, M, K = x.shape
    return dict(X=x, G=out, M=M, K=K, stride_xb=x.stride(0), stride_xm=x.stride(1), stride_gb=out.stride(0),
                stride_gm=out.stride(1), EVEN_M=int(M % cfg["BLOCK_M"] == 0), EVEN_K=int(K % cfg["BLOCK_K"] == 0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_K=cfg["BLOCK_K"])


def gram(x, *, out=None, out_dtype=None, BLOCK_M: int = 128, BLOCK_K: int = 64, num_warps: int = 8,
         num_stages: int = 3):
    """x [B, M, K] (or one [M, K] matrix; bf16 / fp16, unit K stride, any row pitch and batch stride)
    -> G = x x^T [B, M, M] (or [M, M]) with fp32 accumulation, in x's dtype or `out_dtype`
    (torch.float32, or x's dtype). out: optional [B, M, M] (or [M, M]) tensor of that dtype on x's
    device with unit column stride, written in place and returned."""
    import torch
    if x.dim() not in (2, 3):
        raise ValueError(f"expected x [B, M, K] or [M, K]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be fp16 / bf16; got {x.dtype}")
    odt = x.dtype if out_dtype is None else out_dtype
    if odt not in (x.dtype, torch.float32):
        raise ValueError(f"out_dtype must be torch.float32 or x's {x.dtype}; got {odt}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_K": BLOCK_K, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    squeeze = x.dim() == 2
    x3 = x.unsqueeze(0) if squeeze else x
    B, M, K = x3.shape
    if M > 1 and K > 1 and x3.stride(2) != 1:
        raise ValueError(f"x must have unit K stride (each matrix row-major); got strides {tuple(x.stride())}")
    shape = (M, M) if squeeze else (B, M, M)
    if out is None:
        out = torch.empty(shape, dtype=odt, device=x.device)
    else:
        if tuple(out.shape) != shape:
            raise ValueError(f"out must be {list(shape)}; got {list(out.shape)}")
        if out.dtype != odt or out.device != x.device:
            raise ValueError(f"out must be {odt} on {x.device}; got {out.dtype} on {out.device}")
        if M > 1 and out.stride(-1) != 1:
            raise ValueError(f"out must have unit column stride; got strides {tuple(out.stride())}")
    if out.numel() == 0:
        return out
    T = _tiles(M, BLOCK_M)
    if T * (T + 1) // 2 >= 2**24:
        raise ValueError(f"M={M} at BLOCK_M={BLOCK_M} gives {T * (T + 1) // 2} tile pairs, past the "
                         f"kernel's fp32 tile decode (2^24)")
    if B > 65535:
        raise ValueError(f"B={B} exceeds the grid's 65535 matrices")
    if (M - 1) * _row_pitch(out) + M >= 2**31:
        raise ValueError(f"one G matrix of M={M} rows {_row_pitch(out)} apart exceeds the kernel's int32 offsets")
    if K + BLOCK_K >= 2**31:
        raise ValueError(f"K={K} exceeds the kernel's int32 K offsets")
    o3 = out.unsqueeze(0) if squeeze else out
    _kernel[_grid(B, M, cfg)](**_kernel_args(x3, o3, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def _row_pitch(out) -> int:
    """G's row pitch (elements between the rows of one matrix)."""
    return out.stride(-2) if out.dim() >= 2 else 1


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: gradient-like rows (N(0, 1) entries, each row scaled by its own factor in [0.5, 2]: rows of
    different norms) in the point's dtype, contiguous [B, M, K], drawn on the CPU from a seeded
    torch.Generator and moved; the output dtype."""
    import torch
    B, M, K, dt, odt = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn((B, M, K), generator=gen) * (0.5 + 1.5 * torch.rand((B, M, 1), generator=gen))
    return {"x": x.to(_torch_dtype(dt)).to(device), "out_dtype": _torch_dtype(odt)}


def launch(inputs, cfg):
    """G = x x^T of inputs["x"], into inputs["out"] when the caller placed an output buffer there,
    else into a fresh contiguous tensor of inputs["out_dtype"] (x's dtype when absent)."""
    return gram(inputs["x"], out=inputs.get("out"), out_dtype=inputs.get("out_dtype"), BLOCK_M=cfg["BLOCK_M"],
                BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32: the upcast x times its transpose (the full product, both triangles)."""
    x = inputs["x"].float()
    return x @ x.transpose(-1, -2)


def torch_baseline(inputs):
    """What eager torch runs: a batched GEMM x @ x^T in x's dtype (cuBLAS computes both triangles;
    torch has no half-precision SYRK), cast to the output dtype."""
    x = inputs["x"]
    odt = inputs.get("out_dtype") or x.dtype
    return (x @ x.transpose(-1, -2)).to(odt)


def bytes_moved(point) -> int:
    """X read once (each row panel is read by T CTAs of its matrix; all but the first from L2), G
    written once (both triangles)."""
    B, M, K, dt, odt = _check_point(point)
    return B * M * K * _elem_bytes(dt) + B * M * M * _elem_bytes(odt, OUT_DTYPES)


def flops(point) -> int:
    """SYRK's count: the lower triangle, diagonal included, M (M + 1) / 2 dot products of length K a
    matrix, 2 flops a multiply-add: B M (M + 1) K. (The kernel's tiles compute T (T + 1) / 2 BLOCK_M^2
    K multiply-adds a matrix: the diagonal tiles' upper halves and the ragged tiles' padding too.)"""
    B, M, K, _, _ = _check_point(point)
    return B * M * (M + 1) * K


def grid(cfg, point) -> tuple[int, int]:
    """(T (T + 1) / 2 tile pairs, B matrices): the launch grid, tile pairs fastest."""
    B, M, _, _, _ = _check_point(point)
    return _grid(B, M, cfg)


def loop_iterations(cfg, point) -> int:
    """K steps a CTA: cdiv(K, BLOCK_K), every CTA alike."""
    _, _, K, _, _ = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(K, cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x
    contiguous [B, M, K] in the point's dtype, G contiguous [B, M, M] in its output dtype."""
    import torch
    B, M, K, dt, odt = _check_point(point)
    _check_cfg(cfg)
    x = torch.empty((B, M, K), dtype=_torch_dtype(dt), device="meta")
    out = torch.empty((B, M, M), dtype=_torch_dtype(odt), device="meta")
    return _kernel_args(x, out, cfg)
