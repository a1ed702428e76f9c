"""Chunked-prefill attention over a paged KV cache (the prefix-prefill / unified attention of a
serving engine, vLLM / SGLang style), a bare @triton.jit kernel + its launcher.

    out[t, h] = softmax(q[t, h] . K_s[0:p + i + 1, h // G]^T * sm_scale) @ V_s[0:p + i + 1, h // G]

for the i-th new token t of sequence s, whose context holds ctx_s tokens: a cached prefix of
p = ctx_s - q_len_s tokens followed by the q_len_s tokens of this chunk (their K / V already
written to the cache), causal within the chunk. A decode step is the chunk q_len = 1; a batch
mixes decodes and long prefill chunks freely.

Layouts: q, out [total_q, H_q, D] (the chunks packed back to back; any token / head strides, D
contiguous), bf16 / fp16; k_cache, v_cache [num_blocks, PAGE, H_kv, D] (token t of sequence s
at page block_table[s, t // PAGE], slot t % PAGE; pages scattered over the pool);
block_table [B, max_pages] int32; cu_q_lens [B + 1] int32 (0 then the running chunk lengths);
ctx_lens [B] int32 (prefix + chunk, >= q_len >= 1). GQA: H_q = H_kv * G.

Grid (x, y) = (total_q // TOKS + B, H_q) or, with PACK_GQA, (..., H_kv). A CTA owns BLOCK_M
rows: without PACK_GQA, TOKS = BLOCK_M query tokens of one sequence and one query head; with
PACK_GQA, the G query heads of one K/V head are packed into the rows (row r: token r // G,
head r % G of the group), TOKS = BLOCK_M // G tokens, so the K/V a CTA streams serves G heads
at once (a decode row fills G rows of the tile instead of one). Sequence s owns the program ids
cu_q_lens[s] // TOKS + s .. cu_q_lens[s + 1] // TOKS + s (at least cdiv(q_len, TOKS) of them),
so the grid is known without reading the lengths (no host sync, CUDA-graph safe); a CTA finds
its sequence with a binary search over cu_q_lens and returns at once when its block starts past
the chunk (at most one such CTA per sequence and head plane). It walks the context BLOCK_N keys
at a time: each tile gathers its keys' page numbers from the block table (a tile may span
several pages or part of one), loads K and V rows through them, scores with one tl.dot, online
softmax in fp32 (exp2, running max and sum), adds P @ V with a second tl.dot (P rounded to the
input dtype). Keys below the block's first query position are seen by every row: those tiles
run unmasked; the rest up to the last row's position (the causal diagonal) are masked. A CTA
does cdiv(min(ctx, p + m0 + TOKS), BLOCK_N) tiles, so decode CTAs, CTAs early in a chunk and
CTAs over long prefixes do very different amounts of work (cta_iterations).

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), PACK_GQA (0 / 1: the G heads of a K/V head in
one CTA's rows), num_warps, num_stages (the K/V tile pipelining depth).
Problem parameters (a workload point): H_q, H_kv, D, PAGE, dtype, and the batch: B sequences with
q_len uniform in [q_min, q_max] over a cached prefix uniform in [prefix_min, prefix_max], then
(optional) B_long more of long_q tokens over a prefix in [long_prefix_min, long_prefix_max]
(decodes first, as a scheduler orders them); the lengths come from a CPU generator seeded with
len_seed (the same batch for every input seed), the page scatter from the input seed.
"""

from __future__ import annotations

import math
from functools import lru_cache

import triton
import triton.language as tl


