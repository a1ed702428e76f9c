"""The forward pass of a Kolmogorov-Arnold Network layer (KANLinear of Blealtan/efficient-kan, the layer of
pykan-style KAN MLPs and of KAN-ConvNet / vision heads) with its B-spline basis computed on the fly -- a bare
@triton.jit kernel + its launcher:

    y[m, n] = sum_k silu(x[m, k]) W_base[n, k]  +  sum_k sum_j B_j(x[m, k]) W_spline[n, k, j]

x: [M, K] fp16 / bf16 (unit K stride, any row stride). B_j (j = 0 .. G + 2): the G + 3 uniform cubic B-splines
(spline order k = 3) on a grid of G intervals over [lo, hi] (efficient-kan's grid_range, default [-1, 1])
extended by 3 knots each side: knots t_i = lo + (i - 3) h, h = (hi - lo) / G, B_j supported on [t_j, t_j+4)
(Cox-de Boor's recursion; the kernel uses its closed form, B_j(x) = b(|u - j - 2|) with u = (x - lo) / h + 3,
b(t) = (4 - 6t^2 + 3t^3) / 6 for t < 1, (2 - t)^3 / 6 for t < 2, else 0; x beyond the extended grid gets no
spline term). W_base: [N, K] (nn.Linear's layout, unit K stride) in x's dtype. W_spline: efficient-kan's
spline_weight [N, K, G + 3] (times its spline_scaler when standalone scaling is on), handed to the kernel
repacked once at load time, basis-major: W_packed [G + 3, N, K] = W_spline.permute(2, 0, 1) (pack_spline_weight;
unit K stride, any j and n strides), so each basis function's weight tile is a plain K-contiguous [BLOCK_K,
BLOCK_N] tile of a GEMM. fp32 accumulation; y [M, N] in x's dtype (a fresh contiguous tensor).

The point of the kernel: efficient-kan materializes B(x) as an [M, K (G + 3)] fp32 tensor (16-22x the bytes of
a 2-byte x at G 5-8) and runs two GEMMs; here B(x) never reaches memory. Work split: one program per
(BLOCK_M, BLOCK_N) output tile, a 1-D grid swizzled in groups of GROUP_M row tiles (the Triton matmul order:
programs running together share the weight column panels in L2). A program walks K in steps of BLOCK_K input
features: it loads the [BLOCK_M, BLOCK_K] x tile once, feeds silu(x) (fp32, rounded to x's dtype) and the
W_base tile to one tl.dot, then for each of the G + 3 basis functions (a static loop) evaluates B_j on the same
x tile in registers (fp32, ~10 ALU ops an element, rounded to x's dtype) and feeds it with W_packed[j]'s tile to
another tl.dot into the same fp32 accumulator: G + 4 dots of [BLOCK_M, BLOCK_K] x [BLOCK_K, BLOCK_N] a step.
Every program of a column of tiles re-evaluates the basis of its rows: the basis work is M K (G + 3) x
cdiv(N, BLOCK_N) evaluations -- BLOCK_N trades it (and the x re-reads) against the accumulator's registers.
A step streams (G + 4) BLOCK_K x BLOCK_N weight elements plus the x tile: the pipeliner's stages cost
num_stages x that in shared memory (the sweep's limit). Features past K (BLOCK_K not dividing K) read x 0 and
weight 0 (masked): no spline or base term from them.

How this differs from examples/gated_mlp.py (two weight tiles a step, two accumulators, silu * product in the
epilogue): here the A operands are computed from the x tile inside the K loop (silu and G + 3 basis functions,
each its own dot), G + 4 weight tiles a step into one accumulator, the elementwise work sits in the main loop,
not the epilogue. examples/w8a16_gemm.py transforms the B operand (int8 weight dequantized in registers); here
the A operand is expanded G + 4-fold from one loaded tile. examples/fully_fused_mlp.py chains layers with the
activations held on chip; here one layer whose inner dimension is expanded (K (G + 4) products per output) and
nothing is chained.

Tunables: BLOCK_M (64 / 128 rows a program), BLOCK_N (32 / 64 / 128 output features a program: the basis
re-evaluation and x re-reads fall as 1 / BLOCK_N), BLOCK_K (16 / 32 input features a step: G + 4 dots of that
depth), GROUP_M (1: row-major tile order / 8: swizzled), num_warps (8), num_stages (1: no pipelining / 2: the
next step's x and G + 4 weight tiles loaded while this step's dots run). A step's buffers are num_stages x 2 x
(BLOCK_M BLOCK_K + (G + 4) BLOCK_K BLOCK_N) bytes: 208 KiB for 2 stages of 128 x 128 x 32 at G 8, so 3 stages
(240 KiB at G 5, 312 KiB at G 8 for BLOCK_K 32 x BLOCK_N 128) are out of the sweep; so are 4 warps (128 x 128
tiles: 254-255 registers, 92-102 spills at BLOCK_K 32 under 3.9) and 16 warps (capped at 128 registers: 34-44
spills at 128 x 128 x 32). Registers / shared memory on sm_90 over the sweep (GROUP_M changes neither):
  triton 3.6.0: registers 73-181 (1 stage 73-181, 2 stages 76-181; the most for 128 x 128 x 32), shared memory
  7-32 KiB at 1 stage, 26-208 KiB at 2 stages (208 KiB: 128 x 128 x 32 at G 8); triton 3.9: registers 71-181,
  shared memory the same (7168-212992 bytes). No config spills at any point under either (all 24 configs of
  GROUP_M 8 at all 3 points both Tritons; 10 of GROUP_M 1 at the G 8 point under 3.6: the same figures).
Problem parameters (a workload point): M (tokens / pixels), K (input features), N (output features), G (grid
intervals; G + 3 basis functions), dtype ("fp16" / "bf16").
"""

