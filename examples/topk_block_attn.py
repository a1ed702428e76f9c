"""Selected-block ("top-k block") sparse attention forward, the selection branch of DeepSeek's
Native Sparse Attention (NSA) and of MoBA, a bare @triton.jit kernel + its launcher.

    out[b, t, h] = softmax_j(q[b, t, h] . k[b, j, h // G] * sm_scale) @ v[b, j, h // G]
                   over the keys j <= pos(t) of the blocks block_idx[b, t, h // G, :] lists

q [B, T, Hq, DK] (the T query tokens, at absolute positions pos(t) = T_kv - T + t: a prefill chunk
at the end of the sequence, or the whole prompt when T = T_kv), k [B, T_kv, Hkv, DK], v [B, T_kv,
Hkv, DV] (the key / value cache; one dtype, bf16 / fp16; any batch / token / head strides, the
head dim contiguous, so q, k, v may be views of one packed QKV projection), G = Hq // Hkv query
heads share a K/V head (GQA; Hkv = 1 is MQA). block_idx int32 [B, T, Hkv, S]: for each token and
K/V head the S key blocks of BS tokens it attends to (block n = keys n BS .. n BS + BS - 1), as
NSA's top-k over its compressed-attention scores gives them: any order, distinct, shared by the
G heads of the group. An entry < 0 (-1 pads a shorter list) or past the token's own block is
skipped; inside the token's own block (the diagonal) the keys past pos(t) are masked (causal).
A token with no visible key gets out = 0. out [B, T, Hq, DV] in q's dtype, contiguous.

One program handles QPP consecutive query tokens of one (K/V head, batch): program_id(0) the
token tile (fastest: the CTAs running together gather from one or two K/V heads' cache, the
L2's working set), program_id(1) the K/V head, program_id(2) the batch. For each token it loads
the whole query group as a [G_PAD, DK] tile (G_PAD = max(16, next_pow2(G)) rows: tl.dot needs 16;
NSA's point is that G >= 16 heads fill them) and walks its S selected blocks as a
flat stream of S * BS / BLOCK_N steps of BLOCK_N keys: step j reads the index entry j // (BS /
BLOCK_N) (a scalar load), gathers BLOCK_N consecutive K rows of that block (DK contiguous elements
each, through the index: indirect addressing) and the same V rows, and runs the online softmax in
fp32 and log2 units (exp2): s = q k^T (tensor-core dot, fp32), running max m and sum l, the
[G_PAD, DV] accumulator rescaled by exp2(m_old - m_new) before p v is added (p rounded to the
input dtype for that dot); one division at the end. Every step carries the visibility mask (the
block valid for the token, the key <= pos): loads of invisible keys are masked off (no traffic),
their logits -inf; m starts at -1e30, finite, so a step with no visible key adds exactly 0. The
stream has the same length for every CTA (a skipped entry's steps still run, their loads masked),
so the loop pipelines (num_stages: the scalar index load runs a stage ahead of the gathers).
Head dims need not be powers of two: DK = DK0 + DK1 (DK0 the largest power of two <= DK, DK1 0 or
a power of two >= 16; 192 = 128 + 64, NSA's query-key size) -- two dots accumulate s; DV the same
way, two accumulators. Offsets of the batch, the query tokens and the heads are int64; the key
offsets inside one (batch, K/V head) slice of the cache are int32 (OFF64 = 0) unless the slice
spans 2^31 elements (OFF64 = 1, a constexpr the launcher sets): 32-bit address arithmetic for
the gathers. A last program's token slots past T redo token T - 1 (same values, same program),
and the query rows past G load head G - 1 again, so only the output rows past G are masked.

make_inputs draws the selection NSA-style on a CPU generator, per (b, t, K/V head): the first
block (the attention sink) and the token's own block always, the rest min(S, blocks <= pos) - 2
distinct blocks uniformly among the causal ones in between, in a random order; -1 pads the rest
(only tokens within S blocks of the sequence start have fewer).

Tunables: BLOCK_N (keys a step: 16 / 32 / 64 (128 allowed), a divisor of BS; the q k^T dot's N and
the p v dot's K), QPP (query tokens a program: 1 / 2 / 4, run one after the other: fewer, longer
CTAs, 576-640 of them at 4), num_warps (4 / 8; 2 spills at G 64 and at BLOCK_N 64 with DK 192),
num_stages (1-3: the gather pipeline's depth, a K and a V tile in shared memory per stage, up to
88 KB at BLOCK_N 64 and DK 192).
Problem parameters (a workload point): B, T (query tokens), T_kv (keys), Hq, Hkv, DK, DV, BS
(block size), S (selected blocks a token), dtype.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl


@triton.jit
def _kernel(Q, K, V, O, IDX, sm_scale, T, q_offset, n_sel,
            stride_qb, stride_qt, stride_qh, stride_kb, stride_kt, stride_kh,
            stride_vb, stride_vt, stride_vh, stride_ob, stride_ot, stride_oh,
            stride_ib, stride_it, stride_ih,
            G: tl.constexpr, G_PAD: tl.constexpr, DK0: tl.constexpr, DK1: tl.constexpr,
            DV0: tl.constexpr, DV1: tl.constexpr, BS: tl.constexpr, OFF64: tl.constexpr,
            BLOCK_N: tl.constexpr, QPP: tl.constexpr):
    SPB: tl.constexpr = BS // BLOCK_N                   # steps a selected block
    pid = tl.program_id(0)
    kvh = tl.program_id(1)
    b = tl.program_id(2)
    rg = tl.arange(0, G_PAD)
    rn = tl.arange(0, BLOCK_N)
    rk0 = tl.arange(0, DK0)
    rv0 = tl.arange(0, DV0)
    qk_scale = sm_scale * 1.4426950408889634            # log2(e): the softmax in exp2
    heads = (kvh * G + tl.minimum(rg, G - 1)).to(tl.int64)   # the group's heads; padding rows: the last again
    b64 = b.to(tl.int64)
    k_base = K + b64 * stride_kb + kvh.to(tl.int64) * stride_kh
    v_base = V + b64 * stride_vb + kvh.to(tl.int64) * stride_vh
    n_steps = n_sel * SPB

    for i in range(QPP):
        # a last program's tokens past T redo token T - 1 (the same program's: its values again)
        tok = tl.minimum(pid * QPP + i, T - 1)
        pos = q_offset + tok                            # the token's absolute position
        last_blk = pos // BS                            # its own (diagonal) block
        t64 = tok.to(tl.int64)
        q_rows = Q + b64 * stride_qb + t64 * stride_qt + heads[:, None] * stride_qh
        q0 = tl.load(q_rows + rk0[None, :])
        if DK1 > 0:
            rk1 = DK0 + tl.arange(0, DK1)
            q1 = tl.load(q_rows + rk1[None, :])
        idx_row = IDX + b64 * stride_ib + t64 * stride_it + kvh.to(tl.int64) * stride_ih

        m_i = tl.full([G_PAD], -1.0e30, tl.float32)
        l_i = tl.zeros([G_PAD], tl.float32)
        acc0 = tl.zeros([G_PAD, DV0], tl.float32)
        if DV1 > 0:
            rv1 = DV0 + tl.arange(0, DV1)
            acc1 = tl.zeros([G_PAD, DV1], tl.float32)
        for j in range(n_steps):
            blk = tl.load(idx_row + j // SPB)
            blk = tl.where((blk >= 0) & (blk <= last_blk), blk, -1)    # skipped: -1, keys < 0
            kpos = blk * BS + (j % SPB) * BLOCK_N + rn              # the step's key positions
            vis = (kpos >= 0) & (kpos <= pos)                       # [BLOCK_N]
            if OFF64:
                kp = kpos.to(tl.int64)
            else:                                       # the (batch, head) slices span < 2^31 elements
                kp = kpos
            k_rows = k_base + kp[:, None] * stride_kt
            k0 = tl.load(k_rows + rk0[None, :], mask=vis[:, None], other=0.0)
            if DK1 > 0:
                k1 = tl.load(k_rows + rk1[None, :], mask=vis[:, None], other=0.0)
            v_rows = v_base + kp[:, None] * stride_vt
            v0 = tl.load(v_rows + rv0[None, :], mask=vis[:, None], other=0.0)
            if DV1 > 0:
                v1 = tl.load(v_rows + rv1[None, :], mask=vis[:, None], other=0.0)
            s = tl.dot(q0, tl.trans(k0))
            if DK1 > 0:
                s = tl.dot(q1, tl.trans(k1), s)
            s = tl.where(vis[None, :], s * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            pv = p.to(v0.dtype)
            acc0 = tl.dot(pv, v0, acc0 * alpha[:, None])
            if DV1 > 0:
                acc1 = tl.dot(pv, v1, acc1 * alpha[:, None])
            m_i = m_new

        inv_l = 1.0 / tl.where(l_i > 0.0, l_i, 1.0)        # no visible key: acc = 0, out = 0
        o_rows = O + b64 * stride_ob + t64 * stride_ot + heads[:, None] * stride_oh
        if G == G_PAD:
            tl.store(o_rows + rv0[None, :], (acc0 * inv_l[:, None]).to(O.dtype.element_ty))
            if DV1 > 0:
                tl.store(o_rows + rv1[None, :], (acc1 * inv_l[:, None]).to(O.dtype.element_ty))
        else:
            o_ok = (rg < G)[:, None]
            tl.store(o_rows + rv0[None, :], (acc0 * inv_l[:, None]).to(O.dtype.element_ty), mask=o_ok)
            if DV1 > 0:
                tl.store(o_rows + rv1[None, :], (acc1 * inv_l[:, None]).to(O.dtype.element_ty), mask=o_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-24"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_N", "QPP", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 32, "QPP": 1, "num_warps": 4, "num_stages": 2}
SWEEP_AXES = {"BLOCK_N": [16, 32, 64], "QPP": [1, 2, 4], "num_warps": [4, 8], "num_stages": [1, 2, 3]}

# Chunked prefill with NSA / MoBA block selection: a chunk of T query tokens at the end of a
# T_kv-token cache, every token gathering S x BS keys per K/V head. bytes_moved counts what the
# kernel gathers (each token's selected K and V rows, 1.3-1.8 GB a point), most of which the L2
# serves (a point's whole K/V cache is 17-168 MB, read from DRAM about once where it fits);
# 14-64 GFLOP of dot work. They differ in the query group (16 exact, 48 padded to 64 dot rows, 8
# padded to 16), the head dims (192 / 128: a split q k^T dot; 128 / 128), the block size (64 /
# 512: 1-4 or 8-32 steps a selected block), the number of blocks (16 / 3), the cache against the
# 50 MB L2 (3x over, a third, about equal) and the dtype. 2304-2560 (token, K/V head) pairs a point:
# >= 576 CTAs at QPP 4.
POINTS = [
    # NSA's own 27B configuration (64 query heads in 4 GQA groups of 16, dk 192, dv 128, selection
    # blocks of 64, 16 selected), one 64k-token sequence, a 640-token prefill chunk at its end:
    # q 15.7 MB, k 101 MB + v 67 MB cache, 1.68 GB gathered (2560 token-groups x 16 x 64 keys),
    # 26.8 GFLOP
    {"B": 1, "T": 640, "T_kv": 65536, "Hq": 64, "Hkv": 4, "DK": 192, "DV": 128, "BS": 64, "S": 16,
     "dtype": "bf16"},
    # StarCoder-15B (GPTBigCode: 48 query heads on one K/V head, MQA, D 128) with NSA selection,
    # fp16, 4 prompts of its full 8k context, each with a 640-token chunk at the end: G 48 (padded
    # to 64 dot rows), a 17 MB cache, 1.34 GB gathered, 64.4 GFLOP
    {"B": 4, "T": 640, "T_kv": 8192, "Hq": 48, "Hkv": 1, "DK": 128, "DV": 128, "BS": 64, "S": 16,
     "dtype": "fp16"},
    # Llama-3.1-70B sharded over 8 GPUs (8 query heads, 1 K/V head a GPU, D 128) with MoBA-style
    # coarse selection (blocks of 512 tokens, 3 a token: the first, the current and one more), 3
    # sequences of 32k with 768-token chunks: G 8 (padded to 16 dot rows), a 50 MB cache, 1.81 GB
    # gathered, 14.5 GFLOP
    {"B": 3, "T": 768, "T_kv": 32768, "Hq": 8, "Hkv": 1, "DK": 128, "DV": 128, "BS": 512, "S": 3,
     "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _split_dim(name: str, d: int) -> tuple[int, int]:
    """A head dim as (a power of two, 0 or a smaller power of two >= 16): the kernel's two dot parts."""
    if isinstance(d, int) and 16 <= d <= 256:
        d0 = 1 << (d.bit_length() - 1)
        d1 = d - d0
        if d1 == 0 or (d1 >= 16 and d1 & (d1 - 1) == 0):
            return d0, d1
    raise ValueError(f"{name}={d!r} must be in 16..256 and a power of two or the sum of two powers of two "
                     f">= 16 (64, 96, 128, 192, ...)")


