"""Bilinear image resize forward, torch.nn.functional.interpolate(mode="bilinear",
align_corners=False, antialias=False), for NCHW and channels_last (NHWC) inputs, a bare
@triton.jit kernel + its launcher.

    out[n, c, oh, ow] = hy (hx x[n, c, y0, x0] + lx x[n, c, y0, x1])
                      + ly (hx x[n, c, y1, x0] + lx x[n, c, y1, x1])
    sy = max((oh + 0.5) * scale_h - 0.5, 0),  y0 = min(floor(sy), H - 1),  y1 = min(floor(sy) + 1, H - 1),
    ly = sy - floor(sy),  hy = 1 - ly          (x0, x1, lx, hx likewise from ow, scale_w, W)

scale_h = H / OH when the output size is given, 1 / scale_factor when a scale factor is (torch's
rule with recompute_scale_factor unset: OH = floor(H * scale_factor), the coordinates mapped by
the factor itself, so a non-integer factor need not equal H / OH). The weights and the blend are
fp32 (torch's accscalar on a GPU for fp16 / bf16 / fp32), rounded once to the output dtype.
Downsampling takes the same four taps (no antialias filter, interpolate's default).

x: [N, C, H, W] fp16 / bf16 / fp32 in torch's logical shape, any strides (read in place: a
channel slice of a wider tensor, an NCHW or a channels_last buffer); the layout the kernel tiles
for is the one with the smaller of x's channel and column strides (channels_last when C is the
unit-stride dimension, as torch's suggest_memory_format). out: [N, C, OH, OW] in x's dtype, a
fresh tensor in the same memory format (contiguous NCHW or channels_last).

One CTA owns BLOCK_P consecutive output pixels of one image (pixels flattened over (oh, ow),
so no tile is wasted on a ragged row end; program_id(1) is the image) and walks the image's
channels TILE_C at a time. The pixels are decoded once per CTA -- oh / ow, the fp32 source
coordinates, the four taps' in-image offsets (int32; the image base is int64) and the weights --
and reused for every channel block. Each tap is one [BLOCK_P, TILE_C] gather, addressed by x's
strides, so one code path serves both layouts and Triton's coalescing picks the thread order
from what it can prove contiguous:
  channels_last: C has unit stride (specialised to 1), so each tap reads TILE_C-wide contiguous
    runs (16-B vector loads when C is a multiple of 8 / 4 elements), the store likewise;
  NCHW: nothing is provably contiguous in the gathers; Triton 3.6 lays the tile out pixels
    fastest across a warp (neighbouring pixels read neighbouring or equal columns of one plane),
    the store is contiguous along each plane's flattened (oh, ow) (vector stores when OH * OW
    is a multiple of 4 / 8).
The taps' offsets are clamped into the image, so pixels past OH * OW (the last tile's tail)
load in-bounds data and are only masked at the store; the loads are masked only for the
channel tail (EVEN_C = C % TILE_C == 0 drops even that).

Tunables: BLOCK_C (channels per tile; the kernel's TILE_C = min(BLOCK_C, next_pow2(C)), a tile
never wider than the channels), ELEMS_PER_THREAD (output elements each thread owns per tile: the
tile has ELEMS_PER_THREAD x 32 x num_warps elements, so BLOCK_P = that / TILE_C pixels -- the
knob that bounds the registers of the four gathered taps), num_warps, num_stages (the channel
loop's loads are gathers Triton does not pipeline and there is no dot: num_stages leaves the
cubin unchanged, held at 1).
Problem parameters (a workload point): N, C, H, W (the input), OH and OW (the output size) or
scale_factor (a float or an (h, w) pair), layout ("NCHW" / "NHWC"), dtype (fp16 / bf16 / fp32).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Y, C, H, W, OH, OW, scale_h, scale_w,
            stride_xn, stride_xc, stride_xh, stride_xw, stride_yn, stride_yc, stride_yq,
            EVEN_C: tl.constexpr, BLOCK_P: tl.constexpr, TILE_C: tl.constexpr):
    pid_p = tl.program_id(0)
    n = tl.program_id(1)
    q = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)          # output pixels, flattened (oh, ow)
    q_ok = q < OH * OW
    oh = q // OW
    ow = q - oh * OW

    # source coordinates (fp32, torch's area_pixel_compute_source_index), clamped at 0
    sy = tl.maximum((oh.to(tl.float32) + 0.5) * scale_h - 0.5, 0.0)
    sx = tl.maximum((ow.to(tl.float32) + 0.5) * scale_w - 0.5, 0.0)
    yi = sy.to(tl.int32)                                 # sy >= 0: truncation is floor
    xi = sx.to(tl.int32)
    ly = sy - yi.to(tl.float32)
    lx = sx - xi.to(tl.float32)
    hy = 1.0 - ly
    hx = 1.0 - lx
    y0 = tl.minimum(yi, H - 1)
    y1 = tl.minimum(yi + 1, H - 1)
    x0 = tl.minimum(xi, W - 1)
    x1 = tl.minimum(xi + 1, W - 1)
    r0 = y0 * stride_xh
    r1 = y1 * stride_xh
    k0 = x0 * stride_xw
    k1 = x1 * stride_xw
    o00 = r0 + k0
    o01 = r0 + k1
    o10 = r1 + k0
    o11 = r1 + k1

    xb = X + n.to(tl.int64) * stride_xn
    yb = Y + n.to(tl.int64) * stride_yn
    cc = tl.arange(0, TILE_C)
    p00 = xb + o00[:, None]
    p01 = xb + o01[:, None]
    p10 = xb + o10[:, None]
    p11 = xb + o11[:, None]
    wy0 = hy[:, None]
    wy1 = ly[:, None]
    wx0 = hx[:, None]
    wx1 = lx[:, None]
    py = yb + q[:, None] * stride_yq
    pm = q_ok[:, None]
    for c0 in range(0, C, TILE_C):
        c = c0 + cc
        xc = (c * stride_xc)[None, :]
        if EVEN_C:
            v00 = tl.load(p00 + xc).to(tl.float32)
            v01 = tl.load(p01 + xc).to(tl.float32)
            v10 = tl.load(p10 + xc).to(tl.float32)
            v11 = tl.load(p11 + xc).to(tl.float32)
            sm = pm
        else:
            cm = (c < C)[None, :]
            v00 = tl.load(p00 + xc, mask=cm, other=0.0).to(tl.float32)
            v01 = tl.load(p01 + xc, mask=cm, other=0.0).to(tl.float32)
            v10 = tl.load(p10 + xc, mask=cm, other=0.0).to(tl.float32)
            v11 = tl.load(p11 + xc, mask=cm, other=0.0).to(tl.float32)
            sm = pm & cm
        out = wy0 * (wx0 * v00 + wx1 * v01) + wy1 * (wx0 * v10 + wx1 * v11)
        tl.store(py + (c * stride_yc)[None, :], out.to(Y.dtype.element_ty), mask=sm)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16", "fp32")
LAYOUTS = ("NCHW", "NHWC")
TUNABLES = ("BLOCK_C", "ELEMS_PER_THREAD", "num_warps", "num_stages")
BASELINE = {"BLOCK_C": 32, "ELEMS_PER_THREAD": 8, "num_warps": 4, "num_stages": 1}

# Resizes from real models, each 320-770 MiB of traffic (6-15x the H200's 50 MB L2), so each is
# HBM-bound at roughly 70-230 us; the points differ in layout, dtype, direction and factor.
POINTS = [
    # SDXL VAE decoder, up block 2's 2x upsample at a 1024x1024 image: 512 channels 256x256 ->
    # 512x512, channels_last bf16 (the layout a channels_last / torch.compile'd UNet or VAE runs in):
    # x 64 MiB read, out 256 MiB written
    {"N": 1, "C": 512, "H": 256, "W": 256, "OH": 512, "OW": 512, "layout": "NHWC", "dtype": "bf16"},
    # DeepLabV3+ decoder (the FPN-style top-down merge) on 769x769 Cityscapes crops, output stride
    # 16: the ASPP features [16, 256, 49, 49] resized to the stride-4 low-level map's 193x193
    # (interpolate(size=low.shape[2:]): factor 3.94, non-integer), NCHW fp16 (AMP):
    # x 19 MiB read, out 291 MiB written
    {"N": 16, "C": 256, "H": 49, "W": 49, "OH": 193, "OW": 193, "layout": "NCHW", "dtype": "fp16"},
    # vision-encoder preprocessing (InternVL-style 448x448 tiles): 64 normalised 1024x1024 RGB
    # frames downsampled 2.29x to 448x448 without antialias, NCHW fp32: of x's 768 MiB the taps
    # touch 896 of 1024 rows and columns (588 MiB read), out 147 MiB written
    {"N": 64, "C": 3, "H": 1024, "W": 1024, "OH": 448, "OW": 448, "layout": "NCHW", "dtype": "fp32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _pair(v, what: str) -> tuple[float, float]:
    t = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(t) != 2 or not all(isinstance(a, (int, float)) and a > 0 for a in t):
        raise ValueError(f"{what}={v!r} must be a positive number or a pair of them")
    return float(t[0]), float(t[1])


def _out_geometry(H: int, W: int, size=None, scale_factor=None) -> tuple[int, int, float, float]:
    """(OH, OW, scale_h, scale_w) as interpolate computes them (recompute_scale_factor unset):
    from `size`, scale = in / out; from `scale_factor`, out = floor(in * sf) and scale = 1 / sf."""
    if (size is None) == (scale_factor is None):
        raise ValueError("give exactly one of size and scale_factor")
    if size is not None:
        OH, OW = (size, size) if isinstance(size, int) else tuple(size)
        if not all(isinstance(s, int) and s > 0 for s in (OH, OW)):
            raise ValueError(f"size={size!r} must be positive ints")
        return OH, OW, H / OH, W / OW
    fh, fw = _pair(scale_factor, "scale_factor")
    OH, OW = math.floor(H * fh), math.floor(W * fw)
    if OH < 1 or OW < 1:
        raise ValueError(f"scale_factor={scale_factor!r} gives an empty output from {H}x{W}")
    return OH, OW, 1.0 / fh, 1.0 / fw


def _check_point(point) -> None:
    for k in ("N", "C", "H", "W"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    if point.get("layout", "NCHW") not in LAYOUTS:
        raise ValueError(f"layout {point.get('layout')!r} is not one of {', '.join(LAYOUTS)}")
    _elem_bytes(point.get("dtype", "fp32"))


def _resize_args(point) -> dict:
    """interpolate's size / scale_factor of the point."""
    if "scale_factor" in point:
        if "OH" in point or "OW" in point:
            raise ValueError("a point gives OH / OW or scale_factor, not both")
        return {"size": None, "scale_factor": point["scale_factor"]}
    return {"size": (point["OH"], point["OW"]), "scale_factor": None}


