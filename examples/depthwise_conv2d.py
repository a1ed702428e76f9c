"""Depthwise 2-D convolution forward (groups = C, one R x S filter per channel) on NHWC
activations, as in ConvNeXt's 7x7 token mixer and MobileNet's inverted-residual 3x3 blocks,
a bare @triton.jit kernel + its launcher.

    out[n, c, p, q] = sum_{r, s} x[n, c, p*sh - ph + r, q*sw - pw + s] * w[c, 0, r, s]  (+ bias[c])

(a tap outside the image reads zero: the padding halo). Tensors use torch's logical shapes
(nn.Conv2d(C, C, (R, S), groups=C)) in the channels_last memory format: x [N, C, H, W] fp16 /
bf16 with C contiguous (any n / h / w strides, so a channel slice of a wider NHWC tensor is
taken as it is; anything else is copied to channels_last); weight [C, 1, R, S] in x's dtype,
stored tap-major with C contiguous (an [R, S, C] buffer seen through a permute: what
`prepare_weight` makes once, at model load; torch's own [C, R*S] rows are copied to it per
call); bias: optional [C] in x's dtype; stride and padding per axis; out: [N, C, P, Q]
channels_last (a contiguous [N, P, Q, C] NHWC buffer) in x's dtype; fp32 accumulation (no
tl.dot: every channel is its own 1-channel filter, an elementwise multiply-add per tap).

One CTA owns a BLOCK_P x BLOCK_Q tile of output pixels of one image times BLOCK_C channels,
held as one [BLOCK_P * BLOCK_Q, BLOCK_C] fp32 accumulator (pixel-major, channels contiguous:
16-B vector loads and stores along C when C, and so every pixel stride, is a multiple of 16,
which Triton specialises on; all three points' are). It decodes its pixels once
into each pixel's top-left input address (image, p * sh - ph, q * sw - pw); tap (r, s) is
that address plus the scalar r * stride_h + s * stride_w, its halo mask the per-pixel row
test of r and column test of s. The R filter rows are a runtime loop and the S taps of a row
are unrolled (tl.static_range; R and S are constexprs, a depthwise kernel is specialised per
filter size): per step S independent tile loads in flight, registers bounded by S tiles
(unrolling all R * S taps of a 7x7 lets LLVM hoist all 49 loads: 255 registers and minutes
of ptxas). A tap's [BLOCK_C] weight vector is a contiguous load of the [R, S, C] weight
(2-19 KiB for a whole layer here: L1 / L2 resident). The input tile's neighbours overlap by
the halo (R - 1 rows, S - 1 columns): the R * S re-reads of each input pixel are served by
L1 (inside a tile) and L2 (across neighbouring tiles, which are near pids), so a square-ish
tile trades fewer re-reads against fewer pixels per row. Pixels past P / Q are computed
from in-bounds (or masked) taps and not stored; the channel tail is masked only when
C % BLOCK_C != 0 (EVEN_C, set by the launcher). The bias is added in fp32 before the one
rounding to the output dtype.

Tile order: the channel tiles of one pixel tile are adjacent pids (channel tile fastest),
then the pixel tiles along a row of tiles, then down the image, then the images: the CTAs
in flight cover a band of whole NHWC rows, so neighbouring tiles' halo rows come from L2.

Tunables: BLOCK_P (output rows per tile), BLOCK_Q (output columns per tile), BLOCK_C
(channels per tile), all powers of two; num_warps; num_stages (no dot and Triton does not
pipeline these loads: num_stages changes nothing in the cubin).
Problem parameters (a workload point): N, C, H, W (the input), R, S (the filter), stride,
pad (an int or an (h, w) pair each), bias (whether one is added), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Wt, BIAS, OUT, C, H, W, P, Q,
            stride_xn, stride_xh, stride_xw, stride_wr, stride_ws,
            stride_on, stride_oh, stride_ow, stride_h, stride_w, pad_h, pad_w,
            R: tl.constexpr, S: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_C: tl.constexpr,
            BLOCK_P: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    tiles_c = tl.cdiv(C, BLOCK_C)
    tiles_q = tl.cdiv(Q, BLOCK_Q)
    tiles_p = tl.cdiv(P, BLOCK_P)
    tc = pid % tiles_c
    t = pid // tiles_c
    tq = t % tiles_q
    t = t // tiles_q
    tp = t % tiles_p
    img = t // tiles_p

    pix = tl.arange(0, BLOCK_P * BLOCK_Q)
    oh = tp * BLOCK_P + pix // BLOCK_Q
    ow = tq * BLOCK_Q + pix % BLOCK_Q
    cs = tc * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < C
    ih0 = oh * stride_h - pad_h
    iw0 = ow * stride_w - pad_w
    x_base = img.to(tl.int64) * stride_xn + ih0.to(tl.int64) * stride_xh + iw0.to(tl.int64) * stride_xw
    x_ptr = X + x_base[:, None] + cs[None, :]
    w_ptr = Wt + cs

    acc = tl.zeros([BLOCK_P * BLOCK_Q, BLOCK_C], tl.float32)
    for r in range(R):
        ih = ih0 + r
        row_ok = (ih >= 0) & (ih < H)
        for s in tl.static_range(S):
            iw = iw0 + s
            ok = row_ok & (iw >= 0) & (iw < W)          # the padding halo
            off = r * stride_xh + s * stride_xw
            if EVEN_C:
                xv = tl.load(x_ptr + off, mask=ok[:, None], other=0.0)
                wv = tl.load(w_ptr + (r * stride_wr + s * stride_ws))
            else:
                xv = tl.load(x_ptr + off, mask=ok[:, None] & c_ok[None, :], other=0.0)
                wv = tl.load(w_ptr + (r * stride_wr + s * stride_ws), mask=c_ok, other=0.0)
            acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]

    if HAS_BIAS:
        if EVEN_C:
            b = tl.load(BIAS + cs)
        else:
            b = tl.load(BIAS + cs, mask=c_ok, other=0.0)
        acc += b.to(tl.float32)[None, :]
    o_base = img.to(tl.int64) * stride_on + oh.to(tl.int64) * stride_oh + ow.to(tl.int64) * stride_ow
    o_ok = (oh < P) & (ow < Q)
    tl.store(OUT + o_base[:, None] + cs[None, :], acc.to(OUT.dtype.element_ty),
             mask=o_ok[:, None] & c_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_P", "BLOCK_Q", "BLOCK_C", "num_warps", "num_stages")
BASELINE = {"BLOCK_P": 4, "BLOCK_Q": 16, "BLOCK_C": 32, "num_warps": 4, "num_stages": 1}

# Real depthwise layers: x 73.5-294 MiB + out 73.5 MiB, 147-368 MiB moved (3-7.7x the H200's
# 50 MB L2); the weights (2-19 KiB) stay in L2. The 7x7 layers do 49 multiply-adds and 49 tile
# loads (L1 / L2 hits after the first) per output element: well above their ~0.03 ms of HBM
# traffic; the 3x3 stride-2 layer is HBM-bound (~0.08 ms).
POINTS = [
    # ConvNeXt-T stage 1 block dwconv (7x7, 96 channels at 56x56, has a bias), batch 128, bf16 training:
    # x 73.5 MiB + out 73.5 MiB, 3.8 GFLOP (fp32 FMA, 2 a tap)
    {"N": 128, "C": 96, "H": 56, "W": 56, "R": 7, "S": 7, "stride": 1, "pad": 3, "bias": True, "dtype": "bf16"},
    # ConvNeXt-T stage 2 block dwconv (7x7, 192 channels at 28x28, has a bias), batch 256, fp16 inference:
    # x 73.5 MiB + out 73.5 MiB
    {"N": 256, "C": 192, "H": 28, "W": 28, "R": 7, "S": 7, "stride": 1, "pad": 3, "bias": True, "dtype": "fp16"},
    # MobileNetV2 features.2 depthwise (3x3 stride 2, 96 expanded channels, 112x112 -> 56x56, no bias: BN
    # follows), batch 128, bf16: x 294 MiB + out 73.5 MiB, memory-bound (~0.08 ms of HBM traffic)
    {"N": 128, "C": 96, "H": 112, "W": 112, "R": 3, "S": 3, "stride": 2, "pad": 1, "bias": False,
     "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


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
    """(P, Q, (sh, sw), (ph, pw)) of a workload point."""
    st = _pair(point.get("stride", 1), "stride")
    pd = _pair(point.get("pad", 0), "pad")
    return _out_size(point["H"], point["R"], st[0], pd[0]), _out_size(point["W"], point["S"], st[1], pd[1]), st, pd


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_P", "BLOCK_Q", "BLOCK_C"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, weight, bias, out, geom, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    x [N, C, H, W] and weight [C, 1, R, S] (C unit stride both), out [N, C, P, Q]
    channels_last; geom = (stride, pad), (h, w) pairs."""
    (sh, sw), (ph, pw) = geom
    _, C, H, W = x.shape
    R, S = weight.shape[2], weight.shape[3]
    return dict(X=x, Wt=weight, BIAS=bias, OUT=out, C=C, H=H, W=W, P=out.shape[2], Q=out.shape[3],
                stride_xn=x.stride(0), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_wr=weight.stride(2), stride_ws=weight.stride(3),
                stride_on=out.stride(0), stride_oh=out.stride(2), stride_ow=out.stride(3),
                stride_h=sh, stride_w=sw, pad_h=ph, pad_w=pw, R=R, S=S, HAS_BIAS=bias is not None,
                EVEN_C=C % cfg["BLOCK_C"] == 0, BLOCK_P=cfg["BLOCK_P"], BLOCK_Q=cfg["BLOCK_Q"],
                BLOCK_C=cfg["BLOCK_C"])


