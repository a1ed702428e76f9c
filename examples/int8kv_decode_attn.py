"""GQA decode attention over an int8-quantized contiguous KV cache (one new query token per
sequence, per-token / per-head fp32 scales: LMDeploy's / vLLM's int8 KV-cache serving path),
split along the sequence (flash-decoding): a bare @triton.jit kernel, its merge kernel, and
the launcher.

    k[b, h, t, :] = k_cache[b, h, t, :] * k_scale[b, h, t]          (the same for v)
    s[b, hq, t]   = q[b, hq] . k[b, hq // G, t] * sm_scale           (t < seq_len[b])
    out[b, hq]    = softmax_t(s[b, hq, :seq_len[b]]) @ v[b, hq // G, :seq_len[b]]

q [B, Hq, D] fp16 / bf16 (unit last stride); k_cache, v_cache int8 [B, Hkv, S, D] (S: the
cache's capacity in tokens, unit last stride); k_scale, v_scale fp32 [B, Hkv, S] (unit last
stride); seq_len int32 [B], each in 1..S (a ragged batch: tokens past a sequence's length are
never read); out [B, Hq, D] in q's dtype. G = Hq / Hkv query heads share a kv head;
sm_scale is D^-1/2 by default.

Stage 1, `_kernel`, grid (NUM_SPLITS, Hkv, B), program id 0 fastest: a CTA owns one kv head
of one sequence, all G query heads of its group (a [BLOCK_G, D] tile, BLOCK_G = max(16,
next_pow2(G)) rows: the M side of the tensor-core dots; rows past G are zero queries, never
stored) and split `sp` of its tokens: split_len = cdiv(cdiv(len, NUM_SPLITS), BLOCK_N) *
BLOCK_N tokens (a BLOCK_N multiple, so only the sequence's last step is partial), tokens
sp * split_len .. min(len, (sp + 1) * split_len); a split starting past len returns at once
(short sequences leave trailing splits empty). Each BLOCK_N step loads the int8 K and V tiles
[BLOCK_N, D] and their BLOCK_N scales once for the whole group (each cache byte is read once
for its G heads) and
  * scores: the int8 keys widened to q's dtype (exact: |k| <= 127), s = q @ k^T in fp32, then
    each column times its token's k_scale (a per-token scale factors out of the dot over D);
  * online softmax in log2 units (exp2, running max m and sum l, fp32);
  * values: v_scale folded into the probabilities (p * v_scale[t], rounded to q's dtype once)
    instead of dequantizing the [BLOCK_N, D] tile: acc = acc * alpha + (p * v_scale) @ v_int8.
With NUM_SPLITS == 1 it writes acc / l straight to out (one kernel, no workspace); otherwise
acc / l to the fp32 workspace o_part [B, Hq, NUM_SPLITS, D] and m + log2(l) to lse
[B, Hq, NUM_SPLITS].

Stage 2, `_merge_kernel` (only when NUM_SPLITS > 1), grid (Hq, B): one CTA per (sequence,
query head) walks that sequence's non-empty splits (cdiv(len, split_len) of them, recomputed
from seq_len: no flags) and combines their [D] fp32 rows with the log-sum-exp weights into out.

Tunables: BLOCK_N (tokens a step, a power of two >= 16: the score dot's N, the value dot's K),
NUM_SPLITS (sequence splits >= 1: CTAs for few long sequences against the workspace round trip
and the merge launch), num_warps, num_stages (the K / V / scale loads' pipelining depth ahead of
the dots: num_stages - 1 buffers of 2 x BLOCK_N x D bytes).
Problem parameters (a workload point): B, Hq, Hkv, D, S (cache capacity), min_len, max_len
(each sequence's length uniform between them from a CPU generator seeded with len_seed: the
batch does not depend on the input seed), dtype (q's and out's: bf16 / fp16).
"""

from __future__ import annotations

from functools import lru_cache

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
MERGE_WARPS = 4


