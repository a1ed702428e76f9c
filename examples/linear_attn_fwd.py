"""Chunked causal linear attention, forward (fla's "fused chunk" form, optionally with a
per-head scalar decay as in RetNet / Lightning Attention), a bare @triton.jit kernel + its
launcher.

    o[b, h, t] = scale * sum_{s <= t} exp(g[h] * (t - s)) * (q[b, h, t] . k[b, h, s]) * v[b, h, s]

q, k: [B, H, T, K], v: [B, H, T, V], fp16 / bf16, last dim contiguous (batch, head and time
strides free, so [B, T, H, K] tensors seen through .transpose(1, 2), or slices of a fused
qkv projection, are taken as they are); g: [H] fp32 log-decays (<= 0; the per-step factor
is exp(g[h])) or None (no decay: plain linear attention); scale defaults to K^-0.5. o: [B,
H, T, V] contiguous, in q's dtype. K (the head dim, <= 256) is loaded whole: a constexpr,
padded to a power of two >= 16 and masked when it is not one.

One CTA owns one (batch, head) and one BLOCK_V slice of the value dim, and walks T in
chunks of BLOCK_T timesteps, carrying the state S = sum_s decay * k_s^T v_s [K, BLOCK_V] in
fp32 registers. Per chunk (rows i, columns j of the chunk):
  A = q k^T (one tl.dot, fp32), masked causally (j <= i), times exp(g (i - j)) with decay
      (a [BLOCK_T, BLOCK_T] factor computed once, before the loop);
  o = (q @ S) [* exp(g (i + 1))] + A @ v     (two tl.dots; S and A go to the dot in the
      inputs' dtype, as fla does, with fp32 accumulation);  stored times scale;
  S = S [* exp(g BLOCK_T)] + k^T @ (v [* exp(g (BLOCK_T - 1 - j))])   (one tl.dot; the decay
      scales v's rows, so k^T comes straight from shared memory).
Per CTA the state takes K x BLOCK_V fp32 registers (64 a thread at K = 128, BLOCK_V = 64 and
4 warps), beside the [BLOCK_T, BLOCK_T] A and the [BLOCK_T, BLOCK_V] o: large tiles spill.
The loop loads the q, k and v tiles of each chunk (Triton may pipeline them: num_stages);
masks give the T tail (masked rows load 0 and add nothing), the V tail and a K that is not
a power of two. The V slices of one (batch, head) are adjacent CTAs (program_id(0)): they
run together and read that head's q and k at about the same time, all but one from L2.

Tunables: BLOCK_T (the chunk), BLOCK_V (powers of two >= 16), num_warps, num_stages.
Problem parameters (a workload point): B, H, T, K, V, decay (0 / 1), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(Q, Kp, Vp, O, G, scale, T, V,
            stride_qb, stride_qh, stride_qt, stride_kb, stride_kh, stride_kt,
            stride_vb, stride_vh, stride_vt, stride_ob, stride_oh, stride_ot, H,
            HEAD_K: tl.constexpr, BLOCK_K: tl.constexpr, HAS_DECAY: tl.constexpr,
            BLOCK_T: tl.constexpr, BLOCK_V: tl.constexpr):
    pid_v = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = bh % H

    rows = tl.arange(0, BLOCK_T)
    ks = tl.arange(0, BLOCK_K)
    cols = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    v_ok = cols < V
    if BLOCK_K == HEAD_K:
        k_ok = tl.full([BLOCK_K], 1, tl.int1)
    else:
        k_ok = ks < HEAD_K
    causal = rows[:, None] >= rows[None, :]

    q_ptr = Q + b * stride_qb + h.to(tl.int64) * stride_qh + rows[:, None] * stride_qt + ks[None, :]
    k_ptr = Kp + b * stride_kb + h.to(tl.int64) * stride_kh + rows[:, None] * stride_kt + ks[None, :]
    v_ptr = Vp + b * stride_vb + h.to(tl.int64) * stride_vh + rows[:, None] * stride_vt + cols[None, :]
    o_ptr = O + b * stride_ob + h.to(tl.int64) * stride_oh + rows[:, None] * stride_ot + cols[None, :]

    if HAS_DECAY:
        g2 = tl.load(G + h) * 1.4426950408889634                     # log2 of the per-step factor (x log2 e)
        pos = rows.to(tl.float32)
        q_decay = tl.exp2(g2 * (pos + 1.0))                          # the state's age at row i
        k_decay = tl.exp2(g2 * (BLOCK_T - 1.0 - pos))                # row j's age at the chunk's end
        s_decay = tl.exp2(g2 * BLOCK_T)
        diff = (rows[:, None] - rows[None, :]).to(tl.float32)
        intra_decay = tl.where(causal, tl.exp2(g2 * tl.maximum(diff, 0.0)), 0.0)    # exp(g (i - j)), j <= i

    S = tl.zeros([BLOCK_K, BLOCK_V], tl.float32)
    for t0 in range(0, T, BLOCK_T):
        t_ok = t0 + rows < T
        q = tl.load(q_ptr, mask=t_ok[:, None] & k_ok[None, :], other=0.0)
        k = tl.load(k_ptr, mask=t_ok[:, None] & k_ok[None, :], other=0.0)
        v = tl.load(v_ptr, mask=t_ok[:, None] & v_ok[None, :], other=0.0)

        a = tl.dot(q, tl.trans(k))                                   # [BLOCK_T, BLOCK_T] fp32
        o = tl.dot(q, S.to(q.dtype))                                 # the earlier chunks, through the state
        if HAS_DECAY:
            a = a * intra_decay
            o = o * q_decay[:, None]
            v_in = (v * k_decay[:, None]).to(v.dtype)
            S = S * s_decay
        else:
            a = tl.where(causal, a, 0.0)
            v_in = v
        o = tl.dot(a.to(v.dtype), v, o)
        tl.store(o_ptr, (o * scale).to(O.dtype.element_ty), mask=t_ok[:, None] & v_ok[None, :])
        S = tl.dot(tl.trans(k), v_in, S)

        q_ptr += BLOCK_T * stride_qt
        k_ptr += BLOCK_T * stride_kt
        v_ptr += BLOCK_T * stride_vt
        o_ptr += BLOCK_T * stride_ot


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_T", "BLOCK_V", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 64, "BLOCK_V": 32, "num_warps": 4, "num_stages": 2}

# q, k, v read and o written: 512 MiB - 1 GiB per launch (10-20x the H200's 50 MB L2);
# 4 B H T K V flops (the recurrent form's count): 17-69 GFLOP.
POINTS = [
    # TransNormerLLM-7B lightning attention (32 heads x 128, ALiBi-slope decays), 8 x 2k tokens: 512 MiB
    {"B": 8, "H": 32, "T": 2048, "K": 128, "V": 128, "decay": 1, "dtype": "bf16"},
    # plain linear attention (no decay) of a 1024-wide LM (16 heads x 64), 8 x 8k tokens: 512 MiB
    {"B": 8, "H": 16, "T": 8192, "K": 64, "V": 64, "decay": 0, "dtype": "fp16"},
    # MiniMax-01-style lightning attention (64 heads x 128, decay), 2 x 8k tokens: 1 GiB
    {"B": 2, "H": 64, "T": 8192, "K": 128, "V": 128, "decay": 1, "dtype": "bf16"},
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
    for name in ("BLOCK_T", "BLOCK_V"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")


def _block_k(head_k: int) -> int:
    if not 1 <= head_k <= 256:
        raise ValueError(f"head dim K={head_k} must be 1..256 (it is loaded whole)")
    return max(16, triton.next_power_of_2(head_k))


def decay_slopes(H: int):
    """Lightning Attention's per-head decays (ALiBi slopes): g[h] = -2^(-8 (h + 1) / H), fp32 [H]."""
    import torch
    return -torch.exp2(-8.0 * torch.arange(1, H + 1, dtype=torch.float64) / H).float()