def _geometry(point) -> tuple[int, int, float, float]:
    _check_point(point)
    return _out_geometry(point["H"], point["W"], **_resize_args(point))


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_C", "ELEMS_PER_THREAD", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")


def _tile(C: int, cfg) -> tuple[int, int]:
    """(TILE_C, BLOCK_P): the channel width min(BLOCK_C, next_pow2(C)) and the pixels that make
    the tile ELEMS_PER_THREAD x 32 x num_warps elements (at least one)."""
    _check_cfg(cfg)
    tile_c = min(cfg["BLOCK_C"], triton.next_power_of_2(C))
    return tile_c, max(1, cfg["ELEMS_PER_THREAD"] * 32 * cfg["num_warps"] // tile_c)


def _channels_last(x) -> bool:
    """The tile's layout: channels_last where C is the smaller-stride dimension (C > 1)."""
    return x.shape[1] > 1 and x.stride(1) < x.stride(3)


def _kernel_args(x, out, scale_h: float, scale_w: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    Nb, C, H, W = x.shape
    _, _, OH, OW = out.shape
    tile_c, block_p = _tile(C, cfg)
    return dict(X=x, Y=out, C=C, H=H, W=W, OH=OH, OW=OW, scale_h=float(scale_h), scale_w=float(scale_w),
                stride_xn=x.stride(0), stride_xc=x.stride(1), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_yn=out.stride(0), stride_yc=out.stride(1), stride_yq=out.stride(3),
                EVEN_C=int(C % tile_c == 0), BLOCK_P=block_p, TILE_C=tile_c)


def _grid(Nb: int, OH: int, OW: int, block_p: int) -> tuple[int, int]:
    return (triton.cdiv(OH * OW, block_p), Nb)


def bilinear_resize(x, size=None, scale_factor=None, *, BLOCK_C=32, ELEMS_PER_THREAD=8, num_warps=4,
                    num_stages=1):
    """interpolate(x, size / scale_factor, mode="bilinear", align_corners=False) of x [N, C, H, W]
    (fp16 / bf16 / fp32, any strides): out [N, C, OH, OW] in x's dtype and memory format."""
    import torch
    if x.dim() != 4:
        raise ValueError(f"expected x [N, C, H, W]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    cfg = {"BLOCK_C": BLOCK_C, "ELEMS_PER_THREAD": ELEMS_PER_THREAD, "num_warps": num_warps}
    _check_cfg(cfg)
    Nb, C, H, W = x.shape
    OH, OW, scale_h, scale_w = _out_geometry(H, W, size, scale_factor)
    cl = _channels_last(x)
    fmt = torch.channels_last if cl else torch.contiguous_format
    out = torch.empty((Nb, C, OH, OW), dtype=x.dtype, device=x.device, memory_format=fmt)
    if out.numel() == 0:
        return out
    if min(x.stride()) < 0:
        x = x.contiguous(memory_format=fmt)
    span = sum((d - 1) * s for d, s in zip(x.shape[1:], x.stride()[1:])) + 1
    if span >= 2**31 or C * OH * OW >= 2**31:
        raise ValueError(f"one image of x ({span} elements spanned) or out ({C * OH * OW}) exceeds int32 offsets")
    if Nb > 65535:
        raise ValueError(f"N={Nb} exceeds the grid's 65535 images")
    tile_c, block_p = _tile(C, cfg)
    _kernel[_grid(Nb, OH, OW, block_p)](**_kernel_args(x, out, scale_h, scale_w, cfg),
                                        num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: a smooth image-like field (low-frequency cosines, different per image and channel) plus
    N(0, 0.25) noise, in the point's dtype and layout (an NHWC buffer permuted to [N, C, H, W]
    for "NHWC"); drawn on the CPU from a seeded torch.Generator, then moved."""
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    fy = torch.rand((Nb, 1, 1, C), generator=gen) * 6.0
    fx = torch.rand((Nb, 1, 1, C), generator=gen) * 6.0
    yy = torch.linspace(0, 1, H).view(1, H, 1, 1)
    xx = torch.linspace(0, 1, W).view(1, 1, W, 1)
    x = torch.cos(fy * yy * math.pi) * torch.cos(fx * xx * math.pi)           # [N, H, W, C]
    x = (x + 0.25 * torch.randn((Nb, H, W, C), generator=gen)).to(dt)
    if point.get("layout", "NCHW") == "NHWC":
        x = x.to(device).permute(0, 3, 1, 2)
    else:
        x = x.permute(0, 3, 1, 2).contiguous().to(device)
    return {"x": x, **_resize_args(point)}


def launch(inputs, cfg):
    return bilinear_resize(inputs["x"], inputs["size"], inputs["scale_factor"], BLOCK_C=cfg["BLOCK_C"],
                           ELEMS_PER_THREAD=cfg["ELEMS_PER_THREAD"], num_warps=cfg["num_warps"],
                           num_stages=cfg["num_stages"])


def reference(inputs):
    """torch's interpolate(bilinear, align_corners=False) in fp32 on the upcast input (fp32 weights
    and blend, as torch on a GPU), [N, C, OH, OW] fp32."""
    import torch.nn.functional as F
    return F.interpolate(inputs["x"].float(), size=inputs["size"], scale_factor=inputs["scale_factor"],
                         mode="bilinear", align_corners=False).float()


def torch_baseline(inputs):
    """torch's interpolate on x in its dtype and layout (ATen's upsample_bilinear2d kernels)."""
    import torch.nn.functional as F
    return F.interpolate(inputs["x"], size=inputs["size"], scale_factor=inputs["scale_factor"],
                         mode="bilinear", align_corners=False)


def _taps(size: int, out: int, scale: float) -> int:
    """Distinct source indices (y0 and y1 over every output row) along one axis."""
    s = set()
    for o in range(out):
        src = max((o + 0.5) * scale - 0.5, 0.0)
        i = min(int(src), size - 1)
        s.add(i)
        s.add(min(int(src) + 1, size - 1))
    return len(s)


def bytes_moved(point) -> int:
    """The input elements the taps touch (distinct source rows x distinct source columns, each read
    once: all of x when upsampling, ~7/8 at 1024 -> 448) and out written once. The taps shared by
    neighbouring output pixels are re-read from L1 / L2, not counted."""
    OH, OW, sh, sw = _geometry(point)
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    e = _elem_bytes(point.get("dtype", "fp32"))
    return e * Nb * C * (_taps(H, OH, sh) * _taps(W, OW, sw) + OH * OW)


def flops(point) -> int:
    """Three lerps of two multiplies and an add per output element (the per-pixel coordinate and
    weight math, shared by the channels, not counted)."""
    OH, OW, _, _ = _geometry(point)
    return 9 * point["N"] * point["C"] * OH * OW


def grid(cfg, point) -> tuple[int, int]:
    """(pixel tiles of one image, images): the launch grid."""
    OH, OW, _, _ = _geometry(point)
    return _grid(point["N"], OH, OW, _tile(point["C"], cfg)[1])


def loop_iterations(cfg, point) -> int:
    """The channel blocks each CTA walks: ceil(C / TILE_C)."""
    _check_point(point)
    return triton.cdiv(point["C"], _tile(point["C"], cfg)[0])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with the strides a real launch has (x and out in the point's layout)."""
    import torch
    OH, OW, sh, sw = _geometry(point)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    fmt = torch.channels_last if point.get("layout", "NCHW") == "NHWC" else torch.contiguous_format
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta", memory_format=fmt)
    out = torch.empty((Nb, C, OH, OW), dtype=dt, device="meta", memory_format=fmt)
    return _kernel_args(x, out, sh, sw, cfg)