@triton.jit
def _kernel(Q, K, V, K_SCALE, V_SCALE, SEQ_LEN, O_PART, LSE, O, sm_scale,
            stride_qb, stride_qh, stride_kb, stride_kh, stride_kt, stride_vb, stride_vh, stride_vt,
            stride_ksb, stride_ksh, stride_vsb, stride_vsh,
            stride_pb, stride_ph, stride_ps, stride_lb, stride_lh, stride_ob, stride_oh,
            GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_G: tl.constexpr, NUM_SPLITS: tl.constexpr,
            BLOCK_N: tl.constexpr):
    sp = tl.program_id(0)
    hk = tl.program_id(1)
    b = tl.program_id(2)

    seq_len = tl.load(SEQ_LEN + b)
    split_len = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    start = sp * split_len
    end = tl.minimum(start + split_len, seq_len)
    if start >= end:                                   # an empty trailing split: the merge skips it
        return

    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    g_ok = offs_g < GROUP
    heads = hk * GROUP + offs_g                        # the group's query heads

    b64 = b.to(tl.int64)
    q = tl.load(Q + b64 * stride_qb + heads[:, None] * stride_qh + offs_d[None, :], mask=g_ok[:, None],
                other=0.0)                             # padded heads: zero rows, finite scores
    qk_scale = sm_scale * 1.4426950408889634           # log2(e): softmax with exp2
    k_head = K + b64 * stride_kb + hk * stride_kh
    v_head = V + b64 * stride_vb + hk * stride_vh
    ks_head = K_SCALE + b64 * stride_ksb + hk * stride_ksh
    vs_head = V_SCALE + b64 * stride_vsb + hk * stride_vsh

    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_DIM], tl.float32)
    for t0 in range(start, end, BLOCK_N):
        t = t0 + offs_n
        t_ok = t < end
        k = tl.load(k_head + t[:, None] * stride_kt + offs_d[None, :], mask=t_ok[:, None], other=0)
        ks = tl.load(ks_head + t, mask=t_ok, other=0.0)
        v = tl.load(v_head + t[:, None] * stride_vt + offs_d[None, :], mask=t_ok[:, None], other=0)
        vs = tl.load(vs_head + t, mask=t_ok, other=0.0)

        s = tl.dot(q, tl.trans(k.to(q.dtype)))        # [BLOCK_G, BLOCK_N] fp32, exact int8 keys
        s = s * (ks * qk_scale)[None, :]
        s = tl.where(t_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))          # finite: token t0 is always < end
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        pv = (p * vs[None, :]).to(q.dtype)             # v_scale folded into the weights
        acc = acc * alpha[:, None] + tl.dot(pv, v.to(q.dtype))
        m_i = m_new

    out = acc / l_i[:, None]
    if NUM_SPLITS == 1:
        o_ptr = O + b64 * stride_ob + heads[:, None] * stride_oh + offs_d[None, :]
        tl.store(o_ptr, out.to(O.dtype.element_ty), mask=g_ok[:, None])
    else:
        base = b64 * stride_pb + heads * stride_ph + sp * stride_ps
        tl.store(O_PART + base[:, None] + offs_d[None, :], out, mask=g_ok[:, None])
        tl.store(LSE + b64 * stride_lb + heads * stride_lh + sp, m_i + tl.log2(l_i), mask=g_ok)


@triton.jit
def _merge_kernel(O_PART, LSE, SEQ_LEN, O, stride_pb, stride_ph, stride_ps, stride_lb, stride_lh,
                  stride_ob, stride_oh, HEAD_DIM: tl.constexpr, NUM_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr):
    h = tl.program_id(0)
    b = tl.program_id(1)
    seq_len = tl.load(SEQ_LEN + b)
    split_len = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    live = tl.cdiv(seq_len, split_len)                 # the splits stage 1 wrote (>= 1)
    offs_d = tl.arange(0, HEAD_DIM)
    part = O_PART + b.to(tl.int64) * stride_pb + h * stride_ph
    lse_row = LSE + b.to(tl.int64) * stride_lb + h * stride_lh

    m = tl.load(lse_row)
    acc = tl.load(part + offs_d)
    total = 1.0
    for sp in range(1, live):
        lse = tl.load(lse_row + sp)
        o = tl.load(part + sp * stride_ps + offs_d)
        m_new = tl.maximum(m, lse)
        old = tl.exp2(m - m_new)
        w = tl.exp2(lse - m_new)
        acc = acc * old + o * w
        total = total * old + w
        m = m_new
    tl.store(O + b.to(tl.int64) * stride_ob + h * stride_oh + offs_d, (acc / total).to(O.dtype.element_ty))


