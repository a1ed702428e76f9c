"""Per-token, per-head symmetric int8 quantization of a K or V tensor (KV-cache quantization),
a bare @triton.jit kernel + its launcher.

    s[t, h] = max_d |x[t, h, d]| / 127      (s = 1 when the row x[t, h, :] is all zero)
    q[t, h, d] = clamp(round(x[t, h, d] / s[t, h]), -127, 127)    (round half to even)

x: [T, H, D] fp16 / bf16, D contiguous (token and head strides free, so K or V may be a view
of a fused qkv buffer); q: [T, H, D] int8, contiguous; s: [T, H] fp32, contiguous. fp32
math. One CTA owns BLOCK_T tokens and walks the H heads in BLOCK_H blocks; each step loads
one masked [BLOCK_T, BLOCK_H, BLOCK_D] tile (BLOCK_D = next power of two >= D), reduces |x|
over D in registers, writes the BLOCK_T x BLOCK_H scales and the int8 tile. x is multiplied
by the row's reciprocal scale (one divide per row, not per element) and rounded to nearest
even with the fp32 1.5 * 2^23 add / subtract (exact for |y| <= 2^22), so a value that sits
within an ulp of a .5 boundary may round one step away from round(x / s).

Tunables: BLOCK_T, BLOCK_H (powers of two), num_warps, num_stages (no dot: the loads are
not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): T, H, D, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl

QMAX = 127.0
_RNE = 12582912.0     # 1.5 * 2^23: y + _RNE - _RNE rounds an fp32 |y| <= 2^22 to nearest even


@triton.jit
def _kernel(X, Q, S, T, H, D, stride_xt, stride_xh, stride_qt, stride_qh, stride_st,
            BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    t64 = ts.to(tl.int64)
    hr = tl.arange(0, BLOCK_H)
    ds = tl.arange(0, BLOCK_D)
    d_ok = ds < D

    x_tok = X + t64[:, None, None] * stride_xt + ds[None, None, :]
    q_tok = Q + t64[:, None, None] * stride_qt + ds[None, None, :]
    s_tok = S + t64[:, None] * stride_st
    for h0 in range(0, H, BLOCK_H):
        hs = h0 + hr
        row_ok = t_ok[:, None] & (hs < H)[None, :]                       # [BLOCK_T, BLOCK_H]
        m = row_ok[:, :, None] & d_ok[None, None, :]
        x = tl.load(x_tok + hs[None, :, None] * stride_xh, mask=m, other=0.0).to(tl.float32)
        amax = tl.max(tl.abs(x), axis=2)
        scale = tl.where(amax > 0.0, amax / 127.0, 1.0)
        inv = 1.0 / scale
        y = x * inv[:, :, None]
        y = tl.minimum(tl.maximum(y, -127.0), 127.0)
        y = (y + 12582912.0) - 12582912.0
        tl.store(q_tok + hs[None, :, None] * stride_qh, y.to(tl.int8), mask=m)
        tl.store(s_tok + hs[None, :], scale, mask=row_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_T", "BLOCK_H", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "BLOCK_H": 2, "num_warps": 4, "num_stages": 1}

# x 128-256 MiB read (2.7-5.4x the H200's 50 MB L2), q half that written, s 2-4 MiB.
POINTS = [
    {"T": 65536, "H": 8, "D": 128, "dtype": "bf16"},     # Llama-3-70B K (GQA, 8 KV heads), 64k prefill tokens: x 128 MiB
    {"T": 16384, "H": 40, "D": 128, "dtype": "fp16"},    # Llama-2-13B K (MHA, 40 heads), 16k tokens: x 160 MiB
    {"T": 32768, "H": 16, "D": 256, "dtype": "bf16"},    # Gemma-7B K (MHA, D 256), 32k tokens: x 256 MiB
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


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "BLOCK_H"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, q, s, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, Q=q, S=s, T=x.shape[0], H=x.shape[1], D=x.shape[2],
                stride_xt=x.stride(0), stride_xh=x.stride(1), stride_qt=q.stride(0), stride_qh=q.stride(1),
                stride_st=s.stride(0), BLOCK_T=cfg["BLOCK_T"], BLOCK_H=cfg["BLOCK_H"],
                BLOCK_D=triton.next_power_of_2(x.shape[2]))


def kv_quant(x, *, BLOCK_T=4, BLOCK_H=2, num_warps=4, num_stages=1):
    """Symmetric int8 quantization of x [T, H, D] (fp16 / bf16) per (token, head).
    Returns (q [T, H, D] int8, s [T, H] fp32) with x ~= q * s[..., None]."""
    import torch
    if x.dim() != 3:
        raise ValueError(f"expected x [T, H, D]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be fp16 or bf16; got {x.dtype}")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_H": BLOCK_H}
    _check_cfg(cfg)
    if x.stride(2) != 1:
        x = x.contiguous()
    T, H, D = x.shape
    q = torch.empty((T, H, D), dtype=torch.int8, device=x.device)
    s = torch.empty((T, H), dtype=torch.float32, device=x.device)
    if T > 0 and H > 0 and D > 0:
        _kernel[(triton.cdiv(T, BLOCK_T),)](**_kernel_args(x, q, s, cfg), num_warps=num_warps,
                                            num_stages=num_stages)
    return q, s


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) with a per-(token, head) magnitude spread over two decades (K rows differ)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, H, D = point["T"], point["H"], point["D"]
    mag = torch.exp(torch.rand((T, H, 1), generator=gen, device=device) * 4.6 - 2.3)
    x = (torch.randn((T, H, D), generator=gen, device=device) * mag).to(dt)
    return {"x": x}


def launch(inputs, cfg):
    """The int8 values q (the scales are the wrapper's second output)."""
    q, _ = kv_quant(inputs["x"], BLOCK_T=cfg["BLOCK_T"], BLOCK_H=cfg["BLOCK_H"], num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"])
    return q


def reference_scales(inputs):
    """s [T, H] in fp32: max|x| over D / 127, 1 for an all-zero row."""
    import torch
    amax = inputs["x"].float().abs().amax(dim=-1)
    return torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))


def reference(inputs):
    """q as fp32 [T, H, D]: round(x / s), half to even, clamped to +-127."""
    import torch
    s = reference_scales(inputs)
    return torch.round(inputs["x"].float() / s[..., None]).clamp(-QMAX, QMAX)


def torch_baseline(inputs):
    """Eager torch: amax over D, scale, divide, round, clamp, cast to int8 (q only)."""
    import torch
    x = inputs["x"]
    amax = x.abs().amax(dim=-1, keepdim=True).float()
    s = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    return torch.round(x.float() / s).clamp_(-QMAX, QMAX).to(torch.int8)


def bytes_moved(point) -> int:
    """x read once, q (int8) and s (fp32) written once."""
    T, H, D = point["T"], point["H"], point["D"]
    return T * H * D * (_elem_bytes(point.get("dtype", "bf16")) + 1) + T * H * 4


def flops(point) -> int:
    """Per element: abs, max, multiply, min, max, two adds (the rounding); per row a divide and
    a reciprocal."""
    T, H, D = point["T"], point["H"], point["D"]
    return 7 * T * H * D + 2 * T * H


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """Head blocks per CTA."""
    return triton.cdiv(point["H"], cfg["BLOCK_H"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, H, D = point["T"], point["H"], point["D"]
    x = torch.empty((T, H, D), dtype=dt, device="meta")
    q = torch.empty((T, H, D), dtype=torch.int8, device="meta")
    s = torch.empty((T, H), dtype=torch.float32, device="meta")
    return _kernel_args(x, q, s, cfg)
