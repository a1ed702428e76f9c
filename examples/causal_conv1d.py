"""Causal depthwise conv1d + SiLU (Mamba's causal_conv1d forward), a bare @triton.jit
kernel + its launcher.

    out[b, d, t] = silu(bias[d] + sum_{j<W} weight[d, j] * x[b, d, t - (W-1) + j]),
    x[b, d, s] = 0 for s < 0

x: [B, D, L] fp16 / bf16 / fp32, L contiguous; weight: [D, W] (W <= 4, Mamba's 4 by
default), bias: [D], both in x's dtype; out: [B, D, L] in x's dtype, fp32 math. One
CTA owns BLOCK_D channels of one batch row and walks L in BLOCK_L chunks. The W taps
are loaded into registers once, before the loop. Per chunk, tap j is one shifted,
masked [BLOCK_D, BLOCK_L] load of x at t - (W-1) + j: the W loads overlap except for
the W-1 column halo, which is re-read from global (L1 / L2 hits; each x byte comes from
DRAM about once) instead of being carried across chunks. Masks give the causal zero
padding (s < 0) and the L and D tails.

Tunables: BLOCK_D, BLOCK_L (powers of two), num_warps, num_stages (no dot: the loads
are not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): B, D, L, dtype; optional W (default 4).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Wt, Bias, OUT, D, L, stride_xb, stride_xd, stride_wd, stride_ob, stride_od,
            KW: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_L: tl.constexpr):
    tl.static_assert(KW >= 1 and KW <= 4, "width 1..4")
    pid = tl.program_id(0)
    tiles_d = tl.cdiv(D, BLOCK_D)
    b = (pid // tiles_d).to(tl.int64)
    ds = (pid % tiles_d) * BLOCK_D + tl.arange(0, BLOCK_D)
    d_ok = ds < D
    ts = tl.arange(0, BLOCK_L)

    # taps counted back from t: w0 multiplies x[t], w1 x[t-1], ...
    w_ptr = Wt + ds * stride_wd + (KW - 1)
    w0 = tl.load(w_ptr, mask=d_ok, other=0.0).to(tl.float32)[:, None]
    if KW >= 2:
        w1 = tl.load(w_ptr - 1, mask=d_ok, other=0.0).to(tl.float32)[:, None]
    if KW >= 3:
        w2 = tl.load(w_ptr - 2, mask=d_ok, other=0.0).to(tl.float32)[:, None]
    if KW >= 4:
        w3 = tl.load(w_ptr - 3, mask=d_ok, other=0.0).to(tl.float32)[:, None]
    bias = tl.load(Bias + ds, mask=d_ok, other=0.0).to(tl.float32)[:, None]

    x_row = X + b * stride_xb + ds.to(tl.int64)[:, None] * stride_xd
    o_row = OUT + b * stride_ob + ds.to(tl.int64)[:, None] * stride_od
    for l0 in range(0, L, BLOCK_L):
        t = l0 + ts
        ok = d_ok[:, None] & (t < L)[None, :]
        acc = bias + w0 * tl.load(x_row + t[None, :], mask=ok, other=0.0).to(tl.float32)
        if KW >= 2:
            acc += w1 * tl.load(x_row + (t - 1)[None, :], mask=ok & (t >= 1)[None, :], other=0.0).to(tl.float32)
        if KW >= 3:
            acc += w2 * tl.load(x_row + (t - 2)[None, :], mask=ok & (t >= 2)[None, :], other=0.0).to(tl.float32)
        if KW >= 4:
            acc += w3 * tl.load(x_row + (t - 3)[None, :], mask=ok & (t >= 3)[None, :], other=0.0).to(tl.float32)
        y = acc / (1.0 + tl.exp(-acc))
        tl.store(o_row + t[None, :], y.to(OUT.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_D", "BLOCK_L", "num_warps", "num_stages")
BASELINE = {"BLOCK_D": 16, "BLOCK_L": 256, "num_warps": 4, "num_stages": 1}

# x 128-512 MiB, out the same (2.7-11x the H200's 50 MB L2): pure streaming.
POINTS = [
    {"B": 8, "D": 4096, "L": 4096, "dtype": "bf16"},      # x 128 MiB (Mamba-2.8B-ish prefill, 8 x 4k tokens)
    {"B": 1, "D": 8192, "L": 16384, "dtype": "fp16"},     # x 128 MiB: one long sequence, wide model
    {"B": 32, "D": 2048, "L": 2048, "dtype": "fp32"},     # x 512 MiB: fp32, many short sequences
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_D", "BLOCK_L"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, weight, bias, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, Wt=weight, Bias=bias, OUT=out, D=x.shape[1], L=x.shape[2],
                stride_xb=x.stride(0), stride_xd=x.stride(1), stride_wd=weight.stride(0),
                stride_ob=out.stride(0), stride_od=out.stride(1),
                KW=weight.shape[1], BLOCK_D=cfg["BLOCK_D"], BLOCK_L=cfg["BLOCK_L"])


def causal_conv1d(x, weight, bias, *, BLOCK_D=16, BLOCK_L=256, num_warps=4, num_stages=1):
    """silu(causal depthwise conv1d(x, weight) + bias) for x [B, D, L], weight [D, W], bias [D],
    one dtype. Returns [B, D, L] in x's dtype."""
    import torch
    if x.dim() != 3 or weight.dim() != 2 or bias.shape != (x.shape[1],) or weight.shape[0] != x.shape[1]:
        raise ValueError(f"expected x [B, D, L], weight [D, W], bias [D]; got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}, {tuple(bias.shape)}")
    if not 1 <= weight.shape[1] <= 4:
        raise ValueError(f"W={weight.shape[1]}: the kernel takes widths 1..4")
    if not x.dtype == weight.dtype == bias.dtype:
        raise ValueError(f"x, weight, bias dtypes differ: {x.dtype}, {weight.dtype}, {bias.dtype}")
    cfg = {"BLOCK_D": BLOCK_D, "BLOCK_L": BLOCK_L}
    _check_cfg(cfg)
    if x.stride(2) != 1:
        x = x.contiguous()
    weight, bias = weight.contiguous(), bias.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    grid = (x.shape[0] * triton.cdiv(x.shape[1], BLOCK_D),)
    _kernel[grid](**_kernel_args(x, weight, bias, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, D, L, W = point["B"], point["D"], point["L"], point.get("W", 4)
    x = torch.randn((B, D, L), generator=gen, device=device).to(dt)
    weight = (torch.randn((D, W), generator=gen, device=device) * W ** -0.5).to(dt)
    bias = (torch.randn((D,), generator=gen, device=device) * 0.5).to(dt)
    return {"x": x, "weight": weight, "bias": bias}


def launch(inputs, cfg):
    return causal_conv1d(inputs["x"], inputs["weight"], inputs["bias"], BLOCK_D=cfg["BLOCK_D"],
                         BLOCK_L=cfg["BLOCK_L"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch.nn.functional as F
    x, w, b = inputs["x"].float(), inputs["weight"].float(), inputs["bias"].float()
    W = w.shape[1]
    y = F.conv1d(F.pad(x, (W - 1, 0)), w[:, None, :], b, groups=x.shape[1])
    return F.silu(y)


def torch_baseline(inputs):
    """Eager depthwise conv1d (padded both sides, the tail cut off) then SiLU, in x's dtype."""
    import torch.nn.functional as F
    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    W = w.shape[1]
    return F.silu(F.conv1d(x, w[:, None, :], b, padding=W - 1, groups=x.shape[1])[..., : x.shape[2]])


def bytes_moved(point) -> int:
    """x read once, out written once, weight and bias read once."""
    B, D, L, W = point["B"], point["D"], point["L"], point.get("W", 4)
    return (2 * B * D * L + D * W + D) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Per output: W multiply-adds, the bias add, SiLU's negate, exp, add, divide."""
    return (2 * point.get("W", 4) + 5) * point["B"] * point["D"] * point["L"]


def grid(cfg, point) -> int:
    """One CTA per (batch row, BLOCK_D channels)."""
    return point["B"] * triton.cdiv(point["D"], cfg["BLOCK_D"])


def loop_iterations(cfg, point) -> int:
    """L chunks per CTA."""
    return triton.cdiv(point["L"], cfg["BLOCK_L"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, D, L, W = point["B"], point["D"], point["L"], point.get("W", 4)
    x = torch.empty((B, D, L), dtype=dt, device="meta")
    weight = torch.empty((D, W), dtype=dt, device="meta")
    bias = torch.empty((D,), dtype=dt, device="meta")
    out = torch.empty((B, D, L), dtype=dt, device="meta")
    return _kernel_args(x, weight, bias, out, cfg)