# ---------------------------------------------------------------- launcher
ROLE = "held-out-23"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_N", "NUM_SPLITS", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 64, "NUM_SPLITS": 4, "num_warps": 4, "num_stages": 2}
# the study's sweep: 3 x 3 x 2 x 3 = 54 configs
SWEEP_AXES = {"BLOCK_N": [32, 64, 128], "NUM_SPLITS": [1, 4, 16], "num_warps": [4, 8], "num_stages": [2, 3, 4]}

# Decode steps with an int8 KV cache (2 x 128 int8 + 2 fp32 scales = 264 B per token and kv head,
# 2112 B per token over 8 kv heads), each moving 0.34-0.56 GB (the cache rows: 7-11x the 50 MB L2),
# ~70-170 us at 3.35-4.8 TB/s; 4 flops per int8 byte pair and query head: bandwidth-bound.
POINTS = [
    # Llama-3.1-8B (32 q / 8 kv heads, D 128), bf16, 4 long-context sequences of 32k-96k tokens
    # (a 96k-token cache each): 32 (sequence, kv head) units before any split, so the split
    # count decides how many of the 132 SMs stream the cache
    {"B": 4, "Hq": 32, "Hkv": 8, "D": 128, "S": 98304, "min_len": 32768, "max_len": 98304, "len_seed": 0,
     "dtype": "bf16"},
    # Qwen2.5-32B (40 q / 8 kv heads: G = 5, padded to a 16-row tile), bf16, 16 chats of 4k-16k
    # tokens: 128 units, about one wave unsplit
    {"B": 16, "Hq": 40, "Hkv": 8, "D": 128, "S": 16384, "min_len": 4096, "max_len": 16384, "len_seed": 0,
     "dtype": "bf16"},
    # Mistral-7B (32 q / 8 kv heads), fp16, a serving batch of 256 short sequences of 128-1536
    # tokens: 2048 units unsplit, most splits of a short sequence empty at NUM_SPLITS 16
    {"B": 256, "Hq": 32, "Hkv": 8, "D": 128, "S": 1536, "min_len": 128, "max_len": 1536, "len_seed": 0,
     "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _pow2(v) -> bool:
    return isinstance(v, int) and v >= 1 and not v & (v - 1)


def _check_cfg(cfg) -> None:
    bn, s = cfg["BLOCK_N"], cfg["NUM_SPLITS"]
    if not _pow2(bn) or bn < 16:
        raise ValueError(f"BLOCK_N={bn!r} must be a power of two >= 16 (a tl.dot operand side)")
    if not isinstance(s, int) or s < 1:
        raise ValueError(f"NUM_SPLITS={s!r} must be an int >= 1")


def _check_dims(Hq: int, Hkv: int, D: int) -> None:
    if not _pow2(D) or D < 16:
        raise ValueError(f"D={D} must be a power of two >= 16 (a tl.dot reduction side)")
    if Hkv < 1 or Hq < 1 or Hq % Hkv:
        raise ValueError(f"Hq={Hq} must be a positive multiple of Hkv={Hkv}")


def block_g(group: int) -> int:
    """Rows of the query tile: the group's heads padded to a power of two >= 16 (tl.dot's M)."""
    return max(16, triton.next_power_of_2(group))


@lru_cache(maxsize=32)
def _lengths_cached(B: int, lo: int, hi: int, seed: int):
    import torch
    if B < 1 or lo < 1 or hi < lo:
        raise ValueError(f"need B >= 1 and 1 <= min_len <= max_len; got B={B}, min_len={lo}, max_len={hi}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi + 1, (B,), generator=gen, dtype=torch.int64)


def seq_lengths(point):
    """The point's B sequence lengths (int64, CPU): uniform in min_len..max_len from a CPU
    generator seeded with len_seed (default 0): the same batch for every hook and input seed."""
    if point["max_len"] > point["S"]:
        raise ValueError(f"max_len={point['max_len']} exceeds the cache capacity S={point['S']}")
    return _lengths_cached(int(point["B"]), int(point["min_len"]), int(point["max_len"]),
                           int(point.get("len_seed", 0))).clone()


def _split_len(n: int, splits: int, block_n: int) -> int:
    return -(-(-(-n // splits)) // block_n) * block_n


def split_tiles(n: int, cfg) -> list[int]:
    """BLOCK_N steps of each of the NUM_SPLITS splits of a sequence of n tokens (0: empty)."""
    bn, s = cfg["BLOCK_N"], cfg["NUM_SPLITS"]
    sl = _split_len(n, s, bn)
    return [max(0, -(-(min(n, (i + 1) * sl) - i * sl) // bn)) for i in range(s)]


def _kernel_args(q, k_cache, v_cache, k_scale, v_scale, seq_len, o_part, lse, out, sm_scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, Hq, D = q.shape
    Hkv = k_cache.shape[1]
    return dict(Q=q, K=k_cache, V=v_cache, K_SCALE=k_scale, V_SCALE=v_scale, SEQ_LEN=seq_len, O_PART=o_part,
                LSE=lse, O=out, sm_scale=float(sm_scale),
                stride_qb=q.stride(0), stride_qh=q.stride(1),
                stride_kb=k_cache.stride(0), stride_kh=k_cache.stride(1), stride_kt=k_cache.stride(2),
                stride_vb=v_cache.stride(0), stride_vh=v_cache.stride(1), stride_vt=v_cache.stride(2),
                stride_ksb=k_scale.stride(0), stride_ksh=k_scale.stride(1),
                stride_vsb=v_scale.stride(0), stride_vsh=v_scale.stride(1),
                stride_pb=o_part.stride(0), stride_ph=o_part.stride(1), stride_ps=o_part.stride(2),
                stride_lb=lse.stride(0), stride_lh=lse.stride(1), stride_ob=out.stride(0), stride_oh=out.stride(1),
                GROUP=Hq // Hkv, HEAD_DIM=D, BLOCK_G=block_g(Hq // Hkv), NUM_SPLITS=cfg["NUM_SPLITS"],
                BLOCK_N=cfg["BLOCK_N"])


def _workspace(B: int, Hq: int, D: int, splits: int, device):
    """o_part [B, Hq, S, D] fp32 and lse [B, Hq, S] fp32 (S = NUM_SPLITS; with one split a
    [B, Hq, 1, 1] / [B, Hq, 1] stand-in the kernel never touches)."""
    import torch
    if splits == 1:
        return (torch.empty((B, Hq, 1, 1), dtype=torch.float32, device=device),
                torch.empty((B, Hq, 1), dtype=torch.float32, device=device))
    return (torch.empty((B, Hq, splits, D), dtype=torch.float32, device=device),
            torch.empty((B, Hq, splits), dtype=torch.float32, device=device))


def int8kv_decode_attention(q, k_cache, v_cache, k_scale, v_scale, seq_len, sm_scale: float | None = None, *,
                            out=None, BLOCK_N: int = 64, NUM_SPLITS: int = 4, num_warps: int = 4,
                            num_stages: int = 2):
    """Decode attention over an int8 KV cache. q [B, Hq, D] bf16 / fp16; k_cache, v_cache int8
    [B, Hkv, S, D]; k_scale, v_scale fp32 [B, Hkv, S]; seq_len int32 [B] (each in 1..S: not
    checked, that would sync). Any strides (copied only where the last one is not 1). Returns
    [B, Hq, D] in q's dtype (into `out` if given: that shape and dtype, unit last stride)."""
    import torch
    if q.dim() != 3 or k_cache.dim() != 4:
        raise ValueError(f"expected q [B, Hq, D] and k_cache / v_cache [B, Hkv, S, D]; got {tuple(q.shape)}, "
                         f"{tuple(k_cache.shape)}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"q must be bf16 / fp16; got {q.dtype}")
    B, Hq, D = q.shape
    Hkv, S = k_cache.shape[1], k_cache.shape[2]
    for name, t, shape, dt in (("k_cache", k_cache, (B, Hkv, S, D), torch.int8),
                               ("v_cache", v_cache, (B, Hkv, S, D), torch.int8),
                               ("k_scale", k_scale, (B, Hkv, S), torch.float32),
                               ("v_scale", v_scale, (B, Hkv, S), torch.float32),
                               ("seq_len", seq_len, (B,), torch.int32)):
        if t.dtype != dt or tuple(t.shape) != shape:
            raise ValueError(f"{name} must be {dt} {list(shape)}; got {t.dtype} {list(t.shape)}")
    _check_dims(Hq, Hkv, D)
    cfg = {"BLOCK_N": BLOCK_N, "NUM_SPLITS": NUM_SPLITS}
    _check_cfg(cfg)
    q, k_cache, v_cache, k_scale, v_scale = (t if t.stride(-1) == 1 else t.contiguous()
                                             for t in (q, k_cache, v_cache, k_scale, v_scale))
    seq_len = seq_len.contiguous()
    if sm_scale is None:
        sm_scale = D ** -0.5
    if out is None:
        out = torch.empty((B, Hq, D), dtype=q.dtype, device=q.device)
    elif tuple(out.shape) != (B, Hq, D) or out.dtype != q.dtype or out.stride(2) != 1:
        raise ValueError(f"out must be {q.dtype} [{B}, {Hq}, {D}] with unit last stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    o_part, lse = _workspace(B, Hq, D, NUM_SPLITS, q.device)
    args = _kernel_args(q, k_cache, v_cache, k_scale, v_scale, seq_len, o_part, lse, out, sm_scale, cfg)
    _kernel[(NUM_SPLITS, Hkv, B)](**args, num_warps=num_warps, num_stages=num_stages)
    if NUM_SPLITS > 1:
        _merge_kernel[(Hq, B)](**merge_args(o_part, lse, seq_len, out, cfg), num_warps=MERGE_WARPS, num_stages=1)
    return out


def merge_args(o_part, lse, seq_len, out, cfg) -> dict:
    """Every argument of one `_merge_kernel` launch, by name."""
    return dict(O_PART=o_part, LSE=lse, SEQ_LEN=seq_len, O=out, stride_pb=o_part.stride(0),
                stride_ph=o_part.stride(1), stride_ps=o_part.stride(2), stride_lb=lse.stride(0),
                stride_lh=lse.stride(1), stride_ob=out.stride(0), stride_oh=out.stride(1), HEAD_DIM=out.shape[2],
                NUM_SPLITS=cfg["NUM_SPLITS"], BLOCK_N=cfg["BLOCK_N"])


def _check_point(point) -> None:
    for k in ("B", "Hq", "Hkv", "D", "S"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    _check_dims(point["Hq"], point["Hkv"], point["D"])
    _torch_dtype(point.get("dtype", "bf16"))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q ~ N(0, 1); the int8 caches uniform in -127..127 (a per-token absmax quantization's codes
    spread over the whole range), their scales uniform in 0.004-0.03 (a token's absmax / 127 for
    K / V rows of std ~0.2-1.5); the whole capacity S filled (what lies past a sequence's length
    must not matter); the batch's lengths the point's (len_seed), not the seed's."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, Hq, Hkv, D, S = (point[k] for k in ("B", "Hq", "Hkv", "D", "S"))
    lens = seq_lengths(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn((B, Hq, D), generator=gen, device=device).to(dt)
    caches = [torch.randint(-127, 128, (B, Hkv, S, D), generator=gen, device=device, dtype=torch.int8)
              for _ in range(2)]
    scales = [0.004 + 0.026 * torch.rand((B, Hkv, S), generator=gen, device=device) for _ in range(2)]
    return {"q": q, "k_cache": caches[0], "v_cache": caches[1], "k_scale": scales[0], "v_scale": scales[1],
            "seq_len": lens.to(torch.int32).to(device), "sm_scale": D ** -0.5}


def launch(inputs, cfg):
    return int8kv_decode_attention(inputs["q"], inputs["k_cache"], inputs["v_cache"], inputs["k_scale"],
                                   inputs["v_scale"], inputs["seq_len"], inputs["sm_scale"],
                                   BLOCK_N=cfg["BLOCK_N"], NUM_SPLITS=cfg["NUM_SPLITS"],
                                   num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _attend(inputs, dtype):
    """Per sequence: dequantize its tokens, scores, softmax, @ v; in fp32 (dtype None) or in
    the inputs' dtype (dequantized to it, a bf16 / fp16 softmax output)."""
    import torch
    q, kc, vc, ks, vs = (inputs[k] for k in ("q", "k_cache", "v_cache", "k_scale", "v_scale"))
    scale = inputs["sm_scale"]
    B, Hq, D = q.shape
    Hkv = kc.shape[1]
    G = Hq // Hkv
    wt = torch.float32 if dtype is None else dtype
    out = torch.empty((B, Hq, D), dtype=wt, device=q.device)
    for b, n in enumerate(inputs["seq_len"].tolist()):
        k = kc[b, :, :n].to(wt) * ks[b, :, :n, None].to(wt)               # [Hkv, n, D]
        v = vc[b, :, :n].to(wt) * vs[b, :, :n, None].to(wt)
        qq = q[b].view(Hkv, G, D).to(wt)
        s = (qq @ k.transpose(1, 2)) * scale                                # [Hkv, G, n]
        out[b] = (torch.softmax(s.float(), -1).to(wt) @ v).reshape(Hq, D)
    return out


def reference(inputs):
    return _attend(inputs, None)


def torch_baseline(inputs):
    """Eager torch in q's dtype, one sequence at a time (dequantize, matmul, softmax, matmul)."""
    return _attend(inputs, inputs["q"].dtype)


def bytes_moved(point) -> int:
    """Each sequence's int8 K and V rows and their fp32 scales read once for all G heads of a kv
    head, q read and out written once, seq_len read once. The split workspace (B x Hq x
    NUM_SPLITS x (D + 1) fp32, written by stage 1 and read back by the merge) is not counted: it
    depends on the config and is not unavoidable (NUM_SPLITS 1 has none)."""
    _check_point(point)
    el = _torch_dtype(point.get("dtype", "bf16")).itemsize
    B, Hq, Hkv, D = point["B"], point["Hq"], point["Hkv"], point["D"]
    tokens = int(seq_lengths(point).sum())
    return Hkv * tokens * (2 * D + 2 * 4) + 2 * el * B * Hq * D + 4 * B


def flops(point) -> int:
    """Per (query head, token): the score dot and the value dot over D, 2 flops a multiply-add
    (padded heads and the scaling not counted)."""
    tokens = int(seq_lengths(point).sum())
    return 4 * point["Hq"] * tokens * point["D"]


def grid(cfg, point) -> tuple[int, int, int]:
    """The launch grid of `_kernel`: (NUM_SPLITS, Hkv, B)."""
    _check_cfg(cfg)
    return cfg["NUM_SPLITS"], point["Hkv"], point["B"]


def cta_iterations(cfg, point) -> list[int]:
    """BLOCK_N steps of each CTA in launch order (split fastest, then kv head, then sequence);
    0 for an empty trailing split (it returns at once)."""
    _check_cfg(cfg)
    return [it for n in seq_lengths(point).tolist() for _ in range(point["Hkv"]) for it in split_tiles(n, cfg)]


def loop_iterations(cfg, point) -> int:
    """BLOCK_N steps per CTA: the mean over the grid's CTAs (empty splits included), rounded up."""
    its = cta_iterations(cfg, point)
    return -(-sum(its) // len(its))


def secondary_kernels(cfg, point) -> list[dict]:
    """`_merge_kernel` when NUM_SPLITS > 1: one CTA (4 warps) per (sequence, query head), each step
    one split's fp32 [D] row and its lse (read back from what stage 1 just wrote: dram_bytes 0, as
    bytes_moved leaves the workspace out); iterations: the mean count of non-empty splits."""
    _check_cfg(cfg)
    if cfg["NUM_SPLITS"] == 1:
        return []
    lens = seq_lengths(point).tolist()
    live = sum(sum(1 for it in split_tiles(n, cfg) if it) for n in lens)
    return [{"name": "_merge_kernel", "grid": point["B"] * point["Hq"], "iterations": -(-live // len(lens)),
             "tile_bytes": 4 * point["D"] + 4, "dram_bytes": 0, "ahead": 0, "blocks_per_sm": 16}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: tensors on the meta device, except
    seq_len (the point's own, on the CPU: its values are read one per sequence at a program-id
    offset, so the ragged split sizes are visible)."""
    import torch
    _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, Hq, Hkv, D, S = (point[k] for k in ("B", "Hq", "Hkv", "D", "S"))
    q = torch.empty((B, Hq, D), dtype=dt, device="meta")
    kc = torch.empty((B, Hkv, S, D), dtype=torch.int8, device="meta")
    vc = torch.empty((B, Hkv, S, D), dtype=torch.int8, device="meta")
    ks = torch.empty((B, Hkv, S), dtype=torch.float32, device="meta")
    vs = torch.empty((B, Hkv, S), dtype=torch.float32, device="meta")
    lens = seq_lengths(point).to(torch.int32)
    out = torch.empty((B, Hq, D), dtype=dt, device="meta")
    o_part, lse = _workspace(B, Hq, D, cfg["NUM_SPLITS"], "meta")
    return _kernel_args(q, kc, vc, ks, vs, lens, o_part, lse, out, D ** -0.5, cfg)
