"""Block-sparse causal attention prefill (the "selected blocks" branch of NSA, MInference's
block-sparse pattern), a bare @triton.jit kernel + its launcher.

    out[b, h, i] = softmax_j(q[b, h, i] . k[b, h // G, j] * sm_scale) @ v[b, h // G, j]
                   over the keys j <= i of the key blocks query block i // 64 selected

q [B, H, S, D], k, v [B, H_kv, S, D] (one dtype, bf16 / fp16; any batch / head / token
strides, the head dim contiguous, so [B, S, H, D] buffers pass as transposed views), G = H //
H_kv query heads sharing one K/V head (GQA; G = 1 is plain MHA). The sparsity is given per
(batch, query head, query block of KV_BLOCK = 64 tokens): block_idx int32 [B, H, NQB, TOPK]
(NQB = cdiv(S, 64)) lists key blocks of 64 tokens, block_count int32 [B, H, NQB] how many of
a row's entries are used (1..TOPK; entries past it are never read, -1 by convention). A
row's entries are distinct key blocks <= its query block, the diagonal block (the query
block itself) last -- the kernel relies on that order: the entries before the last are
walked unmasked, the last one with the causal mask. out [B, H, S, D] in q's dtype. The
softmax is the online one in fp32 and in log2 units (exp2): running max m and row sum l,
the fp32 [BLOCK_M, D] accumulator rescaled by exp2(m_old - m_new) before P @ V is added (P
rounded to the input dtype for that tensor-core dot), one division at the end.

Grid: one CTA per (BLOCK_M query rows, query head, batch); BLOCK_M divides the 64-token
query block, so the 64 // BLOCK_M CTAs of a query block read the same index row and gather
the same key blocks (L2 serves the repeats). A CTA flattens its selected blocks into a
stream of count * 64 key tokens (token t is key block idx[t // 64], row t % 64) and walks it
BLOCK_N tokens at a time: BLOCK_N <= 64 reads one block index per step (a scalar load) and
loads contiguous rows of that block; BLOCK_N = 128 gathers two selected blocks per step (a
vector of two indices, per-row addresses) -- bigger dots, half the steps. Steps wholly
before the diagonal block are unmasked; the rest (the step holding the diagonal, a
straddling 128-token step's off-diagonal half) are masked: keys past a row (causal), past
the stream's end, past S (a ragged last block). Diagonal keys past the CTA's last row are
skipped. So a CTA does floor((count - 1) * 64 / BLOCK_N) unmasked steps and cdiv(the rest
of the stream up to its last row, BLOCK_N) masked ones, count = the row's block_count: the
first TOPK - 1 query blocks of a head select fewer (ragged work, cta_iterations). HEADS_FASTEST orders the grid: 0 = (row tiles, H, B), a head's query
blocks run together (they gather from one K/V head, its blocks shared in L2); 1 = (H, row
tiles, B), all heads of one row range run together (every K/V head's blocks at once: more
L2 footprint at long S).

make_inputs draws the selection NSA-style, per (b, h, query block i) on a CPU generator:
the sink block 0, the diagonal i, and min(TOPK, i + 1) - 2 distinct blocks uniformly among
1 .. i - 1, ascending -- a random gather over the head's whole past.

Tunables: BLOCK_M (16 / 32 / 64: divides the 64-token query block), BLOCK_N (powers of two
16..128: <= 64 a step inside one selected block, 128 two blocks a step), HEADS_FASTEST (0 /
1, the grid order), num_warps, num_stages (K/V gather pipelining depth).
Problem parameters (a workload point): B, H (query heads), H_kv, S (tokens), D (head dim,
a constexpr), TOPK (selected blocks per query block), dtype.
"""

from __future__ import annotations

import math
from functools import lru_cache

import triton
import triton.language as tl

