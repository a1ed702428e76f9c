"""Flash-attention forward (online softmax), a bare @triton.jit kernel + its launcher.

    out[b, h] = softmax(q[b, h] @ k[b, h]^T * sm_scale [+ causal mask]) @ v[b, h]

q, k, v, out: [batch, heads, seq, HEAD_DIM], fp16 / bf16 (fp32 works too: the dots
then run as tf32 on a GPU). One CTA owns a BLOCK_M x HEAD_DIM tile of queries, kept in
registers for the whole loop, and walks the keys/values in BLOCK_N tiles: scores with
one tl.dot, a running max m and row sum l (the online softmax, in log2 units so the
exponentials are exp2), and the output accumulator rescaled by exp2(m_old - m_new)
before the second tl.dot adds P @ V. With CAUSAL, a query tile stops at its own
diagonal (the loop is about half as long on average) and the scores are masked with
one tl.where per tile (a single loop: no separate diagonal pass).

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), num_warps, num_stages.
Problem parameters (a workload point): B, H, S, D (= HEAD_DIM, a constexpr), causal, dtype.

The launcher contract (occmodel/launcher.py): POINTS, make_inputs, launch, reference,
bytes_moved, flops, grid, loop_iterations, example_args. torch is imported inside the
functions: this module imports without torch or a GPU.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _kernel(Q, K, V, O, sm_scale,
            stride_qb, stride_qh, stride_qm,
            stride_kb, stride_kh, stride_kn,
            stride_vb, stride_vh, stride_vn,
            stride_ob, stride_oh, stride_om,
            H, N_CTX,
            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    tile_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    m_ok = offs_m < N_CTX

    q_base = Q + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = K + b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    v_base = V + b.to(tl.int64) * stride_vb + h.to(tl.int64) * stride_vh

    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :], mask=m_ok[:, None], other=0.0)
    qk_scale = sm_scale * 1.4426950408889634          # log2(e): softmax with exp2

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    if CAUSAL:
        hi = tl.minimum(N_CTX, (tile_m + 1) * BLOCK_M)   # keys past the tile's last query are all masked
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        keys = start_n + offs_n
        n_ok = keys < N_CTX
        # K tile loaded transposed, [HEAD_DIM, BLOCK_N], so the score dot needs no trans
        k = tl.load(k_base + keys[None, :] * stride_kn + offs_d[:, None], mask=n_ok[None, :], other=0.0)
        v = tl.load(v_base + keys[:, None] * stride_vn + offs_d[None, :], mask=n_ok[:, None], other=0.0)

        s = tl.dot(q, k) * qk_scale
        keep = n_ok[None, :]
        if CAUSAL:
            keep = keep & (keys[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(s, 1))          # finite: key 0 is never masked for a row
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    out = acc / l_i[:, None]
    o_base = O + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :], out.to(O.dtype.element_ty),
             mask=m_ok[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}

# One launch moves 256-512 MiB of q/k/v/o (5-10x the H200's 50 MB L2) and does
# 0.27-2.2 TFLOP: about 1-6 ms on an H200, far past launch overhead.
POINTS = [
    {"B": 4, "H": 32, "S": 4096, "D": 128, "causal": 0, "dtype": "bf16"},   # 512 MiB, 1.1 TFLOP
    {"B": 16, "H": 16, "S": 2048, "D": 64, "causal": 0, "dtype": "fp16"},   # 256 MiB, 0.27 TFLOP
    {"B": 2, "H": 16, "S": 16384, "D": 128, "causal": 1, "dtype": "bf16"},  # 512 MiB, 2.2 TFLOP (causal)
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _check_cfg(cfg, head_dim: int) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if head_dim < 16 or head_dim & (head_dim - 1):
        raise ValueError(f"HEAD_DIM={head_dim} must be a power of two >= 16")


def _kernel_args(q, k, v, o, sm_scale: float, causal: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(
        Q=q, K=k, V=v, O=o, sm_scale=float(sm_scale),
        stride_qb=q.stride(0), stride_qh=q.stride(1), stride_qm=q.stride(2),
        stride_kb=k.stride(0), stride_kh=k.stride(1), stride_kn=k.stride(2),
        stride_vb=v.stride(0), stride_vh=v.stride(1), stride_vn=v.stride(2),
        stride_ob=o.stride(0), stride_oh=o.stride(1), stride_om=o.stride(2),
        H=q.shape[1], N_CTX=q.shape[2],
        HEAD_DIM=q.shape[3], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], CAUSAL=bool(causal),
    )


def flash_attention(q, k, v, causal: bool = False, sm_scale: float | None = None, *,
                    BLOCK_M: int = 128, BLOCK_N: int = 64, num_warps: int = 4, num_stages: int = 2):
    """Attention forward. q, k, v: [B, H, S, D], one dtype (fp16/bf16/fp32), last dim
    contiguous; D a power of two >= 16. Returns [B, H, S, D] in q's dtype."""
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"expected q, k, v of one shape [B, H, S, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg, q.shape[3])
    q, k, v = (t if t.stride(3) == 1 else t.contiguous() for t in (q, k, v))
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(q.shape[3])
    import torch
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    B, H, S, _ = q.shape
    _kernel[(triton.cdiv(S, BLOCK_M), B * H)](**_kernel_args(q, k, v, o, sm_scale, causal, cfg),
                                              num_warps=num_warps, num_stages=num_stages)
    return o


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    shape = (point["B"], point["H"], point["S"], point["D"])
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q, k, v = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dt) for _ in range(3))
    return {"q": q, "k": k, "v": v, "causal": bool(point.get("causal", 0)),
            "sm_scale": 1.0 / math.sqrt(point["D"])}


