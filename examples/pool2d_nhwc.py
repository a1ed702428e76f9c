"""2-D max / average pooling of a channels_last (NHWC) activation, torch's max_pool2d /
avg_pool2d (count_include_pad=False, ceil_mode=False, no dilation), a bare @triton.jit kernel
+ its launcher.

    out[n, c, oh, ow] = max  over (kh, kw) of x[n, c, oh*sh - ph + kh, ow*sw - pw + kw]
                     or mean over the taps that fall inside the image (the padding is ignored:
                        divided by the count of in-image taps, not KH * KW)

x: [N, C, H, W] fp16 / bf16 / fp32 in torch's logical shape with channels_last memory (an
NHWC buffer: C contiguous; any n / h / w strides, so a channel slice of a wider NHWC tensor is
taken as it is; a non-channels_last x is copied to it); out: [N, C, OH, OW] channels_last in
x's dtype, OH = floor((H + 2 ph - KH) / sh) + 1 (OW likewise); torch's rule pad <= window / 2
holds, so every window has at least one in-image tap. Max is exact (taken in fp32, a widening
of every input dtype, and NaN-propagating as torch's is); mean sums in fp32 and rounds once.

One CTA owns a BLOCK_OH x BLOCK_OW tile of output pixels (a 2-D tile: BLOCK_OH output rows of
BLOCK_OW pixels each) of one image times BLOCK_C channels, held as one [BLOCK_OH * BLOCK_OW,
BLOCK_C] fp32 accumulator (pixel-major, channels contiguous: 16-B vector loads / stores along
C when C -- hence every pixel stride -- is a multiple of 8 / 16 elements, which Triton
specialises on). It decodes its pixels once into each pixel's top-left input address; tap
(kh, kw) is that address plus the scalar kh * stride_xh + kw * stride_xw, masked by the
per-pixel row / column test (the padding halo; max loads -inf there, mean 0). The KH x KW
window is unrolled at compile time (a pooling kernel is specialised per window, stride, pad
and mode, all constexprs): KH * KW independent tile loads in flight. With stride < window
neighbouring windows overlap: each input pixel is read by up to ceil(KH / sh) * ceil(KW / sw)
windows, inside a tile from L1 and across neighbouring tiles (adjacent pids) from L2; a taller
tile re-reads fewer halo rows from L2, a wider one fewer halo columns. Pixels past OH / OW are
computed from masked taps and not stored; the channel tail is masked only when C % BLOCK_C != 0
(EVEN_C, set by the launcher).

Grid / tile order (1-D): the channel tiles of one pixel tile are adjacent pids (channel tile
fastest), then the pixel tiles along a row of tiles, then down the image, then the images: the
CTAs in flight cover a band of whole NHWC rows, so a tile's halo rows come from L2.

Tunables: BLOCK_OH (output rows per tile), BLOCK_OW (output columns per tile), BLOCK_C
(channels per tile), all powers of two; num_warps; num_stages (the window is unrolled, there
is no loop for Triton to pipeline: num_stages leaves the cubin unchanged).
Problem parameters (a workload point): N, C, H, W (the input), KH, KW (the window), stride,
pad (an int or an (h, w) pair each), mode ("max" / "avg"), dtype (fp16 / bf16 / fp32).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, OUT, C, H, W, OH, OW,
            stride_xn, stride_xh, stride_xw, stride_on, stride_oh, stride_ow,
            KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
            PH: tl.constexpr, PW: tl.constexpr, IS_MAX: tl.constexpr, EVEN_C: tl.constexpr,
            BLOCK_OH: tl.constexpr, BLOCK_OW: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    tiles_c = tl.cdiv(C, BLOCK_C)
    tiles_w = tl.cdiv(OW, BLOCK_OW)
    tiles_h = tl.cdiv(OH, BLOCK_OH)
    tc = pid % tiles_c
    t = pid // tiles_c
    tw = t % tiles_w
    t = t // tiles_w
    th = t % tiles_h
    img = t // tiles_h

    pix = tl.arange(0, BLOCK_OH * BLOCK_OW)
    oh = th * BLOCK_OH + pix // BLOCK_OW
    ow = tw * BLOCK_OW + pix % BLOCK_OW
    cs = tc * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < C
    ih0 = oh * SH - PH
    iw0 = ow * SW - PW
    x_base = img.to(tl.int64) * stride_xn + ih0.to(tl.int64) * stride_xh + iw0.to(tl.int64) * stride_xw
    x_ptr = X + x_base[:, None] + cs[None, :]

    if IS_MAX:
        acc = tl.full([BLOCK_OH * BLOCK_OW, BLOCK_C], float("-inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK_OH * BLOCK_OW, BLOCK_C], tl.float32)
    for kh in tl.static_range(KH):
        ih = ih0 + kh
        row_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KW):
            iw = iw0 + kw
            ok = row_ok & (iw >= 0) & (iw < W)         # the padding halo
            if EVEN_C:
                m = ok[:, None]
            else:
                m = ok[:, None] & c_ok[None, :]
            ptr = x_ptr + (kh * stride_xh + kw * stride_xw)
            if IS_MAX:
                xv = tl.load(ptr, mask=m, other=float("-inf"))
                acc = tl.maximum(acc, xv.to(tl.float32), propagate_nan=tl.PropagateNan.ALL)
            else:
                xv = tl.load(ptr, mask=m, other=0.0)
                acc += xv.to(tl.float32)

    if not IS_MAX:
        # count_include_pad=False: the in-image taps of each window (>= 1: pad <= window / 2)
        h_lo = tl.maximum(ih0, 0)
        h_hi = tl.minimum(ih0 + KH, H)
        w_lo = tl.maximum(iw0, 0)
        w_hi = tl.minimum(iw0 + KW, W)
        cnt = tl.maximum((h_hi - h_lo) * (w_hi - w_lo), 1)
        acc = acc / cnt.to(tl.float32)[:, None]

    o_base = img.to(tl.int64) * stride_on + oh.to(tl.int64) * stride_oh + ow.to(tl.int64) * stride_ow
    o_ok = (oh < OH) & (ow < OW)
    if EVEN_C:
        o_m = o_ok[:, None]
    else:
        o_m = o_ok[:, None] & c_ok[None, :]
    tl.store(OUT + o_base[:, None] + cs[None, :], acc.to(OUT.dtype.element_ty), mask=o_m)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
MODES = ("max", "avg")
TUNABLES = ("BLOCK_OH", "BLOCK_OW", "BLOCK_C", "num_warps", "num_stages")
BASELINE = {"BLOCK_OH": 2, "BLOCK_OW": 8, "BLOCK_C": 64, "num_warps": 4, "num_stages": 1}

# Real pooling layers at training batch sizes; every point moves 245-344 MiB (5-7x the H200's
# 50 MB L2), so each is HBM-bound at ~55-75 us of traffic; the overlapping 3 x 3 windows re-read
# their halo (2.25x the input at stride 2, 9x at stride 1) from L1 / L2.
POINTS = [
    # ResNet-50 stem max pool (3x3 stride 2 pad 1, 64 channels, 112x112 -> 56x56), batch 128, fp16:
    # x 196 MiB + out 49 MiB
    {"N": 128, "C": 64, "H": 112, "W": 112, "KH": 3, "KW": 3, "stride": 2, "pad": 1, "mode": "max",
     "dtype": "fp16"},
    # Inception-v3 Mixed_5b/5c/5d branch_pool avg pool (3x3 stride 1 pad 1, count_include_pad=False,
    # 288 channels at 35x35: not a power of two, the tile edges ragged), batch 128, fp32:
    # x 172 MiB + out 172 MiB
    {"N": 128, "C": 288, "H": 35, "W": 35, "KH": 3, "KW": 3, "stride": 1, "pad": 1, "mode": "avg",
     "dtype": "fp32"},
    # VGG-16 block-2 max pool (2x2 stride 2, no overlap, 128 channels, 112x112 -> 56x56), batch 64, bf16:
    # x 196 MiB + out 49 MiB
    {"N": 64, "C": 128, "H": 112, "W": 112, "KH": 2, "KW": 2, "stride": 2, "pad": 0, "mode": "max",
     "dtype": "bf16"},
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


def _mode(point) -> str:
    m = point.get("mode", "max")
    if m not in MODES:
        raise ValueError(f"mode {m!r} is not one of {', '.join(MODES)}")
    return m


def _pair(v, what: str) -> tuple[int, int]:
    """An int or an (h, w) pair -> (h, w)."""
    if isinstance(v, int):
        return v, v
    try:
        h, w = v
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an int or an (h, w) pair; got {v!r}") from None
    return int(h), int(w)


def _out_size(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


def _geometry(point) -> tuple:
    """(OH, OW, (sh, sw), (ph, pw)) of a workload point."""
    st = _pair(point.get("stride", point["KH"]), "stride")
    pd = _pair(point.get("pad", 0), "pad")
    return (_out_size(point["H"], point["KH"], st[0], pd[0]), _out_size(point["W"], point["KW"], st[1], pd[1]),
            st, pd)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_OH", "BLOCK_OW", "BLOCK_C"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, out, window, geom, is_max, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    x [N, C, H, W] and out [N, C, OH, OW], both C unit stride; window (KH, KW); geom = (stride,
    pad), (h, w) pairs."""
    (sh, sw), (ph, pw) = geom
    _, C, H, W = x.shape
    return dict(X=x, OUT=out, C=C, H=H, W=W, OH=out.shape[2], OW=out.shape[3],
                stride_xn=x.stride(0), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_on=out.stride(0), stride_oh=out.stride(2), stride_ow=out.stride(3),
                KH=window[0], KW=window[1], SH=sh, SW=sw, PH=ph, PW=pw, IS_MAX=bool(is_max),
                EVEN_C=C % cfg["BLOCK_C"] == 0, BLOCK_OH=cfg["BLOCK_OH"], BLOCK_OW=cfg["BLOCK_OW"],
                BLOCK_C=cfg["BLOCK_C"])