def _kernel_args(q, k, v, o, g, scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(Q=q, Kp=k, Vp=v, O=o, G=g, scale=float(scale), T=q.shape[2], V=v.shape[3],
                stride_qb=q.stride(0), stride_qh=q.stride(1), stride_qt=q.stride(2),
                stride_kb=k.stride(0), stride_kh=k.stride(1), stride_kt=k.stride(2),
                stride_vb=v.stride(0), stride_vh=v.stride(1), stride_vt=v.stride(2),
                stride_ob=o.stride(0), stride_oh=o.stride(1), stride_ot=o.stride(2), H=q.shape[1],
                HEAD_K=q.shape[3], BLOCK_K=_block_k(q.shape[3]), HAS_DECAY=g is not None,
                BLOCK_T=cfg["BLOCK_T"], BLOCK_V=cfg["BLOCK_V"])


def linear_attn_fwd(q, k, v, g=None, scale: float | None = None, *, BLOCK_T: int = 64, BLOCK_V: int = 32,
                    num_warps: int = 4, num_stages: int = 2):
    """Causal linear attention. q, k: [B, H, T, K], v: [B, H, T, V], one dtype (fp16 / bf16),
    any batch / head / time strides; g: None or fp32 [H] per-head log-decays (<= 0); scale:
    default K^-0.5. Returns o [B, H, T, V] contiguous in q's dtype."""
    import torch
    if q.dim() != 4 or k.shape != q.shape or v.dim() != 4 or tuple(v.shape[:3]) != tuple(q.shape[:3]):
        raise ValueError(f"expected q, k [B, H, T, K] and v [B, H, T, V]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k, v must share one fp16 / bf16 dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    B, H, T, K = q.shape
    if g is not None and (g.dtype != torch.float32 or tuple(g.shape) != (H,)):
        raise ValueError(f"g must be None or fp32 [{H}]; got {g.dtype} {tuple(g.shape)}")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_V": BLOCK_V}
    _check_cfg(cfg)
    _block_k(K)
    if scale is None:
        scale = K ** -0.5
    q, k, v = (t if t.stride(3) == 1 else t.contiguous() for t in (q, k, v))
    Vd = v.shape[3]
    o = torch.empty((B, H, T, Vd), dtype=q.dtype, device=q.device)
    if o.numel() == 0:
        return o
    if g is not None:
        g = g.contiguous()
    _kernel[(triton.cdiv(Vd, BLOCK_V), B * H)](**_kernel_args(q, k, v, o, g, scale, cfg), num_warps=num_warps,
                                               num_stages=num_stages)
    return o


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v ~ N(0, 1) in the point's dtype; g = decay_slopes(H) when the point has a decay."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, H, T, K, V = (point[n] for n in ("B", "H", "T", "K", "V"))
    q = torch.randn((B, H, T, K), generator=gen, device=device).to(dt)
    k = torch.randn((B, H, T, K), generator=gen, device=device).to(dt)
    v = torch.randn((B, H, T, V), generator=gen, device=device).to(dt)
    g = decay_slopes(H).to(device) if point.get("decay", 0) else None
    return {"q": q, "k": k, "v": v, "g": g, "scale": K ** -0.5}


def launch(inputs, cfg):
    return linear_attn_fwd(inputs["q"], inputs["k"], inputs["v"], inputs["g"], inputs["scale"],
                           BLOCK_T=cfg["BLOCK_T"], BLOCK_V=cfg["BLOCK_V"], num_warps=cfg["num_warps"],
                           num_stages=cfg["num_stages"])


def reference(inputs, rows_per_step: int = 2048):
    """The O(T^2) masked form in fp32 from the same (rounded) q, k, v: one (batch, head) and up
    to `rows_per_step` queries at a time (scores [rows, keys up to the last row]). The kernel
    differs by its roundings of A, the state and o to the inputs' dtype: emulated in torch at
    the POINTS' sizes (T 2048 / 8192, the weakest-decay heads, no decay at fp16), at most 4.4e-3
    x max|ref| in bf16 (mostly o's own rounding) and 4.1e-4 in fp16."""
    import torch
    q, k, v, g, scale = inputs["q"], inputs["k"], inputs["v"], inputs["g"], inputs["scale"]
    B, H, T, _ = q.shape
    out = torch.empty((B, H, T, v.shape[3]), dtype=torch.float32, device=q.device)
    for b in range(B):
        for h in range(H):
            kf, vf = k[b, h].float(), v[b, h].float()
            for r0 in range(0, T, rows_per_step):
                r1 = min(T, r0 + rows_per_step)
                rows = torch.arange(r0, r1, device=q.device)[:, None]
                keys = torch.arange(0, r1, device=q.device)[None, :]
                scores = q[b, h, r0:r1].float() @ kf[:r1].T                   # [rows, keys]
                if g is None:
                    w = (keys <= rows).float()
                else:
                    diff = (rows - keys).float()
                    w = torch.where(diff >= 0, torch.exp(g[h].float() * diff.clamp(min=0.0)), 0.0)
                out[b, h, r0:r1] = (scores * w) @ vf[:r1] * scale
    return out


def torch_baseline(inputs, chunk: int = 64):
    """What one would write without a kernel: the same chunked algorithm in eager torch, batched
    over (batch, head), the matmuls in the inputs' dtype, the state and the sums in fp32."""
    import torch
    q, k, v, g, scale = inputs["q"], inputs["k"], inputs["v"], inputs["g"], inputs["scale"]
    B, H, T, K = q.shape
    dt = q.dtype
    o = torch.empty((B, H, T, v.shape[3]), dtype=dt, device=q.device)
    S = torch.zeros((B, H, K, v.shape[3]), dtype=torch.float32, device=q.device)
    i = torch.arange(chunk, device=q.device, dtype=torch.float32)
    mask = i[:, None] >= i[None, :]
    if g is None:
        intra = mask.to(dt)
    else:
        gh = g.float().view(1, H, 1, 1)
        intra = torch.where(mask, torch.exp(gh * (i[:, None] - i[None, :]).clamp(min=0.0)), 0.0)
        q_dec = torch.exp(gh * (i[:, None] + 1.0))                              # [1, H, C, 1]
        k_dec = torch.exp(gh * (chunk - 1.0 - i[:, None]))
        s_dec = torch.exp(gh * chunk)
    for t0 in range(0, T, chunk):
        n = min(chunk, T - t0)
        qc, kc, vc = q[:, :, t0:t0 + n], k[:, :, t0:t0 + n], v[:, :, t0:t0 + n]
        a = (qc @ kc.transpose(-1, -2)).float() * intra[..., :n, :n]
        inter = (qc @ S.to(dt)).float()
        if g is not None:
            inter = inter * q_dec[:, :, :n]
            kc = (kc.float() * k_dec[:, :, :n]).to(dt)
            S = S * s_dec
        o[:, :, t0:t0 + n] = ((a.to(dt) @ vc).float() + inter).mul_(scale).to(dt)
        S = S + (kc.transpose(-1, -2) @ vc).float()
    return o


def bytes_moved(point) -> int:
    """q, k, v read once, o written once (and g, 4 B a head, with a decay). The V slices' re-reads
    of q and k (L2 hits while a head's CTAs run together) are not counted."""
    B, H, T, K, V = (point[n] for n in ("B", "H", "T", "K", "V"))
    e = _elem_bytes(point.get("dtype", "bf16"))
    return B * H * T * (2 * K + 2 * V) * e + (4 * H if point.get("decay", 0) else 0)


def flops(point) -> int:
    """The recurrent form's count, independent of the chunk: per token and head, the state
    update k^T v and the output q S, 2 K V each (the chunked form's extra intra-chunk dots and
    the masked half of A are the algorithm's choice, not counted)."""
    return 4 * point["B"] * point["H"] * point["T"] * point["K"] * point["V"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (V slices, batch x heads)."""
    return triton.cdiv(point["V"], cfg["BLOCK_V"]), point["B"] * point["H"]


def loop_iterations(cfg, point) -> int:
    """Chunks per CTA."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, H, T, K, V = (point[n] for n in ("B", "H", "T", "K", "V"))
    q = torch.empty((B, H, T, K), dtype=dt, device="meta")
    k = torch.empty((B, H, T, K), dtype=dt, device="meta")
    v = torch.empty((B, H, T, V), dtype=dt, device="meta")
    o = torch.empty((B, H, T, V), dtype=dt, device="meta")
    g = torch.empty((H,), dtype=torch.float32, device="meta") if point.get("decay", 0) else None
    return _kernel_args(q, k, v, o, g, K ** -0.5, cfg)
