"""Variable-length (packed) flash-attention forward with grouped-query attention, the
prefill attention of a serving engine (vLLM / SGLang style), a bare @triton.jit kernel +
its launcher.

    out[t, h] = softmax(q[t, h] . k[s0:s1, h // G]^T * sm_scale [+ causal mask]) @ v[s0:s1, h // G]

for every token t of sequence s (tokens s0 = cu_seqlens[s] .. s1 = cu_seqlens[s + 1]) and
query head h, G = H_q // H_kv query heads sharing one K/V head (GQA; G = 1 is plain MHA).
The batch is packed: q [total_tokens, H_q, D], k, v [total_tokens, H_kv, D], out
[total_tokens, H_q, D] in q's dtype (bf16 / fp16; any token / head strides, the head dim
contiguous, so q, k and v may be views of one fused QKV projection), cu_seqlens int32
[B + 1] (0, then the running token count). Causal masking is per sequence (query i of a
sequence sees its keys 0..i); without it every query sees its whole sequence (an
encoder's packed batch). The softmax is the online one in fp32 and in log2 units (exp2):
a running max m and row sum l, the fp32 [BLOCK_M, D] accumulator rescaled by exp2(m_old -
m_new) before P @ V (P rounded to the input dtype for that dot) is added; one division at
the end.

Grid: (query blocks over all sequences, H_q). The query blocks are not enumerated on the
host: sequence s owns the program ids cu_seqlens[s] // BLOCK_M + s .. cu_seqlens[s + 1] //
BLOCK_M + s (a count >= cdiv(len_s, BLOCK_M), strictly increasing in s), so the grid is
total_tokens // BLOCK_M + B programs per head, known without reading cu_seqlens, no host
sync and no metadata kernel (CUDA-graph safe). Each CTA binary-searches cu_seqlens for its
sequence (ceil(log2(B + 1)) scalar loads), and returns at once when its block starts at or
past the sequence end (at most one such CTA per sequence: up to B idle CTAs per head).
A CTA owns BLOCK_M queries of one sequence and one head, keeps its Q tile in registers
and walks that sequence's keys in BLOCK_N tiles: first the tiles every query sees (no
mask: keys below (m0 // BLOCK_N) * BLOCK_N causal, below (len // BLOCK_N) * BLOCK_N
otherwise), then the diagonal / tail tiles up to min(len, m0 + BLOCK_M) (causal) or len,
masked (causal and past the sequence end: K/V loads past the end are masked, the last
sequence's end is the tensor's end). Tiles past the diagonal are skipped, so a CTA does
cdiv(min(len, m0 + BLOCK_M), BLOCK_N) tiles (causal) or cdiv(len, BLOCK_N): CTAs do very
different amounts of work (cta_iterations). The H_q // H_kv heads of one K/V head are
neighbouring program_id(1) planes, so their K/V reads meet in L2.

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), num_warps, num_stages (K/V tile
pipelining depth).
Problem parameters (a workload point): B (sequences), min_len, max_len (token counts of a
sequence, drawn per point: "uniform" or "loguniform" between them, from a fixed CPU
generator seeded with len_seed, so the workload of a point does not depend on the input
seed), H_q, H_kv, D (head dim, a constexpr), causal, dtype.
"""

from __future__ import annotations

