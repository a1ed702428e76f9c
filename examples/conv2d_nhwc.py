"""2-D convolution forward (groups = 1) as an implicit GEMM on NHWC activations, a bare
@triton.jit kernel + its launcher.

    out[n, k, p, q] = sum_{r, s, c} x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw] * w[k, c, r, s]  (+ bias[k])

(a tap outside the image reads zero: the padding halo). Tensors use torch's logical
shapes in the channels_last memory format, which is NHWC / KRSC in memory: x [N, C, H, W]
fp16 / bf16 with C contiguous (any n / h / w strides, so a channel slice of a wider NHWC
tensor is taken as it is; anything else is copied to channels_last); weight [K, C, R, S]
in x's dtype, stored as [K, R, S, C] (C contiguous: that is what a channels_last weight
is, so a torch module's weight converted with .to(memory_format=torch.channels_last) is
used without a copy); bias: optional [K] in x's dtype; stride, padding, dilation per axis;
out: [N, K, P, Q] channels_last (a contiguous [N, P, Q, K] NHWC buffer) in x's dtype, fp32
accumulation through tl.dot.

The GEMM view: M = N * P * Q output pixels (row m = its NHWC index), N_gemm = K output
channels, K_gemm = R * S * C ordered (r, s, c) with c fastest, the weight's own KRSC order,
so a [BLOCK_K, BLOCK_N] weight tile is a plain 2-D load, K contiguous (the K-major B
operand of wgmma, no transpose). The A tile is gathered im2col-style: each CTA decodes its
BLOCK_M rows into (image, p, q) once, giving each row's top-left input pixel; the single
K loop walks R * S * cdiv(C, BLOCK_K) steps (tap-major, channel blocks inside a tap), and
for step t the tap (r, s) and the channel offset c0 are scalars, so the A tile address is
the per-row pixel base plus one scalar offset plus the BLOCK_K channels (contiguous, 16-B
vector loads when C is a multiple of 8). The halo is the per-row mask 0 <= ih < H,
0 <= iw < W (zero fill); the channel tail is masked only when C % BLOCK_K != 0 (EVEN_C,
set by the launcher). One flat loop (not nested r / s / c loops) so Triton's software
pipeliner prefetches across taps, num_stages deep. Rows past M and columns past K are
wrapped (index mod M / K), so their loads are in bounds and need no mask; the store is
masked. R and S are constexprs (a conv kernel is specialised per filter size); stride,
padding and dilation are runtime ints (Triton specialises those equal to 1).

Tile order: the K / BLOCK_N column tiles of one row panel are adjacent pids (column tile
fastest), so the CTAs that share an activation panel (and its R * S-fold im2col re-reads
and the halo rows shared with the neighbouring panel) run together and take it from L2;
the weights (1.2 MiB at most here) stay in L2 for the whole launch. With at most a few
column tiles a grouped (GROUP_M) order would change nothing, so there is none.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16, tl.dot operand sides),
num_warps, num_stages (the loads feeding tl.dot are pipelined: it changes the cubin).
Problem parameters (a workload point): N, C, H, W (the input), K, R, S (the filter),
stride, pad, dilation (an int or an (h, w) pair each), bias (whether one is added), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Wt, BIAS, OUT, M, C, H, W, K, P, Q,
            stride_xn, stride_xh, stride_xw, stride_wk, stride_wr, stride_ws, stride_om,
            stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
            R: tl.constexpr, S: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_C: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(K, BLOCK_N)
    tile_m = pid // tiles_n
    tile_n = pid % tiles_n
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ld = rows % M          # wrapped: in-bounds pixels, so the rows need no load mask
    cols_ld = cols % K

    # each GEMM row's output pixel (image, oh, ow) and its top-left input pixel (ih0, iw0)
    img = rows_ld // (P * Q)
    pq = rows_ld % (P * Q)
    oh = pq // Q
    ow = pq % Q
    ih0 = oh * stride_h - pad_h
    iw0 = ow * stride_w - pad_w
    ks = tl.arange(0, BLOCK_K)
    row_base = img.to(tl.int64) * stride_xn + ih0.to(tl.int64) * stride_xh + iw0.to(tl.int64) * stride_xw
    a_ptr = X + row_base[:, None] + ks[None, :]
    b_ptr = Wt + cols_ld.to(tl.int64)[None, :] * stride_wk + ks[:, None]      # [BLOCK_K, BLOCK_N], K-major

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    c_tiles = tl.cdiv(C, BLOCK_K)
    for t in range(0, R * S * c_tiles):
        rs = t // c_tiles
        c0 = (t - rs * c_tiles) * BLOCK_K
        r = rs // S
        s = rs - r * S
        ih = ih0 + r * dil_h
        iw = iw0 + s * dil_w
        pix_ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)          # the padding halo
        a_off = (r * dil_h) * stride_xh + (s * dil_w) * stride_xw + c0
        b_off = r * stride_wr + s * stride_ws + c0
        if EVEN_C:
            a = tl.load(a_ptr + a_off, mask=pix_ok[:, None], other=0.0)
            b = tl.load(b_ptr + b_off)
        else:
            c_ok = ks < C - c0
            a = tl.load(a_ptr + a_off, mask=pix_ok[:, None] & c_ok[None, :], other=0.0)
            b = tl.load(b_ptr + b_off, mask=c_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)

    if HAS_BIAS:
        acc = acc + tl.load(BIAS + cols_ld).to(tl.float32)[None, :]
    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=(rows < M)[:, None] & (cols < K)[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}

# Real conv layers, 53-77 GFLOP each (>= ~0.06 ms at the H200's dense peak), activations
# 64-392 MiB (1.3-8x the H200's 50 MB L2); the weights (0.06-1.1 MiB) stay in L2.
POINTS = [
    # ResNet-50 layer3.0.conv2 (torchvision v1.5: the stride is on the 3x3), batch 256, bf16 training:
    # 28x28x256 -> 14x14x256, M = 50176, K_gemm = 2304; 59 GFLOP, x 98 MiB + out 24.5 MiB: compute-bound, long K
    {"N": 256, "C": 256, "H": 28, "W": 28, "K": 256, "R": 3, "S": 3, "stride": 2, "pad": 1, "dilation": 1,
     "bias": False, "dtype": "bf16"},
    # Stable Diffusion VAE decoder up_blocks.3 resnet conv (512x512 image, 128 channels, has a bias), one image,
    # fp16: M = 262144, K_gemm = 1152; 77 GFLOP, x 64 MiB + out 64 MiB
    {"N": 1, "C": 128, "H": 512, "W": 512, "K": 128, "R": 3, "S": 3, "stride": 1, "pad": 1, "dilation": 1,
     "bias": True, "dtype": "fp16"},
    # ResNet-50 layer2.0.conv1, a 1x1 projection 256 -> 128 at 56x56, batch 256, bf16: M = 802816, K_gemm = 256;
    # 53 GFLOP, x 392 MiB + out 196 MiB: memory-bound (~0.13 ms of HBM traffic)
    {"N": 256, "C": 256, "H": 56, "W": 56, "K": 128, "R": 1, "S": 1, "stride": 1, "pad": 0, "dilation": 1,
     "bias": False, "dtype": "bf16"},
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


def _out_size(size: int, k: int, stride: int, pad: int, dil: int) -> int:
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _geometry(point) -> tuple:
    """(P, Q, (sh, sw), (ph, pw), (dh, dw)) of a workload point."""
    st = _pair(point.get("stride", 1), "stride")
    pd = _pair(point.get("pad", 0), "pad")
    dl = _pair(point.get("dilation", 1), "dilation")
    P = _out_size(point["H"], point["R"], st[0], pd[0], dl[0])
    Q = _out_size(point["W"], point["S"], st[1], pd[1], dl[1])
    return P, Q, st, pd, dl


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")


def _kernel_args(x, weight, bias, out, geom, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    x [N, C, H, W], weight [K, C, R, S] (C unit stride), out [N, K, P, Q] channels_last;
    geom = (stride, pad, dilation), (h, w) pairs."""
    (sh, sw), (ph, pw), (dh, dw) = geom
    Nb, C, H, W = x.shape
    K, _, R, S = weight.shape
    P, Q = out.shape[2], out.shape[3]
    return dict(X=x, Wt=weight, BIAS=bias, OUT=out, M=Nb * P * Q, C=C, H=H, W=W, K=K, P=P, Q=Q,
                stride_xn=x.stride(0), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_wk=weight.stride(0), stride_wr=weight.stride(2), stride_ws=weight.stride(3),
                stride_om=out.stride(3), stride_h=sh, stride_w=sw, pad_h=ph, pad_w=pw, dil_h=dh, dil_w=dw,
                R=R, S=S, HAS_BIAS=bias is not None, EVEN_C=C % cfg["BLOCK_K"] == 0,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def conv2d_nhwc(x, weight, bias=None, stride=1, padding=0, dilation=1, *, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                num_warps=4, num_stages=3):
    """torch.nn.functional.conv2d(x, weight, bias, stride, padding, dilation) with groups = 1 for
    x [N, C, H, W] and weight [K, C, R, S] fp16 / bf16 (channels_last memory, i.e. NHWC / KRSC;
    others are copied to it), bias [K] or None in x's dtype; stride, padding, dilation an int or
    an (h, w) pair (padding an int: no 'same' / 'valid' strings). Returns [N, K, P, Q] in x's
    dtype, channels_last."""
    import torch
    if x.dim() != 4 or weight.dim() != 4 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"expected x [N, C, H, W] and weight [K, C, R, S] (groups = 1); got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or weight.dtype != x.dtype:
        raise ValueError(f"x and weight must share one fp16 / bf16 dtype; got {x.dtype}, {weight.dtype}")
    Nb, C, H, W = x.shape
    K, _, R, S = weight.shape
    if bias is not None and (bias.dtype != x.dtype or tuple(bias.shape) != (K,)):
        raise ValueError(f"bias must be {x.dtype} [{K}]; got {bias.dtype} {tuple(bias.shape)}")
    geom = (_pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation"))
    (sh, sw), (ph, pw), (dh, dw) = geom
    if min(sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise ValueError(f"need stride >= 1, dilation >= 1, padding >= 0; got {geom}")
    P, Q = _out_size(H, R, sh, ph, dh), _out_size(W, S, sw, pw, dw)
    if Nb == 0 or C == 0 or K == 0 or P <= 0 or Q <= 0:
        raise ValueError(f"empty convolution: N={Nb}, C={C}, K={K}, output {P}x{Q}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}
    _check_cfg(cfg)
    if x.stride(1) != 1:
        x = x.contiguous(memory_format=torch.channels_last)
    if weight.stride(1) != 1:
        weight = weight.contiguous(memory_format=torch.channels_last)
    if bias is not None:
        bias = bias.contiguous()
    out = torch.empty((Nb, K, P, Q), dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    grid = (triton.cdiv(Nb * P * Q, BLOCK_M) * triton.cdiv(K, BLOCK_N),)
    _kernel[grid](**_kernel_args(x, weight, bias, out, geom, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1), weight ~ N(0, 1) / sqrt(C R S) (so the output is O(1)), bias ~ N(0, 0.5^2)
    when the point has one; x and weight channels_last."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    Nb, C, H, W, K, R, S = (point[k] for k in ("N", "C", "H", "W", "K", "R", "S"))
    cl = torch.channels_last
    x = torch.randn((Nb, C, H, W), generator=gen, device=device).to(dt).contiguous(memory_format=cl)
    w = (torch.randn((K, C, R, S), generator=gen, device=device) * (C * R * S) ** -0.5).to(dt)
    bias = (0.5 * torch.randn((K,), generator=gen, device=device)).to(dt) if point.get("bias", False) else None
    _, _, st, pd, dl = _geometry(point)
    return {"x": x, "weight": w.contiguous(memory_format=cl), "bias": bias, "stride": st, "padding": pd,
            "dilation": dl}


def launch(inputs, cfg):
    return conv2d_nhwc(inputs["x"], inputs["weight"], inputs["bias"], inputs["stride"], inputs["padding"],
                       inputs["dilation"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """torch's conv2d in fp32 on the upcast inputs: [N, K, P, Q] fp32."""
    import torch.nn.functional as F
    b = inputs["bias"]
    return F.conv2d(inputs["x"].float(), inputs["weight"].float(), None if b is None else b.float(),
                    inputs["stride"], inputs["padding"], inputs["dilation"])


def torch_baseline(inputs):
    """torch.nn.functional.conv2d on the channels_last inputs in their dtype (cuDNN's NHWC
    kernels on a GPU); returns [N, K, P, Q] channels_last."""
    import torch.nn.functional as F
    return F.conv2d(inputs["x"], inputs["weight"], inputs["bias"], inputs["stride"], inputs["padding"],
                    inputs["dilation"])


def bytes_moved(point) -> int:
    """x, the weight and the bias read once, out written once. The im2col re-reads (each input
    pixel is read by up to R * S taps and by the K / BLOCK_N column tiles of its panel) are the
    kernel's L1 / L2 traffic, not counted."""
    P, Q, _, _, _ = _geometry(point)
    Nb, C, H, W, K, R, S = (point[k] for k in ("N", "C", "H", "W", "K", "R", "S"))
    e = _elem_bytes(point.get("dtype", "bf16"))
    bias = K if point.get("bias", False) else 0
    return e * (Nb * C * H * W + K * C * R * S + bias + Nb * K * P * Q)


def flops(point) -> int:
    """The implicit GEMM's multiply-adds, 2 M N_gemm K_gemm (the bias adds not counted)."""
    P, Q, _, _, _ = _geometry(point)
    return 2 * point["N"] * P * Q * point["K"] * point["C"] * point["R"] * point["S"]


def grid(cfg, point) -> int:
    """One CTA per (BLOCK_M, BLOCK_N) tile of the [N P Q, K] output."""
    P, Q, _, _, _ = _geometry(point)
    return triton.cdiv(point["N"] * P * Q, cfg["BLOCK_M"]) * triton.cdiv(point["K"], cfg["BLOCK_N"])


def loop_iterations(cfg, point) -> int:
    """K-loop steps per CTA: R * S taps x the channel blocks of each."""
    return point["R"] * point["S"] * triton.cdiv(point["C"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with the channels_last strides a real launch has."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    P, Q, st, pd, dl = _geometry(point)
    Nb, C, H, W, K, R, S = (point[k] for k in ("N", "C", "H", "W", "K", "R", "S"))
    cl = torch.channels_last
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta", memory_format=cl)
    w = torch.empty((K, C, R, S), dtype=dt, device="meta", memory_format=cl)
    bias = torch.empty((K,), dtype=dt, device="meta") if point.get("bias", False) else None
    out = torch.empty((Nb, K, P, Q), dtype=dt, device="meta", memory_format=cl)
    return _kernel_args(x, w, bias, out, (st, pd, dl), cfg)
