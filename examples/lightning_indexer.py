"""DeepSeek-V3.2's sparse-attention "lightning indexer" logits (the scores SGLang / vLLM compute
before picking the top-k keys each query attends to), a bare @triton.jit kernel + its launcher.

    score[b, i, j] = k_scale[b, j] * sum_h w[b, i, h] * relu(q[b, i, h, :] . k[b, j, :])
                     for j < kv_len[b] - S_q + i + 1 (query i's causal limit), else -inf

q: [B, S_q, H, D] (H index heads, D unit stride), bf16 or fp8 e4m3; k: [B, S_kv, D], one key
head shared by every index head, the same dtype (S_kv: the cache's capacity; sequence b holds
kv_len[b] <= S_kv valid keys, its S_q queries are the last S_q of them); w: [B, S_q, H] fp32,
the per-query-head weights with the softmax scale (and, for fp8, q's per-(token, head) scale)
folded in, as the indexer's weights projection hands them over; k_scale: [B, S_kv] fp32, k's
per-token fp8 scale (fp8 only; relu commutes with a positive scale, so it is applied once per
key after the head reduction); kv_len: [B] int32. Output: [B, S_q, S_kv] fp32, -inf past each
query's causal limit (and past kv_len). The batch dimension is how a decode batch is written:
each sequence's own cache, padded to S_kv, with its own length (no paging).

Grid (cdiv(S_q, BLOCK_Q), B * key_splits), key_splits = cdiv(S_kv, BLOCK_K * KEYS_PER_CTA).
One CTA owns BLOCK_Q queries of one sequence (their H heads flattened into the M dimension of
one tl.dot: M = BLOCK_Q * H, the [M, D] q tile loaded once and held) and KEYS_PER_CTA key tiles
of BLOCK_K keys. It walks the key tiles that lie at least partly inside the causal limit of its
last query (a loop with a runtime trip count, so the k loads pipeline over num_stages): one
[M, D] x [D, BLOCK_K] dot (fp32 accumulate), relu, times w, a reduction over h inside the
tile, the k scale, the causal mask, a [BLOCK_Q, BLOCK_K] fp32 store. The CTA's tiles wholly past
the limit are only written with -inf (no loads); a CTA with no live tile loads nothing.

Tunables: BLOCK_Q (1, 2, 4 queries: M 64 / 128 / 256 at H = 64), BLOCK_K (keys per tile,
power of two >= 16), KEYS_PER_CTA (key tiles one CTA walks: fewer -> more CTAs, q re-read by
more of them; more -> q loaded once for longer runs of keys), num_warps, num_stages.
Problem parameters (a workload point): B, S_q, S_kv, H, D, dtype ("bf16" / "fp8"),
ctx_min (decode: each sequence's kv_len drawn uniformly in [ctx_min, S_kv] on the CPU with a
seeded generator; without it every kv_len is S_kv).
"""

from __future__ import annotations

import triton
import triton.language as tl

FP8_MAX = 448.0
DTYPES = ("bf16", "fp8")


