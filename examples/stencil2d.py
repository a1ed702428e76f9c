"""2-D 5x5 stencil (radius-2 filter with generic weights: a Gaussian / binomial blur, a box
filter, a fourth-order Laplacian, ...) over a batch of planes, with zero, replicate or reflect
border handling, a bare @triton.jit kernel + its launcher.

    out[p, y, x] = sum_{ky, kx in 0..4} w[ky, kx] * xb[p, y + ky - 2, x + kx - 2]

(a cross-correlation, as torch.nn.functional.conv2d computes it) where xb is the plane
extended past its border by the point's `border`:
    "zero"      reads 0 outside the plane (conv2d's padding=2, a Dirichlet boundary);
    "replicate" repeats the edge pixel (OpenCV BORDER_REPLICATE, F.pad mode="replicate");
    "reflect"   mirrors about the edge pixel, the edge not repeated (OpenCV's default
                BORDER_REFLECT_101, F.pad mode="reflect"; a Neumann boundary for a
                symmetric stencil); needs H, W >= 3 (as F.pad does).
x: [P, H, W] (or [..., H, W]: the leading dims are the planes, e.g. the N x C planes of an
NCHW tensor) fp16 / bf16 / fp32 with any strides (a row pitch wider than W, as a pitched video
surface has, is read in place; stride_w 1 is specialised by Triton); w: [5, 5] fp32 (a 3x3
stencil is a 5x5 with a zero rim); out: [P, H, W] contiguous in x's dtype; fp32 accumulation,
one rounding at the store.

Tiling: one CTA owns BLOCK_W columns of one plane and BLOCK_H * ROWS rows of it, split into
BLOCK_H bands of ROWS rows. The bands are walked in lockstep, one row per step: step t loads
input row (band start + t - 2) of every band at the five column shifts (five [BLOCK_H,
BLOCK_W] loads, the shifted ones L1 hits of the same lines), and pushes it through a ring of
five fp32 accumulators, one per output row the input row touches (input row i adds its
horizontal dot with filter row 4 to output row i - 2, ..., with filter row 0 to output row
i + 2). After the add, the oldest accumulator holds a finished output row: it is stored and
the ring rotates. Every input row is read from L2 / DRAM once per band (plus the band's
4 halo rows), 25 FMAs an input row element; the vertical reuse lives in registers, the
horizontal reuse in L1. A band of ROWS output rows takes ROWS + 4 steps (the first 4 fill
the ring and store nothing). Border handling is on the indices: zero masks the loads (row
and column masks hoisted), replicate / reflect clamp / mirror the row index per step and
the five column index vectors once (no masks; an index past the mirrored range, a band past
the plane's end, is clamped too so no load leaves the plane). Rows past H and columns past
W are computed and not stored. The 25 weights are loaded once per CTA (scalars).

Tile order (1-D grid, pid -> column tile fastest, then the row-band group, then the plane):
the CTAs in flight are neighbours along a row of tiles, so a tile's halo columns are in L2.

Tunables: BLOCK_W (columns a tile, a power of two), BLOCK_H (bands walked together, a power
of two: the tile is BLOCK_H x BLOCK_W elements a step), ROWS (output rows a band walks: more
re-uses the ring longer and re-reads fewer halo rows, fewer CTAs), num_warps, num_stages
(no tl.dot in the walk: see the sweep's note in scripts/rank_study.py).
Problem parameters (a workload point): P (planes), H, W, dtype (fp16 / bf16 / fp32), border
(zero / replicate / reflect), filter (gauss5 / binomial5 / box5 / laplace4 / random: the
weights make_inputs builds), pitch (optional: the row stride in elements, >= W; default W).
"""

from __future__ import annotations

import triton
import triton.language as tl

RADIUS = 2
K = 2 * RADIUS + 1
BORDERS = {"zero": 0, "replicate": 1, "reflect": 2}


@triton.jit
def _border_index(i, n, BORDER: tl.constexpr):
    """Index i of an axis of length n mapped into [0, n) for replicate (1) / reflect (2)."""
    if BORDER == 2:
        i = tl.where(i < 0, -i, i)
        i = tl.where(i >= n, 2 * n - 2 - i, i)
    return tl.minimum(tl.maximum(i, 0), n - 1)


