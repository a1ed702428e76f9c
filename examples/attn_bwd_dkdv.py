"""FlashAttention-2 backward, the dK / dV kernel: a bare @triton.jit kernel + its launcher.

For one (batch, head), with S = q k^T * sm_scale (causal: S[i, j] = -inf for key j > query i),
P = softmax(S) row-wise and the forward's O = P v, the gradients of the keys and values are

    dV = P^T dO,      dS = P * (dO v^T - Delta[:, None]),      dK = dS^T q * sm_scale

with lse[i] = logsumexp_j S[i, j] (saved by the forward) and Delta[i] = rowsum(dO[i] * O[i])
(the small preprocessing kernel of FlashAttention-2; both are inputs here, fp32). dQ is the
other half of the backward pass (a second kernel, not this one).

q, k, v, do: [B, H, T, D] fp16 / bf16, one dtype, D contiguous (any batch / head / time
strides, so they may be views of a fused [B, T, 3, H, D] projection); lse, delta: [B, H, T]
fp32 contiguous. dk, dv: [B, H, T, D] in q's dtype, fresh and contiguous. D need not be a
power of two (the head dim is padded to BLOCK_D = next power of two >= 16 and masked).

One CTA per (BLOCK_N keys, batch x head): it loads its K and V tile once and keeps the dK, dV
accumulators [BLOCK_N, BLOCK_D] in fp32 for the whole loop, which walks the queries in BLOCK_M
tiles (causal: from the query tile holding the CTA's first key on; queries before it see none
of the keys). Per tile, in the transposed (key-major) orientation so no operand is transposed
in registers twice: S^T = k q^T (tl.dot), P^T = exp2(S^T * scale * log2 e - lse * log2 e)
(recomputed from the saved lse: no running max), dV += P^T dO, dP^T = v dO^T, dS^T = P^T *
(dP^T - Delta), dK += dS^T q: four tl.dot per tile, P and dS rounded to the inputs' dtype for
theirs. Query rows past T load q = dO = 0 and lse = +inf, so their P is exactly 0 (no mask);
the key tail's rows are computed but not stored. Causal masks with one tl.where per tile.

Tunables: BLOCK_M (query tile), BLOCK_N (key tile; powers of two >= 16), num_warps, num_stages
(the q / dO / lse / delta loads of the loop feed tl.dot and are pipelined).
Problem parameters (a workload point): B, H, T, D, causal, dtype.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _kernel(Q, K, V, DO, LSE, DELTA, DK, DV, sm_scale,
            stride_qb, stride_qh, stride_qt, stride_kb, stride_kh, stride_kt,
            stride_vb, stride_vh, stride_vt, stride_dob, stride_doh, stride_dot,
            stride_ob, stride_oh, stride_ot,
            H, T, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    tile_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)

    n0 = tile_n * BLOCK_N
    keys = n0 + tl.arange(0, BLOCK_N)
    ds = tl.arange(0, BLOCK_D)
    key_ok = keys < T
    if BLOCK_D == HEAD_DIM:
        d_ok = tl.full([BLOCK_D], 1, tl.int1)
    else:
        d_ok = ds < HEAD_DIM
    kd_ok = key_ok[:, None] & d_ok[None, :]

    k = tl.load(K + b * stride_kb + h * stride_kh + keys[:, None] * stride_kt + ds[None, :], mask=kd_ok, other=0.0)
    v = tl.load(V + b * stride_vb + h * stride_vh + keys[:, None] * stride_vt + ds[None, :], mask=kd_ok, other=0.0)

    q_base = Q + b * stride_qb + h * stride_qh
    do_base = DO + b * stride_dob + h * stride_doh
    row_base = bh.to(tl.int64) * T                  # lse, delta: [B, H, T] contiguous
    qk_scale = sm_scale * 1.4426950408889634        # exp2 instead of exp

    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    if CAUSAL:
        lo = (n0 // BLOCK_M) * BLOCK_M              # queries before this tile see none of its keys
    else:
        lo = 0
    ms = tl.arange(0, BLOCK_M)
    for m0 in range(lo, T, BLOCK_M):
        rows = m0 + ms
        row_ok = rows < T
        rd_ok = row_ok[:, None] & d_ok[None, :]
        q = tl.load(q_base + rows[:, None] * stride_qt + ds[None, :], mask=rd_ok, other=0.0)
        do = tl.load(do_base + rows[:, None] * stride_dot + ds[None, :], mask=rd_ok, other=0.0)
        lse = tl.load(LSE + row_base + rows, mask=row_ok, other=float("inf"))
        delta = tl.load(DELTA + row_base + rows, mask=row_ok, other=0.0)

        s_t = tl.dot(k, tl.trans(q))                                    # [BLOCK_N, BLOCK_M]
        p_t = tl.exp2(s_t * qk_scale - (lse * 1.4426950408889634)[None, :])
        if CAUSAL:
            p_t = tl.where(keys[:, None] <= rows[None, :], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        dp_t = tl.dot(v, tl.trans(do))                                  # [BLOCK_N, BLOCK_M]
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)

    dk = dk * sm_scale
    out = b * stride_ob + h * stride_oh + keys[:, None] * stride_ot + ds[None, :]
    tl.store(DK + out, dk.to(DK.dtype.element_ty), mask=kd_ok)
    tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=kd_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2}

# q, k, v, dO read and dK, dV written: 192 MiB - 1.5 GiB per launch (4-30x the H200's 50 MB L2;
# q and dO are re-read by every key tile of a head, from L2), 0.27-2.2 TFLOP of dots: ~0.5-5 ms.
POINTS = [
    {"B": 4, "H": 32, "T": 4096, "D": 128, "causal": 1, "dtype": "bf16"},   # Llama-2-7B training, 4k context
    {"B": 8, "H": 16, "T": 2048, "D": 64, "causal": 0, "dtype": "fp16"},    # BERT-large / ViT-L style encoder, head 64
    {"B": 2, "H": 32, "T": 8192, "D": 128, "causal": 1, "dtype": "bf16"},   # Llama-3-8B long-context fine-tune, 8k
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
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")


def _block_d(head_dim: int) -> int:
    return max(16, triton.next_power_of_2(head_dim))


def _kernel_args(q, k, v, do, lse, delta, dk, dv, sm_scale: float, causal: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(Q=q, K=k, V=v, DO=do, LSE=lse, DELTA=delta, DK=dk, DV=dv, sm_scale=float(sm_scale),
                stride_qb=q.stride(0), stride_qh=q.stride(1), stride_qt=q.stride(2),
                stride_kb=k.stride(0), stride_kh=k.stride(1), stride_kt=k.stride(2),
                stride_vb=v.stride(0), stride_vh=v.stride(1), stride_vt=v.stride(2),
                stride_dob=do.stride(0), stride_doh=do.stride(1), stride_dot=do.stride(2),
                stride_ob=dk.stride(0), stride_oh=dk.stride(1), stride_ot=dk.stride(2),
                H=q.shape[1], T=q.shape[2], HEAD_DIM=q.shape[3], BLOCK_D=_block_d(q.shape[3]),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], CAUSAL=bool(causal))


def attn_bwd_dkdv(q, k, v, do, lse, delta, causal: bool = False, sm_scale: float | None = None, *,
                  BLOCK_M: int = 32, BLOCK_N: int = 64, num_warps: int = 4, num_stages: int = 2):
    """dK, dV of attention. q, k, v, do: [B, H, T, D] fp16 / bf16, one dtype; lse (natural-log
    logsumexp of the scaled scores) and delta (rowsum(dO * O)): [B, H, T] fp32, from the forward
    pass. sm_scale defaults to D^-0.5. Returns (dk, dv), fresh contiguous [B, H, T, D] in q's dtype."""
    import torch
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape or do.shape != q.shape:
        raise ValueError(f"expected q, k, v, do of one shape [B, H, T, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}, {tuple(do.shape)}")
    if not (q.dtype == k.dtype == v.dtype == do.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k, v, do must share one fp16 / bf16 dtype; got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}, {do.dtype}")
    B, H, T, D = q.shape
    for name, t in (("lse", lse), ("delta", delta)):
        if t.dtype != torch.float32 or tuple(t.shape) != (B, H, T):
            raise ValueError(f"{name} must be fp32 [{B}, {H}, {T}]; got {t.dtype} {tuple(t.shape)}")
    if D > 256:
        raise ValueError(f"head dim D={D} > 256 is not supported (K, V and the fp32 dK, dV tiles live in registers)")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    q, k, v, do = (t if t.stride(3) == 1 else t.contiguous() for t in (q, k, v, do))
    lse, delta = lse.contiguous(), delta.contiguous()
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    dk = torch.empty((B, H, T, D), dtype=q.dtype, device=q.device)
    dv = torch.empty((B, H, T, D), dtype=q.dtype, device=q.device)
    if B * H * T * D > 0:
        _kernel[(triton.cdiv(T, BLOCK_N), B * H)](**_kernel_args(q, k, v, do, lse, delta, dk, dv, sm_scale,
                                                                 causal, cfg),
                                                  num_warps=num_warps, num_stages=num_stages)
    return dk, dv


