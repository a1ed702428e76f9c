"""Rotary position embedding (RoPE, "neox" half-rotation style) on q and k, a bare
@triton.jit kernel + its launcher.

    x1 = x[t, h, :D/2], x2 = x[t, h, D/2:]
    out[t, h] = [x1 * cos[t] - x2 * sin[t], x2 * cos[t] + x1 * sin[t]]      for x = q and k

q: [T, Hq, D], k: [T, Hk, D] fp16 / bf16 / fp32 (GQA / MQA: Hq a multiple of Hk; any token
and head strides, D contiguous -- q and k may be views of a fused qkv projection);
cos, sin: [T, D/2] fp32 (the table is built in fp32, as HF / flashinfer do, so the rotation
is not rounded to the activation dtype before it is applied); out: one [T, Hq+Hk, D] buffer
in q's dtype, q's rotated heads first then k's (q_out and k_out are views of it). fp32 math.

One CTA per BLOCK_T tokens: it loads those tokens' cos and sin rows once ([BLOCK_T, D/2],
held in registers) and reuses them for every head: a loop over q's heads in BLOCK_H head
blocks, then one over k's. Per step the [BLOCK_T, BLOCK_H, D/2] halves x1 and x2 are two
loads (D/2 contiguous elements per row each), rotated, two stores. Masks give the token and
head tails; D/2 need not be a power of two (the d axis is padded to the next one and masked,
e.g. D = 80 or 96).

Tunables: BLOCK_T, BLOCK_H (powers of two), num_warps, num_stages (no dot: the loads are not
pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): T, Hq, Hk, D, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _rotate_heads(X, O, H, cos, sin, t64, t_ok, ds, d_ok, stride_xt, stride_xh, stride_ot, stride_oh,
                  HALF: tl.constexpr, BLOCK_H: tl.constexpr):
    hs = tl.arange(0, BLOCK_H)
    x_tok = X + t64 * stride_xt
    o_tok = O + t64 * stride_ot
    for h0 in range(0, H, BLOCK_H):
        h = (h0 + hs)[None, :, None]
        m = t_ok & (h < H) & d_ok
        x_ptr = x_tok + h * stride_xh + ds
        x1 = tl.load(x_ptr, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(x_ptr + HALF, mask=m, other=0.0).to(tl.float32)
        o_ptr = o_tok + h * stride_oh + ds
        tl.store(o_ptr, (x1 * cos - x2 * sin).to(O.dtype.element_ty), mask=m)
        tl.store(o_ptr + HALF, (x2 * cos + x1 * sin).to(O.dtype.element_ty), mask=m)


@triton.jit
def _kernel(Q, K, COS, SIN, QO, KO, T, HQ, HK, stride_qt, stride_qh, stride_kt, stride_kh,
            stride_qot, stride_qoh, stride_kot, stride_koh, stride_ct,
            HALF: tl.constexpr, BLOCK_D2: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    ds = tl.arange(0, BLOCK_D2)
    t_ok = ts < T
    if BLOCK_D2 == HALF:
        d_ok = tl.full([BLOCK_D2], 1, tl.int1)
    else:
        d_ok = ds < HALF
    t64 = ts.to(tl.int64)

    cs_off = t64[:, None] * stride_ct + ds[None, :]
    cs_m = t_ok[:, None] & d_ok[None, :]
    cos = tl.load(COS + cs_off, mask=cs_m, other=0.0)[:, None, :]
    sin = tl.load(SIN + cs_off, mask=cs_m, other=0.0)[:, None, :]

    t3, t_ok3, d3, d_ok3 = t64[:, None, None], t_ok[:, None, None], ds[None, None, :], d_ok[None, None, :]
    _rotate_heads(Q, QO, HQ, cos, sin, t3, t_ok3, d3, d_ok3, stride_qt, stride_qh, stride_qot, stride_qoh,
                  HALF, BLOCK_H)
    _rotate_heads(K, KO, HK, cos, sin, t3, t_ok3, d3, d_ok3, stride_kt, stride_kh, stride_kot, stride_koh,
                  HALF, BLOCK_H)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_T", "BLOCK_H", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "BLOCK_H": 4, "num_warps": 4, "num_stages": 1}

# q + k 128-160 MiB read and the same written (2.7-3.4x the H200's 50 MB L2), cos + sin 4-8 MiB.
POINTS = [
    {"T": 16384, "Hq": 32, "Hk": 8, "D": 128, "dtype": "bf16"},   # Llama-3-8B prefill, 16k tokens: q 128 MiB, k 32 MiB
    {"T": 8192, "Hq": 64, "Hk": 8, "D": 128, "dtype": "fp16"},    # Llama-3-70B shapes (GQA 8:1), 8k tokens: q 128 MiB
    {"T": 4096, "Hq": 16, "Hk": 16, "D": 256, "dtype": "fp32"},   # Gemma-7B shapes (MHA, D 256), fp32: q, k 64 MiB each
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
    for name in ("BLOCK_T", "BLOCK_H"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(q, k, cos, sin, q_out, k_out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    half = q.shape[2] // 2
    return dict(Q=q, K=k, COS=cos, SIN=sin, QO=q_out, KO=k_out, T=q.shape[0], HQ=q.shape[1], HK=k.shape[1],
                stride_qt=q.stride(0), stride_qh=q.stride(1), stride_kt=k.stride(0), stride_kh=k.stride(1),
                stride_qot=q_out.stride(0), stride_qoh=q_out.stride(1), stride_kot=k_out.stride(0),
                stride_koh=k_out.stride(1), stride_ct=cos.stride(0),
                HALF=half, BLOCK_D2=triton.next_power_of_2(half), BLOCK_T=cfg["BLOCK_T"], BLOCK_H=cfg["BLOCK_H"])


def rope(q, k, cos, sin, *, out=None, BLOCK_T=4, BLOCK_H=4, num_warps=4, num_stages=1):
    """Neox-style RoPE of q [T, Hq, D] and k [T, Hk, D] (one dtype, D even, Hq % Hk == 0) with
    fp32 cos, sin [T, D/2]. Writes both into `out` [T, Hq+Hk, D] in q's dtype (allocated when
    None; q's heads first) and returns the views (q_out, k_out)."""
    import torch
    if q.dim() != 3 or k.dim() != 3 or q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[2] % 2:
        raise ValueError(f"expected q [T, Hq, D] and k [T, Hk, D], D even; got {tuple(q.shape)}, {tuple(k.shape)}")
    T, Hq, D = q.shape
    Hk = k.shape[1]
    if Hk < 1 or Hq % Hk:
        raise ValueError(f"Hq={Hq} must be a multiple of Hk={Hk}")
    if tuple(cos.shape) != (T, D // 2) or tuple(sin.shape) != (T, D // 2):
        raise ValueError(f"cos and sin must be [{T}, {D // 2}]; got {tuple(cos.shape)}, {tuple(sin.shape)}")
    if q.dtype != k.dtype or cos.dtype != torch.float32 or sin.dtype != torch.float32:
        raise ValueError(f"need q, k of one dtype and fp32 cos, sin; got {q.dtype}, {k.dtype}, {cos.dtype}, "
                         f"{sin.dtype}")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_H": BLOCK_H}
    _check_cfg(cfg)
    if q.stride(2) != 1:
        q = q.contiguous()
    if k.stride(2) != 1:
        k = k.contiguous()
    cos, sin = cos.contiguous(), sin.contiguous()
    if out is None:
        out = torch.empty((T, Hq + Hk, D), dtype=q.dtype, device=q.device)
    elif tuple(out.shape) != (T, Hq + Hk, D) or out.dtype != q.dtype or out.stride(2) != 1:
        raise ValueError(f"out must be {q.dtype} [{T}, {Hq + Hk}, {D}] with D contiguous; got {out.dtype} "
                         f"{tuple(out.shape)}")
    q_out, k_out = out[:, :Hq], out[:, Hq:]
    if T > 0:
        _kernel[(triton.cdiv(T, BLOCK_T),)](**_kernel_args(q, k, cos, sin, q_out, k_out, cfg),
                                            num_warps=num_warps, num_stages=num_stages)
    return q_out, k_out


def rope_tables(T: int, D: int, base: float = 10000.0, device: str = "cuda"):
    """fp32 cos, sin [T, D/2] for positions 0..T-1: angle t * base^(-2i/D)."""
    import torch
    inv_freq = base ** (-torch.arange(0, D // 2, device=device, dtype=torch.float64) * 2 / D)
    ang = torch.arange(T, device=device, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, Hq, Hk, D = point["T"], point["Hq"], point["Hk"], point["D"]
    q = torch.randn((T, Hq, D), generator=gen, device=device).to(dt)
    k = torch.randn((T, Hk, D), generator=gen, device=device).to(dt)
    cos, sin = rope_tables(T, D, device=device)
    return {"q": q, "k": k, "cos": cos, "sin": sin}


def launch(inputs, cfg):
    import torch
    q, k = inputs["q"], inputs["k"]
    out = torch.empty((q.shape[0], q.shape[1] + k.shape[1], q.shape[2]), dtype=q.dtype, device=q.device)
    rope(q, k, inputs["cos"], inputs["sin"], out=out, BLOCK_T=cfg["BLOCK_T"], BLOCK_H=cfg["BLOCK_H"],
         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return out


def _rotate(x, cos, sin):
    import torch
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


def reference(inputs):
    """[T, Hq+Hk, D] in fp32: rotated q's heads, then rotated k's."""
    import torch
    cos, sin = inputs["cos"].float(), inputs["sin"].float()
    return torch.cat((_rotate(inputs["q"].float(), cos, sin), _rotate(inputs["k"].float(), cos, sin)), dim=1)


def torch_baseline(inputs):
    """Eager HF-style rotate_half RoPE in the activation dtype (cos, sin cast to it first, as
    transformers' apply_rotary_pos_emb does), q and k concatenated as the kernel's output."""
    import torch
    q, k = inputs["q"], inputs["k"]
    cos = torch.cat((inputs["cos"], inputs["cos"]), dim=-1).to(q.dtype)[:, None, :]
    sin = torch.cat((inputs["sin"], inputs["sin"]), dim=-1).to(q.dtype)[:, None, :]

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    return torch.cat((q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin), dim=1)


def bytes_moved(point) -> int:
    """q and k read once, their rotated copies written once, the fp32 cos and sin rows read once."""
    T, Hq, Hk, D = point["T"], point["Hq"], point["Hk"], point["D"]
    return 2 * T * (Hq + Hk) * D * _elem_bytes(point.get("dtype", "bf16")) + 2 * T * (D // 2) * 4


def flops(point) -> int:
    """Per rotated pair: 4 multiplies, 2 adds (3 per element)."""
    return 3 * point["T"] * (point["Hq"] + point["Hk"]) * point["D"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """Head blocks per CTA: q's then k's."""
    return triton.cdiv(point["Hq"], cfg["BLOCK_H"]) + triton.cdiv(point["Hk"], cfg["BLOCK_H"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, Hq, Hk, D = point["T"], point["Hq"], point["Hk"], point["D"]
    q = torch.empty((T, Hq, D), dtype=dt, device="meta")
    k = torch.empty((T, Hk, D), dtype=dt, device="meta")
    cos = torch.empty((T, D // 2), dtype=torch.float32, device="meta")
    sin = torch.empty((T, D // 2), dtype=torch.float32, device="meta")
    out = torch.empty((T, Hq + Hk, D), dtype=dt, device="meta")
    return _kernel_args(q, k, cos, sin, out[:, :Hq], out[:, Hq:], cfg)