@triton.jit
def _kernel(Q, K, W, KS, KV_LEN, OUT, S_Q, S_KV,
            stride_qb, stride_qs, stride_qh, stride_kb, stride_kn, stride_wb, stride_ws, stride_ksb,
            stride_ob, stride_os,
            H: tl.constexpr, D: tl.constexpr, HAS_KSCALE: tl.constexpr,
            BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, KEYS_PER_CTA: tl.constexpr):
    M: tl.constexpr = BLOCK_Q * H
    pid_q = tl.program_id(0)
    pid_k = tl.program_id(1)
    splits = tl.cdiv(S_KV, BLOCK_K * KEYS_PER_CTA)
    b = pid_k // splits
    k_first = (pid_k % splits) * (BLOCK_K * KEYS_PER_CTA)
    kv_len = tl.load(KV_LEN + b)

    q_first = pid_q * BLOCK_Q
    # keys [0, hi) are visible to some query of this CTA (its last valid one)
    hi = tl.minimum(kv_len - S_Q + tl.minimum(q_first + BLOCK_Q, S_Q), S_KV)
    n_live = tl.minimum(tl.maximum(tl.cdiv(hi - k_first, BLOCK_K), 0), KEYS_PER_CTA)

    qs = q_first + tl.arange(0, BLOCK_Q)                       # this CTA's queries
    q_ok = qs < S_Q
    limit = kv_len - S_Q + qs + 1                              # query's exclusive causal limit
    o_rows = OUT + b.to(tl.int64) * stride_ob + qs.to(tl.int64) * stride_os
    kk = tl.arange(0, BLOCK_K)

    if n_live > 0:
        rows = tl.arange(0, M)
        qi = tl.minimum(q_first + rows // H, S_Q - 1)          # clamped: padding rows reload the last query
        hh = rows % H
        dd = tl.arange(0, D)
        q_off = b.to(tl.int64) * stride_qb + qi.to(tl.int64) * stride_qs + hh * stride_qh
        q = tl.load(Q + q_off[:, None] + dd[None, :])         # [M, D], held for the whole key walk
        w = tl.load(W + b.to(tl.int64) * stride_wb + qi * stride_ws + hh)    # [M] fp32
        k_base = K + b.to(tl.int64) * stride_kb + dd[:, None]
        for t in range(0, n_live):
            cols = k_first + t * BLOCK_K + kk
            kt = tl.load(k_base + cols[None, :].to(tl.int64) * stride_kn, mask=(cols < hi)[None, :], other=0.0)
            s = tl.dot(q, kt)                                  # [M, BLOCK_K] fp32
            s = tl.maximum(s, 0.0) * w[:, None]
            score = tl.sum(tl.reshape(s, (BLOCK_Q, H, BLOCK_K)), axis=1)      # [BLOCK_Q, BLOCK_K]
            if HAS_KSCALE:
                ks = tl.load(KS + b.to(tl.int64) * stride_ksb + cols, mask=cols < hi, other=0.0)
                score = score * ks[None, :]
            score = tl.where(cols[None, :] < limit[:, None], score, float("-inf"))
            tl.store(o_rows[:, None] + cols[None, :], score, mask=q_ok[:, None] & (cols < S_KV)[None, :])

    # tiles wholly past the causal limit: -inf only
    neg = tl.full((BLOCK_Q, BLOCK_K), float("-inf"), tl.float32)
    for t in range(n_live, KEYS_PER_CTA):
        cols = k_first + t * BLOCK_K + kk
        tl.store(o_rows[:, None] + cols[None, :], neg, mask=q_ok[:, None] & (cols < S_KV)[None, :])


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_Q", "BLOCK_K", "KEYS_PER_CTA", "num_warps", "num_stages")
BASELINE = {"BLOCK_Q": 2, "BLOCK_K": 64, "KEYS_PER_CTA": 8, "num_warps": 8, "num_stages": 3}

# DeepSeek-V3.2's indexer: 64 index heads of 128 dims, one shared key head.
POINTS = [
    # causal prefill of a 4096-token prompt, bf16: q 67 MB, k 1 MB, out 67 MB; ~137 GFLOP of visible
    # (query, key) pairs: the tensor cores and the relu / weight / head-reduction epilogue bind
    {"B": 1, "S_q": 4096, "S_kv": 4096, "H": 64, "D": 128, "dtype": "bf16"},
    # chunked prefill, fp8: 2048 new queries against a 32768-token context whose last 2048 keys are
    # theirs: q 16.8 MB, k 4.2 MB, out 268 MB; ~1.05 TFLOP (no causal savings to speak of)
    {"B": 1, "S_q": 2048, "S_kv": 32768, "H": 64, "D": 128, "dtype": "fp8"},
    # decode batch with one MTP draft token (2 queries a sequence), fp8 cache: 128 sequences of
    # 8192-16384 tokens: ~200 MB of k streamed once, out 16.8 MB: bandwidth-bound
    {"B": 128, "S_q": 2, "S_kv": 16384, "H": 64, "D": 128, "dtype": "fp8", "ctx_min": 8192},
]


def _check_point(point) -> None:
    if point.get("dtype", "bf16") not in DTYPES:
        raise ValueError(f"dtype {point.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    H, D = point["H"], point["D"]
    for name, v in (("H", H), ("D", D)):
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two (a tile side)")
    if D < 16:
        raise ValueError(f"D={D} must be >= 16 (the dot's K side)")
    if point["S_q"] < 1 or point["S_kv"] < point["S_q"]:
        raise ValueError(f"need 1 <= S_q <= S_kv; got S_q={point['S_q']}, S_kv={point['S_kv']}")
    lo = point.get("ctx_min", point["S_kv"])
    if not point["S_q"] <= lo <= point["S_kv"]:
        raise ValueError(f"ctx_min={lo} must lie in [S_q, S_kv] = [{point['S_q']}, {point['S_kv']}]")


def _check_cfg(cfg, H: int = 64) -> None:
    if cfg["BLOCK_Q"] < 1 or cfg["BLOCK_Q"] & (cfg["BLOCK_Q"] - 1):
        raise ValueError(f"BLOCK_Q={cfg['BLOCK_Q']} must be a power of two >= 1")
    if cfg["BLOCK_Q"] * H < 16:
        raise ValueError(f"BLOCK_Q * H = {cfg['BLOCK_Q'] * H} must be >= 16 (the dot's M side)")
    v = cfg["BLOCK_K"]
    if v < 16 or v & (v - 1):
        raise ValueError(f"BLOCK_K={v} must be a power of two >= 16 (the dot's N side)")
    if cfg["KEYS_PER_CTA"] < 1:
        raise ValueError(f"KEYS_PER_CTA={cfg['KEYS_PER_CTA']} must be >= 1")


def kv_lens(point, seed: int = 0) -> list[int]:
    """Each sequence's valid keys: S_kv, or (with ctx_min) uniform in [ctx_min, S_kv], drawn on the
    CPU from a generator seeded with `seed` (so grid hooks and make_inputs agree)."""
    import torch
    B, S_kv = point["B"], point["S_kv"]
    lo = point.get("ctx_min", S_kv)
    if lo == S_kv:
        return [S_kv] * B
    gen = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(lo, S_kv + 1, (B,), generator=gen).tolist()


def _splits(cfg, S_kv: int) -> int:
    return triton.cdiv(S_kv, cfg["BLOCK_K"] * cfg["KEYS_PER_CTA"])


def _kernel_args(q, k, w, k_scale, kv_len, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, S_q, H, D = q.shape
    ks = k_scale if k_scale is not None else w       # a dummy pointer when HAS_KSCALE is off
    return dict(Q=q, K=k, W=w, KS=ks, KV_LEN=kv_len, OUT=out, S_Q=S_q, S_KV=k.shape[1],
                stride_qb=q.stride(0), stride_qs=q.stride(1), stride_qh=q.stride(2),
                stride_kb=k.stride(0), stride_kn=k.stride(1), stride_wb=w.stride(0), stride_ws=w.stride(1),
                stride_ksb=k_scale.stride(0) if k_scale is not None else 0,
                stride_ob=out.stride(0), stride_os=out.stride(1),
                H=H, D=D, HAS_KSCALE=k_scale is not None, BLOCK_Q=cfg["BLOCK_Q"], BLOCK_K=cfg["BLOCK_K"],
                KEYS_PER_CTA=cfg["KEYS_PER_CTA"])


def lightning_indexer(q, k, w, kv_len, k_scale=None, *, out=None, BLOCK_Q=2, BLOCK_K=64, KEYS_PER_CTA=8,
                      num_warps=8, num_stages=3):
    """Indexer logits [B, S_q, S_kv] fp32 (into `out` if given: unit stride along keys) for q
    [B, S_q, H, D], k [B, S_kv, D] (bf16, or fp8 e4m3 with k_scale [B, S_kv] fp32), w [B, S_q, H]
    fp32, kv_len [B] int32 (S_q <= kv_len <= S_kv). D must have unit stride in q and k."""
    import torch
    if q.dim() != 4 or k.dim() != 3 or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[2]:
        raise ValueError(f"expected q [B, S_q, H, D] and k [B, S_kv, D]; got {tuple(q.shape)}, {tuple(k.shape)}")
    B, S_q, H, D = q.shape
    S_kv = k.shape[1]
    if q.dtype != k.dtype or q.dtype not in (torch.bfloat16, torch.float8_e4m3fn):
        raise ValueError(f"q and k must both be bf16 or both fp8 e4m3; got {q.dtype}, {k.dtype}")
    if (q.dtype == torch.float8_e4m3fn) != (k_scale is not None):
        raise ValueError("k_scale ([B, S_kv] fp32) is required with fp8 operands and only with them")
    if k_scale is not None and (k_scale.dtype != torch.float32 or tuple(k_scale.shape) != (B, S_kv)
                                or k_scale.stride(1) != 1):
        raise ValueError(f"k_scale must be fp32 [{B}, {S_kv}] with unit stride; got {k_scale.dtype} "
                         f"{tuple(k_scale.shape)}")
    if w.dtype != torch.float32 or tuple(w.shape) != (B, S_q, H) or w.stride(2) != 1:
        raise ValueError(f"w must be fp32 [{B}, {S_q}, {H}] with unit stride along H; got {w.dtype} {tuple(w.shape)}")
    if kv_len.dtype != torch.int32 or kv_len.numel() != B:
        raise ValueError(f"kv_len must be int32 of B={B} elements; got {kv_len.dtype} {tuple(kv_len.shape)}")
    if q.stride(3) != 1 or k.stride(2) != 1:
        raise ValueError(f"q and k need D contiguous; got strides {q.stride()}, {k.stride()}")
    _check_point({"B": B, "S_q": S_q, "S_kv": S_kv, "H": H, "D": D})
    cfg = {"BLOCK_Q": BLOCK_Q, "BLOCK_K": BLOCK_K, "KEYS_PER_CTA": KEYS_PER_CTA}
    _check_cfg(cfg, H)
    if out is None:
        out = torch.empty((B, S_q, S_kv), dtype=torch.float32, device=q.device)
    elif tuple(out.shape) != (B, S_q, S_kv) or out.dtype != torch.float32 or out.stride(2) != 1:
        raise ValueError(f"out must be fp32 [{B}, {S_q}, {S_kv}] with unit stride along keys; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    kv_len = kv_len.reshape(-1).contiguous()
    grid = (triton.cdiv(S_q, BLOCK_Q), B * _splits(cfg, S_kv))
    _kernel[grid](**_kernel_args(q, k, w, k_scale, kv_len, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def _quantize_fp8(x):
    """x [..., D] -> (fp8 e4m3, fp32 scale [...]): symmetric, one scale per last-dim row."""
    import torch
    s = (x.abs().amax(dim=-1) / FP8_MAX).clamp(min=1e-12)
    return (x / s[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), s


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Gaussian q and k (fp8: quantised per (token, head) / per token, q's scale folded into w),
    w ~ N(0, 1) * H^-1/2 * D^-1/2 (the softmax scale), kv_len from `kv_lens(point, seed)`; all
    drawn on the CPU, then moved."""
    import torch
    _check_point(point)
    B, S_q, S_kv, H, D = point["B"], point["S_q"], point["S_kv"], point["H"], point["D"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn((B, S_q, H, D), generator=gen)
    k = torch.randn((B, S_kv, D), generator=gen)
    w = torch.randn((B, S_q, H), generator=gen) * (H * D) ** -0.5
    if point.get("dtype", "bf16") == "fp8":
        q, q_scale = _quantize_fp8(q)
        k, k_scale = _quantize_fp8(k)
        w = w * q_scale
        k_scale = k_scale.to(device)
    else:
        q, k, k_scale = q.to(torch.bfloat16), k.to(torch.bfloat16), None
    kv_len = torch.tensor(kv_lens(point, seed), dtype=torch.int32)
    return {"q": q.to(device), "k": k.to(device), "w": w.float().to(device), "k_scale": k_scale,
            "kv_len": kv_len.to(device)}


def launch(inputs, cfg):
    return lightning_indexer(inputs["q"], inputs["k"], inputs["w"], inputs["kv_len"], inputs["k_scale"],
                             BLOCK_Q=cfg["BLOCK_Q"], BLOCK_K=cfg["BLOCK_K"], KEYS_PER_CTA=cfg["KEYS_PER_CTA"],
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp64 on the same (quantised) operands: every head's q . k, relu, times w, summed over h,
    times k's scale; -inf past each query's causal limit. fp32 out."""
    import torch
    q, k, w = inputs["q"].double(), inputs["k"].double(), inputs["w"].double()
    B, S_q, H, D = q.shape
    S_kv = k.shape[1]
    logits = torch.einsum("bshd,bnd->bshn", q, k).clamp_min(0)
    score = torch.einsum("bshn,bsh->bsn", logits, w)
    if inputs["k_scale"] is not None:
        score = score * inputs["k_scale"].double()[:, None, :]
    limit = inputs["kv_len"].long().reshape(B, 1, 1) - S_q + torch.arange(S_q, device=q.device).reshape(1, S_q, 1) + 1
    keep = torch.arange(S_kv, device=q.device).reshape(1, 1, S_kv) < limit
    return score.masked_fill(~keep, float("-inf")).float()


def torch_baseline(inputs):
    """What a torch user writes: one fp32 einsum over all heads (the [B, S_q, H, S_kv] logits
    materialised), relu, a weighted sum over h, the mask."""
    import torch
    q, k, w = inputs["q"].float(), inputs["k"].float(), inputs["w"]
    B, S_q = q.shape[:2]
    S_kv = k.shape[1]
    score = torch.einsum("bshn,bsh->bsn", torch.einsum("bshd,bnd->bshn", q, k).relu(), w)
    if inputs["k_scale"] is not None:
        score = score * inputs["k_scale"][:, None, :]
    limit = inputs["kv_len"].long().reshape(B, 1, 1) - S_q + torch.arange(S_q, device=q.device).reshape(1, S_q, 1) + 1
    return score.masked_fill(torch.arange(S_kv, device=q.device).reshape(1, 1, S_kv) >= limit, float("-inf"))


def _visible_pairs(point) -> int:
    S_q = point["S_q"]
    return sum(S_q * (n - S_q) + S_q * (S_q + 1) // 2 for n in kv_lens(point))


def bytes_moved(point) -> int:
    """q and w read once, each sequence's valid keys (and their fp8 scales) once, the whole
    [B, S_q, S_kv] fp32 output written once (the -inf part included)."""
    _check_point(point)
    B, S_q, S_kv, H, D = point["B"], point["S_q"], point["S_kv"], point["H"], point["D"]
    es = 1 if point.get("dtype", "bf16") == "fp8" else 2
    keys = sum(kv_lens(point))
    ks = 4 * keys if es == 1 else 0
    return B * S_q * H * D * es + 4 * B * S_q * H + keys * D * es + ks + 4 * B + 4 * B * S_q * S_kv


def flops(point) -> int:
    """The dot's multiply-adds over the visible (query, key) pairs, all H heads (the relu / weight /
    head-sum epilogue, ~3 per pair and head, not counted)."""
    _check_point(point)
    return 2 * point["H"] * point["D"] * _visible_pairs(point)


def grid(cfg, point):
    """(query blocks, B x key splits), as launch passes it."""
    return (triton.cdiv(point["S_q"], cfg["BLOCK_Q"]), point["B"] * _splits(cfg, point["S_kv"]))


def loop_iterations(cfg, point) -> int:
    """Key tiles of a CTA wholly inside the causal limit (the typical one)."""
    return cfg["KEYS_PER_CTA"]


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's live key tiles (the dot loop's trip count), program id x (query block) fastest.
    A CTA whose tiles all lie past its queries' limit loads nothing and only writes -inf: it is
    given 1 (its stores are about one tile's worth of traffic)."""
    S_q, S_kv, BQ, BK, KPC = point["S_q"], point["S_kv"], cfg["BLOCK_Q"], cfg["BLOCK_K"], cfg["KEYS_PER_CTA"]
    nq, splits = triton.cdiv(S_q, BQ), _splits(cfg, S_kv)
    out = []
    for n in kv_lens(point):
        for sp in range(splits):
            k_first = sp * BK * KPC
            for pq in range(nq):
                hi = min(n - S_q + min(pq * BQ + BQ, S_q), S_kv)
                live = min(max(-(-(hi - k_first) // BK), 0), KPC)
                out.append(live if live else 1)
    return out


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: tensors on the meta device, except
    kv_len, a CPU tensor of the seed-0 lengths (each CTA loads its sequence's entry)."""
    import torch
    _check_point(point)
    B, S_q, S_kv, H, D = point["B"], point["S_q"], point["S_kv"], point["H"], point["D"]
    fp8 = point.get("dtype", "bf16") == "fp8"
    dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
    q = torch.empty((B, S_q, H, D), dtype=dt, device="meta")
    k = torch.empty((B, S_kv, D), dtype=dt, device="meta")
    w = torch.empty((B, S_q, H), dtype=torch.float32, device="meta")
    ks = torch.empty((B, S_kv), dtype=torch.float32, device="meta") if fp8 else None
    out = torch.empty((B, S_q, S_kv), dtype=torch.float32, device="meta")
    kv_len = torch.tensor(kv_lens(point), dtype=torch.int32)
    return _kernel_args(q, k, w, ks, kv_len, out, cfg)