def launch(inputs, cfg):
    return flash_attention(inputs["q"], inputs["k"], inputs["v"], inputs["causal"], inputs["sm_scale"],
                           BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs, rows_per_step: int = 2048):
    """softmax(q k^T * scale) v in float32, one (batch, head) and up to `rows_per_step`
    queries at a time (the full [S, S] scores of S=16384 would be 1 GiB per head)."""
    import torch
    S = inputs["q"].shape[2]
    out = torch.empty(inputs["q"].shape, dtype=torch.float32, device=inputs["q"].device)
    keys = torch.arange(S, device=out.device)
    for b in range(out.shape[0]):
        for h in range(out.shape[1]):
            k = inputs["k"][b, h].float()
            v = inputs["v"][b, h].float()
            for r0 in range(0, S, rows_per_step):
                q = inputs["q"][b, h, r0:r0 + rows_per_step].float()
                scores = (q @ k.T) * inputs["sm_scale"]                    # [rows, S]
                if inputs["causal"]:
                    rows = torch.arange(r0, r0 + q.shape[0], device=out.device)
                    scores = scores.masked_fill(keys[None, :] > rows[:, None], float("-inf"))
                out[b, h, r0:r0 + q.shape[0]] = torch.softmax(scores, dim=-1) @ v
    return out


def torch_baseline(inputs):
    """What one would write without a kernel: torch's fused attention, in the inputs' dtype."""
    import torch.nn.functional as F
    return F.scaled_dot_product_attention(inputs["q"], inputs["k"], inputs["v"], is_causal=inputs["causal"],
                                          scale=inputs["sm_scale"])


def bytes_moved(point) -> int:
    """q, k, v read once, out written once."""
    return 4 * point["B"] * point["H"] * point["S"] * point["D"] * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Two dots per (query, key) pair kept: 2 x 2 x D flops; causal keeps S(S+1)/2 pairs."""
    S = point["S"]
    pairs = S * (S + 1) // 2 if point.get("causal", 0) else S * S
    return 4 * point["B"] * point["H"] * pairs * point["D"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (query tiles, batch x heads)."""
    return triton.cdiv(point["S"], cfg["BLOCK_M"]), point["B"] * point["H"]


def loop_iterations(cfg, point) -> int:
    """K/V tiles per CTA; causal: the mean over the query tiles (rounded up)."""
    S, bm, bn = point["S"], cfg["BLOCK_M"], cfg["BLOCK_N"]
    if not point.get("causal", 0):
        return triton.cdiv(S, bn)
    tiles = triton.cdiv(S, bm)
    total = sum(triton.cdiv(min(S, (t + 1) * bm), bn) for t in range(tiles))
    return -(-total // tiles)


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    shape = (point["B"], point["H"], point["S"], point["D"])
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q, k, v, o = (torch.empty(shape, dtype=dt, device="meta") for _ in range(4))
    return _kernel_args(q, k, v, o, 1.0 / math.sqrt(point["D"]), bool(point.get("causal", 0)), cfg)