from __future__ import annotations

import triton
import triton.language as tl

SPLINE_ORDER = 3


@triton.jit
def _kernel(X, WB, WS, OUT, M, N, K, stride_xm, stride_bn, stride_sj, stride_sn, stride_om, grid_lo, inv_h,
            NB: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_m
    tile_n = (pid % per_group) // group_m

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    x_ptr = X + rows.to(tl.int64)[:, None] * stride_xm + ks[None, :]           # [BM, BK]
    b_ptr = WB + cols.to(tl.int64)[None, :] * stride_bn + ks[:, None]          # [BK, BN] of W_base^T
    s_ptr = WS + cols.to(tl.int64)[None, :] * stride_sn + ks[:, None]          # [BK, BN] of W_packed[0]^T
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        w_mask = k_ok[:, None] & col_ok[None, :]
        xv = tl.load(x_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        wb = tl.load(b_ptr, mask=w_mask, other=0.0)
        xf = xv.to(tl.float32)
        silu = xf / (1.0 + tl.exp(-xf))
        acc = tl.dot(silu.to(xv.dtype), wb, acc)
        u = (xf - grid_lo) * inv_h + 1.0                      # (x - lo) / h + 3, less the 2 of B_j's centre
        for j in tl.static_range(NB):
            t = tl.abs(u - j)
            p = 2.0 - t
            inner = (4.0 - t * t * (6.0 - 3.0 * t)) * (1.0 / 6.0)
            outer = p * p * p * (1.0 / 6.0)
            bj = tl.where(t < 1.0, inner, tl.where(t < 2.0, outer, 0.0))
            ws = tl.load(s_ptr + j * stride_sj, mask=w_mask, other=0.0)
            acc = tl.dot(bj.to(xv.dtype), ws, acc)
        x_ptr += BLOCK_K
        b_ptr += BLOCK_K
        s_ptr += BLOCK_K

    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-34"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16, "GROUP_M": 8, "num_warps": 8, "num_stages": 2}
# the study's sweep: 2 x 3 x 2 x 2 x 1 x 2 = 48 configs. Left out: num_stages 3 (3 stages of a BLOCK_K 32 x
# BLOCK_N 128 step are 240 KiB at G 5, 312 KiB at G 8: over the 227 KiB), 4 warps (128 x 128 tiles on 4 warps:
# 254-255 registers, 92-102 spills at BLOCK_K 32 under 3.9), 16 warps (capped at 128 registers: 34-44 spills at
# 128 x 128 x 32)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64, 128], "BLOCK_K": [16, 32], "GROUP_M": [1, 8],
              "num_warps": [8], "num_stages": [1, 2]}
GRID_RANGE = (-1.0, 1.0)                  # efficient-kan's default grid_range

POINTS = [
    # a KAN MLP block on tokens (a KAN-transformer's channel mixer, efficient-kan grid_size 5, spline_order 3):
    # 16k tokens x 1024 -> 1024, bf16. x 32 MiB, weights 18 MiB, y 32 MiB; 309 GFLOP of dots: ~0.4-0.8 ms
    {"M": 16384, "K": 1024, "N": 1024, "G": 5, "dtype": "bf16"},
    # a KAN-ConvNet / vision head as a 1x1 KAN conv over the pixels of a batch of 64 32x32 feature maps, 256 -> 256
    # channels, FastKAN-style finer grid G 8 (11 basis functions), fp16. x and y 32 MiB each; 103 GFLOP: ~0.2 ms
    {"M": 65536, "K": 256, "N": 256, "G": 8, "dtype": "fp16"},
    # small-batch KAN regression / PDE-solver layer: 4096 samples x 2048 -> 1024, G 5, fp16. Weights 36 MiB;
    # 155 GFLOP: ~0.2-0.4 ms
    {"M": 4096, "K": 2048, "N": 1024, "G": 5, "dtype": "fp16"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if not _is_int(v) or v < 16 or v > 256 or v & (v - 1):
            raise ValueError(f"{name}={v!r} must be a power of two from 16 to 256 (a tl.dot operand side)")
    g = cfg["GROUP_M"]
    if not _is_int(g) or g < 1:
        raise ValueError(f"GROUP_M={g!r} must be an int >= 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 2)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: G 5, dtype bf16)."""
    P = {"G": 5, "dtype": "bf16", **point}
    for name in ("M", "K", "N"):
        v = P[name]
        if not _is_int(v) or v < 1 or v > 2**31 - 1:
            raise ValueError(f"{name}={v!r} must be an int from 1 to 2**31 - 1")
    if not _is_int(P["G"]) or P["G"] < 1 or P["G"] > 64:
        raise ValueError(f"G={P['G']!r} must be an int from 1 to 64 (grid intervals)")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def n_basis(G: int) -> int:
    """G + 3 cubic B-splines on G intervals."""
    return G + SPLINE_ORDER


def pack_spline_weight(w_spline):
    """efficient-kan's spline_weight [N, K, G + 3] -> the kernel's basis-major [G + 3, N, K] (done once, at load)."""
    return w_spline.permute(2, 0, 1).contiguous()


# ---------------------------------------------------------------- the kernel's launch
def _grid(M: int, N: int, cfg) -> tuple:
    return (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)


def _kernel_args(x, w_base, w_packed, out, grid_range, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    lo, hi = float(grid_range[0]), float(grid_range[1])
    G = w_packed.shape[0] - SPLINE_ORDER
    return dict(X=x, WB=w_base, WS=w_packed, OUT=out, M=x.shape[0], N=w_base.shape[0], K=x.shape[1],
                stride_xm=x.stride(0), stride_bn=w_base.stride(0), stride_sj=w_packed.stride(0),
                stride_sn=w_packed.stride(1), stride_om=out.stride(0), grid_lo=lo, inv_h=G / (hi - lo),
                NB=w_packed.shape[0], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                GROUP_M=cfg["GROUP_M"])


def kan_linear(x, w_base, w_packed, grid_range=GRID_RANGE, *, BLOCK_M: int = 128, BLOCK_N: int = 128,
               BLOCK_K: int = 16, GROUP_M: int = 8, num_warps: int = 8, num_stages: int = 2):
    """y [M, N] in x's dtype: silu(x) @ w_base^T + B(x) @ W_spline^T (module doc).
    x: [M, K] fp16 / bf16, unit K stride. w_base: [N, K] in x's dtype, unit K stride. w_packed: [G + 3, N, K]
    in x's dtype (pack_spline_weight of efficient-kan's [N, K, G + 3]), unit K stride. grid_range: (lo, hi),
    lo < hi, the spline grid's range."""
    import torch
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M,
           "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 2 or x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be a 2-d float16 / bfloat16 tensor [M, K]; got {tuple(x.shape)} {x.dtype}")
    M, K = x.shape
    if K < 1 or (K > 1 and x.stride(1) != 1):
        raise ValueError(f"x must have K >= 1 features with unit K stride; got shape {tuple(x.shape)} "
                         f"strides {x.stride()}")
    if w_base.dim() != 2 or w_base.shape[1] != K or w_base.shape[0] < 1 or w_base.dtype != x.dtype:
        raise ValueError(f"w_base must be [N, K={K}] in {x.dtype}; got {tuple(w_base.shape)} {w_base.dtype}")
    N = w_base.shape[0]
    if K > 1 and w_base.stride(1) != 1:
        raise ValueError(f"w_base must have a unit K stride; got strides {w_base.stride()}")
    if (w_packed.dim() != 3 or w_packed.shape[0] <= SPLINE_ORDER or w_packed.shape[1:] != (N, K)
            or w_packed.dtype != x.dtype):
        raise ValueError(f"w_packed must be [G + 3 > 3, N={N}, K={K}] in {x.dtype}; got {tuple(w_packed.shape)} "
                         f"{w_packed.dtype}")
    if w_packed.shape[0] > 64 + SPLINE_ORDER:
        raise ValueError(f"w_packed holds {w_packed.shape[0]} basis functions; at most {64 + SPLINE_ORDER}")
    if (w_packed.shape[0] - 1) * w_packed.stride(0) > 2**31 - 1:
        raise ValueError(f"w_packed's basis stride {w_packed.stride(0)} x {w_packed.shape[0] - 1} must stay within "
                         f"int32 (the kernel's j offsets)")
    if K > 1 and w_packed.stride(2) != 1:
        raise ValueError(f"w_packed must have a unit K stride; got strides {w_packed.stride()}")
    for name, t in (("w_base", w_base), ("w_packed", w_packed)):
        if t.device != x.device:
            raise ValueError(f"{name} must be on x's device {x.device}; got {t.device}")
    lo, hi = grid_range
    if not float(lo) < float(hi):
        raise ValueError(f"grid_range={tuple(grid_range)!r} must have lo < hi")
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M:
        _kernel[_grid(M, N, cfg)](**_kernel_args(x, w_base, w_packed, out, grid_range, cfg),
                                  num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x [M, K] ~ N(0, 0.6^2) (a LayerNorm-ed activation: ~10 % of it beyond the [-1, 1] grid, a few beyond the
    extended grid), w_base [N, K] ~ U(-1, 1) / sqrt(K) (efficient-kan's kaiming-uniform init), w_spline
    [N, K, G + 3] ~ N(0, 1) / sqrt(K) (a trained layer's spread, y O(1)); all in the point's dtype, drawn on
    `device` from a seeded generator; w_packed = pack_spline_weight(w_spline)."""
    import torch
    P = _check_point(point)
    dt = _torch_dtype(P["dtype"])
    M, K, N, nb = P["M"], P["K"], P["N"], n_basis(P["G"])
    gen = torch.Generator(device=device).manual_seed(int(seed))
    x = (0.6 * torch.randn((M, K), generator=gen, device=device)).to(dt)
    w_base = ((2 * torch.rand((N, K), generator=gen, device=device) - 1) * K ** -0.5).to(dt)
    w_spline = (torch.randn((N, K, nb), generator=gen, device=device) * K ** -0.5).to(dt)
    return {"x": x, "w_base": w_base, "w_spline": w_spline, "w_packed": pack_spline_weight(w_spline),
            "grid_range": GRID_RANGE}


def launch(inputs, cfg):
    """y [M, N] in x's dtype."""
    return kan_linear(inputs["x"], inputs["w_base"], inputs["w_packed"], inputs.get("grid_range", GRID_RANGE),
                      BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                      GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def b_splines(x, G: int, grid_range=GRID_RANGE):
    """efficient-kan's KANLinear.b_splines: the G + 3 cubic B-spline values of every element of x [..., K] by
    Cox-de Boor's recursion on the extended uniform grid, in x's dtype -> [..., K, G + 3]."""
    import torch
    lo, hi = float(grid_range[0]), float(grid_range[1])
    h = (hi - lo) / G
    knots = (torch.arange(-SPLINE_ORDER, G + SPLINE_ORDER + 1, device=x.device, dtype=x.dtype) * h + lo)
    xe = x.unsqueeze(-1)
    bases = ((xe >= knots[:-1]) & (xe < knots[1:])).to(x.dtype)
    for k in range(1, SPLINE_ORDER + 1):
        bases = ((xe - knots[:-(k + 1)]) / (knots[k:-1] - knots[:-(k + 1)]) * bases[..., :-1]
                 + (knots[k + 1:] - xe) / (knots[k + 1:] - knots[1:-k]) * bases[..., 1:])
    return bases


def reference(inputs):
    """y [M, N] in float64: silu(x) @ w_base^T plus the Cox-de Boor basis [M, K (G + 3)] @ w_spline^T (efficient-kan's
    unpacked [N, K, G + 3] weight), everything widened to float64, in chunks of 4096 rows."""
    import torch
    x, wb, ws = inputs["x"].double(), inputs["w_base"].double(), inputs["w_spline"].double()
    N, K, nb = ws.shape
    ws2 = ws.reshape(N, K * nb)
    out = torch.empty((x.shape[0], N), dtype=torch.float64, device=x.device)
    for r in range(0, x.shape[0], 4096):
        xc = x[r:r + 4096]
        bs = b_splines(xc, nb - SPLINE_ORDER, inputs.get("grid_range", GRID_RANGE)).reshape(xc.shape[0], K * nb)
        out[r:r + 4096] = torch.nn.functional.silu(xc) @ wb.t() + bs @ ws2.t()
    return out


def torch_baseline(inputs):
    """efficient-kan's forward as a torch user runs it: the basis materialized ([M, K (G + 3)], computed in fp32,
    then in x's dtype) and two GEMMs in x's dtype."""
    import torch.nn.functional as F
    x, ws = inputs["x"], inputs["w_spline"]
    N, K, nb = ws.shape
    bs = b_splines(x.float(), nb - SPLINE_ORDER, inputs.get("grid_range", GRID_RANGE)).to(x.dtype)
    return F.linear(F.silu(x), inputs["w_base"]) + F.linear(bs.reshape(x.shape[0], K * nb), ws.reshape(N, K * nb))


def bytes_moved(point) -> int:
    """x read once, w_base and the G + 3 packed spline weights once, y written once (2-byte elements)."""
    P = _check_point(point)
    M, K, N = P["M"], P["K"], P["N"]
    return 2 * (M * K + (1 + n_basis(P["G"])) * N * K + M * N)


def flops(point) -> int:
    """The G + 4 dots' multiply-adds (2 M N K (G + 4)) plus the elementwise work once per x element: silu (4)
    and 10 a basis function (the program-per-column-tile re-evaluation is not counted)."""
    P = _check_point(point)
    M, K, N, nb = P["M"], P["K"], P["N"], n_basis(P["G"])
    return 2 * M * N * K * (nb + 1) + M * K * (4 + 10 * nb)


def grid(cfg, point) -> tuple:
    """The 1-D launch grid: cdiv(M, BLOCK_M) x cdiv(N, BLOCK_N) tiles, GROUP_M-swizzled inside the kernel."""
    P = _check_point(point)
    _check_cfg(cfg)
    return _grid(P["M"], P["N"], cfg)


def loop_iterations(cfg, point) -> int:
    """cdiv(K, BLOCK_K) steps a program (each G + 4 dots)."""
    grid(cfg, point)
    return triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, tensors on the meta device (nothing decides the
    work but the shapes)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    dt = _torch_dtype(P["dtype"])
    M, K, N, nb = P["M"], P["K"], P["N"], n_basis(P["G"])
    x = torch.empty((M, K), dtype=dt, device="meta")
    wb = torch.empty((N, K), dtype=dt, device="meta")
    wp = torch.empty((nb, N, K), dtype=dt, device="meta")
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, wb, wp, out, GRID_RANGE, cfg)