@triton.jit
def _tiles(acc, l_i, m_i, q, k_head, v_head, bt_row, qpos, offs_n, offs_d, lo, hi, ctx, qk_scale,
           stride_kp, stride_ks, stride_vp, stride_vs, PAGE: tl.constexpr, BLOCK_N: tl.constexpr,
           MASKED: tl.constexpr):
    """Context keys lo .. hi (lo a multiple of BLOCK_N) into the running (acc, l_i, m_i). The
    tile's keys are looked up in the block table (page, slot); MASKED tiles mask the loads past
    hi and the scores past each row's causal position or the context end."""
    for start in range(lo, hi, BLOCK_N):
        keys = start + offs_n
        if MASKED:
            k_ok = keys < hi
            page = tl.load(bt_row + keys // PAGE, mask=k_ok, other=0)
        else:
            page = tl.load(bt_row + keys // PAGE)
        slot = keys % PAGE
        k_off = page.to(tl.int64) * stride_kp + slot * stride_ks
        v_off = page.to(tl.int64) * stride_vp + slot * stride_vs
        if MASKED:
            k = tl.load(k_head + k_off[:, None] + offs_d[None, :], mask=k_ok[:, None], other=0.0)
            v = tl.load(v_head + v_off[:, None] + offs_d[None, :], mask=k_ok[:, None], other=0.0)
        else:
            k = tl.load(k_head + k_off[:, None] + offs_d[None, :])
            v = tl.load(v_head + v_off[:, None] + offs_d[None, :])
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            keep = (keys[None, :] <= qpos[:, None]) & (keys[None, :] < ctx)
            s = tl.where(keep, s, float("-inf"))
        # m_new is finite: every row sees key 0 (or, past the first tile, already has a finite max)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _kernel(Q, K_cache, V_cache, O, block_table, cu_q_lens, ctx_lens, sm_scale, num_seqs,
            stride_qt, stride_qh, stride_kp, stride_ks, stride_kh, stride_vp, stride_vs, stride_vh,
            stride_ot, stride_oh, stride_bt,
            G: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE: tl.constexpr, PACK_GQA: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    hid = tl.program_id(1)                       # a query head, or a K/V head with PACK_GQA
    RPT: tl.constexpr = G if PACK_GQA else 1     # rows per query token
    TOKS: tl.constexpr = BLOCK_M // RPT          # query tokens per CTA

    # the sequence of this program: the last s with cu_q_lens[s] // TOKS + s <= pid
    lo = 0
    hi = num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        if tl.load(cu_q_lens + mid) // TOKS + mid <= pid:
            lo = mid + 1
        else:
            hi = mid
    seq = lo - 1
    q0 = tl.load(cu_q_lens + seq)
    q_len = tl.load(cu_q_lens + seq + 1) - q0
    m0 = (pid - (q0 // TOKS + seq)) * TOKS       # first chunk token of this block
    if m0 >= q_len:
        return
    ctx = tl.load(ctx_lens + seq)
    prefix = ctx - q_len

    offs_r = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    tok = m0 + offs_r // RPT
    head = hid * RPT + offs_r % RPT
    kvh = (hid * RPT) // G
    row_ok = (offs_r < TOKS * RPT) & (tok < q_len)
    qpos = prefix + tok                          # each row's position in the context
    tok64 = (q0 + tok).to(tl.int64)
    q = tl.load(Q + tok64[:, None] * stride_qt + head[:, None] * stride_qh + offs_d[None, :],
                mask=row_ok[:, None], other=0.0)
    qk_scale = sm_scale * 1.4426950408889634     # log2(e): softmax with exp2

    bt_row = block_table + seq.to(tl.int64) * stride_bt
    k_head = K_cache + kvh * stride_kh
    v_head = V_cache + kvh * stride_vh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    full_hi = ((prefix + m0) // BLOCK_N) * BLOCK_N     # keys every row sees (all < ctx)
    end = tl.minimum(ctx, prefix + m0 + TOKS)          # past the block's last row: skipped
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_head, v_head, bt_row, qpos, offs_n, offs_d, 0, full_hi, ctx,
                           qk_scale, stride_kp, stride_ks, stride_vp, stride_vs, PAGE, BLOCK_N, False)
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_head, v_head, bt_row, qpos, offs_n, offs_d, full_hi, end, ctx,
                           qk_scale, stride_kp, stride_ks, stride_vp, stride_vs, PAGE, BLOCK_N, True)

    out = acc / l_i[:, None]
    tl.store(O + tok64[:, None] * stride_ot + head[:, None] * stride_oh + offs_d[None, :],
             out.to(O.dtype.element_ty), mask=row_ok[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "PACK_GQA", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 64, "PACK_GQA": 0, "num_warps": 4, "num_stages": 2}

POINTS = [
    # Llama-3-8B (32 q heads, 8 K/V heads, D 128) chunked prefill: 16 sequences, each a 512-token
    # chunk over a 1k-8k cached prefix, PAGE 16, bf16: 8192 new tokens, 84k context tokens (K/V
    # 0.34 GB), 0.67 TFLOP (compute-bound)
    {"B": 16, "q_min": 512, "q_max": 512, "prefix_min": 1024, "prefix_max": 8192, "len_seed": 0,
     "H_q": 32, "H_kv": 8, "D": 128, "PAGE": 16, "dtype": "bf16"},
    # the same model, a decode-heavy mixed batch: 96 requests of 1-8 new tokens (decodes and
    # speculative verifies) over 1k-4k cached tokens, then 2 prefill chunks of 1024 tokens over
    # 2k-4k prefixes, PAGE 16, fp16: 2464 new tokens, 247k context tokens (K/V 1.0 GB) for 0.15
    # TFLOP (bandwidth-bound decode CTAs, most of them 1-8 useful rows, beside long chunk CTAs)
    {"B": 96, "q_min": 1, "q_max": 8, "prefix_min": 1024, "prefix_max": 4096, "len_seed": 0,
     "B_long": 2, "long_q": 1024, "long_prefix_min": 2048, "long_prefix_max": 4096,
     "H_q": 32, "H_kv": 8, "D": 128, "PAGE": 16, "dtype": "fp16"},
    # Qwen2.5-7B-like (28 q heads, 4 K/V heads: G = 7, D 128) long-context chunked prefill: 4
    # sequences of 1024-token chunks over 8k-24k prefixes (contexts 9.2k-18.6k), PAGE 32, bf16:
    # 0.82 TFLOP over 58k context tokens (K/V 0.12 GB); few, long CTAs (up to 580 tiles of 32 keys)
    {"B": 4, "q_min": 1024, "q_max": 1024, "prefix_min": 8192, "prefix_max": 24576, "len_seed": 0,
     "H_q": 28, "H_kv": 4, "D": 128, "PAGE": 32, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg, G: int = 1) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["PACK_GQA"] not in (0, 1):
        raise ValueError(f"PACK_GQA={cfg['PACK_GQA']} must be 0 or 1")
    if cfg["PACK_GQA"] and cfg["BLOCK_M"] < G:
        raise ValueError(f"BLOCK_M={cfg['BLOCK_M']} with PACK_GQA needs >= G={G} rows (one token's heads)")


def _check_point(point) -> None:
    h_q, h_kv, d, page = point["H_q"], point["H_kv"], point["D"], point["PAGE"]
    if h_q < 1 or h_kv < 1 or h_q % h_kv:
        raise ValueError(f"H_q={h_q} must be a positive multiple of H_kv={h_kv} (grouped-query attention)")
    if d < 16 or d > 256 or d & (d - 1):
        raise ValueError(f"D={d} must be a power of two in 16..256 (the head dim, a constexpr)")
    if page < 1 or page & (page - 1):
        raise ValueError(f"PAGE={page} must be a power of two (tokens per cache page)")
    _torch_dtype(point.get("dtype", "bf16"))


@lru_cache(maxsize=32)
def _lengths_cached(key: tuple):
    import torch
    p = dict(key)
    B, B_long = int(p["B"]), int(p.get("B_long", 0))
    if B < 1 or not 1 <= p["q_min"] <= p["q_max"] or not 0 <= p["prefix_min"] <= p["prefix_max"]:
        raise ValueError(f"need B >= 1, 1 <= q_min <= q_max, 0 <= prefix_min <= prefix_max; got {p}")
    gen = torch.Generator().manual_seed(int(p.get("len_seed", 0)))
    q = torch.randint(p["q_min"], p["q_max"] + 1, (B,), generator=gen)
    pre = torch.randint(p["prefix_min"], p["prefix_max"] + 1, (B,), generator=gen)
    if B_long:
        q = torch.cat([q, torch.full((B_long,), int(p["long_q"]))])
        pre = torch.cat([pre, torch.randint(p["long_prefix_min"], p["long_prefix_max"] + 1, (B_long,),
                                            generator=gen)])
    return q.to(torch.int64), (pre + q).to(torch.int64)


def seq_lengths(point):
    """(q_lens, ctx_lens), int64 CPU tensors of the point's batch: the same for every input seed."""
    keys = ("B", "q_min", "q_max", "prefix_min", "prefix_max", "len_seed", "B_long", "long_q",
            "long_prefix_min", "long_prefix_max")
    q, c = _lengths_cached(tuple((k, point[k]) for k in keys if k in point))
    return q.clone(), c.clone()


def _block_table(ctx_lens, page: int, seed: int):
    """A [B, max_pages] int32 table (CPU) whose used entries are a random permutation of a pool of
    num_blocks pages (a quarter of the pool left spare, as a cache holds other requests' pages);
    unused entries 0, as vLLM pads. Returns (table, num_blocks)."""
    import torch
    pages = [(int(c) + page - 1) // page for c in ctx_lens]
    used = sum(pages)
    num_blocks = used + used // 4 + 1
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_blocks, generator=gen)[:used].to(torch.int32)
    table = torch.zeros((len(pages), max(pages)), dtype=torch.int32)
    at = 0
    for s, n in enumerate(pages):
        table[s, :n] = perm[at:at + n]
        at += n
    return table, num_blocks


def _cu(q_lens):
    import torch
    cu = torch.zeros(len(q_lens) + 1, dtype=torch.int32)
    cu[1:] = torch.cumsum(q_lens, 0).to(torch.int32)
    return cu


def _tok_per_cta(cfg, G: int) -> int:
    return cfg["BLOCK_M"] // (G if cfg["PACK_GQA"] else 1)


def _kernel_args(q, k_cache, v_cache, o, block_table, cu_q_lens, ctx_lens, sm_scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(Q=q, K_cache=k_cache, V_cache=v_cache, O=o, block_table=block_table, cu_q_lens=cu_q_lens,
                ctx_lens=ctx_lens, sm_scale=float(sm_scale), num_seqs=ctx_lens.shape[0],
                stride_qt=q.stride(0), stride_qh=q.stride(1),
                stride_kp=k_cache.stride(0), stride_ks=k_cache.stride(1), stride_kh=k_cache.stride(2),
                stride_vp=v_cache.stride(0), stride_vs=v_cache.stride(1), stride_vh=v_cache.stride(2),
                stride_ot=o.stride(0), stride_oh=o.stride(1), stride_bt=block_table.stride(0),
                G=q.shape[1] // k_cache.shape[2], HEAD_DIM=q.shape[2], PAGE=k_cache.shape[1],
                PACK_GQA=cfg["PACK_GQA"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"])


def _grid(total_q: int, num_seqs: int, h_q: int, h_kv: int, cfg) -> tuple[int, int]:
    G = h_q // h_kv
    return total_q // _tok_per_cta(cfg, G) + num_seqs, (h_kv if cfg["PACK_GQA"] else h_q)


def paged_prefill_attn(q, k_cache, v_cache, block_table, cu_q_lens, ctx_lens, sm_scale=None, *, out=None,
                       BLOCK_M=64, BLOCK_N=64, PACK_GQA=0, num_warps=4, num_stages=2):
    """Attention of the packed chunk queries q [total_q, H_q, D] over each sequence's paged context
    (k_cache / v_cache [num_blocks, PAGE, H_kv, D], block_table [B, max_pages] int32, cu_q_lens
    [B + 1] int32, ctx_lens [B] int32 with ctx_lens >= the chunk lengths), causal within the
    chunk. Returns [total_q, H_q, D] in q's dtype (into `out` if given)."""
    import torch
    if q.dtype not in (torch.bfloat16, torch.float16) or k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        raise ValueError(f"q, k_cache, v_cache must share one dtype of bf16 / fp16; got "
                         f"{q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    if q.dim() != 3 or k_cache.dim() != 4 or k_cache.shape != v_cache.shape or q.shape[2] != k_cache.shape[3]:
        raise ValueError(f"expected q [T, H_q, D], k_cache = v_cache [blocks, PAGE, H_kv, D]; got "
                         f"{tuple(q.shape)}, {tuple(k_cache.shape)}, {tuple(v_cache.shape)}")
    T, h_q, d = q.shape
    h_kv, page = k_cache.shape[2], k_cache.shape[1]
    _check_point({"H_q": h_q, "H_kv": h_kv, "D": d, "PAGE": page})
    if q.stride(2) != 1 or k_cache.stride(3) != 1 or v_cache.stride(3) != 1:
        raise ValueError("the head dim must be contiguous in q, k_cache and v_cache")
    B = ctx_lens.shape[0]
    if cu_q_lens.shape != (B + 1,) or block_table.dim() != 2 or block_table.shape[0] != B:
        raise ValueError(f"expected cu_q_lens [B + 1], block_table [B, pages] for B={B}; got "
                         f"{tuple(cu_q_lens.shape)}, {tuple(block_table.shape)}")
    if any(t.dtype != torch.int32 for t in (block_table, cu_q_lens, ctx_lens)) or block_table.stride(1) != 1:
        raise ValueError("block_table, cu_q_lens and ctx_lens must be int32 (the table row-contiguous)")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "PACK_GQA": PACK_GQA}
    _check_cfg(cfg, h_q // h_kv)
    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.stride(2) != 1:
        raise ValueError(f"out must be {q.dtype} {tuple(q.shape)} with a contiguous head dim")
    if T == 0:
        return out
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(d)
    grid = _grid(T, B, h_q, h_kv, cfg)
    _kernel[grid](**_kernel_args(q, k_cache, v_cache, out, block_table, cu_q_lens, ctx_lens, sm_scale, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q and the cache pool N(0, 1) (every page, used or spare), the point's lengths, a block table
    scattering each sequence's pages over the pool at random (from the seed), all drawn on the CPU."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q_lens, ctx_lens = seq_lengths(point)
    table, num_blocks = _block_table(ctx_lens, point["PAGE"], seed)
    gen = torch.Generator().manual_seed(seed)
    T = int(q_lens.sum())
    q = torch.randn((T, point["H_q"], point["D"]), generator=gen).to(dt)
    shape = (num_blocks, point["PAGE"], point["H_kv"], point["D"])
    k_cache = torch.randn(shape, generator=gen).to(dt)
    v_cache = torch.randn(shape, generator=gen).to(dt)
    return {"q": q.to(device), "k_cache": k_cache.to(device), "v_cache": v_cache.to(device),
            "block_table": table.to(device), "cu_q_lens": _cu(q_lens).to(device),
            "ctx_lens": ctx_lens.to(torch.int32).to(device), "sm_scale": 1.0 / math.sqrt(point["D"])}


def launch(inputs, cfg):
    return paged_prefill_attn(inputs["q"], inputs["k_cache"], inputs["v_cache"], inputs["block_table"],
                              inputs["cu_q_lens"], inputs["ctx_lens"], inputs["sm_scale"],
                              BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], PACK_GQA=cfg["PACK_GQA"],
                              num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _gather(inputs, s: int, dtype):
    """Sequence s: its chunk queries [q_len, H_q, D] and its context K, V [ctx, H_kv, D] gathered
    from the pages, in `dtype`; (q, k, v, prefix)."""
    q0, q1 = int(inputs["cu_q_lens"][s]), int(inputs["cu_q_lens"][s + 1])
    ctx = int(inputs["ctx_lens"][s])
    page = inputs["k_cache"].shape[1]
    pages = inputs["block_table"][s, :(ctx + page - 1) // page].long()
    k = inputs["k_cache"][pages].flatten(0, 1)[:ctx].to(dtype)
    v = inputs["v_cache"][pages].flatten(0, 1)[:ctx].to(dtype)
    return inputs["q"][q0:q1].to(dtype), k, v, ctx - (q1 - q0)


def reference(inputs):
    """Per sequence and in fp64: the context gathered through the block table, scores, the causal
    mask (query i sees keys 0 .. prefix + i), softmax, @ V; fp32 out [total_q, H_q, D]."""
    import torch
    q = inputs["q"]
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    G = q.shape[1] // inputs["k_cache"].shape[2]
    for s in range(inputs["ctx_lens"].shape[0]):
        qs, k, v, prefix = _gather(inputs, s, torch.float64)
        n, ctx = qs.shape[0], k.shape[0]
        k = k.repeat_interleave(G, dim=1)
        v = v.repeat_interleave(G, dim=1)
        scores = torch.einsum("qhd,khd->hqk", qs, k) * inputs["sm_scale"]
        pos = prefix + torch.arange(n, device=q.device)
        keep = torch.arange(ctx, device=q.device)[None, :] <= pos[:, None]
        scores = scores.masked_fill(~keep, float("-inf"))
        out[int(inputs["cu_q_lens"][s]):int(inputs["cu_q_lens"][s + 1])] = \
            torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).float()
    return out


def torch_baseline(inputs):
    """What a torch user writes: per sequence, gather the pages, scaled_dot_product_attention in
    the input dtype with an explicit causal-over-prefix mask (GQA by enable_gqa)."""
    import torch
    import torch.nn.functional as F
    q = inputs["q"]
    out = torch.empty_like(q)
    for s in range(inputs["ctx_lens"].shape[0]):
        qs, k, v, prefix = _gather(inputs, s, q.dtype)
        n, ctx = qs.shape[0], k.shape[0]
        keep = torch.arange(ctx, device=q.device)[None, :] <= (prefix + torch.arange(n, device=q.device))[:, None]
        o = F.scaled_dot_product_attention(qs.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                           attn_mask=keep, scale=inputs["sm_scale"], enable_gqa=True)
        out[int(inputs["cu_q_lens"][s]):int(inputs["cu_q_lens"][s + 1])] = o.transpose(0, 1)
    return out


def bytes_moved(point) -> int:
    """q read and out written once; each sequence's context K and V read once per K/V head (the
    G query heads of a head share it); the block table's used entries and the lengths."""
    _check_point(point)
    el = 2
    q_lens, ctx_lens = seq_lengths(point)
    T, ctx = int(q_lens.sum()), int(ctx_lens.sum())
    pages = sum((int(c) + point["PAGE"] - 1) // point["PAGE"] for c in ctx_lens)
    return 2 * T * point["H_q"] * point["D"] * el + 2 * ctx * point["H_kv"] * point["D"] * el \
        + 4 * pages + 4 * (2 * len(q_lens) + 1)


def flops(point) -> int:
    """Two GEMMs (QK^T, PV) over exactly the visible (query, key) pairs: query i of a chunk over a
    prefix p sees p + i + 1 keys."""
    q_lens, ctx_lens = seq_lengths(point)
    pairs = sum(int(n) * (int(c) - int(n)) + int(n) * (int(n) + 1) // 2 for n, c in zip(q_lens, ctx_lens))
    return 4 * pairs * point["H_q"] * point["D"]


def grid(cfg, point) -> tuple[int, int]:
    """(total_q // TOKS + B, H_q), or H_kv planes with PACK_GQA; TOKS = BLOCK_M (// G packed)."""
    q_lens, _ = seq_lengths(point)
    return _grid(int(q_lens.sum()), len(q_lens), point["H_q"], point["H_kv"], cfg)


def _plane_iterations(cfg, point) -> list[int]:
    """K/V tiles of each program_id(0) in one head plane: cdiv(min(ctx, prefix + m0 + TOKS),
    BLOCK_N) for a block starting at chunk token m0, 0 for a slot past its chunk."""
    q_lens, ctx_lens = seq_lengths(point)
    toks = _tok_per_cta(cfg, point["H_q"] // point["H_kv"])
    bn = cfg["BLOCK_N"]
    its, q0 = [], 0
    for s, (n, c) in enumerate(zip(q_lens.tolist(), ctx_lens.tolist())):
        slots = (q0 + n) // toks - q0 // toks + 1
        for b in range(slots):
            m0 = b * toks
            its.append(-(-min(c, c - n + m0 + toks) // bn) if m0 < n else 0)
        q0 += n
    return its


def cta_iterations(cfg, point) -> list[int]:
    """K/V tiles of each CTA in launch order (program_id(0) fastest, then the head planes)."""
    return _plane_iterations(cfg, point) * grid(cfg, point)[1]


def loop_iterations(cfg, point) -> int:
    """K/V tiles per CTA: the mean over the working CTAs, rounded up."""
    its = [i for i in _plane_iterations(cfg, point) if i]
    return -(-sum(its) // len(its))


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`: q / caches / out on the meta device; the block
    table (seed 0's scatter) and the length tensors as CPU int32 tensors with data."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q_lens, ctx_lens = seq_lengths(point)
    table, num_blocks = _block_table(ctx_lens, point["PAGE"], 0)
    T = int(q_lens.sum())
    q, o = (torch.empty((T, point["H_q"], point["D"]), dtype=dt, device="meta") for _ in range(2))
    k, v = (torch.empty((num_blocks, point["PAGE"], point["H_kv"], point["D"]), dtype=dt, device="meta")
            for _ in range(2))
    return _kernel_args(q, k, v, o, table, _cu(q_lens), ctx_lens.to(torch.int32), 1.0 / math.sqrt(point["D"]),
                        cfg)