def forward_stats(q, k, v, do, causal: bool, sm_scale: float, rows_per_step: int = 2048):
    """(lse, delta) [B, H, T] fp32 from an fp32 forward of the given (rounded) inputs, one
    (batch, head) and up to `rows_per_step` queries at a time: lse = logsumexp of the scaled
    (causally masked) scores, delta = rowsum(dO * O) -- what a forward pass saves and
    FlashAttention-2's preprocessing kernel computes."""
    import torch
    B, H, T, _ = q.shape
    lse = torch.empty((B, H, T), dtype=torch.float32, device=q.device)
    delta = torch.empty((B, H, T), dtype=torch.float32, device=q.device)
    keys = torch.arange(T, device=q.device)
    for b in range(B):
        for h in range(H):
            kk, vv = k[b, h].float(), v[b, h].float()
            for r0 in range(0, T, rows_per_step):
                qq = q[b, h, r0:r0 + rows_per_step].float()
                s = (qq @ kk.T) * sm_scale
                if causal:
                    rows = torch.arange(r0, r0 + qq.shape[0], device=q.device)
                    s = s.masked_fill(keys[None, :] > rows[:, None], float("-inf"))
                m = torch.logsumexp(s, dim=-1)
                o = torch.exp(s - m[:, None]) @ vv
                lse[b, h, r0:r0 + qq.shape[0]] = m
                delta[b, h, r0:r0 + qq.shape[0]] = (do[b, h, r0:r0 + qq.shape[0]].float() * o).sum(-1)
    return lse, delta


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v, do ~ N(0, 1) in the point's dtype; lse, delta from forward_stats of those."""
    import torch
    shape = (point["B"], point["H"], point["T"], point["D"])
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q, k, v, do = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dt) for _ in range(4))
    causal = bool(point.get("causal", 0))
    sm_scale = 1.0 / math.sqrt(point["D"])
    lse, delta = forward_stats(q, k, v, do, causal, sm_scale)
    return {"q": q, "k": k, "v": v, "do": do, "lse": lse, "delta": delta, "causal": causal, "sm_scale": sm_scale}