def _grid(Nb, C, OH, OW, cfg) -> int:
    return Nb * triton.cdiv(OH, cfg["BLOCK_OH"]) * triton.cdiv(OW, cfg["BLOCK_OW"]) * triton.cdiv(C, cfg["BLOCK_C"])


def pool2d_nhwc(x, kernel_size, stride=None, padding=0, mode="max", *, out=None, BLOCK_OH=2, BLOCK_OW=8,
                BLOCK_C=64, num_warps=4, num_stages=1):
    """torch.nn.functional.max_pool2d(x, kernel_size, stride, padding) (mode "max") or
    avg_pool2d(x, kernel_size, stride, padding, count_include_pad=False) (mode "avg") for x
    [N, C, H, W] fp16 / bf16 / fp32 (channels_last memory; others are copied to it);
    kernel_size, stride (default: kernel_size), padding an int or an (h, w) pair, padding <=
    kernel / 2 (torch's rule). Returns [N, C, OH, OW] in x's dtype, channels_last (into `out`
    if given: that shape and dtype, C unit stride)."""
    import torch
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if x.dim() != 4:
        raise ValueError(f"expected x [N, C, H, W]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(kernel_size if stride is None else stride, "stride")
    ph, pw = _pair(padding, "padding")
    if min(kh, kw, sh, sw) < 1 or min(ph, pw) < 0 or ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"need window, stride >= 1 and 0 <= padding <= window / 2; got window {(kh, kw)}, "
                         f"stride {(sh, sw)}, padding {(ph, pw)}")
    Nb, C, H, W = x.shape
    OH, OW = _out_size(H, kh, sh, ph), _out_size(W, kw, sw, pw)
    if Nb == 0 or C == 0 or OH <= 0 or OW <= 0:
        raise ValueError(f"empty pooling: N={Nb}, C={C}, input {H}x{W}, window {kh}x{kw}, output {OH}x{OW}")
    cfg = {"BLOCK_OH": BLOCK_OH, "BLOCK_OW": BLOCK_OW, "BLOCK_C": BLOCK_C}
    _check_cfg(cfg)
    if x.stride(1) != 1:
        x = x.contiguous(memory_format=torch.channels_last)
    if out is None:
        out = torch.empty((Nb, C, OH, OW), dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    elif tuple(out.shape) != (Nb, C, OH, OW) or out.dtype != x.dtype or out.stride(1) != 1:
        raise ValueError(f"out must be {x.dtype} [{Nb}, {C}, {OH}, {OW}] with C unit stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    _kernel[(_grid(Nb, C, OH, OW, cfg),)](**_kernel_args(x, out, (kh, kw), ((sh, sw), (ph, pw)), mode == "max", cfg),
                                          num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) in the point's dtype, channels_last, drawn on the CPU from a seeded
    torch.Generator (reproducible per seed on any device), then moved."""
    import torch
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    _mode(point)
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    x = torch.randn((Nb, H, W, C), generator=gen).to(dt).to(device).permute(0, 3, 1, 2)    # NHWC buffer
    _, _, st, pd = _geometry(point)
    return {"x": x, "kernel_size": (point["KH"], point["KW"]), "stride": st, "padding": pd,
            "mode": _mode(point)}


def launch(inputs, cfg):
    return pool2d_nhwc(inputs["x"], inputs["kernel_size"], inputs["stride"], inputs["padding"], inputs["mode"],
                       BLOCK_OH=cfg["BLOCK_OH"], BLOCK_OW=cfg["BLOCK_OW"], BLOCK_C=cfg["BLOCK_C"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """torch's pooling in fp64 on the upcast input: [N, C, OH, OW] fp32 (max: exact; mean: one
    rounding of an fp64 average)."""
    import torch.nn.functional as F
    x = inputs["x"].double()
    if inputs["mode"] == "max":
        ref = F.max_pool2d(x, inputs["kernel_size"], inputs["stride"], inputs["padding"])
    else:
        ref = F.avg_pool2d(x, inputs["kernel_size"], inputs["stride"], inputs["padding"], count_include_pad=False)
    return ref.float()


def torch_baseline(inputs):
    """torch's max_pool2d / avg_pool2d(count_include_pad=False) on the channels_last input in its
    dtype (cuDNN / ATen's NHWC pooling kernels on a GPU)."""
    import torch.nn.functional as F
    x = inputs["x"]
    if inputs["mode"] == "max":
        return F.max_pool2d(x, inputs["kernel_size"], inputs["stride"], inputs["padding"])
    return F.avg_pool2d(x, inputs["kernel_size"], inputs["stride"], inputs["padding"], count_include_pad=False)


def bytes_moved(point) -> int:
    """x read once, out written once. The overlapping windows' halo re-reads (from L1 inside a
    tile, L2 across neighbouring tiles) are not counted."""
    OH, OW, _, _ = _geometry(point)
    _mode(point)
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    return _elem_bytes(point.get("dtype", "fp16")) * Nb * C * (H * W + OH * OW)


def flops(point) -> int:
    """One max / add per window tap of each output element, N C OH OW KH KW (the halo's masked
    taps included; the mean's division not counted)."""
    OH, OW, _, _ = _geometry(point)
    return point["N"] * point["C"] * OH * OW * point["KH"] * point["KW"]


def grid(cfg, point) -> int:
    """One CTA per (image, BLOCK_OH x BLOCK_OW output tile, BLOCK_C channel tile)."""
    OH, OW, _, _ = _geometry(point)
    return _grid(point["N"], point["C"], OH, OW, cfg)


def loop_iterations(cfg, point) -> int:
    """The KH x KW window taps (unrolled at compile time): one [BLOCK_OH * BLOCK_OW, BLOCK_C]
    tile load and max / add per tap."""
    return point["KH"] * point["KW"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with the strides a real launch has (x and out channels_last)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "fp16"))
    OH, OW, st, pd = _geometry(point)
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    cl = torch.channels_last
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta", memory_format=cl)
    out = torch.empty((Nb, C, OH, OW), dtype=dt, device="meta", memory_format=cl)
    return _kernel_args(x, out, (point["KH"], point["KW"]), (st, pd), _mode(point) == "max", cfg)
