"""Channels-first LayerNorm ("LayerNorm2d": ConvNeXt's downsample / stem norms, SAM's image-encoder
neck, the ConvNeXt / ConvNeXt-V2 detection backbones) on an NCHW tensor, a bare @triton.jit kernel +
its launcher.

    y[n, c, h, w] = (x[n, c, h, w] - mean) / sqrt(var + eps) * weight[c] + bias[c]
    mean, var: over the C channels of pixel (n, h, w) (biased variance), fp32

x: [N, C, H, W] fp16 / bf16 / fp32, contiguous NCHW (a non-contiguous x is made contiguous first);
weight, bias: [C] of any float dtype (fp32 master weights under AMP, or x's dtype), read as fp32;
y: [N, C, H, W] in x's dtype, contiguous. The statistics and the affine are fp32, y is rounded once.

The reduction runs over the strided dimension: a pixel's channels are H*W elements apart, while the
pixels of one channel plane are contiguous. So one CTA owns TILE_P consecutive pixels of one image
(program_id(0) the pixel tile of the flattened (h, w), program_id(1) the image) and walks its C
channels TILE_C at a time as a [TILE_C, TILE_P] tile whose rows are contiguous runs of a plane
(coalesced, vectorized along the pixels):
  pass 1: shifted sums. Every pixel's channel 0 value k is loaded first; the loop accumulates
    d = x - k and d^2 into two [TILE_C, TILE_P] fp32 tiles (no cross-thread reduction inside the
    loop), reduced over the channels once at the end: m = S1 / C (= mean - k),
    var = max(S2 / C - m^2, 0). The shift keeps E[d^2] - E[d]^2 free of the cancellation of the
    plain sum / sum-of-squares form when |mean| >> std (error ~ (k - mean)^2 / var ulps).
  pass 2: takes x - mean as (x - k) - m (x - k is exact for nearby values), never rounding
    mean = k + m itself (at |mean| ~ 300 its fp32 ulp alone is 3e-5); it reloads the same tiles
    (the CTA's C x TILE_P footprint: from L2 where the resident CTAs' footprints fit in it,
    otherwise partly from DRAM again -- the cost TILE_P trades against run length), loads
    weight / bias for the TILE_C channels once for all TILE_P pixels, normalizes, scales, shifts
    and stores.
The tile is clamped to the problem: TILE_C = min(BLOCK_C, next_pow2(C)), TILE_P = min(BLOCK_P,
next_pow2(H*W)) (a 1x1 head norm gets TILE_P = 1, 3 channels a 4-row tile). Channel rows are masked
only when TILE_C does not divide C (EVEN_C = 0); the pixel mask (p < H*W) is always there. H*W need
not be a multiple of 16 (ConvNeXt's 14x14 and 7x7 planes): HW_ALIGN, the largest power of two <= 16
dividing H*W, is a constexpr and the kernel rebuilds H*W as (HW // HW_ALIGN) * HW_ALIGN, so Triton
knows every plane's start and the mask's constancy are multiples of HW_ALIGN and vectorizes that wide
(8-byte bf16 vectors at 14x14 instead of scalar loads). Offsets inside one image are int32 (C*H*W <
2^31), the image base int64.

Tunables: BLOCK_P (pixels a CTA: the run length of each plane row, the grid, the L2 footprint of
the second pass), BLOCK_C (channels a step: the loads in flight and the accumulator tiles' registers),
num_warps, num_stages (no dot: the loops' loads are not pipelined by the compiler; held at 1).
Problem parameters (a workload point): N, C, H, W, dtype (x's and y's: fp16 / bf16 / fp32), eps
(optional, 1e-6 as ConvNeXt / SAM / detectron2).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Wt, Bs, Y, C, HW, eps,
            HW_ALIGN: tl.constexpr, EVEN_C: tl.constexpr, TILE_P: tl.constexpr, TILE_C: tl.constexpr):
    pid_p = tl.program_id(0)
    n = tl.program_id(1)
    hw = (HW // HW_ALIGN) * HW_ALIGN                      # == HW; its divisibility is now known
    p = pid_p * TILE_P + tl.arange(0, TILE_P)             # pixels of the flattened (h, w)
    p_ok = p < hw
    img = n.to(tl.int64) * C * hw                         # the image's base (int64)
    xb = X + img
    yb = Y + img
    cc = tl.arange(0, TILE_C)

    # pass 1: sums of x - k and (x - k)^2 over the channels, k = the pixel's channel-0 value
    k = tl.load(xb + p, mask=p_ok, other=0.0).to(tl.float32)
    kk = k[None, :]
    pm = p_ok[None, :]
    acc1 = tl.zeros([TILE_C, TILE_P], dtype=tl.float32)
    acc2 = tl.zeros([TILE_C, TILE_P], dtype=tl.float32)
    for c0 in range(0, C, TILE_C):
        c = c0 + cc
        offs = (c * hw)[:, None] + p[None, :]
        if EVEN_C:
            x = tl.load(xb + offs, mask=pm, other=0.0).to(tl.float32)
            d = x - kk                                    # masked pixels: 0 - 0
        else:
            m = (c < C)[:, None] & pm
            x = tl.load(xb + offs, mask=m, other=0.0).to(tl.float32)
            d = tl.where(m, x - kk, 0.0)
        acc1 += d
        acc2 += d * d
    s1 = tl.sum(acc1, axis=0) / C                         # mean - k
    s2 = tl.sum(acc2, axis=0) / C
    rstd = tl.rsqrt(tl.maximum(s2 - s1 * s1, 0.0) + eps)
    ss = s1[None, :]
    rr = rstd[None, :]

    # pass 2: normalize, scale, shift, store in Y's dtype
    for c0 in range(0, C, TILE_C):
        c = c0 + cc
        offs = (c * hw)[:, None] + p[None, :]
        if EVEN_C:
            m = pm
            w = tl.load(Wt + c).to(tl.float32)
            b = tl.load(Bs + c).to(tl.float32)
        else:
            c_ok = c < C
            m = c_ok[:, None] & pm
            w = tl.load(Wt + c, mask=c_ok, other=0.0).to(tl.float32)
            b = tl.load(Bs + c, mask=c_ok, other=0.0).to(tl.float32)
        x = tl.load(xb + offs, mask=m, other=0.0).to(tl.float32)
        y = ((x - kk) - ss) * rr * w[:, None] + b[:, None]   # x - mean, never rounding k + s1
        tl.store(yb + offs, y.to(Y.dtype.element_ty), mask=m)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-23"
DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_P", "BLOCK_C", "num_warps", "num_stages")
BASELINE = {"BLOCK_P": 128, "BLOCK_C": 8, "num_warps": 4, "num_stages": 1}
EPS = 1e-6

# Channels-first LayerNorms of real vision models, each 206-411 MB of traffic (4-8x the H200's 50 MB
# L2), HBM-bound at roughly 60-125 us on an H100 (45-85 us on an H200); they differ in C (192-1024), plane size (196 to
# 67200 pixels, 16-aligned or not) and dtype.
POINTS = [
    # SAM ViT-H image encoder neck (Conv1x1 -> LayerNorm2d(256) -> Conv3x3 -> LayerNorm2d(256)) on
    # 1024x1024 images: [32, 256, 64, 64] fp32 (SAM's encoder runs fp32 by default), a batch of 32
    # images embedded at once: x 134 MB read, y 134 MB written
    {"N": 32, "C": 256, "H": 64, "W": 64, "dtype": "fp32"},
    # ConvNeXt-XL (dims 256/512/1024/2048) at 224x224, stage 4's downsample LayerNorm2d(1024) on the
    # 14x14 stage-3 output, bf16, batch 512 (evaluation): x 206 MB, y 206 MB; planes of 196 pixels
    # (HW_ALIGN 4, each pixel tile one image's plane or less)
    {"N": 512, "C": 1024, "H": 14, "W": 14, "dtype": "bf16"},
    # ConvNeXt-V2-L (dims 192/384/768/1536) as a Mask R-CNN / Cascade backbone at 1344x800 (a
    # 1333x800 COCO image padded to 32): the stem's LayerNorm2d(192) after the 4x4 patchify conv,
    # [4, 192, 200, 336] fp16 (AMP), 4 images a GPU: x 103 MB, y 103 MB
    {"N": 4, "C": 192, "H": 200, "W": 336, "dtype": "fp16"},
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


def _check_point(point) -> None:
    for k in ("N", "C", "H", "W"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    _elem_bytes(point.get("dtype", "fp32"))


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_P", "BLOCK_C", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")


def hw_align(HW: int) -> int:
    """The largest power of two <= 16 that divides HW (the plane size's known divisibility)."""
    return math.gcd(HW, 16)


def _tile(C: int, HW: int, cfg) -> tuple[int, int]:
    """(TILE_C, TILE_P): BLOCK_C and BLOCK_P clamped to next_pow2(C) and next_pow2(HW)."""
    _check_cfg(cfg)
    return min(cfg["BLOCK_C"], triton.next_power_of_2(C)), min(cfg["BLOCK_P"], triton.next_power_of_2(HW))


def _grid(Nb: int, HW: int, tile_p: int) -> tuple[int, int]:
    return (triton.cdiv(HW, tile_p), Nb)


def _kernel_args(x, weight, bias, y, eps: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    Nb, C, H, W = x.shape
    tile_c, tile_p = _tile(C, H * W, cfg)
    return dict(X=x, Wt=weight, Bs=bias, Y=y, C=C, HW=H * W, eps=float(eps), HW_ALIGN=hw_align(H * W),
                EVEN_C=int(C % tile_c == 0), TILE_P=tile_p, TILE_C=tile_c)


def layernorm2d(x, weight, bias, eps: float = EPS, *, BLOCK_P: int = 128, BLOCK_C: int = 8, num_warps: int = 4,
                num_stages: int = 1):
    """LayerNorm over the channels of x [N, C, H, W] (fp16 / bf16 / fp32) with weight, bias [C]:
    y [N, C, H, W] contiguous, in x's dtype."""
    import torch
    if x.dim() != 4:
        raise ValueError(f"expected x [N, C, H, W]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    Nb, C, H, W = x.shape
    for name, t in (("weight", weight), ("bias", bias)):
        if t.shape != (C,) or not t.is_floating_point():
            raise ValueError(f"{name} must be a float tensor [{C}]; got {t.dtype} {tuple(t.shape)}")
        if t.device != x.device:
            raise ValueError(f"{name} is on {t.device}, x on {x.device}")
    if not eps > 0:
        raise ValueError(f"eps={eps!r} must be positive")
    cfg = {"BLOCK_P": BLOCK_P, "BLOCK_C": BLOCK_C, "num_warps": num_warps}
    _check_cfg(cfg)
    y = torch.empty((Nb, C, H, W), dtype=x.dtype, device=x.device)
    if y.numel() == 0:
        return y
    if C * H * W >= 2**31:
        raise ValueError(f"one image holds {C * H * W} elements: exceeds int32 offsets")
    if Nb > 65535:
        raise ValueError(f"N={Nb} exceeds the grid's 65535 images")
    x = x.contiguous()
    weight, bias = weight.contiguous(), bias.contiguous()
    _, tile_p = _tile(C, H * W, cfg)
    _kernel[_grid(Nb, H * W, tile_p)](**_kernel_args(x, weight, bias, y, eps, cfg), num_warps=num_warps,
                                      num_stages=num_stages)
    return y


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: per pixel a mean offset N(0, 1.5^2) and a spread U(0.3, 2) times N(0, 1) over the channels
    (activations whose channel mean is not small against their spread), in the point's dtype,
    contiguous NCHW; weight 1 + N(0, 0.1^2), bias N(0, 0.1^2), fp32 (AMP's master weights). Drawn on
    the CPU from a seeded torch.Generator, then moved."""
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    mu = 1.5 * torch.randn((Nb, 1, H, W), generator=gen)
    sd = 0.3 + 1.7 * torch.rand((Nb, 1, H, W), generator=gen)
    x = torch.randn((Nb, C, H, W), generator=gen).mul_(sd).add_(mu).to(dt)
    w = 1.0 + 0.1 * torch.randn((C,), generator=gen)
    b = 0.1 * torch.randn((C,), generator=gen)
    return {"x": x.to(device), "weight": w.to(device), "bias": b.to(device), "eps": point.get("eps", EPS)}


def launch(inputs, cfg):
    return layernorm2d(inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"], BLOCK_P=cfg["BLOCK_P"],
                       BLOCK_C=cfg["BLOCK_C"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """The ConvNeXt / SAM LayerNorm2d formula in fp64 on the upcast input (two-pass mean and biased
    variance over dim 1), returned as fp32 [N, C, H, W]."""
    x = inputs["x"].double()
    u = x.mean(1, keepdim=True)
    s = (x - u).pow(2).mean(1, keepdim=True)
    y = (x - u) / (s + inputs["eps"]).sqrt()
    w, b = inputs["weight"].double(), inputs["bias"].double()
    return (y * w[:, None, None] + b[:, None, None]).float()


def torch_baseline(inputs):
    """timm's LayerNorm2d: F.layer_norm over the last dim of the NHWC view, permuted back (torch
    copies the permuted x to contiguous NHWC, normalizes it, and the result is a channels_last view)."""
    import torch.nn.functional as F
    x = inputs["x"]
    y = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), inputs["weight"].to(x.dtype),
                     inputs["bias"].to(x.dtype), inputs["eps"])
    return y.permute(0, 3, 1, 2)


def bytes_moved(point) -> int:
    """x read once, y written once, weight and bias (fp32, as make_inputs gives them) read once."""
    _check_point(point)
    n = point["N"] * point["C"] * point["H"] * point["W"]
    return 2 * n * _elem_bytes(point.get("dtype", "fp32")) + 2 * 4 * point["C"]


def flops(point) -> int:
    """Per element: pass 1's subtract, add and multiply-add (4), pass 2's subtract, two multiplies and
    an add (4); the per-pixel mean / rstd (a few per pixel, shared by the channels) not counted."""
    _check_point(point)
    return 8 * point["N"] * point["C"] * point["H"] * point["W"]


def grid(cfg, point) -> tuple[int, int]:
    """(pixel tiles of one image, images): the launch grid."""
    _check_point(point)
    HW = point["H"] * point["W"]
    return _grid(point["N"], HW, _tile(point["C"], HW, cfg)[1])


def loop_iterations(cfg, point) -> int:
    """Both channel loops together: 2 x ceil(C / TILE_C)."""
    _check_point(point)
    return 2 * triton.cdiv(point["C"], _tile(point["C"], point["H"] * point["W"], cfg)[0])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x and y
    contiguous NCHW in the point's dtype, weight / bias fp32 (as make_inputs)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta")
    w = torch.empty((C,), dtype=torch.float32, device="meta")
    return _kernel_args(x, w, torch.empty_like(w), torch.empty_like(x), point.get("eps", EPS), cfg)