@triton.jit
def _taps(Wt, ky: tl.constexpr):
    """The five fp32 weights of filter row ky."""
    return (tl.load(Wt + ky * 5 + 0), tl.load(Wt + ky * 5 + 1), tl.load(Wt + ky * 5 + 2),
            tl.load(Wt + ky * 5 + 3), tl.load(Wt + ky * 5 + 4))


@triton.jit
def _hdot(x0, x1, x2, x3, x4, w0, w1, w2, w3, w4):
    return x0 * w0 + x1 * w1 + x2 * w2 + x3 * w3 + x4 * w4


@triton.jit
def _kernel(X, Wt, OUT, H, W, stride_xp, stride_xh, stride_xw, stride_op, stride_oh,
            BORDER: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    pid = tl.program_id(0)
    tiles_w = tl.cdiv(W, BLOCK_W)
    tiles_h = tl.cdiv(H, BLOCK_H * ROWS)
    tw = pid % tiles_w
    t = pid // tiles_w
    th = t % tiles_h
    plane = t // tiles_h

    cols = tw * BLOCK_W + tl.arange(0, BLOCK_W)
    band0 = th * (BLOCK_H * ROWS) + tl.arange(0, BLOCK_H) * ROWS       # first output row of each band
    x_plane = X + plane.to(tl.int64) * stride_xp
    o_plane = OUT + plane.to(tl.int64) * stride_op

    # the five column shifts: offsets (and, for zero, masks) hoisted out of the walk
    c0 = cols - 2
    c1 = cols - 1
    c2 = cols
    c3 = cols + 1
    c4 = cols + 2
    if BORDER == 0:
        m0 = (c0 >= 0) & (c0 < W)
        m1 = (c1 >= 0) & (c1 < W)
        m2 = c2 < W
        m3 = c3 < W
        m4 = c4 < W
    else:
        c0 = _border_index(c0, W, BORDER)
        c1 = _border_index(c1, W, BORDER)
        c2 = _border_index(c2, W, BORDER)
        c3 = _border_index(c3, W, BORDER)
        c4 = _border_index(c4, W, BORDER)
    p0 = x_plane + (c0 * stride_xw)[None, :]
    p1 = x_plane + (c1 * stride_xw)[None, :]
    p2 = x_plane + (c2 * stride_xw)[None, :]
    p3 = x_plane + (c3 * stride_xw)[None, :]
    p4 = x_plane + (c4 * stride_xw)[None, :]

    w00, w01, w02, w03, w04 = _taps(Wt, 0)
    w10, w11, w12, w13, w14 = _taps(Wt, 1)
    w20, w21, w22, w23, w24 = _taps(Wt, 2)
    w30, w31, w32, w33, w34 = _taps(Wt, 3)
    w40, w41, w42, w43, w44 = _taps(Wt, 4)

    col_ok = (cols < W)[None, :]
    o_cols = o_plane + cols[None, :]
    a0 = tl.zeros([BLOCK_H, BLOCK_W], tl.float32)      # ring: output rows i-2 .. i+1 of input row i
    a1 = tl.zeros([BLOCK_H, BLOCK_W], tl.float32)
    a2 = tl.zeros([BLOCK_H, BLOCK_W], tl.float32)
    a3 = tl.zeros([BLOCK_H, BLOCK_W], tl.float32)
    for step in range(ROWS + 4):
        i = band0 + (step - 2)                          # this step's input row of each band
        if BORDER == 0:
            r_ok = ((i >= 0) & (i < H))[:, None]
            roff = (i * stride_xh)[:, None]
            x0 = tl.load(p0 + roff, mask=r_ok & m0[None, :], other=0.0).to(tl.float32)
            x1 = tl.load(p1 + roff, mask=r_ok & m1[None, :], other=0.0).to(tl.float32)
            x2 = tl.load(p2 + roff, mask=r_ok & m2[None, :], other=0.0).to(tl.float32)
            x3 = tl.load(p3 + roff, mask=r_ok & m3[None, :], other=0.0).to(tl.float32)
            x4 = tl.load(p4 + roff, mask=r_ok & m4[None, :], other=0.0).to(tl.float32)
        else:
            roff = (_border_index(i, H, BORDER) * stride_xh)[:, None]
            x0 = tl.load(p0 + roff).to(tl.float32)
            x1 = tl.load(p1 + roff).to(tl.float32)
            x2 = tl.load(p2 + roff).to(tl.float32)
            x3 = tl.load(p3 + roff).to(tl.float32)
            x4 = tl.load(p4 + roff).to(tl.float32)
        a0 += _hdot(x0, x1, x2, x3, x4, w40, w41, w42, w43, w44)
        a1 += _hdot(x0, x1, x2, x3, x4, w30, w31, w32, w33, w34)
        a2 += _hdot(x0, x1, x2, x3, x4, w20, w21, w22, w23, w24)
        a3 += _hdot(x0, x1, x2, x3, x4, w10, w11, w12, w13, w14)
        a4 = _hdot(x0, x1, x2, x3, x4, w00, w01, w02, w03, w04)
        # a0 is output row i - 2 of each band, finished: rows 0..ROWS-1 of the band (steps 4..ROWS+3)
        o = i - 2
        ok = ((o < H) & (step >= 4))[:, None] & col_ok
        tl.store(o_cols + (o * stride_oh)[:, None], a0.to(OUT.dtype.element_ty), mask=ok)
        a0 = a1
        a1 = a2
        a2 = a3
        a3 = a4


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
FILTERS = ("gauss5", "binomial5", "box5", "laplace4", "random")
TUNABLES = ("BLOCK_H", "BLOCK_W", "ROWS", "num_warps", "num_stages")
BASELINE = {"BLOCK_H": 2, "BLOCK_W": 256, "ROWS": 16, "num_warps": 4, "num_stages": 1}

# Memory traffic: one read of x and one write of out (the 4 halo rows a band re-reads and the
# 2 halo columns a tile re-reads come from L2). 25 fp32 FMAs an element: ~0.2-0.4x the
# H200's FMA time per byte at 16-bit, so all three points are HBM / LSU bound.
POINTS = [
    # 4K video: 8 RGB frames (P = 3 x 8 planes) of 2160 x 3840 fp16 in a pitched surface (row pitch
    # 4096, as NVDEC / CUDA-interop buffers are), 5x5 Gaussian blur (sigma 1.0), replicate border:
    # x 398 MB + out 398 MB
    {"P": 24, "H": 2160, "W": 3840, "pitch": 4096, "dtype": "fp16", "border": "replicate", "filter": "gauss5"},
    # CNN feature maps: 64 images x 256 channels of 56 x 56 bf16 (ResNet stage 1), a fixed 5x5 binomial
    # anti-aliasing blur (BlurPool before the stride), zero padding: x 103 MB + out 103 MB
    {"P": 16384, "H": 56, "W": 56, "dtype": "bf16", "border": "zero", "filter": "binomial5"},
    # a scientific grid: one 16384 x 16384 fp32 field, the fourth-order 9-point (radius-2 cross) Laplacian,
    # reflect (Neumann) boundary: x 1.07 GB + out 1.07 GB
    {"P": 1, "H": 16384, "W": 16384, "dtype": "fp32", "border": "reflect", "filter": "laplace4"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _border_code(border: str) -> int:
    try:
        return BORDERS[border]
    except (KeyError, TypeError):
        raise ValueError(f"border {border!r} is not one of {', '.join(BORDERS)}") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_H", "BLOCK_W"):
        v = cfg[name]
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")
    if not isinstance(cfg["ROWS"], int) or cfg["ROWS"] < 1:
        raise ValueError(f"ROWS={cfg['ROWS']} must be a positive int")


def _grid(P: int, H: int, W: int, cfg) -> int:
    return P * triton.cdiv(H, cfg["BLOCK_H"] * cfg["ROWS"]) * triton.cdiv(W, cfg["BLOCK_W"])


def _kernel_args(x, weight, out, border: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    x, out [P, H, W] (out contiguous), weight [5, 5] fp32 contiguous."""
    _, H, W = x.shape
    return dict(X=x, Wt=weight, OUT=out, H=H, W=W, stride_xp=x.stride(0), stride_xh=x.stride(1),
                stride_xw=x.stride(2), stride_op=out.stride(0), stride_oh=out.stride(1), BORDER=border,
                ROWS=cfg["ROWS"], BLOCK_H=cfg["BLOCK_H"], BLOCK_W=cfg["BLOCK_W"])


def stencil2d(x, weight, border="replicate", *, BLOCK_H=2, BLOCK_W=256, ROWS=16, num_warps=4, num_stages=1):
    """The 5x5 filter `weight` ([5, 5], any float dtype, used as fp32) over the planes of x
    ([..., H, W] fp16 / bf16 / fp32, any strides: the leading dims are flattened into planes,
    by a view when they allow one, else a copy) with `border` "zero" / "replicate" / "reflect".
    Returns x's shape, contiguous, in x's dtype."""
    import torch
    if x.dim() < 2:
        raise ValueError(f"x must be [..., H, W]; got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    if tuple(weight.shape) != (K, K) or not weight.dtype.is_floating_point:
        raise ValueError(f"weight must be a float [{K}, {K}] tensor; got {weight.dtype} {tuple(weight.shape)}")
    if weight.device != x.device:
        raise ValueError(f"weight is on {weight.device}, x on {x.device}")
    code = _border_code(border)
    H, W = x.shape[-2], x.shape[-1]
    if H == 0 or W == 0 or x.numel() == 0:
        raise ValueError(f"empty input: shape {tuple(x.shape)}")
    if code == BORDERS["reflect"] and min(H, W) <= RADIUS:
        raise ValueError(f"border 'reflect' needs H, W > {RADIUS} (the radius); got {H} x {W}")
    cfg = {"BLOCK_H": BLOCK_H, "BLOCK_W": BLOCK_W, "ROWS": ROWS}
    _check_cfg(cfg)
    shape = x.shape
    x3 = x.reshape(-1, H, W)
    if (H - 1) * abs(x3.stride(1)) + (W - 1) * abs(x3.stride(2)) >= 2**31 or min(x3.stride()) < 0:
        x3 = x3.contiguous()
    if H * W >= 2**31:
        raise ValueError(f"a plane of {H} x {W} elements exceeds the kernel's 32-bit in-plane offsets")
    w = weight.detach().to(torch.float32).contiguous()
    out = torch.empty((x3.shape[0], H, W), dtype=x.dtype, device=x.device)
    _kernel[(_grid(x3.shape[0], H, W, cfg),)](**_kernel_args(x3, w, out, code, cfg), num_warps=num_warps,
                                             num_stages=num_stages)
    return out.reshape(shape)


def filter_weights(name: str, seed: int = 0):
    """The [5, 5] fp32 weights of a named filter (CPU)."""
    import torch
    if name == "gauss5":                                    # sigma 1.0, normalised
        g = torch.exp(-torch.arange(-2, 3, dtype=torch.float64) ** 2 / 2.0)
        g = g / g.sum()
        w = g[:, None] * g[None, :]
    elif name == "binomial5":                               # [1 4 6 4 1] / 16, outer product
        b = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0], dtype=torch.float64) / 16
        w = b[:, None] * b[None, :]
    elif name == "box5":
        w = torch.full((K, K), 1.0 / 25, dtype=torch.float64)
    elif name == "laplace4":                                # fourth-order d2/dx2 + d2/dy2, h = 1
        c = torch.tensor([-1 / 12, 4 / 3, -5 / 2, 4 / 3, -1 / 12], dtype=torch.float64)
        w = torch.zeros((K, K), dtype=torch.float64)
        w[RADIUS, :] += c
        w[:, RADIUS] += c
    elif name == "random":
        gen = torch.Generator().manual_seed(1000 + seed)
        w = torch.randn((K, K), generator=gen, dtype=torch.float64) / K
    else:
        raise ValueError(f"filter {name!r} is not one of {', '.join(FILTERS)}")
    return w.to(torch.float32)


def _check_point(point) -> None:
    for k in ("P", "H", "W"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    if point.get("pitch", point["W"]) < point["W"]:
        raise ValueError(f"pitch={point['pitch']} is below W={point['W']}")
    _elem_bytes(point.get("dtype", "fp16"))
    _border_code(point.get("border", "replicate"))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) [P, H, W] (a view of a [P, H, pitch] buffer when the point has a pitch),
    the point's filter weights, its border."""
    import torch
    _check_point(point)
    if point.get("filter", "gauss5") not in FILTERS:
        raise ValueError(f"filter {point['filter']!r} is not one of {', '.join(FILTERS)}")
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    P, H, W = point["P"], point["H"], point["W"]
    pitch = point.get("pitch", W)
    buf = torch.randn((P, H, pitch), generator=gen, device=device).to(dt)
    w = filter_weights(point.get("filter", "gauss5"), seed).to(device)
    return {"x": buf[:, :, :W], "weight": w, "border": point.get("border", "replicate")}


def launch(inputs, cfg):
    return stencil2d(inputs["x"], inputs["weight"], inputs["border"], BLOCK_H=cfg["BLOCK_H"],
                     BLOCK_W=cfg["BLOCK_W"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"],
                     num_stages=cfg["num_stages"])


def _pad_conv(x4, w, border: str):
    """x4 [P, 1, H, W] padded by the border rule, then the 5x5 cross-correlation with w."""
    import torch.nn.functional as F
    r = RADIUS
    if border == "zero":
        xp = F.pad(x4, (r, r, r, r))
    else:
        xp = F.pad(x4, (r, r, r, r), mode=border)
    return F.conv2d(xp, w.to(x4.dtype)[None, None])


def reference(inputs):
    """fp64 torch on the upcast input (F.pad by the border rule + conv2d): [P, H, W] fp32."""
    import torch
    x = inputs["x"]
    x4 = x.reshape(-1, 1, x.shape[-2], x.shape[-1]).to(torch.float64)
    return _pad_conv(x4, inputs["weight"].to(torch.float64), inputs["border"]).reshape(x.shape).float()


def torch_baseline(inputs):
    """F.pad + F.conv2d in x's dtype (cuDNN on a GPU; a pad copy then a 1-channel conv)."""
    x = inputs["x"]
    x4 = x.reshape(-1, 1, x.shape[-2], x.shape[-1])
    return _pad_conv(x4, inputs["weight"], inputs["border"]).reshape(x.shape)


def bytes_moved(point) -> int:
    """x read once, out written once, the 25 fp32 weights. The band halo rows and tile halo
    columns re-read (L2 hits) are not counted."""
    _check_point(point)
    return 2 * _elem_bytes(point.get("dtype", "fp16")) * point["P"] * point["H"] * point["W"] + 4 * K * K


def flops(point) -> int:
    """25 multiply-adds an output element (zero taps of a sparse stencil and the border's
    included)."""
    _check_point(point)
    return 2 * K * K * point["P"] * point["H"] * point["W"]


def grid(cfg, point) -> int:
    """One CTA per (plane, group of BLOCK_H bands of ROWS rows, BLOCK_W column tile)."""
    _check_point(point)
    return _grid(point["P"], point["H"], point["W"], cfg)


def loop_iterations(cfg, point) -> int:
    """The row walk: ROWS + 4 steps (4 fill the ring), each five [BLOCK_H, BLOCK_W] loads,
    25 FMAs an element and one [BLOCK_H, BLOCK_W] (masked) store."""
    return cfg["ROWS"] + 2 * RADIUS


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with a real launch's strides (x a [P, H, pitch] buffer's [:, :, :W] view, out contiguous)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    P, H, W = point["P"], point["H"], point["W"]
    x = torch.empty((P, H, point.get("pitch", W)), dtype=dt, device="meta")[:, :, :W]
    w = torch.empty((K, K), dtype=torch.float32, device="meta")
    out = torch.empty((P, H, W), dtype=dt, device="meta")
    return _kernel_args(x, w, out, _border_code(point.get("border", "replicate")), cfg)