def launch(inputs, cfg):
    """Returns dk and dv stacked: [2, B, H, T, D] in q's dtype."""
    import torch
    dk, dv = attn_bwd_dkdv(inputs["q"], inputs["k"], inputs["v"], inputs["do"], inputs["lse"], inputs["delta"],
                           inputs["causal"], inputs["sm_scale"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return torch.stack((dk, dv))


def _attention_fp32(q, k, v, causal: bool, sm_scale: float):
    import torch
    s = (q @ k.transpose(-1, -2)) * sm_scale
    if causal:
        T = q.shape[-2]
        s = s.masked_fill(torch.ones((T, T), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def reference(inputs, max_scores: int = 1 << 28):
    """[2, B, H, T, D] fp32: dK, dV by torch autograd of fp32 attention (plain softmax, not the
    saved lse) of the same rounded q, k, v, backpropagating dO; a few heads at a time (at most
    `max_scores` score elements per step: 1 GiB of fp32 scores)."""
    import torch
    q, k, v, do = inputs["q"], inputs["k"], inputs["v"], inputs["do"]
    B, H, T, D = q.shape
    out = torch.empty((2, B, H, T, D), dtype=torch.float32, device=q.device)
    qf, kf, vf, dof = (t.reshape(B * H, T, D) for t in (q, k, v, do))
    step = max(1, max_scores // max(1, T * T))
    dk, dv = out[0].view(B * H, T, D), out[1].view(B * H, T, D)
    for i in range(0, B * H, step):
        with torch.enable_grad():
            qq = qf[i:i + step].float()
            kk = kf[i:i + step].float().requires_grad_(True)
            vv = vf[i:i + step].float().requires_grad_(True)
            o = _attention_fp32(qq, kk, vv, inputs["causal"], inputs["sm_scale"])
            gk, gv = torch.autograd.grad(o, (kk, vv), dof[i:i + step].float())
        dk[i:i + step] = gk
        dv[i:i + step] = gv
    return out


def torch_baseline(inputs):
    """What one would run without a kernel: autograd through torch's fused attention in the
    inputs' dtype (its backward also computes dQ and re-runs nothing of the forward but the
    stats it saved); [2, B, H, T, D]."""
    import torch
    import torch.nn.functional as F
    with torch.enable_grad():
        k = inputs["k"].detach().requires_grad_(True)
        v = inputs["v"].detach().requires_grad_(True)
        o = F.scaled_dot_product_attention(inputs["q"], k, v, is_causal=inputs["causal"], scale=inputs["sm_scale"])
        gk, gv = torch.autograd.grad(o, (k, v), inputs["do"])
    return torch.stack((gk, gv))


def bytes_moved(point) -> int:
    """q, k, v, dO read once, lse and delta (fp32) read once, dK and dV written once (q, dO,
    lse and delta are re-read by each of a head's key tiles, from L2: not counted)."""
    n = point["B"] * point["H"] * point["T"]
    return 6 * n * point["D"] * _elem_bytes(point.get("dtype", "bf16")) + 2 * 4 * n


def flops(point) -> int:
    """Four dots per (query, key) pair kept (S^T, dV, dP^T, dK): 4 x 2 x D flops; causal keeps
    T(T+1)/2 pairs."""
    T = point["T"]
    pairs = T * (T + 1) // 2 if point.get("causal", 0) else T * T
    return 8 * point["B"] * point["H"] * pairs * point["D"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (key tiles, batch x heads)."""
    return triton.cdiv(point["T"], cfg["BLOCK_N"]), point["B"] * point["H"]


def loop_iterations(cfg, point) -> int:
    """Query tiles per CTA; causal: the mean over the key tiles (rounded up), each starting at
    the query tile that holds its first key."""
    T, bm, bn = point["T"], cfg["BLOCK_M"], cfg["BLOCK_N"]
    if not point.get("causal", 0):
        return triton.cdiv(T, bm)
    tiles = triton.cdiv(T, bn)
    total = sum(triton.cdiv(T - (t * bn // bm) * bm, bm) for t in range(tiles))
    return -(-total // tiles)


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    shape = (point["B"], point["H"], point["T"], point["D"])
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q, k, v, do, dk, dv = (torch.empty(shape, dtype=dt, device="meta") for _ in range(6))
    lse, delta = (torch.empty(shape[:3], dtype=torch.float32, device="meta") for _ in range(2))
    return _kernel_args(q, k, v, do, lse, delta, dk, dv, 1.0 / math.sqrt(point["D"]),
                        bool(point.get("causal", 0)), cfg)