def _group_pad(g: int) -> int:
    return max(16, triton.next_power_of_2(g))


def _check_cfg(cfg) -> None:
    bn = cfg["BLOCK_N"]
    if bn not in (16, 32, 64, 128):
        raise ValueError(f"BLOCK_N={bn!r} must be 16, 32, 64 or 128")
    if not isinstance(cfg["QPP"], int) or cfg["QPP"] < 1:
        raise ValueError(f"QPP={cfg['QPP']!r} must be a positive int (query tokens a program)")
    w = cfg["num_warps"]
    if w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two in 1..16")


def _check_shapes(T: int, T_kv: int, h_q: int, h_kv: int, dk: int, dv: int, bs: int, s: int) -> int:
    """The group size G; ValueError naming the first bad value."""
    for name, v in (("T", T), ("T_kv", T_kv), ("Hq", h_q), ("Hkv", h_kv), ("BS", bs), ("S", s)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    if T > T_kv:
        raise ValueError(f"T={T} query tokens must be at most T_kv={T_kv} keys (the queries are the last T)")
    if h_q % h_kv:
        raise ValueError(f"Hq={h_q} must be a multiple of Hkv={h_kv} (grouped-query attention)")
    g = h_q // h_kv
    if g > 128:
        raise ValueError(f"Hq / Hkv = {g} query heads a group; at most 128 are supported")
    _split_dim("DK", dk)
    _split_dim("DV", dv)
    return g


def _check_point(point) -> int:
    _elem_bytes(point["dtype"])
    return _check_shapes(point["T"], point["T_kv"], point["Hq"], point["Hkv"], point["DK"], point["DV"],
                         point["BS"], point["S"])


def _check_fit(cfg, bs: int) -> None:
    _check_cfg(cfg)
    if bs % cfg["BLOCK_N"]:
        raise ValueError(f"BLOCK_N={cfg['BLOCK_N']} must divide the block size BS={bs}")


def _slice_span(x) -> int:
    """Elements one (batch, K/V head) slice of a [B, T_kv, Hkv, D] cache spans: its in-kernel offsets."""
    return (x.shape[1] - 1) * x.stride(1) + x.shape[3]


def _kernel_args(q, k, v, out, block_idx, bs: int, sm_scale: float, cfg, offsets64: bool = False) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, T, h_q, dk = q.shape
    t_kv, h_kv, dv = k.shape[1], k.shape[2], v.shape[3]
    g = h_q // h_kv
    dk0, dk1 = _split_dim("DK", dk)
    dv0, dv1 = _split_dim("DV", dv)
    return dict(Q=q, K=k, V=v, O=out, IDX=block_idx, sm_scale=sm_scale, T=T, q_offset=t_kv - T,
                n_sel=block_idx.shape[3],
                stride_qb=q.stride(0), stride_qt=q.stride(1), stride_qh=q.stride(2),
                stride_kb=k.stride(0), stride_kt=k.stride(1), stride_kh=k.stride(2),
                stride_vb=v.stride(0), stride_vt=v.stride(1), stride_vh=v.stride(2),
                stride_ob=out.stride(0), stride_ot=out.stride(1), stride_oh=out.stride(2),
                stride_ib=block_idx.stride(0), stride_it=block_idx.stride(1), stride_ih=block_idx.stride(2),
                G=g, G_PAD=_group_pad(g), DK0=dk0, DK1=dk1, DV0=dv0, DV1=dv1, BS=bs,
                OFF64=int(bool(offsets64) or _slice_span(k) >= 2**31 or _slice_span(v) >= 2**31),
                BLOCK_N=cfg["BLOCK_N"], QPP=cfg["QPP"])


def topk_block_attn(q, k, v, block_idx, block_size: int = 64, sm_scale: float | None = None, *,
                    BLOCK_N: int = 32, QPP: int = 1, num_warps: int = 4, num_stages: int = 2,
                    int64_offsets: bool = False):
    """Attention of q [B, T, Hq, DK] over the key blocks block_idx [B, T, Hkv, S] (int32, block
    numbers of block_size keys, -1 = none) selects from k [B, T_kv, Hkv, DK] / v [B, T_kv, Hkv, DV]
    (bf16 / fp16, one dtype); query token t sits at position T_kv - T + t and sees the keys <= it
    of its selected blocks. sm_scale defaults to 1 / sqrt(DK). Returns out [B, T, Hq, DV] in q's dtype.
    The key offsets inside a (batch, head) slice are int32 unless it spans 2^31 elements or more
    (or int64_offsets is set)."""
    import torch
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.dim() != 4:
            raise ValueError(f"expected {name} of 4 dims [B, tokens, heads, dim]; got {tuple(x.shape)}")
        if x.dtype not in (torch.float16, torch.bfloat16):
            raise ValueError(f"{name} must be fp16 or bf16; got {x.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"q, k, v must share one dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    B, T, h_q, dk = q.shape
    if k.shape[0] != B or k.shape[3] != dk:
        raise ValueError(f"k {tuple(k.shape)} must be [B={B}, T_kv, Hkv, DK={dk}]")
    if tuple(v.shape[:3]) != tuple(k.shape[:3]):
        raise ValueError(f"v {tuple(v.shape)} must be [B, T_kv, Hkv, DV] with k's {tuple(k.shape[:3])}")
    t_kv, h_kv, dv = k.shape[1], k.shape[2], v.shape[3]
    if block_idx.dim() != 4 or tuple(block_idx.shape[:3]) != (B, T, h_kv):
        raise ValueError(f"block_idx {tuple(block_idx.shape)} must be [B={B}, T={T}, Hkv={h_kv}, S]")
    if block_idx.dtype != torch.int32:
        raise ValueError(f"block_idx must be int32; got {block_idx.dtype}")
    if not isinstance(block_size, int) or block_size < 16:
        raise ValueError(f"block_size={block_size!r} must be an int >= 16")
    _check_shapes(T, t_kv, h_q, h_kv, dk, dv, block_size, max(block_idx.shape[3], 1))
    cfg = {"BLOCK_N": BLOCK_N, "QPP": QPP, "num_warps": num_warps}
    _check_fit(cfg, block_size)
    if not isinstance(num_stages, int) or not 1 <= num_stages <= 4:
        raise ValueError(f"num_stages={num_stages!r} must be 1..4")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(dk)
    if q.stride(3) != 1:
        q = q.contiguous()
    if k.stride(3) != 1:
        k = k.contiguous()
    if v.stride(3) != 1:
        v = v.contiguous()
    out = torch.empty((B, T, h_q, dv), dtype=q.dtype, device=q.device)
    if out.numel() == 0 or block_idx.shape[3] == 0:
        return out.zero_()
    grid = (triton.cdiv(T, QPP), h_kv, B)
    _kernel[grid](**_kernel_args(q, k, v, out, block_idx, block_size, float(sm_scale), cfg, int64_offsets),
                  num_warps=num_warps, num_stages=num_stages)
    return out


def _positions(point) -> tuple[int, int]:
    return point["T_kv"] - point["T"], -(-point["T_kv"] // point["BS"])


def make_block_idx(B: int, T: int, T_kv: int, h_kv: int, bs: int, s: int, seed: int = 0):
    """int32 [B, T, Hkv, S] on the CPU, NSA-style: per (b, t, K/V head) the first block and the
    token's own block, then min(S, own + 1) - 2 (or 0) distinct blocks drawn uniformly among
    1 .. own - 1, the chosen ones in a random order, -1 padding the rest."""
    import torch
    gen = torch.Generator(device="cpu").manual_seed(seed)
    n_blk = -(-T_kv // bs)
    pos = torch.arange(T_kv - T, T_kv)
    own = (pos // bs).view(1, T, 1, 1)                              # the diagonal block
    blocks = torch.arange(n_blk).view(1, 1, 1, n_blk)
    # a random score a causal block, the sink and the diagonal above every other, past blocks -1
    score = torch.rand((B, T, h_kv, n_blk), generator=gen)
    score = torch.where((blocks == 0) | (blocks == own), score + 2.0, score)
    score = torch.where(blocks <= own, score, torch.full_like(score, -1.0))
    k = min(s, n_blk)
    top, sel = score.topk(k, dim=-1)
    sel = torch.where(top >= 0, sel, torch.full_like(sel, -1))
    # a random order of the chosen ones (a top-k by score has no positional order), -1s last
    order = torch.rand(sel.shape, generator=gen)
    order = torch.where(sel >= 0, order, order + 2.0).argsort(dim=-1)
    sel = sel.gather(-1, order)
    if k < s:
        sel = torch.cat([sel, torch.full((B, T, h_kv, s - k), -1, dtype=sel.dtype)], dim=-1)
    return sel.to(torch.int32).contiguous()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v standard normal (drawn on the CPU from a seeded generator, then cast and moved);
    block_idx from make_block_idx (the same seed); sm_scale 1 / sqrt(DK)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    B, T, T_kv, h_q, h_kv = (point[k] for k in ("B", "T", "T_kv", "Hq", "Hkv"))
    q = torch.randn((B, T, h_q, point["DK"]), generator=gen).to(dt)
    k = torch.randn((B, T_kv, h_kv, point["DK"]), generator=gen).to(dt)
    v = torch.randn((B, T_kv, h_kv, point["DV"]), generator=gen).to(dt)
    idx = make_block_idx(B, T, T_kv, h_kv, point["BS"], point["S"], seed)
    return {"q": q.to(device), "k": k.to(device), "v": v.to(device), "block_idx": idx.to(device),
            "block_size": point["BS"], "sm_scale": 1.0 / math.sqrt(point["DK"])}


def launch(inputs, cfg):
    return topk_block_attn(inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"], inputs["block_size"],
                           inputs["sm_scale"], BLOCK_N=cfg["BLOCK_N"], QPP=cfg["QPP"],
                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                           int64_offsets=bool(inputs.get("int64_offsets", False)))


def _gathered_chunks(inputs, per_token_floats: int, budget_floats: int = 1 << 26):
    """Token ranges of the query chunk, each with its gathered K/V, visibility and key positions:
    yields (t0, t1, kg [B, Tc, Hkv, S BS, DK], vg [B, Tc, Hkv, S BS, DV], vis [B, Tc, Hkv, S BS])
    in k's dtype, at most ~budget_floats elements of K and V a chunk."""
    import torch
    q, k, v, idx = inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"]
    bs = inputs["block_size"]
    B, T = q.shape[:2]
    t_kv, h_kv = k.shape[1], k.shape[2]
    dev = k.device
    kk = k.permute(0, 2, 1, 3)                                     # [B, Hkv, T_kv, DK]
    vv = v.permute(0, 2, 1, 3)
    bi = torch.arange(B, device=dev).view(B, 1, 1, 1)
    hi = torch.arange(h_kv, device=dev).view(1, 1, h_kv, 1)
    step = max(1, budget_floats // max(1, per_token_floats))
    for t0 in range(0, T, step):
        t1 = min(T, t0 + step)
        ib = idx[:, t0:t1].long()                                  # [B, Tc, Hkv, S]
        pos = (t_kv - T + torch.arange(t0, t1, device=dev)).view(1, -1, 1, 1, 1)
        own = pos // bs
        kpos = ib[..., None] * bs + torch.arange(bs, device=dev)   # [B, Tc, Hkv, S, BS]
        vis = (ib[..., None] >= 0) & (ib[..., None] <= own) & (kpos <= pos)
        kpos = torch.where(vis, kpos, torch.zeros_like(kpos)).flatten(-2)   # [B, Tc, Hkv, L]
        vis = vis.flatten(-2)
        yield t0, t1, kk[bi, hi, kpos], vv[bi, hi, kpos], vis


def reference(inputs):
    """fp32: each token's selected blocks gathered (skipped entries and keys past the token
    masked), softmax(q k^T * sm_scale) over them, times v; a token with no visible key gets 0.
    [B, T, Hq, DV], computed in chunks of tokens."""
    import torch
    q, k, v, idx = inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"]
    B, T, h_q, dk = q.shape
    h_kv, dv = k.shape[2], v.shape[3]
    g = h_q // h_kv
    out = torch.empty((B, T, h_q, dv), dtype=torch.float32, device=q.device)
    L = idx.shape[3] * inputs["block_size"]
    for t0, t1, kg, vg, vis in _gathered_chunks(inputs, B * h_kv * L * (dk + dv)):
        qq = q[:, t0:t1].float().reshape(B, t1 - t0, h_kv, g, dk)
        s = torch.einsum("bthgd,bthld->bthgl", qq, kg.float()) * inputs["sm_scale"]
        s = s.masked_fill(~vis[..., None, :], float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)               # a row with no visible key: 0
        o = torch.einsum("bthgl,bthld->bthgd", p, vg.float())
        out[:, t0:t1] = o.reshape(B, t1 - t0, h_q, dv)
    return out


def torch_baseline(inputs):
    """What eager torch runs: the selected K / V rows gathered by advanced indexing (a copy of
    S x BS rows per token and K/V head), then scaled_dot_product_attention with the visibility as
    a boolean mask, a batch entry per (token, K/V head) whose G heads are G queries over its
    gathered keys, in the input dtype; in chunks of tokens. Tokens with no visible key are set to 0."""
    import torch
    import torch.nn.functional as F
    q, k, v, idx = inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"]
    B, T, h_q, dk = q.shape
    h_kv, dv = k.shape[2], v.shape[3]
    g = h_q // h_kv
    out = torch.empty((B, T, h_q, dv), dtype=q.dtype, device=q.device)
    L = idx.shape[3] * inputs["block_size"]
    for t0, t1, kg, vg, vis in _gathered_chunks(inputs, B * h_kv * L * (dk + dv)):
        tc = t1 - t0
        qq = q[:, t0:t1].reshape(B * tc * h_kv, 1, g, dk)           # the group's heads as G queries
        kq = kg.reshape(B * tc * h_kv, 1, L, dk)
        vq = vg.reshape(B * tc * h_kv, 1, L, dv)
        mask = vis.reshape(B * tc * h_kv, 1, 1, L)
        o = F.scaled_dot_product_attention(qq, kq, vq, attn_mask=mask, scale=inputs["sm_scale"])
        o = torch.where(mask.any(-1, keepdim=True), o, torch.zeros_like(o))      # rows of no key: 0
        out[:, t0:t1] = o.reshape(B, tc, h_q, dv)
    return out


def bytes_moved(point) -> int:
    """What the kernel reads and writes, counting the gathers as issued: every (token, K/V head)
    reads its S x BS selected K rows (DK) and V rows (DV) -- B T Hkv S BS (DK + DV) elements, as
    if each token's blocks came from DRAM (most come from L2: the point's K/V cache is far smaller;
    keys past the token in its own block and padded entries are counted too, a small excess) --
    plus q and out once and the int32 index."""
    _check_point(point)
    e = _elem_bytes(point["dtype"])
    B, T, h_q, h_kv = point["B"], point["T"], point["Hq"], point["Hkv"]
    dk, dv, bs, s = point["DK"], point["DV"], point["BS"], point["S"]
    gathered = B * T * h_kv * s * bs * (dk + dv) * e
    return gathered + B * T * h_q * (dk + dv) * e + B * T * h_kv * s * 4


def flops(point) -> int:
    """2 (DK + DV) flops per (query head, selected key): the two dots over whole blocks, the
    group's heads unpadded (the exp / max / sum of the softmax not counted)."""
    _check_point(point)
    return 2 * point["B"] * point["T"] * point["Hq"] * point["S"] * point["BS"] * (point["DK"] + point["DV"])


def grid(cfg, point) -> tuple[int, int, int]:
    """(token tiles of QPP, K/V heads, batch): the launch grid, tokens fastest."""
    _check_point(point)
    _check_fit(cfg, point["BS"])
    return (-(-point["T"] // cfg["QPP"]), point["Hkv"], point["B"])


def loop_iterations(cfg, point) -> int:
    """Key steps a CTA: QPP tokens x S blocks x BS / BLOCK_N steps (every CTA the same: skipped
    entries' steps run masked; a last tile's tokens past T too)."""
    _check_point(point)
    _check_fit(cfg, point["BS"])
    return cfg["QPP"] * point["S"] * (point["BS"] // cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    q, k, v, out contiguous [B, tokens, heads, dim], block_idx contiguous int32 [B, T, Hkv, S]."""
    import torch
    _check_point(point)
    _check_fit(cfg, point["BS"])
    dt = _torch_dtype(point["dtype"])
    B, T, T_kv, h_q, h_kv = (point[k] for k in ("B", "T", "T_kv", "Hq", "Hkv"))
    q = torch.empty((B, T, h_q, point["DK"]), dtype=dt, device="meta")
    k = torch.empty((B, T_kv, h_kv, point["DK"]), dtype=dt, device="meta")
    v = torch.empty((B, T_kv, h_kv, point["DV"]), dtype=dt, device="meta")
    out = torch.empty((B, T, h_q, point["DV"]), dtype=dt, device="meta")
    idx = torch.empty((B, T, h_kv, point["S"]), dtype=torch.int32, device="meta")
    return _kernel_args(q, k, v, out, idx, point["BS"], 1.0 / math.sqrt(point["DK"]), cfg)
