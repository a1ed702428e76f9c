"""MLA decode attention over a paged latent KV cache, split along the context.

The shape DeepSeek models are served with: every sequence of the batch brings
one new query token for ``NUM_HEADS`` heads (16 per tensor-parallel rank); all
heads attend to one shared *latent* cache whose rows are ``D_LATENT`` (512)
latent values followed by ``D_ROPE`` (64) rotary values. Keys are the whole
576-wide row; values are the 512 latent columns of the same row (MLA's weight
absorption). The cache is paged as in vLLM/SGLang: ``kv_cache[page, slot, :]``,
and ``block_table[seq, i]`` names the page that holds tokens
``i*PAGE_SIZE .. (i+1)*PAGE_SIZE-1`` of a sequence.

Two kernels: ``_kernel`` (split-KV, one CTA per sequence x head group x split,
writing a normalized partial output and its log-sum-exp) and ``_combine_kernel``
(merges the splits). Only ``_kernel`` matters for occupancy; the card models it.

Why the page lookup sits in an ``if`` (the pipelining story)
-------------------------------------------------------------
Triton's software pipeliner (``AssignLatencies``) walks back from each
``tl.dot`` through the ops of the loop body and gives every pipelinable load it
meets an *indirection level*: 0 for a load feeding the dot, 1 for a load that
feeds the address of a level-0 load, and so on. Loads at level >= S-1 are
dropped, and the remaining ones get latency ``(S-1) // (max_level+1)``; the
operand ring of a pipelined dot load is that latency deep (on mma.sync). A
block-table lookup done in the loop body (as a vector of per-token page ids or
as a scalar) is such a level-1 load, so the KV tile gets latency
``(S-1)//2``: one buffer for num_stages 2, 3 *and* 4 -- num_stages is a no-op
(37,376-37,504 B on sm_120 at BLOCK_T=BLOCK_H=16, S=2..4; see
``decode_attention_nopipe``). Here the page id is looked up only when the tile
crosses into a new page, inside ``if t0 % PAGE_SIZE == 0``: that load lives in
the ``scf.if`` region, not in the loop body, the pipeliner's walk does not
enter regions, and the KV loads become level 0 with latency S-1. Shared memory
then grows by one KV tile (BLOCK_T x 576 x 2 B = 18,432 B at BLOCK_T=16) per
stage. It also reads the block table once per page instead of once per token.
The price: a tile must not straddle pages, so PAGE_SIZE % BLOCK_T == 0.
Measured with triton 3.9 and 3.6, identical on sm_80, sm_90, sm_100 and sm_120
(BLOCK_H <= 32 keeps both dots on mma.sync everywhere): 37,376 / 55,808 / 74,240 B
for num_stages 2 / 3 / 4 at BLOCK_T = BLOCK_H = 16, and 51,200 B unpipelined (S=1).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from .._lazy import sympy
import triton
import triton.language as tl

from ..card import Config, KernelCard, Param, Secondary
from ..errors import ConfigError


# ---------------------------------------------------------------- kernels
@triton.jit(do_not_specialize=["stride_bt"])
def _kernel(Q, KV, BLOCK_TABLE, SEQ_LENS, O_PART, LSE_PART,
            sm_scale,
            stride_qb, stride_qh, stride_kv, stride_bt,
            stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
            tokens_per_split,
            NUM_HEADS: tl.constexpr, D_LATENT: tl.constexpr, D_ROPE: tl.constexpr,
            PAGE_SIZE: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    seq = tl.program_id(0)
    head_group = tl.program_id(1)
    split = tl.program_id(2)

    heads = head_group * BLOCK_H + tl.arange(0, BLOCK_H)
    head_ok = heads < NUM_HEADS
    d_lat = tl.arange(0, D_LATENT)
    d_rope = tl.arange(0, D_ROPE)

    # The query tile, latent and rope parts; loop invariant.
    q_row = Q + seq * stride_qb + heads[:, None] * stride_qh
    q_lat = tl.load(q_row + d_lat[None, :], mask=head_ok[:, None], other=0.0)
    q_rope = tl.load(q_row + D_LATENT + d_rope[None, :], mask=head_ok[:, None], other=0.0)

    seq_len = tl.load(SEQ_LENS + seq)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    qk_scale = sm_scale * 1.4426950408889634  # scores in log2 units: exp2 below

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, D_LATENT], tl.float32)

    bt_row = BLOCK_TABLE + seq * stride_bt
    page = tl.load(bt_row + start // PAGE_SIZE, mask=start < end, other=0).to(tl.int64)   # start may be mid-page
    for t0 in range(start, end, BLOCK_T):
        # New page: look it up (inside an `if`, so the pipeliner does not count
        # it as an indirection level of the KV loads; see the module doc).
        if t0 % PAGE_SIZE == 0:
            page = tl.load(bt_row + t0 // PAGE_SIZE).to(tl.int64)
        offs_t = tl.arange(0, BLOCK_T)
        t_ok = (t0 + offs_t) < end
        rows = page * PAGE_SIZE + (t0 % PAGE_SIZE) + offs_t          # cache rows, contiguous
        kv_row = KV + rows[:, None] * stride_kv
        k_lat = tl.load(kv_row + d_lat[None, :], mask=t_ok[:, None], other=0.0)            # [T, 512], also V
        k_rope = tl.load(kv_row + D_LATENT + d_rope[None, :], mask=t_ok[:, None], other=0.0)  # [T, 64]

        scores = tl.dot(q_lat, tl.trans(k_lat))
        scores = tl.dot(q_rope, tl.trans(k_rope), scores)
        scores = tl.where(t_ok[None, :], scores * qk_scale, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(scores, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k_lat.dtype), k_lat)
        m_i = m_new

    has = l_i > 0.0
    out = tl.where(has[:, None], acc / tl.where(has, l_i, 1.0)[:, None], 0.0)
    lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
    o_ptr = O_PART + seq * stride_ob + heads[:, None] * stride_oh + split * stride_os + d_lat[None, :]
    tl.store(o_ptr, out, mask=head_ok[:, None])
    tl.store(LSE_PART + seq * stride_lb + heads * stride_lh + split, lse, mask=head_ok)


@triton.jit
def _combine_kernel(O_PART, LSE_PART, OUT, num_splits,
                    stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
                    stride_outb, stride_outh,
                    D_LATENT: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    d = tl.arange(0, D_LATENT)
    m = -1.0e30          # finite: an empty split (lse = -inf) then weighs exp2(-inf) = 0
    weight = 0.0
    acc = tl.zeros([D_LATENT], tl.float32)
    for s in range(0, num_splits):
        lse = tl.load(LSE_PART + seq * stride_lb + head * stride_lh + s)
        part = tl.load(O_PART + seq * stride_ob + head * stride_oh + s * stride_os + d)
        m_new = tl.maximum(m, lse)
        alpha = tl.exp2(m - m_new)
        w = tl.exp2(lse - m_new)
        acc = acc * alpha + w * part
        weight = weight * alpha + w
        m = m_new
    tl.store(OUT + seq * stride_outb + head * stride_outh + d, (acc / weight).to(OUT.dtype.element_ty))


# ---------------------------------------------------------------- launcher
MIN_TILES_PER_SPLIT = 4


def num_splits(batch: int, num_heads: int, max_ctx: int, block_t: int, block_h: int,
               target_ctas: int) -> tuple[int, int]:
    """(splits, tokens_per_split) for a launch: as many splits as keep
    batch x head_groups x splits within TARGET_CTAS (rounding down, so a launch
    sized for one wave does not spill a small tail into a second one), each at
    least MIN_TILES_PER_SPLIT BLOCK_T tiles long (so the fp32 partials stay small
    next to the KV bytes); tokens_per_split is a multiple of BLOCK_T and no split
    of the longest sequence is empty."""
    head_groups = -(-num_heads // block_h)
    tiles = max(1, -(-max_ctx // block_t))
    splits = min(max(1, target_ctas // (batch * head_groups)), max(1, tiles // MIN_TILES_PER_SPLIT))
    tokens_per_split = -(-tiles // splits) * block_t
    splits = max(1, -(-max_ctx // tokens_per_split))
    return splits, tokens_per_split


def decode_attention(q, kv_cache, block_table, seq_lens, sm_scale: float | None = None, *,
                     BLOCK_T: int = 16, BLOCK_H: int = 16, num_warps: int = 4, num_stages: int = 2,
                     target_ctas: int = 512, max_seq_len: int | None = None, d_rope: int = 64):
    """out[b, h, :] = softmax(q[b, h] . K_b^T * sm_scale) . V_b for one decode step.

    q:           [B, H, D_LATENT + d_rope]  bf16 or fp16 (the absorbed query: latent part, then rope part)
    kv_cache:    [num_pages, PAGE_SIZE, D_LATENT + d_rope], same dtype, contiguous
    block_table: [B, max_pages] int32; row b lists the pages of sequence b in order
    seq_lens:    [B] int32, each >= 1
    Returns [B, H, D_LATENT] in q's dtype; K_b = the sequence's cache rows, V_b = their
    first D_LATENT columns. `max_seq_len` (>= every seq_len) sizes the split-KV grid; pass
    it to keep the launch free of a device-to-host sync (CUDA-graph capture needs that).
    PAGE_SIZE must be a multiple of BLOCK_T.
    """
    return _launch(_kernel, True, q, kv_cache, block_table, seq_lens, sm_scale, BLOCK_T=BLOCK_T,
                   BLOCK_H=BLOCK_H, num_warps=num_warps, num_stages=num_stages, target_ctas=target_ctas,
                   max_seq_len=max_seq_len, d_rope=d_rope)


def _launch(stage1, tiles_within_pages: bool, q, kv_cache, block_table, seq_lens, sm_scale, *, BLOCK_T,
            BLOCK_H, num_warps, num_stages, target_ctas, max_seq_len, d_rope):
    """Checks, the split-KV kernel `stage1` (this module's or a variant with the same
    signature), then the combine kernel."""
    import torch

    if q.dim() != 3 or kv_cache.dim() != 3 or block_table.dim() != 2 or seq_lens.dim() != 1:
        raise ValueError("expected q [B,H,D], kv_cache [pages,PAGE_SIZE,D], block_table [B,P], seq_lens [B]; "
                         f"got {tuple(q.shape)}, {tuple(kv_cache.shape)}, {tuple(block_table.shape)}, "
                         f"{tuple(seq_lens.shape)}")
    batch, num_heads, width = q.shape
    page_size = kv_cache.shape[1]
    d_latent = width - d_rope
    if kv_cache.shape[2] != width:
        raise ValueError(f"kv_cache rows are {kv_cache.shape[2]} wide, q rows {width}")
    for name, d in (("D_LATENT", d_latent), ("d_rope", d_rope)):
        if d < 16 or d & (d - 1):
            raise ValueError(f"{name}={d} must be a power of two >= 16 (q rows are {width} = D_LATENT + d_rope)")
    if block_table.shape[0] != batch or seq_lens.shape[0] != batch:
        raise ValueError(f"block_table has {block_table.shape[0]} rows and seq_lens {seq_lens.shape[0]}; "
                         f"q has batch {batch}")
    if q.dtype not in (torch.bfloat16, torch.float16) or kv_cache.dtype != q.dtype:
        raise ValueError(f"q and kv_cache must both be bf16 or fp16; got {q.dtype}, {kv_cache.dtype}")
    if block_table.dtype != torch.int32 or seq_lens.dtype != torch.int32:
        raise ValueError(f"block_table and seq_lens must be int32; got {block_table.dtype}, {seq_lens.dtype}")
    if tiles_within_pages and page_size % BLOCK_T:
        raise ValueError(f"PAGE_SIZE={page_size} must be a multiple of BLOCK_T={BLOCK_T} "
                         "(a BLOCK_T tile must not straddle two pages)")
    if not kv_cache.is_contiguous():
        raise ValueError("kv_cache must be contiguous (pages of PAGE_SIZE rows)")
    if block_table.stride(1) != 1:
        block_table = block_table.contiguous()
    q = q.contiguous()
    if max_seq_len is None:
        max_seq_len = int(seq_lens.max().item())
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(width)

    splits, tokens_per_split = num_splits(batch, num_heads, max_seq_len, BLOCK_T, BLOCK_H, target_ctas)
    head_groups = -(-num_heads // BLOCK_H)
    dev = q.device
    o_part = torch.empty((batch, num_heads, splits, d_latent), dtype=torch.float32, device=dev)
    lse_part = torch.empty((batch, num_heads, -(-splits // 16) * 16), dtype=torch.float32, device=dev)
    out = torch.empty((batch, num_heads, d_latent), dtype=q.dtype, device=dev)

    stage1[(batch, head_groups, splits)](
        q, kv_cache, block_table, seq_lens, o_part, lse_part, sm_scale,
        q.stride(0), q.stride(1), kv_cache.stride(1), block_table.stride(0),
        o_part.stride(0), o_part.stride(1), o_part.stride(2), lse_part.stride(0), lse_part.stride(1),
        tokens_per_split,
        NUM_HEADS=num_heads, D_LATENT=d_latent, D_ROPE=d_rope, PAGE_SIZE=page_size,
        BLOCK_T=BLOCK_T, BLOCK_H=BLOCK_H, num_warps=num_warps, num_stages=num_stages)
    _combine_kernel[(batch, num_heads)](
        o_part, lse_part, out, splits,
        o_part.stride(0), o_part.stride(1), o_part.stride(2), lse_part.stride(0), lse_part.stride(1),
        out.stride(0), out.stride(1), D_LATENT=d_latent, num_warps=4)
    return out


def reference(q, kv_cache, block_table, seq_lens, sm_scale: float | None = None, d_rope: int = 64):
    """The same computation in float32 torch, one sequence at a time."""
    import torch

    batch, num_heads, width = q.shape
    page_size = kv_cache.shape[1]
    d_latent = width - d_rope
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(width)
    out = torch.empty((batch, num_heads, d_latent), dtype=torch.float32, device=q.device)
    for b in range(batch):
        n = int(seq_lens[b])
        pages = block_table[b, : -(-n // page_size)].long()
        rows = kv_cache[pages].reshape(-1, width)[:n].float()    # [n, 576] gathered through the table
        keys, values = rows, rows[:, :d_latent]
        scores = (q[b].float() @ keys.T) * sm_scale                # [H, n]
        out[b] = torch.softmax(scores, dim=-1) @ values           # [H, 512]
    return out


def torch_decode(q, kv_cache, block_table, seq_lens, sm_scale: float, max_seq_len: int, d_rope: int = 64):
    """A batched torch version in the inputs' dtype (what one would write without a
    kernel): gather every page, mask the tail, softmax, one bmm each way."""
    import torch

    batch, _, width = q.shape
    page_size = kv_cache.shape[1]
    pages = -(-max_seq_len // page_size)
    rows = kv_cache[block_table[:, :pages].long()].reshape(batch, pages * page_size, width)
    scores = torch.bmm(q, rows.transpose(1, 2)).float() * sm_scale              # [B, H, T]
    pos = torch.arange(pages * page_size, device=q.device)
    scores.masked_fill_(pos[None, None, :] >= seq_lens[:, None, None], float("-inf"))
    probs = torch.softmax(scores, dim=-1).to(q.dtype)
    return torch.bmm(probs, rows[:, :, : width - d_rope])


def make_decode_inputs(batch: int, seq_lens, num_heads: int = 16, d_latent: int = 512, d_rope: int = 64,
                       page_size: int = 64, dtype: str = "bf16", device: str = "cpu", seed: int = 0,
                       spare_pages: int = 3) -> dict:
    """Random inputs for one decode step: q, a paged cache whose pages are handed out in
    a random order (so the block table is a real gather), the block table, seq_lens."""
    import torch

    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    lens = [int(n) for n in (seq_lens if hasattr(seq_lens, "__len__") else [seq_lens] * batch)]
    if len(lens) != batch or min(lens) < 1:
        raise ValueError(f"need {batch} sequence lengths >= 1, got {lens}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    width = d_latent + d_rope
    max_pages = -(-max(lens) // page_size)
    num_pages = batch * max_pages + spare_pages
    perm = torch.randperm(num_pages, generator=gen).to(torch.int32)
    block_table = perm[: batch * max_pages].reshape(batch, max_pages).contiguous()
    q = torch.randn((batch, num_heads, width), generator=gen, dtype=torch.float32)
    kv = torch.randn((num_pages, page_size, width), generator=gen, dtype=torch.float32)
    return {
        "q": q.to(device=device, dtype=torch_dtype),
        "kv_cache": kv.to(device=device, dtype=torch_dtype),
        "block_table": block_table.to(device),
        "seq_lens": torch.tensor(lens, dtype=torch.int32, device=device),
        "sm_scale": 1.0 / math.sqrt(192),          # DeepSeek's qk head dim (128 nope + 64 rope)
        "max_seq_len": max(lens),
        "d_rope": d_rope,
    }


# ---------------------------------------------------------------- the card
def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


DTYPE_BYTES = {"bf16": 2, "fp16": 2}


class DecodeAttentionCard(KernelCard):
    """Card of the split-KV stage ``_kernel`` (the combine kernel is small and its
    occupancy does not matter); timing covers both kernels."""

    # ------------------------------------------------------------ config
    def check(self, cfg: Config) -> None:
        if cfg["PAGE_SIZE"] % cfg["BLOCK_T"]:
            raise ConfigError(f"PAGE_SIZE={cfg['PAGE_SIZE']} is not a multiple of BLOCK_T={cfg['BLOCK_T']}; "
                              "a KV tile must not straddle pages (allowed BLOCK_T: "
                              f"{', '.join(str(t) for t in self.param('BLOCK_T').choices if cfg['PAGE_SIZE'] % t == 0)})")

    def sweep(self) -> list[Config]:
        """The configs the shared-memory model is checked on (scripts/check_shared_model.py)."""
        return [self.resolve({"BLOCK_T": t, "BLOCK_H": h, "num_warps": w, "num_stages": s})
                for t in (16, 32, 64) for h in (16, 32) for w in (2, 4, 8) for s in (1, 2, 3, 4)]

    # ------------------------------------------------------------- model
    def kv_ring_depth(self, cc: tuple[int, int]) -> sympy.Expr:
        """KV tiles resident per CTA when num_stages >= 2. The KV loads are level-0
        loads (see the module doc), latency S-1; the dots are mma.sync on every arch
        for BLOCK_H <= 32 (wgmma / tcgen05 need 64 rows), so the ring is S-1 deep."""
        S = self.symbols()["num_stages"]
        return S - 1

    def extra_loop_bytes(self, cc: tuple[int, int]) -> sympy.Expr:
        """Further buffers live in the pipelined loop (none here; see the nopipe card)."""
        return sympy.Integer(0)

    def shared_memory(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        """Measured rules (triton 3.9, identical on sm_80, sm_90, sm_100, sm_120):

        num_stages >= 2 (pipelined), three live groups in the loop:
          q tiles    BLOCK_H x (D_LATENT + D_ROPE) x 2   kept in shared for the whole loop
          KV ring    (S-1) x BLOCK_T x (D_LATENT + D_ROPE) x 2
          P tile     BLOCK_H x BLOCK_T x 2   (P on its way to the P.V dot; the softmax
                     reductions' scratch shares its slot and is smaller; none with one warp)
        num_stages == 1 (nothing pipelined): the k_lat tile goes register -> shared
        twice, once as a local_alloc (P.V operand) and once through a layout conversion
        for the transposed Q.K^T operand, whose scratch is min(BLOCK_T, 8 x num_warps)
        rows (4 rows at one warp) x D_LATENT x 2.
        After the loop the fp32 accumulator [BLOCK_H, D_LATENT] is converted for the
        store through min(BLOCK_H x D_LATENT x 4, 16 x D_LATENT x min(num_warps, 4))
        bytes of scratch, which reuses the space of the (dead) loop buffers: Max().
        """
        s = self.symbols()
        T, Hb, S, W = s["BLOCK_T"], s["BLOCK_H"], s["num_stages"], s["num_warps"]
        DL, DR = s["D_LATENT"], s["D_ROPE"]
        e = DTYPE_BYTES[cfg["dtype"]]
        q_tiles = Hb * (DL + DR) * e
        kv_tile = T * (DL + DR) * e
        p_tile = sympy.Piecewise((0, sympy.Eq(W, 1)), (Hb * T * e, True))   # one warp: no trip through shared
        epilogue = sympy.Min(Hb * DL * 4, 16 * DL * sympy.Min(W, 4))
        pipelined = q_tiles + self.kv_ring_depth(cc) * kv_tile + p_tile + self.extra_loop_bytes(cc)
        cvt_rows = sympy.Piecewise((4, sympy.Eq(W, 1)), (8 * W, True))
        k_cvt = sympy.Min(T, cvt_rows) * DL * e
        unpipelined = q_tiles + T * DL * e + sympy.Max(k_cvt, p_tile)
        return sympy.Max(sympy.Piecewise((unpipelined, sympy.Eq(S, 1)), (pipelined, True)), epilogue)

    def registers(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        return _decode_registers(self.symbols(), cc)

    # ----------------------------------------------------------- compile
    def signature(self, cfg: Config) -> dict[str, str]:
        t = cfg["dtype"]
        return {
            "Q": f"*{t}:16", "KV": f"*{t}:16", "BLOCK_TABLE": "*i32:16", "SEQ_LENS": "*i32:16",
            "O_PART": "*fp32:16", "LSE_PART": "*fp32:16", "sm_scale": "fp32",
            "stride_qb": "i32:16", "stride_qh": "i32:16", "stride_kv": "i32:16", "stride_bt": "i32",
            "stride_ob": "i32:16", "stride_oh": "i32:16", "stride_os": "i32:16",
            "stride_lb": "i32:16", "stride_lh": "i32:16", "tokens_per_split": "i32:16",
        }

    def constexprs(self, cfg: Config) -> dict[str, Any]:
        return {"NUM_HEADS": cfg["NUM_HEADS"], "D_LATENT": cfg["D_LATENT"], "D_ROPE": cfg["D_ROPE"],
                "PAGE_SIZE": cfg["PAGE_SIZE"], "BLOCK_T": cfg["BLOCK_T"], "BLOCK_H": cfg["BLOCK_H"]}

    # ---------------------------------------------------------- workload
    def _launch_shape(self, cfg: Config, point: Mapping[str, Any]) -> tuple[int, int, int]:
        """(head_groups, splits, tokens_per_split) of a launch at `point`."""
        splits, per_split = num_splits(point["C"], cfg["NUM_HEADS"], point["ctx"], cfg["BLOCK_T"],
                                       cfg["BLOCK_H"], cfg["TARGET_CTAS"])
        return _cdiv(cfg["NUM_HEADS"], cfg["BLOCK_H"]), splits, per_split

    def grid(self, cfg: Config, point: Mapping[str, Any]) -> int:
        groups, splits, _ = self._launch_shape(cfg, point)
        return point["C"] * groups * splits

    def loop_iterations(self, cfg: Config, point: Mapping[str, Any]) -> int:
        _, _, per_split = self._launch_shape(cfg, point)
        return min(per_split, point["ctx"]) // cfg["BLOCK_T"]

    def bytes_moved(self, cfg: Config, point: Mapping[str, Any]) -> int:
        """Unavoidable DRAM traffic of one launch (both kernels): every cache row of
        every sequence once (head groups beyond the first re-read it from L2), q, the
        block table, the fp32 partials written and read back, the output."""
        C, ctx, H = point["C"], point["ctx"], cfg["NUM_HEADS"]
        e = DTYPE_BYTES[cfg["dtype"]]
        width = cfg["D_LATENT"] + cfg["D_ROPE"]
        _, splits, _ = self._launch_shape(cfg, point)
        kv = C * ctx * width * e
        q = C * H * width * e
        table = C * _cdiv(ctx, cfg["PAGE_SIZE"]) * 4
        partials = 2 * C * H * splits * (cfg["D_LATENT"] + 1) * 4
        out = C * H * cfg["D_LATENT"] * e
        return kv + q + table + partials + out

    def secondary_kernels(self, cfg: Config, point: Mapping[str, Any]) -> list:
        """The combine kernel (occmodel.rank costs it): one CTA per sequence x head, one
        loop iteration per split reading a D_LATENT fp32 partial and its lse, which the
        split kernel has just written (L2-resident); its loads are plain tt.load (not
        pipelined: checked in the TTGIR on sm_90 and sm_120), so each iteration waits
        an L2 latency."""
        _, splits, _ = self._launch_shape(cfg, point)
        return [Secondary("combine", grid=point["C"] * cfg["NUM_HEADS"], iterations=splits,
                          tile_bytes=cfg["D_LATENT"] * 4 + 4)]

    def loop_tile_bytes(self, cfg: Config) -> int:
        """One KV tile: BLOCK_T rows of the latent and rope parts."""
        return cfg["BLOCK_T"] * (cfg["D_LATENT"] + cfg["D_ROPE"]) * DTYPE_BYTES[cfg["dtype"]]

    def flops(self, cfg: Config, point: Mapping[str, Any]) -> int:
        """Q.K^T over 576 columns plus P.V over 512, for every head and cached token."""
        C, ctx, H = point["C"], point["ctx"], cfg["NUM_HEADS"]
        return 2 * C * H * ctx * (2 * cfg["D_LATENT"] + cfg["D_ROPE"])

    def make_inputs(self, cfg: Config, point: Mapping[str, Any], device: str = "cpu", seed: int = 0) -> dict:
        return make_decode_inputs(point["C"], point["ctx"], num_heads=cfg["NUM_HEADS"],
                                  d_latent=cfg["D_LATENT"], d_rope=cfg["D_ROPE"], page_size=cfg["PAGE_SIZE"],
                                  dtype=cfg["dtype"], device=device, seed=seed)

    tiles_within_pages = True      # the page lookup per tile needs PAGE_SIZE % BLOCK_T == 0

    def launch(self, inputs: dict, cfg: Config):
        return _launch(self.kernel, self.tiles_within_pages, inputs["q"], inputs["kv_cache"],
                       inputs["block_table"], inputs["seq_lens"], inputs["sm_scale"], BLOCK_T=cfg["BLOCK_T"],
                       BLOCK_H=cfg["BLOCK_H"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                       target_ctas=cfg["TARGET_CTAS"], max_seq_len=inputs["max_seq_len"], d_rope=inputs["d_rope"])

    def reference(self, inputs: dict):
        return reference(inputs["q"], inputs["kv_cache"], inputs["block_table"], inputs["seq_lens"],
                         inputs["sm_scale"], d_rope=inputs["d_rope"])

    def torch_baseline(self, inputs: dict):
        return torch_decode(inputs["q"], inputs["kv_cache"], inputs["block_table"], inputs["seq_lens"],
                            inputs["sm_scale"], inputs["max_seq_len"], d_rope=inputs["d_rope"])

    def work_units(self, point: Mapping[str, Any]) -> float:
        return float(point["C"])       # one launch decodes one token for each of the C sequences


def _decode_registers(s: Mapping[str, sympy.Symbol], cc: tuple[int, int]) -> sympy.Expr:
    """Registers per thread: a structural estimate with two soft constants (the q share
    and the num_stages=1 surcharge), set by eye on the compiles of the whole sweep on
    sm_80/90/100/120 -- its quoted error is in-sample.

    acc      BLOCK_H x D_LATENT fp32 accumulator over 32 x num_warps threads
    P.V B    the V tile's fragments: BLOCK_T x D_LATENT bf16 pairs, each warp owning
             D_LATENT / num_warps columns -> BLOCK_T x D_LATENT / (64 x num_warps)
    q A      q's fragments are replicated in every warp (BLOCK_H x 576 / 64 per lane);
             about an eighth of them are live at a time across the unrolled k-steps
    S = 1    nothing is pipelined: the KV tile's loads land in registers first, ~40
    overhead addresses, loop and softmax state, 20
    """
    T, Hb, W, S = s["BLOCK_T"], s["BLOCK_H"], s["num_warps"], s["num_stages"]
    DL, DR = s["D_LATENT"], s["D_ROPE"]
    acc = Hb * DL / (32 * W)
    v_operand = T * DL / (64 * W)
    q_operand = Hb * (DL + DR) / 512
    unpipelined = sympy.Piecewise((40, sympy.Eq(S, 1)), (0, True))
    return acc + v_operand + q_operand + unpipelined + REG_OVERHEAD


REG_OVERHEAD = 20


PARAMS = (
    Param("BLOCK_T", 16, "KV tokens per loop step (must divide PAGE_SIZE)", choices=(16, 32, 64)),
    Param("BLOCK_H", 16, "query heads per CTA (the M of both dots; <= 32 keeps them mma.sync on "
          "every arch -- 64 turns them into wgmma on sm_90 and tcgen05 on sm_100, which this model "
          "does not cover)", choices=(16, 32)),
    Param("TARGET_CTAS", 512, "CTAs the split-KV grid aims for: splits = clamp(ceil(TARGET_CTAS / "
          "(C x head_groups)), 1, ceil(ctx / BLOCK_T))"),
    Param("NUM_HEADS", 16, "query heads per tensor-parallel rank", tunable=False),
    Param("D_LATENT", 512, "latent width (keys and values)", choices=(64, 128, 256, 512), tunable=False),
    Param("D_ROPE", 64, "rotary width (keys only)", choices=(16, 32, 64), tunable=False),
    Param("PAGE_SIZE", 64, "tokens per cache page", choices=(16, 32, 64, 128, 256), tunable=False),
    Param("dtype", "bf16", "q and cache element type", choices=("bf16", "fp16"), tunable=False),
)

WORKLOAD = (
    Param("C", 64, "sequences in the batch, one new token each (concurrency)", tunable=False),
    Param("ctx", 8192, "context length: cached tokens per sequence", tunable=False),
)

PIPELINED = ("k_lat [BLOCK_T, D_LATENT] and k_rope [BLOCK_T, D_ROPE] tiles of the paged latent cache "
             "(cp.async, 16 B per thread, a ring num_stages-1 deep; k_lat is also the V operand). They are "
             "level-0 loads because the block-table lookup sits in `if t0 % PAGE_SIZE == 0`, a region "
             "Triton's pipeliner does not walk into; that lookup and the q tiles (loaded once, kept in "
             "shared memory) are not pipelined. num_stages=1: nothing is pipelined.")

SPECIALIZATION = ("pointers 16-byte aligned (:16); every stride a multiple of 16 elements (576-wide rows, "
                  "512-wide fp32 partials, lse rows padded to 16) and tokens_per_split a multiple of "
                  "BLOCK_T (:16); stride_bt is do_not_specialize (any block-table width); sm_scale fp32; "
                  "NUM_HEADS, D_LATENT, D_ROPE, PAGE_SIZE, BLOCK_T, BLOCK_H constexpr")

CARD = DecodeAttentionCard(
    name="decode_attention",
    summary="MLA decode attention (DeepSeek): one query token x NUM_HEADS heads per sequence over a "
            "paged 512+64 latent cache, split-KV over the context with a log-sum-exp combine",
    params=PARAMS,
    baseline={"BLOCK_T": 16, "BLOCK_H": 16, "num_warps": 4, "num_stages": 2, "TARGET_CTAS": 512},
    kernel=_kernel,
    pipelined_loads=PIPELINED,
    specialization=SPECIALIZATION,
    workload_params=WORKLOAD,
    default_points=tuple({"C": c, "ctx": n} for n in (4096, 8192) for c in (1, 8, 48, 64, 96)),
    throughput_unit="tokens/s",
)