import math
from functools import lru_cache

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, offs_n, lo, hi, seq_len, qk_scale, stride_kt, stride_vt,
            BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """Keys lo .. hi (lo a multiple of BLOCK_N; k_ptrs, v_ptrs at key lo) into the running
    (acc, l_i, m_i); MASKED tiles mask the K/V loads past the sequence end and the scores past
    the diagonal / the end."""
    for start_n in range(lo, hi, BLOCK_N):
        if MASKED:
            keys = start_n + offs_n
            k_ok = keys < seq_len
            k = tl.load(k_ptrs, mask=k_ok[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=k_ok[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            keep = k_ok[None, :]
            if CAUSAL:
                keep = keep & (keys[None, :] <= offs_m[:, None])
            s = tl.where(keep, s, float("-inf"))
        # finite: every row meets at least one kept key in the first tile it sees (key 0, or
        # key m0 >= the first masked tile's start), and m_i only grows after that
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kt
        v_ptrs += BLOCK_N * stride_vt
    return acc, l_i, m_i


@triton.jit
def _kernel(Q, K, V, O, CU_SEQLENS, sm_scale, num_seqs,
            stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
            GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    h = tl.program_id(1)
    kv_h = h // GROUP

    # sequence of this program: the last s with cu_seqlens[s] // BLOCK_M + s <= pid
    lo = 0
    hi = num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        if tl.load(CU_SEQLENS + mid) // BLOCK_M + mid <= pid:
            lo = mid + 1
        else:
            hi = mid
    seq = lo - 1
    tok0 = tl.load(CU_SEQLENS + seq)
    seq_len = tl.load(CU_SEQLENS + seq + 1) - tok0
    m0 = (pid - (tok0 // BLOCK_M + seq)) * BLOCK_M
    if m0 >= seq_len:
        return

    offs_m = m0 + tl.arange(0, BLOCK_M)            # query positions within the sequence
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    m_ok = offs_m < seq_len
    tok_m = (tok0 + offs_m).to(tl.int64)
    q = tl.load(Q + tok_m[:, None] * stride_qt + h * stride_qh + offs_d[None, :], mask=m_ok[:, None], other=0.0)

    tok_n = (tok0 + offs_n).to(tl.int64)
    k_ptrs = K + tok_n[:, None] * stride_kt + kv_h * stride_kh + offs_d[None, :]
    v_ptrs = V + tok_n[:, None] * stride_vt + kv_h * stride_vh + offs_d[None, :]
    qk_scale = sm_scale * 1.4426950408889634       # log2(e): softmax with exp2

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    if CAUSAL:
        full_hi = (m0 // BLOCK_N) * BLOCK_N          # keys every query of the block sees, all < seq_len
        end = tl.minimum(seq_len, m0 + BLOCK_M)     # keys past the block's last query: skipped
    else:
        full_hi = (seq_len // BLOCK_N) * BLOCK_N
        end = seq_len
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, offs_n, 0, full_hi, seq_len, qk_scale,
                            stride_kt, stride_vt, BLOCK_N, False, CAUSAL)
    k_ptrs += full_hi.to(tl.int64) * stride_kt
    v_ptrs += full_hi.to(tl.int64) * stride_vt
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, offs_n, full_hi, end, seq_len, qk_scale,
                            stride_kt, stride_vt, BLOCK_N, True, CAUSAL)

    out = acc / l_i[:, None]
    tl.store(O + tok_m[:, None] * stride_ot + h * stride_oh + offs_d[None, :], out.to(O.dtype.element_ty),
             mask=m_ok[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
DISTS = ("uniform", "loguniform")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}

# Each point's q/k/v/out is 7-60x the 50 MB L2. Measured on an H200 (triton 3.6.0, the sweep's 36
# BLOCK_M 32-128 x BLOCK_N 32-128 x 4/8 warps x 2/3 stages, all outputs checked): best 1.39 / 2.74 /
# 0.87 ms, slowest 6.6 / 9.8 / 5.9 ms.
POINTS = [
    # Llama-3-8B (32 q heads, 8 K/V heads, D 128) prefill of 32 ragged prompts, 128-4096 tokens,
    # log-uniform (many short, a few long): 33.1k tokens, 0.68 GB, 0.46 TFLOP causal (compute-bound,
    # 0.5 TB/s at best: 64 x 64 on 4 warps or 128 x 64 on 8, 3 stages: ~330 TFLOP/s)
    {"B": 32, "min_len": 128, "max_len": 4096, "dist": "loguniform", "len_seed": 0,
     "H_q": 32, "H_kv": 8, "D": 128, "causal": 1, "dtype": "bf16"},
    # the same model, a batch of 512 short requests (64-512 tokens, uniform): 147k tokens, 3.0 GB,
    # 0.42 TFLOP causal; 1-16 K/V tiles per CTA, 1.7k-5.1k CTAs per head plane, up to 512 of them
    # idle; per-CTA costs (the search, Q load, epilogue) and wasted diagonal tiles weigh (best
    # 64 x 64, 4 warps, 3 stages: 1.1 TB/s, 152 TFLOP/s)
    {"B": 512, "min_len": 64, "max_len": 512, "dist": "uniform", "len_seed": 0,
     "H_q": 32, "H_kv": 8, "D": 128, "causal": 1, "dtype": "bf16"},
    # a ViT-L/14-sized encoder (16 heads x 64, MHA: no K/V sharing), 32 packed images of 256-4096
    # patches (NaViT-style native resolution), bidirectional: 41.6k tokens, 0.34 GB, 0.31 TFLOP
    # (compute-bound; no spills at D 64, so 4-warp 128-row tiles compete: best 128 x 64, 8 warps)
    {"B": 32, "min_len": 256, "max_len": 4096, "dist": "loguniform", "len_seed": 0,
     "H_q": 16, "H_kv": 16, "D": 64, "causal": 0, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")


def _check_heads(h_q: int, h_kv: int, d: int) -> None:
    if h_q < 1 or h_kv < 1 or h_q % h_kv:
        raise ValueError(f"H_q={h_q} must be a positive multiple of H_kv={h_kv} (grouped-query attention)")
    if d < 16 or d > 256 or d & (d - 1):
        raise ValueError(f"D={d} must be a power of two in 16..256 (the head dim, a constexpr)")


@lru_cache(maxsize=32)
def _lengths_cached(B: int, lo: int, hi: int, dist: str, seed: int):
    import torch
    if B < 1 or lo < 1 or hi < lo:
        raise ValueError(f"need B >= 1 and 1 <= min_len <= max_len; got B={B}, min_len={lo}, max_len={hi}")
    if dist not in DISTS:
        raise ValueError(f"dist {dist!r} is not one of {', '.join(DISTS)}")
    gen = torch.Generator().manual_seed(seed)
    u = torch.rand(B, generator=gen, dtype=torch.float64)
    if dist == "uniform":
        raw = lo + u * (hi + 1 - lo)
    else:
        raw = torch.exp(math.log(lo) + u * (math.log(hi + 1) - math.log(lo)))
    return torch.floor(raw).clamp(lo, hi).to(torch.int64)


def seq_lengths(point):
    """The point's B sequence lengths (int64, CPU): drawn from a CPU generator seeded with the
    point's len_seed (default 0), so every hook and every input seed sees the same batch."""
    return _lengths_cached(int(point["B"]), int(point["min_len"]), int(point["max_len"]),
                           str(point.get("dist", "uniform")), int(point.get("len_seed", 0))).clone()


def _kernel_args(q, k, v, o, cu_seqlens, sm_scale: float, causal: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(Q=q, K=k, V=v, O=o, CU_SEQLENS=cu_seqlens, sm_scale=float(sm_scale),
                num_seqs=cu_seqlens.shape[0] - 1,
                stride_qt=q.stride(0), stride_qh=q.stride(1), stride_kt=k.stride(0), stride_kh=k.stride(1),
                stride_vt=v.stride(0), stride_vh=v.stride(1), stride_ot=o.stride(0), stride_oh=o.stride(1),
                GROUP=q.shape[1] // k.shape[1], HEAD_DIM=q.shape[2], CAUSAL=bool(causal),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"])


def _grid_x(total_tokens: int, num_seqs: int, block_m: int) -> int:
    return total_tokens // block_m + num_seqs


def varlen_attn_fwd(q, k, v, cu_seqlens, causal: bool = True, sm_scale: float | None = None, *, out=None,
                    BLOCK_M: int = 128, BLOCK_N: int = 64, num_warps: int = 8, num_stages: int = 2):
    """Attention over packed sequences. q [T, H_q, D], k, v [T, H_kv, D] (one dtype, fp16 /
    bf16, unit stride along D, any token / head strides), cu_seqlens int32 [B + 1] on q's
    device (0, nondecreasing, ending at T). H_q a multiple of H_kv; D a power of two 16..256.
    Returns [T, H_q, D] in q's dtype (into `out` if given: that shape and dtype, unit stride
    along D)."""
    import torch
    if q.dim() != 3 or k.dim() != 3 or v.shape != k.shape or q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2]:
        raise ValueError(f"expected q [T, H_q, D] and k, v [T, H_kv, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k, v must share one fp16 / bf16 dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    T, h_q, d = q.shape
    _check_heads(h_q, k.shape[1], d)
    if cu_seqlens.dim() != 1 or cu_seqlens.dtype != torch.int32 or cu_seqlens.numel() < 2:
        raise ValueError(f"cu_seqlens must be int32 [B + 1] with B >= 1; got {cu_seqlens.dtype} "
                         f"{tuple(cu_seqlens.shape)}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    q, k, v = (t if t.stride(2) == 1 else t.contiguous() for t in (q, k, v))
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(d)
    if out is None:
        out = torch.empty((T, h_q, d), dtype=q.dtype, device=q.device)
    elif tuple(out.shape) != (T, h_q, d) or out.dtype != q.dtype or out.stride(2) != 1:
        raise ValueError(f"out must be {q.dtype} [{T}, {h_q}, {d}] with unit stride along D; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    if T == 0:
        return out
    B = cu_seqlens.numel() - 1
    _kernel[(_grid_x(T, B, BLOCK_M), h_q)](**_kernel_args(q, k, v, out, cu_seqlens, sm_scale, causal, cfg),
                                           num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v ~ N(0, 1) (drawn on the CPU for `seed`, then moved) over the point's packed
    lengths; cu_seqlens int32 on the device and its CPU copy."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    h_q, h_kv, d = point["H_q"], point["H_kv"], point["D"]
    _check_heads(h_q, h_kv, d)
    lens = seq_lengths(point)
    cu = torch.zeros(lens.numel() + 1, dtype=torch.int32)
    torch.cumsum(lens, 0, out=cu[1:])
    T = int(cu[-1])
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((T, h_q, d), generator=gen).to(dt).to(device)
    k = torch.randn((T, h_kv, d), generator=gen).to(dt).to(device)
    v = torch.randn((T, h_kv, d), generator=gen).to(dt).to(device)
    return {"q": q, "k": k, "v": v, "cu_seqlens": cu.to(device), "cu_seqlens_cpu": cu,
            "causal": bool(point.get("causal", 1)), "sm_scale": 1.0 / math.sqrt(d)}


def launch(inputs, cfg):
    return varlen_attn_fwd(inputs["q"], inputs["k"], inputs["v"], inputs["cu_seqlens"], inputs["causal"],
                           inputs["sm_scale"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs, max_scores: int = 1 << 26):
    """softmax(q k^T * scale) v in fp32, one sequence at a time, K/V heads repeated for GQA,
    the queries in chunks of at most `max_scores` scores ([H_q, rows, len] fp32)."""
    import torch
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    T, h_q, d = q.shape
    group = h_q // k.shape[1]
    out = torch.zeros((T, h_q, d), dtype=torch.float32, device=q.device)
    cu = inputs["cu_seqlens_cpu"].tolist()
    for s0, s1 in zip(cu[:-1], cu[1:]):
        n = s1 - s0
        if n == 0:
            continue
        kk = k[s0:s1].float().repeat_interleave(group, 1).transpose(0, 1)      # [H_q, n, D]
        vv = v[s0:s1].float().repeat_interleave(group, 1).transpose(0, 1)
        rows = max(1, max_scores // (h_q * n))
        keys = torch.arange(n, device=q.device)
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            qq = q[s0 + r0:s0 + r1].float().transpose(0, 1)                     # [H_q, r, D]
            sc = (qq @ kk.transpose(1, 2)) * inputs["sm_scale"]
            if inputs["causal"]:
                qi = torch.arange(r0, r1, device=q.device)
                sc = sc.masked_fill(keys[None, None, :] > qi[None, :, None], float("-inf"))
            out[s0 + r0:s0 + r1] = (torch.softmax(sc, -1) @ vv).transpose(0, 1)
    return out


def torch_baseline(inputs):
    """What one writes without a varlen kernel: torch's fused attention one sequence at a time
    (K/V heads repeated for GQA), in the inputs' dtype."""
    import torch
    import torch.nn.functional as F
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    group = q.shape[1] // k.shape[1]
    out = torch.empty_like(q)
    cu = inputs["cu_seqlens_cpu"].tolist()
    for s0, s1 in zip(cu[:-1], cu[1:]):
        if s1 == s0:
            continue
        qq = q[s0:s1].transpose(0, 1)
        kk = k[s0:s1].repeat_interleave(group, 1).transpose(0, 1)
        vv = v[s0:s1].repeat_interleave(group, 1).transpose(0, 1)
        out[s0:s1] = F.scaled_dot_product_attention(qq, kk, vv, is_causal=inputs["causal"],
                                                    scale=inputs["sm_scale"]).transpose(0, 1)
    return out


def bytes_moved(point) -> int:
    """q read and out written once ([T, H_q, D]); k, v read once ([T, H_kv, D]: the GQA group
    shares them); cu_seqlens (int32, B + 1)."""
    _torch_dtype(point.get("dtype", "bf16"))
    T = int(seq_lengths(point).sum())
    return 2 * T * point["D"] * (2 * point["H_q"] + 2 * point["H_kv"]) + 4 * (point["B"] + 1)


def flops(point) -> int:
    """Two dots per (query, key) pair kept, 2 x 2 x D flops each, per query head; causal keeps
    n (n + 1) / 2 pairs of a sequence of n tokens, bidirectional n^2."""
    lens = seq_lengths(point)
    pairs = int((lens * (lens + 1) // 2).sum()) if point.get("causal", 1) else int((lens * lens).sum())
    return 4 * point["D"] * point["H_q"] * pairs


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (total_tokens // BLOCK_M + B query-block slots, H_q)."""
    lens = seq_lengths(point)
    return _grid_x(int(lens.sum()), int(point["B"]), cfg["BLOCK_M"]), point["H_q"]


def _plane_iterations(cfg, point) -> list[int]:
    """K/V tiles of each program of one head plane, in program-id order (0: returns at once)."""
    lens = seq_lengths(point).tolist()
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    causal = bool(point.get("causal", 1))
    its = []
    start = 0
    for s, n in enumerate(lens):
        slots = (start + n) // bm - start // bm + 1
        for b in range(slots):
            m0 = b * bm
            if m0 >= n:
                its.append(0)
            else:
                its.append(-(-(min(n, m0 + bm) if causal else n) // bn))
        start += n
    return its


def cta_iterations(cfg, point) -> list[int]:
    """K/V tiles of each CTA in launch order (program_id(0) fastest, then the H_q heads):
    cdiv(min(len, m0 + BLOCK_M), BLOCK_N) causal, cdiv(len, BLOCK_N) bidirectional; 0 for a
    slot past its sequence's end."""
    return _plane_iterations(cfg, point) * point["H_q"]


def loop_iterations(cfg, point) -> int:
    """K/V tiles per CTA: the mean over all the grid's CTAs (idle slots included), rounded up."""
    its = _plane_iterations(cfg, point)
    return -(-sum(its) // len(its))


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    h_q, h_kv, d = point["H_q"], point["H_kv"], point["D"]
    _check_heads(h_q, h_kv, d)
    T = int(seq_lengths(point).sum())
    q, o = (torch.empty((T, h_q, d), dtype=dt, device="meta") for _ in range(2))
    k, v = (torch.empty((T, h_kv, d), dtype=dt, device="meta") for _ in range(2))
    cu = torch.empty((point["B"] + 1,), dtype=torch.int32, device="meta")
    return _kernel_args(q, k, v, o, cu, 1.0 / math.sqrt(d), bool(point.get("causal", 1)), cfg)