def _grid(Nb, C, P, Q, cfg) -> int:
    return Nb * triton.cdiv(P, cfg["BLOCK_P"]) * triton.cdiv(Q, cfg["BLOCK_Q"]) * triton.cdiv(C, cfg["BLOCK_C"])


def prepare_weight(weight):
    """A depthwise weight [C, 1, R, S] re-stored tap-major, C contiguous (an [R, S, C] buffer
    seen as [C, 1, R, S]): the layout the kernel reads. Do it once per model, not per call."""
    return weight.permute(2, 3, 1, 0).contiguous().permute(3, 2, 0, 1)


def depthwise_conv2d(x, weight, bias=None, stride=1, padding=0, *, BLOCK_P=4, BLOCK_Q=16, BLOCK_C=32,
                     num_warps=4, num_stages=1):
    """torch.nn.functional.conv2d(x, weight, bias, stride, padding, groups=C) for x [N, C, H, W]
    fp16 / bf16 (channels_last memory, i.e. NHWC; others are copied to it), weight [C, 1, R, S]
    in x's dtype (C contiguous, as prepare_weight stores it; others are copied), bias [C] or
    None in x's dtype; stride, padding an int or an (h, w) pair (no dilation, no 'same' /
    'valid' strings). Returns [N, C, P, Q] in x's dtype, channels_last."""
    import torch
    if x.dim() != 4 or weight.dim() != 4 or weight.shape[0] != x.shape[1] or weight.shape[1] != 1:
        raise ValueError(f"expected x [N, C, H, W] and a depthwise weight [C, 1, R, S]; got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or weight.dtype != x.dtype:
        raise ValueError(f"x and weight must share one fp16 / bf16 dtype; got {x.dtype}, {weight.dtype}")
    Nb, C, H, W = x.shape
    R, S = weight.shape[2], weight.shape[3]
    if bias is not None and (bias.dtype != x.dtype or tuple(bias.shape) != (C,)):
        raise ValueError(f"bias must be {x.dtype} [{C}]; got {bias.dtype} {tuple(bias.shape)}")
    geom = (_pair(stride, "stride"), _pair(padding, "padding"))
    (sh, sw), (ph, pw) = geom
    if min(sh, sw) < 1 or min(ph, pw) < 0:
        raise ValueError(f"need stride >= 1, padding >= 0; got stride {geom[0]}, padding {geom[1]}")
    P, Q = _out_size(H, R, sh, ph), _out_size(W, S, sw, pw)
    if Nb == 0 or C == 0 or R == 0 or S == 0 or P <= 0 or Q <= 0:
        raise ValueError(f"empty convolution: N={Nb}, C={C}, filter {R}x{S}, output {P}x{Q}")
    cfg = {"BLOCK_P": BLOCK_P, "BLOCK_Q": BLOCK_Q, "BLOCK_C": BLOCK_C}
    _check_cfg(cfg)
    if x.stride(1) != 1:
        x = x.contiguous(memory_format=torch.channels_last)
    if weight.stride(0) != 1:
        weight = prepare_weight(weight)
    if bias is not None:
        bias = bias.contiguous()
    out = torch.empty((Nb, C, P, Q), dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    _kernel[(_grid(Nb, C, P, Q, cfg),)](**_kernel_args(x, weight, bias, out, geom, cfg), num_warps=num_warps,
                                        num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) channels_last, weight ~ N(0, 1) / sqrt(R S) [C, 1, R, S] (so the output is
    O(1)) stored as prepare_weight leaves it (a model does that once), bias ~ N(0, 0.5^2) when
    the point has one."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    Nb, C, H, W, R, S = (point[k] for k in ("N", "C", "H", "W", "R", "S"))
    x = torch.randn((Nb, C, H, W), generator=gen, device=device).to(dt).contiguous(memory_format=torch.channels_last)
    w = prepare_weight((torch.randn((C, 1, R, S), generator=gen, device=device) * (R * S) ** -0.5).to(dt))
    bias = (0.5 * torch.randn((C,), generator=gen, device=device)).to(dt) if point.get("bias", False) else None
    _, _, st, pd = _geometry(point)
    return {"x": x, "weight": w, "bias": bias, "stride": st, "padding": pd}


def launch(inputs, cfg):
    return depthwise_conv2d(inputs["x"], inputs["weight"], inputs["bias"], inputs["stride"], inputs["padding"],
                            BLOCK_P=cfg["BLOCK_P"], BLOCK_Q=cfg["BLOCK_Q"], BLOCK_C=cfg["BLOCK_C"],
                            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """torch's grouped conv2d in fp32 on the upcast inputs: [N, C, P, Q] fp32."""
    import torch.nn.functional as F
    x, b = inputs["x"], inputs["bias"]
    return F.conv2d(x.float(), inputs["weight"].float(), None if b is None else b.float(), inputs["stride"],
                    inputs["padding"], groups=x.shape[1])


def torch_baseline(inputs):
    """torch.nn.functional.conv2d(groups=C) on the channels_last inputs in their dtype (cuDNN's
    NHWC depthwise kernels on a GPU); returns [N, C, P, Q] channels_last."""
    import torch.nn.functional as F
    x = inputs["x"]
    return F.conv2d(x, inputs["weight"], inputs["bias"], inputs["stride"], inputs["padding"], groups=x.shape[1])


def bytes_moved(point) -> int:
    """x, the weight and the bias read once, out written once. The halo re-reads (each input
    pixel is read by up to R * S taps, from L1 inside a tile and from L2 across neighbouring
    tiles) and each CTA's re-read of its weight slice are not counted."""
    P, Q, _, _ = _geometry(point)
    Nb, C, H, W, R, S = (point[k] for k in ("N", "C", "H", "W", "R", "S"))
    bias = C if point.get("bias", False) else 0
    return _elem_bytes(point.get("dtype", "bf16")) * (Nb * C * H * W + C * R * S + bias + Nb * C * P * Q)


def flops(point) -> int:
    """R * S multiply-adds per output element, 2 N C P Q R S (the halo's zero taps included,
    the bias add not counted)."""
    P, Q, _, _ = _geometry(point)
    return 2 * point["N"] * point["C"] * P * Q * point["R"] * point["S"]


def grid(cfg, point) -> int:
    """One CTA per (image, BLOCK_P x BLOCK_Q pixel tile, BLOCK_C channel tile)."""
    P, Q, _, _ = _geometry(point)
    return _grid(point["N"], point["C"], P, Q, cfg)


def loop_iterations(cfg, point) -> int:
    """The R x S taps' loop (unrolled at compile time): one [BLOCK_P * BLOCK_Q, BLOCK_C] tile
    load and multiply-add per tap."""
    return point["R"] * point["S"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with the strides a real launch has (x and out channels_last, the weight [R, S, C] stored)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    P, Q, st, pd = _geometry(point)
    Nb, C, H, W, R, S = (point[k] for k in ("N", "C", "H", "W", "R", "S"))
    cl = torch.channels_last
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta", memory_format=cl)
    w = torch.empty((R, S, 1, C), dtype=dt, device="meta").permute(3, 2, 0, 1)
    bias = torch.empty((C,), dtype=dt, device="meta") if point.get("bias", False) else None
    out = torch.empty((Nb, C, P, Q), dtype=dt, device="meta", memory_format=cl)
    return _kernel_args(x, w, bias, out, (st, pd), cfg)