KV_BLOCK = 64           # tokens of a key block, and of a query block of the index
LOG2E = 1.4426950408889634


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, idx_row, offs_m, offs_n, offs_d, lo, hi, seq_len, qk_scale,
            stride_ks, stride_vs, KV_BLOCK: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Stream tokens lo .. hi (lo a multiple of BLOCK_N) of the CTA's selected blocks into the
    running (acc, l_i, m_i). MASKED steps mask tokens past hi, keys past S and keys past a row."""
    for t0 in range(lo, hi, BLOCK_N):
        if BLOCK_N <= KV_BLOCK:     # one selected block a step: a scalar index, contiguous rows
            blk = tl.load(idx_row + t0 // KV_BLOCK)
            kpos = blk * KV_BLOCK + (t0 % KV_BLOCK) + offs_n
            if MASKED:
                t_ok = t0 + offs_n < hi
        else:                       # BLOCK_N // KV_BLOCK selected blocks a step: per-row gather
            t = t0 + offs_n
            if MASKED:
                t_ok = t < hi
                blk = tl.load(idx_row + t // KV_BLOCK, mask=t_ok, other=0)
            else:
                blk = tl.load(idx_row + t // KV_BLOCK)
            kpos = blk * KV_BLOCK + t % KV_BLOCK
        k_ptrs = k_base + kpos.to(tl.int64)[:, None] * stride_ks + offs_d[None, :]
        v_ptrs = v_base + kpos.to(tl.int64)[:, None] * stride_vs + offs_d[None, :]
        if MASKED:
            ld_ok = t_ok & (kpos < seq_len)
            k = tl.load(k_ptrs, mask=ld_ok[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=ld_ok[:, None], other=0.0)
        else:                       # blocks before the diagonal: wholly below the CTA's rows, < S
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            keep = t_ok[None, :] & (kpos[None, :] <= offs_m[:, None])
            s = tl.where(keep, s, float("-inf"))
        # finite: a row's first step holds a key it sees (an off-diagonal block, or the diagonal
        # block's first key, <= every row of the block); m_i only grows after that
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _kernel(Q, K, V, O, BLOCK_IDX, BLOCK_COUNT, sm_scale, seq_len, num_heads, num_qblocks, topk,
            stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
            stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
            GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, KV_BLOCK: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEADS_FASTEST: tl.constexpr):
    if HEADS_FASTEST:
        h = tl.program_id(0)
        mt = tl.program_id(1)
    else:
        mt = tl.program_id(0)
        h = tl.program_id(1)
    b = tl.program_id(2)
    kv_h = h // GROUP
    m0 = mt * BLOCK_M
    qb = m0 // KV_BLOCK

    row = (b * num_heads + h) * num_qblocks + qb            # the (b, h, query block) index row
    count = tl.load(BLOCK_COUNT + row)
    idx_row = BLOCK_IDX + row.to(tl.int64) * topk

    offs_m = m0 + tl.arange(0, BLOCK_M)                     # query positions
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    m_ok = offs_m < seq_len
    q_base = Q + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    q = tl.load(q_base + offs_m.to(tl.int64)[:, None] * stride_qs + offs_d[None, :], mask=m_ok[:, None], other=0.0)
    k_base = K + b.to(tl.int64) * stride_kb + kv_h.to(tl.int64) * stride_kh
    v_base = V + b.to(tl.int64) * stride_vb + kv_h.to(tl.int64) * stride_vh
    qk_scale = sm_scale * 1.4426950408889634                # log2(e): softmax with exp2

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    t_diag = (count - 1) * KV_BLOCK                         # the diagonal block's first token in the stream
    full_hi = (t_diag // BLOCK_N) * BLOCK_N                 # steps wholly before it: no mask
    t_end = t_diag + (m0 % KV_BLOCK) + BLOCK_M              # diagonal keys past the last row: skipped
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, idx_row, offs_m, offs_n, offs_d, 0, full_hi,
                            seq_len, qk_scale, stride_ks, stride_vs, KV_BLOCK, BLOCK_N, False)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, idx_row, offs_m, offs_n, offs_d, full_hi, t_end,
                            seq_len, qk_scale, stride_ks, stride_vs, KV_BLOCK, BLOCK_N, True)

    out = acc / l_i[:, None]
    o_base = O + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
    tl.store(o_base + offs_m.to(tl.int64)[:, None] * stride_os + offs_d[None, :], out.to(O.dtype.element_ty),
             mask=m_ok[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "HEADS_FASTEST", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 64, "HEADS_FASTEST": 0, "num_warps": 4, "num_stages": 3}

# Each point's K/V is 67-134 MB (> the 50 MB L2); the gathered K/V traffic (every CTA's selected
# blocks) is 2-9 GB at BLOCK_M 64 (twice that at 32), served mostly by L2 when a head's query
# blocks run together (HEADS_FASTEST 0).
POINTS = [
    # Llama-3-8B (32 q heads, 8 K/V heads, D 128), one 32k-token prompt, 16 blocks (1024 keys) a
    # query block (NSA's selection size): q / out 268 MB each, k + v 134 MB, 0.53 TFLOP; 16k-33k CTAs
    # of 16 gathered blocks; a K/V head's 16 MB of keys is read by its 4 q heads x 512 query blocks
    {"B": 1, "H": 32, "H_kv": 8, "S": 32768, "D": 128, "TOPK": 16, "dtype": "bf16"},
    # the same model tensor-parallel over 2 GPUs (16 q heads, 4 K/V heads a GPU), 4 prompts of 8k,
    # 32 blocks a query block (25-100 % dense): 0.47 TFLOP, long per-CTA loops; the first 31 of 128
    # query blocks of each head select fewer (ragged)
    {"B": 4, "H": 16, "H_kv": 4, "S": 8192, "D": 128, "TOPK": 32, "dtype": "bf16"},
    # Llama-3.2-1B (32 q heads, 8 K/V heads, D 64), 8 prompts of 4k, 8 blocks a query block, fp16:
    # 0.12 TFLOP in short CTAs (<= 8 steps of 64): per-CTA costs (index row, q load, epilogue) weigh
    {"B": 8, "H": 32, "H_kv": 8, "S": 4096, "D": 64, "TOPK": 8, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg) -> None:
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    if bm not in (16, 32, 64):
        raise ValueError(f"BLOCK_M={bm} must be 16, 32 or 64 (a divisor of the {KV_BLOCK}-token query block)")
    if bn < 16 or bn > 2 * KV_BLOCK or bn & (bn - 1):
        raise ValueError(f"BLOCK_N={bn} must be a power of two in 16..{2 * KV_BLOCK}")
    if cfg.get("HEADS_FASTEST", 0) not in (0, 1):
        raise ValueError(f"HEADS_FASTEST={cfg['HEADS_FASTEST']} must be 0 or 1")


def _check_shape(h_q: int, h_kv: int, d: int, topk: int) -> None:
    if h_q < 1 or h_kv < 1 or h_q % h_kv:
        raise ValueError(f"H={h_q} must be a positive multiple of H_kv={h_kv} (grouped-query attention)")
    if d < 16 or d > 256 or d & (d - 1):
        raise ValueError(f"D={d} must be a power of two in 16..256 (the head dim, a constexpr)")
    if topk < 1:
        raise ValueError(f"TOPK={topk} must be >= 1")


def _row_tiles(S: int, block_m: int) -> int:
    return triton.cdiv(S, block_m)


def _grid(S: int, H: int, B: int, cfg) -> tuple[int, int, int]:
    tiles = _row_tiles(S, cfg["BLOCK_M"])
    return (H, tiles, B) if cfg.get("HEADS_FASTEST", 0) else (tiles, H, B)


def _kernel_args(q, k, v, o, block_idx, block_count, sm_scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, H, S, D = q.shape
    return dict(Q=q, K=k, V=v, O=o, BLOCK_IDX=block_idx, BLOCK_COUNT=block_count, sm_scale=float(sm_scale),
                seq_len=S, num_heads=H, num_qblocks=block_idx.shape[2], topk=block_idx.shape[3],
                stride_qb=q.stride(0), stride_qh=q.stride(1), stride_qs=q.stride(2),
                stride_kb=k.stride(0), stride_kh=k.stride(1), stride_ks=k.stride(2),
                stride_vb=v.stride(0), stride_vh=v.stride(1), stride_vs=v.stride(2),
                stride_ob=o.stride(0), stride_oh=o.stride(1), stride_os=o.stride(2),
                GROUP=H // k.shape[1], HEAD_DIM=D, KV_BLOCK=KV_BLOCK,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], HEADS_FASTEST=int(cfg.get("HEADS_FASTEST", 0)))


def block_sparse_attn(q, k, v, block_idx, block_count, sm_scale: float | None = None, *, out=None,
                      BLOCK_M: int = 64, BLOCK_N: int = 64, HEADS_FASTEST: int = 0, num_warps: int = 4,
                      num_stages: int = 3):
    """Causal attention over selected 64-token key blocks. q [B, H, S, D], k, v [B, H_kv, S, D]
    (one dtype, fp16 / bf16, unit stride along D), block_idx int32 [B, H, cdiv(S, 64), TOPK],
    block_count int32 [B, H, cdiv(S, 64)] (both on q's device; each row: block_count distinct
    key blocks <= its query block, the diagonal last -- not checked on the device). Returns
    [B, H, S, D] in q's dtype (into `out` if given: that shape and dtype, unit stride along D)."""
    import torch
    if q.dim() != 4 or k.dim() != 4 or v.shape != k.shape or k.shape[0] != q.shape[0] \
            or k.shape[2:] != q.shape[2:]:
        raise ValueError(f"expected q [B, H, S, D] and k, v [B, H_kv, S, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k, v must share one fp16 / bf16 dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    B, H, S, D = q.shape
    nqb = triton.cdiv(S, KV_BLOCK)
    if block_idx.dim() != 4 or tuple(block_idx.shape[:3]) != (B, H, nqb) or block_idx.dtype != torch.int32:
        raise ValueError(f"block_idx must be int32 [B, H, cdiv(S, {KV_BLOCK}), TOPK] = [{B}, {H}, {nqb}, TOPK]; "
                         f"got {block_idx.dtype} {tuple(block_idx.shape)}")
    if tuple(block_count.shape) != (B, H, nqb) or block_count.dtype != torch.int32:
        raise ValueError(f"block_count must be int32 [{B}, {H}, {nqb}]; got {block_count.dtype} "
                         f"{tuple(block_count.shape)}")
    _check_shape(H, k.shape[1], D, block_idx.shape[3])
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "HEADS_FASTEST": HEADS_FASTEST}
    _check_cfg(cfg)
    q, k, v = (t if t.stride(3) == 1 else t.contiguous() for t in (q, k, v))
    block_idx, block_count = block_idx.contiguous(), block_count.contiguous()
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if out is None:
        out = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    elif tuple(out.shape) != (B, H, S, D) or out.dtype != q.dtype or out.stride(3) != 1:
        raise ValueError(f"out must be {q.dtype} [{B}, {H}, {S}, {D}] with unit stride along D; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    if S == 0 or B == 0:
        return out
    grid = _grid(S, H, B, cfg)
    if grid[1] > 65535:
        raise ValueError(f"grid {grid}: the second dimension exceeds 65535 (use HEADS_FASTEST=0 or a larger BLOCK_M)")
    _kernel[grid](**_kernel_args(q, k, v, out, block_idx, block_count, sm_scale, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    return out


def block_counts(S: int, topk: int) -> list[int]:
    """Selected blocks of each query block (the same for every b, h): min(TOPK, i + 1)."""
    return [min(topk, i + 1) for i in range(triton.cdiv(S, KV_BLOCK))]


def select_blocks(B: int, H: int, S: int, topk: int, gen):
    """NSA-style selection from the CPU generator `gen`: per (b, h, query block i), the sink block 0,
    min(TOPK, i + 1) - 2 distinct blocks uniform among 1 .. i - 1, ascending, then the diagonal i
    (i = 0: just block 0). -> (block_idx int32 [B, H, NQB, TOPK], -1 past the count; block_count
    int32 [B, H, NQB])."""
    import torch
    if topk < 2:
        raise ValueError(f"TOPK={topk}: the selection keeps the sink and the diagonal, so TOPK >= 2")
    nqb = triton.cdiv(S, KV_BLOCK)
    i = torch.arange(nqb)
    count = torch.tensor(block_counts(S, topk), dtype=torch.int64)
    picks = min(topk - 2, nqb)
    idx = torch.full((B, H, nqb, topk), -1, dtype=torch.int64)
    idx[..., 0] = 0
    if picks > 0:
        score = torch.rand((B, H, nqb, nqb), generator=gen)
        cand = (i[None, :] >= 1) & (i[None, :] < i[:, None])            # blocks 1 .. i - 1
        score = torch.where(cand, score, torch.full_like(score, 2.0))
        val, pos = score.topk(picks, dim=-1, largest=False)
        pos = torch.where(val < 2.0, pos, torch.full_like(pos, nqb))       # not a candidate: sorts last
        pos = pos.sort(dim=-1).values
        idx[..., 1:1 + picks] = torch.where(pos < nqb, pos, torch.full_like(pos, -1))
    # the diagonal at position count - 1 (i = 0: over the sink, which is the same block)
    idx.scatter_(-1, (count - 1).view(1, 1, nqb, 1).expand(B, H, nqb, 1), i.view(1, 1, nqb, 1).expand(B, H, nqb, 1))
    return idx.to(torch.int32), count.to(torch.int32).view(1, 1, nqb).expand(B, H, nqb).contiguous()


@lru_cache(maxsize=8)
def _selection_seed0(B: int, H: int, S: int, topk: int):
    import torch
    gen = torch.Generator().manual_seed(0)
    return select_blocks(B, H, S, topk, gen)


def _point_shape(point):
    B, H, h_kv, S, D, topk = (int(point[n]) for n in ("B", "H", "H_kv", "S", "D", "TOPK"))
    _check_shape(H, h_kv, D, topk)
    if B < 1 or S < 1:
        raise ValueError(f"need B >= 1 and S >= 1; got B={B}, S={S}")
    _torch_dtype(point.get("dtype", "bf16"))
    return B, H, h_kv, S, D, topk


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v ~ N(0, 1) and the block selection, drawn on the CPU (two generators seeded with
    `seed`: the selection's is its own, so seed 0's is what example_args and bytes_moved use),
    then moved."""
    import torch
    B, H, h_kv, S, D, topk = _point_shape(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((B, H, S, D), generator=gen).to(dt).to(device)
    k = torch.randn((B, h_kv, S, D), generator=gen).to(dt).to(device)
    v = torch.randn((B, h_kv, S, D), generator=gen).to(dt).to(device)
    idx, cnt = select_blocks(B, H, S, topk, torch.Generator().manual_seed(seed))
    return {"q": q, "k": k, "v": v, "block_idx": idx.to(device), "block_count": cnt.to(device),
            "sm_scale": 1.0 / math.sqrt(D)}


def launch(inputs, cfg):
    return block_sparse_attn(inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"], inputs["block_count"],
                             inputs["sm_scale"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                             HEADS_FASTEST=cfg.get("HEADS_FASTEST", 0), num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])


def _gathered(x, idx, nqb: int):
    """x [S, D] -> the selected blocks of each query block, [NQB, TOPK * 64, D] (padded keys: zeros)."""
    import torch
    S, D = x.shape
    blocks = torch.zeros((nqb * KV_BLOCK, D), dtype=x.dtype, device=x.device)
    blocks[:S] = x
    return blocks.view(nqb, KV_BLOCK, D)[idx].reshape(idx.shape[0], -1, D)


def _selection_mask(idx, cnt, q_lo: int, S: int):
    """[n, 64, TOPK * 64] bool: key kept for (query block q_lo + r, row) -- a used entry, key <= query, < S."""
    import torch
    n, topk = idx.shape
    keys = (idx[:, :, None] * KV_BLOCK + torch.arange(KV_BLOCK, device=idx.device)).reshape(n, 1, -1)
    used = (torch.arange(topk, device=idx.device)[None, :] < cnt[:, None])
    used = used[:, :, None].expand(n, topk, KV_BLOCK).reshape(n, 1, -1)
    qpos = ((q_lo + torch.arange(n, device=idx.device))[:, None] * KV_BLOCK
            + torch.arange(KV_BLOCK, device=idx.device)[None, :])[:, :, None]
    return used & (keys <= qpos) & (keys < S)


def reference(inputs, max_elems: int = 1 << 24):
    """softmax over each query's selected keys (used entries, keys <= the query), in fp32, one
    (b, h) at a time in chunks of query blocks ([chunk, TOPK * 64, D] gathered keys at most
    ~max_elems elements). Makes no use of the diagonal-last order the kernel relies on."""
    import torch
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    idx_all, cnt_all = inputs["block_idx"].long(), inputs["block_count"].long()
    B, H, S, D = q.shape
    group = H // k.shape[1]
    nqb, topk = idx_all.shape[2], idx_all.shape[3]
    out = torch.zeros((B, H, S, D), dtype=torch.float32, device=q.device)
    chunk = max(1, max_elems // (topk * KV_BLOCK * D))
    for b in range(B):
        for h in range(H):
            kk, vv = k[b, h // group].float(), v[b, h // group].float()
            qq = torch.zeros((nqb * KV_BLOCK, D), dtype=torch.float32, device=q.device)
            qq[:S] = q[b, h].float()
            qq = qq.view(nqb, KV_BLOCK, D)
            res = torch.zeros((nqb, KV_BLOCK, D), dtype=torch.float32, device=q.device)
            for c0 in range(0, nqb, chunk):
                c1 = min(nqb, c0 + chunk)
                idx = idx_all[b, h, c0:c1].clamp(min=0)
                keep = _selection_mask(idx, cnt_all[b, h, c0:c1], c0, S)
                sc = (qq[c0:c1] @ _gathered(kk, idx, nqb).transpose(1, 2)) * inputs["sm_scale"]
                sc = sc.masked_fill(~keep, float("-inf"))
                res[c0:c1] = torch.softmax(sc, -1) @ _gathered(vv, idx, nqb)
            out[b, h] = res.reshape(-1, D)[:S]
    return out


def torch_baseline(inputs, max_elems: int = 1 << 26):
    """What one writes without a kernel: gather each query block's selected K/V blocks (torch
    indexing) and run torch's fused attention over them with the selection mask, in the inputs'
    dtype, one (b, h) at a time in chunks of query blocks."""
    import torch
    import torch.nn.functional as F
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    idx_all, cnt_all = inputs["block_idx"].long(), inputs["block_count"].long()
    B, H, S, D = q.shape
    group = H // k.shape[1]
    nqb, topk = idx_all.shape[2], idx_all.shape[3]
    out = torch.empty_like(q)
    chunk = max(1, max_elems // (topk * KV_BLOCK * D))
    for b in range(B):
        for h in range(H):
            kk, vv = k[b, h // group], v[b, h // group]
            qq = torch.zeros((nqb * KV_BLOCK, D), dtype=q.dtype, device=q.device)
            qq[:S] = q[b, h]
            qq = qq.view(nqb, KV_BLOCK, D)
            res = torch.empty((nqb, KV_BLOCK, D), dtype=q.dtype, device=q.device)
            for c0 in range(0, nqb, chunk):
                c1 = min(nqb, c0 + chunk)
                idx = idx_all[b, h, c0:c1].clamp(min=0)
                keep = _selection_mask(idx, cnt_all[b, h, c0:c1], c0, S)
                res[c0:c1] = F.scaled_dot_product_attention(qq[c0:c1], _gathered(kk, idx, nqb), _gathered(vv, idx, nqb),
                                                            attn_mask=keep, scale=inputs["sm_scale"])
            out[b, h] = res.reshape(-1, D)[:S]
    return out


def _kv_tokens_selected(point) -> int:
    """K (= V) tokens some query block of a K/V head's group selects, seed 0's selection."""
    import torch
    B, H, h_kv, S, D, topk = _point_shape(point)
    idx, _ = _selection_seed0(B, H, S, topk)
    nqb = idx.shape[2]
    hit = torch.zeros((B, h_kv, nqb + 1), dtype=torch.bool)
    grouped = idx.long().view(B, h_kv, -1)
    hit.scatter_(2, torch.where(grouped < 0, torch.full_like(grouped, nqb), grouped), True)
    sizes = torch.full((nqb,), KV_BLOCK, dtype=torch.int64)
    sizes[-1] = S - (nqb - 1) * KV_BLOCK
    return int((hit[:, :, :nqb].long() * sizes).sum())


def bytes_moved(point) -> int:
    """q read and out written once; k and v: every key block some query head of its K/V head
    selects, once (seed 0's selection; with these points' random picks, all blocks); block_idx
    and block_count (int32) once."""
    B, H, h_kv, S, D, topk = _point_shape(point)
    nqb = triton.cdiv(S, KV_BLOCK)
    return 2 * (2 * B * H * S * D + 2 * _kv_tokens_selected(point) * D) + 4 * B * H * nqb * (topk + 1)


def _keys_per_row(S: int, topk: int) -> list[int]:
    counts = block_counts(S, topk)
    return [(counts[r // KV_BLOCK] - 1) * KV_BLOCK + r % KV_BLOCK + 1 for r in range(S)]


def flops(point) -> int:
    """Two dots per (query, kept key), 2 x 2 x D flops each, per query head: a row r of query
    block i keeps (count_i - 1) * 64 off-diagonal keys and r % 64 + 1 diagonal ones."""
    B, H, h_kv, S, D, topk = _point_shape(point)
    counts = block_counts(S, topk)
    full, rem = divmod(S, KV_BLOCK)
    pairs = sum((counts[i] - 1) * KV_BLOCK * KV_BLOCK + KV_BLOCK * (KV_BLOCK + 1) // 2 for i in range(full))
    if rem:
        pairs += (counts[full] - 1) * KV_BLOCK * rem + rem * (rem + 1) // 2
    return 4 * D * B * H * pairs


def grid(cfg, point) -> tuple[int, int, int]:
    """The launch grid: (cdiv(S, BLOCK_M) row tiles, H, B), or (H, row tiles, B) with HEADS_FASTEST."""
    B, H, h_kv, S, D, topk = _point_shape(point)
    return _grid(S, H, B, cfg)


def tile_steps(cfg, S: int, topk: int) -> list[int]:
    """BLOCK_N steps of each row tile (the kernel's two loops), for make_inputs' block counts."""
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    counts = block_counts(S, topk)
    its = []
    for mt in range(_row_tiles(S, bm)):
        m0 = mt * bm
        t_diag = (counts[m0 // KV_BLOCK] - 1) * KV_BLOCK
        full_hi = t_diag // bn * bn
        t_end = t_diag + m0 % KV_BLOCK + bm
        its.append(full_hi // bn + -(-(t_end - full_hi) // bn))
    return its


def cta_iterations(cfg, point) -> list[int]:
    """Steps of each CTA in launch order (program_id(0) fastest): the row tile's steps, the same
    for every head and batch."""
    B, H, h_kv, S, D, topk = _point_shape(point)
    steps = tile_steps(cfg, S, topk)
    if cfg.get("HEADS_FASTEST", 0):
        return [s for s in steps for _ in range(H)] * B
    return steps * (H * B)


def loop_iterations(cfg, point) -> int:
    """Steps per CTA: the mean over the row tiles, rounded up (the typical CTA: all but the first
    TOPK - 1 query blocks do the full count)."""
    B, H, h_kv, S, D, topk = _point_shape(point)
    steps = tile_steps(cfg, S, topk)
    return -(-sum(steps) // len(steps))


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`: q, k, v, out on the meta device (no memory);
    block_idx and block_count with data, on the CPU (seed 0's selection, what make_inputs(point)
    draws: the index rows each CTA reads)."""
    import torch
    B, H, h_kv, S, D, topk = _point_shape(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q, o = (torch.empty((B, H, S, D), dtype=dt, device="meta") for _ in range(2))
    k, v = (torch.empty((B, h_kv, S, D), dtype=dt, device="meta") for _ in range(2))
    idx, cnt = _selection_seed0(B, H, S, topk)
    return _kernel_args(q, k, v, o, idx.clone(), cnt.clone(), 1.0 / math.sqrt(D), cfg)
