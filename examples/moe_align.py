"""MoE align-and-sort (vLLM / SGLang moe_align_block_size) as a three-kernel Triton pipeline,
bare @triton.jit kernels + their launcher.

Given the router's topk_ids [T, topk] int32 (expert ids in [0, E); an id outside that range, e.g.
the -1 expert parallelism gives an expert another rank owns, is dropped), with N = T * topk
flattened slots s = t * topk + k:

    counts[e]        = #{s : ids[s] == e}                                    [E]
    padded[e]        = ceil(counts[e] / BLOCK_SIZE_M) * BLOCK_SIZE_M
    offsets[e]       = sum_{e' < e} padded[e']   (offsets[E] = num_tokens_post_padded)   [E + 1]
    sorted_ids[...]  = the slots s grouped by expert: expert e's in offsets[e] .. offsets[e] +
                       counts[e] (in increasing s: the sort is stable, so deterministic), the rest
                       of its padded segment and everything past offsets[E] = N (the sentinel)
    expert_ids[b]    = the expert owning rows b * BLOCK_SIZE_M .. of sorted_ids, -1 past offsets[E]

what a fused-MoE GEMM (one CTA per BLOCK_SIZE_M rows of sorted_ids) consumes. sorted_ids has
max_blocks * BLOCK_SIZE_M entries, max_blocks = ceil((N + E (BLOCK_SIZE_M - 1)) / BLOCK_SIZE_M)
(the padded total can never exceed it), expert_ids max_blocks. Everything lands in one int32
buffer, [counts | offsets | expert_ids | sorted_ids] (launch returns it; moe_align_block_size
returns views of it), written entirely by the kernels: no memset, no atomics.

The grid: one CTA per BLOCK_T tokens (its chunk: BLOCK_T * topk consecutive slots), the same
CTAs in stages 1 and 3.
  1. `_kernel` (histogram): the CTA walks its chunk in steps of BLOCK slots (one masked,
     contiguous load of BLOCK ids, tl.histogram over E_P = next power of two >= E bins) and
     stores its [E_P] counts as row pid of an int32 table [CTAs, E_P] (plain stores).
  2. `_scan_kernel` (one CTA): two passes over the table in tiles of SCAN_ROWS rows: the
     column sums (counts), then, after padding and an exclusive prefix sum over the experts
     (offsets, num_tokens_post_padded), each row rewritten in place as the exclusive prefix over
     the CTAs of its column plus the expert's offset: where CTA pid's first slot of each expert goes.
  3. `_scatter_kernel`: the CTA walks its chunk again in the same BLOCK steps: key = expert *
     BLOCK + lane, tl.sort (bitonic) groups the step's slots by expert in lane order, a
     histogram's exclusive cumsum gives each expert's first sorted position, and a sorted
     element's destination is its expert's cursor (gathered from the [E_P] cursor vector with
     tl.gather) + its rank in the run; the cursors then advance by the step's histogram. After
     its slots, the CTA fills its share of the GEMM blocks (blocks pid * BLOCKS_PER_CTA ..,
     BLOCKS_PER_CTA = ceil(max_blocks / CTAs)): expert_ids[b] (the expert whose padded segment
     holds row b * BLOCK_SIZE_M, found by counting offsets <= it; -1 past the end) and the
     sentinel at every padding row of block b (rows past offsets[e] + counts[e] of its segment,
     all rows of a block past the end) -- rows no scatter writes, so no ordering between CTAs.

make_inputs draws realistic skewed routing on the CPU: Zipf-like expert popularity
(p_e ~ 1 / rank^ZIPF_S over a random permutation of the experts) and per token topk distinct
experts by Gumbel-top-k over log p_e, so a few experts get several times the mean load.

The scan's tile is SCAN_ROWS = SCAN_ELEMS / E_P rows (4096 int32: 16 rows at E 256, 256 at E <= 16),
so its serial steps are 2 * ceil(CTAs / SCAN_ROWS).

Tunables: BLOCK_T (tokens per CTA: the grid of stages 1 and 3 and the table's rows, which the
one scan CTA walks serially), BLOCK (slots per step of stages 1 and 3, a power of two: the
sort's width, log2(BLOCK) (log2(BLOCK) + 1) / 2 bitonic stages), LOOP_STAGES (tl.range's
num_stages on the three kernels' loops: the id loads and the table tiles go through cp.async
shared-memory buffers that many steps ahead; 1 = plain loads), num_warps (all three kernels),
num_stages (all three; no tl.dot, so with triton 3.6 for sm_90 it changes nothing: the loops'
pipelining is LOOP_STAGES'). The tunables are `_kernel`'s constexprs; the scan's tile is not
tuned (the SCAN_ELEMS rule above).
Performance: a few hundred KB of ids (read twice, the second time from L2) and a few hundred KB
to 1 MB written: every point is latency- and launch-bound rather than bandwidth-bound. The
one-CTA scan's serial steps grow with the CTAs (small BLOCK_T), the scatter's sort work with
BLOCK, and masked lanes waste work where BLOCK > BLOCK_T * topk.
Problem parameters (a workload point): T (tokens), topk, E (experts), BLOCK_SIZE_M (the GEMM's
row block, a power of two).
"""

from __future__ import annotations

import triton
import triton.language as tl

ZIPF_S = 0.9        # exponent of the expert popularity make_inputs draws (the hottest ~3-10x mean)


@triton.jit
def _kernel(IDS, TABLE, N, E, topk, E_P: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK: tl.constexpr,
            LOOP_STAGES: tl.constexpr):
    # stage 1: the CTA's histogram of its chunk of BLOCK_T * topk slots -> row pid of the table
    pid = tl.program_id(0)
    start = pid * (BLOCK_T * topk)
    end = tl.minimum(start + BLOCK_T * topk, N)
    lanes = tl.arange(0, BLOCK)
    hist = tl.zeros([E_P], tl.int32)
    for s in tl.range(tl.cdiv(BLOCK_T * topk, BLOCK), num_stages=LOOP_STAGES):
        idx = start + s * BLOCK + lanes
        in_chunk = idx < end
        ids = tl.load(IDS + idx, mask=in_chunk, other=-1)
        ok = in_chunk & (ids >= 0) & (ids < E)
        hist += tl.histogram(ids, E_P, mask=ok)
    es = tl.arange(0, E_P)
    tl.store(TABLE + pid * E_P + es, hist)


@triton.jit
def _scan_kernel(TABLE, COUNTS, OFFS, n_ctas, E, E_P: tl.constexpr, SCAN_ROWS: tl.constexpr,
                 BLOCK_SIZE_M: tl.constexpr, LOOP_STAGES: tl.constexpr):
    # stage 2 (one CTA): column sums, padded exclusive offsets, per-(CTA, expert) start positions
    es = tl.arange(0, E_P)
    rows = tl.arange(0, SCAN_ROWS)
    tot = tl.zeros([E_P], tl.int32)
    for r0 in tl.range(0, n_ctas, SCAN_ROWS, num_stages=LOOP_STAGES):
        r = r0 + rows
        tile = tl.load(TABLE + r[:, None] * E_P + es[None, :], mask=(r < n_ctas)[:, None], other=0)
        tot += tl.sum(tile, axis=0)
    padded = (tot + BLOCK_SIZE_M - 1) // BLOCK_SIZE_M * BLOCK_SIZE_M
    offs = tl.cumsum(padded, axis=0) - padded
    tl.store(COUNTS + es, tot, mask=es < E)
    tl.store(OFFS + es, offs, mask=es < E)
    tl.store(OFFS + E, tl.sum(padded, axis=0))
    run = offs
    for r0 in tl.range(0, n_ctas, SCAN_ROWS, num_stages=LOOP_STAGES):
        r = r0 + rows
        ptrs = TABLE + r[:, None] * E_P + es[None, :]
        tile = tl.load(ptrs, mask=(r < n_ctas)[:, None], other=0)
        tl.store(ptrs, tl.cumsum(tile, axis=0) - tile + run[None, :], mask=(r < n_ctas)[:, None])
        run += tl.sum(tile, axis=0)


@triton.jit
def _scatter_kernel(IDS, TABLE, COUNTS, OFFS, SORTED, EXPERT_IDS, N, E, topk, max_blocks, BLOCKS_PER_CTA,
                    E_P: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                    LOOP_STAGES: tl.constexpr):
    # stage 3: the chunk's slots to their sorted rows, then this CTA's share of expert_ids / padding
    pid = tl.program_id(0)
    start = pid * (BLOCK_T * topk)
    end = tl.minimum(start + BLOCK_T * topk, N)
    lanes = tl.arange(0, BLOCK)
    es = tl.arange(0, E_P)
    cursor = tl.load(TABLE + pid * E_P + es)          # where this CTA's next slot of each expert goes
    for s in tl.range(tl.cdiv(BLOCK_T * topk, BLOCK), num_stages=LOOP_STAGES):
        base = start + s * BLOCK
        idx = base + lanes
        in_chunk = idx < end
        ids = tl.load(IDS + idx, mask=in_chunk, other=-1)
        ok = in_chunk & (ids >= 0) & (ids < E)
        hist = tl.histogram(ids, E_P, mask=ok)
        key = tl.where(ok, ids, E_P) * BLOCK + lanes   # dropped / tail slots sort last
        skey = tl.sort(key)
        s_exp = skey // BLOCK
        s_lane = skey % BLOCK
        first = tl.cumsum(hist, axis=0) - hist          # the step's first sorted position of each expert
        dst = tl.gather(cursor - first, tl.minimum(s_exp, E_P - 1), 0) + lanes
        tl.store(SORTED + dst, base + s_lane, mask=s_exp < E_P)
        cursor += hist
    # expert_ids and the padding rows of blocks pid * BLOCKS_PER_CTA ..
    seg = tl.load(OFFS + es, mask=es < E, other=2147483647)
    cnt = tl.load(COUNTS + es, mask=es < E, other=0)
    total = tl.load(OFFS + E)
    rows = tl.arange(0, BLOCK_SIZE_M)
    for i in range(BLOCKS_PER_CTA):
        b = pid * BLOCKS_PER_CTA + i
        row0 = b * BLOCK_SIZE_M
        e_b = tl.sum((seg <= row0).to(tl.int32), axis=0) - 1
        seg_start = tl.sum(tl.where(es == e_b, seg, 0), axis=0)
        seg_cnt = tl.sum(tl.where(es == e_b, cnt, 0), axis=0)
        r = row0 + rows
        pad = ((r - seg_start) >= seg_cnt) | (r >= total)       # a padding row, or past the padded total
        tl.store(SORTED + r, tl.zeros([BLOCK_SIZE_M], tl.int32) + N, mask=pad & (r < max_blocks * BLOCK_SIZE_M))
        tl.store(EXPERT_IDS + b, tl.where(row0 < total, e_b, -1), mask=b < max_blocks)


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_T", "BLOCK", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 128, "BLOCK": 1024, "LOOP_STAGES": 3, "num_warps": 4, "num_stages": 1}
SCAN_ELEMS = 4096   # the scan's tile: SCAN_ROWS = SCAN_ELEMS / E_P table rows (16 at E 256, 256 at E <= 16)

# The three shapes the brief names: a DeepSeek-V3 prefill chunk (256 routed experts, top-8, the
# fused-MoE GEMM's 64-row blocks: 131072 slots), a Mixtral-8x7B long prefill (8 experts, top-2,
# 128-row blocks: 131072 slots, ~16k per expert, a tiny table a row) and a Qwen3-30B-A3B decode
# batch (128 experts, top-8, 16-row blocks: 4096 slots, latency-bound, few CTAs).
POINTS = [
    {"T": 16384, "topk": 8, "E": 256, "BLOCK_SIZE_M": 64},
    {"T": 65536, "topk": 2, "E": 8, "BLOCK_SIZE_M": 128},
    {"T": 512, "topk": 8, "E": 128, "BLOCK_SIZE_M": 16},
]


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _check_cfg(cfg) -> None:
    if cfg["BLOCK_T"] < 1:
        raise ValueError(f"BLOCK_T={cfg['BLOCK_T']} must be >= 1 (tokens per CTA)")
    if cfg["LOOP_STAGES"] < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1")
    v = cfg["BLOCK"]
    if v < 16 or v & (v - 1):
        raise ValueError(f"BLOCK={v} must be a power of two >= 16")


def _check_point(point) -> None:
    T, topk, E, bm = point["T"], point["topk"], point["E"], point["BLOCK_SIZE_M"]
    if T < 1 or topk < 1 or E < 1:
        raise ValueError(f"T={T}, topk={topk}, E={E} must all be >= 1")
    if bm < 1 or bm & (bm - 1):
        raise ValueError(f"BLOCK_SIZE_M={bm} must be a power of two")
    if T * topk + E * bm >= 2**31:
        raise ValueError(f"T * topk + E * BLOCK_SIZE_M = {T * topk + E * bm} overflows the int32 rows")


def plan(cfg, point, scan_rows=None) -> dict:
    """The launch geometry: CTAs, slots a CTA, steps, E_P, the scan's tile rows, the output's sizes."""
    _check_cfg(cfg)
    if scan_rows is not None and (scan_rows < 1 or scan_rows & (scan_rows - 1)):
        raise ValueError(f"scan_rows={scan_rows} must be a power of two >= 1")
    _check_point(point)
    T, topk, E, bm = point["T"], point["topk"], point["E"], point["BLOCK_SIZE_M"]
    N = T * topk
    ctas = triton.cdiv(T, cfg["BLOCK_T"])
    slots = cfg["BLOCK_T"] * topk
    max_blocks = triton.cdiv(N + E * (bm - 1), bm)
    e_p = max(16, _pow2(E))
    return {"N": N, "topk": topk, "ctas": ctas, "slots": slots, "steps": triton.cdiv(slots, cfg["BLOCK"]),
            "E_P": e_p, "scan_rows": scan_rows or max(1, SCAN_ELEMS // e_p),
            "max_blocks": max_blocks, "max_rows": max_blocks * bm,
            "blocks_per_cta": triton.cdiv(max_blocks, ctas)}


def _layout(E: int, pl: dict) -> dict:
    """Offsets of the packed output's parts: [counts E | offsets E + 1 | expert_ids | sorted_ids]."""
    return {"counts": 0, "offsets": E, "expert_ids": 2 * E + 1, "sorted": 2 * E + 1 + pl["max_blocks"],
            "numel": 2 * E + 1 + pl["max_blocks"] + pl["max_rows"]}


def _kernel_args(ids, table, cfg, pl, E) -> dict:
    return dict(IDS=ids, TABLE=table, N=pl["N"], E=E, topk=pl["topk"], E_P=pl["E_P"], BLOCK_T=cfg["BLOCK_T"],
                BLOCK=cfg["BLOCK"], LOOP_STAGES=cfg["LOOP_STAGES"])


def _scan_args(table, counts, offsets, cfg, pl, E, bm) -> dict:
    return dict(TABLE=table, COUNTS=counts, OFFS=offsets, n_ctas=pl["ctas"], E=E, E_P=pl["E_P"],
                SCAN_ROWS=pl["scan_rows"], BLOCK_SIZE_M=bm, LOOP_STAGES=cfg["LOOP_STAGES"])


def _scatter_args(ids, table, counts, offsets, sorted_ids, expert_ids, cfg, pl, E, bm) -> dict:
    return dict(IDS=ids, TABLE=table, COUNTS=counts, OFFS=offsets, SORTED=sorted_ids, EXPERT_IDS=expert_ids,
                N=pl["N"], E=E, topk=pl["topk"], max_blocks=pl["max_blocks"],
                BLOCKS_PER_CTA=pl["blocks_per_cta"], E_P=pl["E_P"], BLOCK_T=cfg["BLOCK_T"], BLOCK=cfg["BLOCK"],
                BLOCK_SIZE_M=bm, LOOP_STAGES=cfg["LOOP_STAGES"])


def moe_align_block_size(topk_ids, num_experts: int, block_size_m: int, *, BLOCK_T=128, BLOCK=1024,
                         LOOP_STAGES=3, num_warps=4, num_stages=1, scan_rows=None, packed: bool = False):
    """topk_ids [T, topk] int32 (copied if not contiguous) -> (sorted_ids, expert_ids,
    num_tokens_post_padded [1], counts [E], offsets [E + 1]), views of one int32 buffer (or the
    buffer itself with packed=True). scan_rows overrides the scan's tile rows (tests: several
    tiles on a small table)."""
    import torch
    if topk_ids.dim() != 2 or topk_ids.dtype != torch.int32:
        raise ValueError(f"topk_ids must be a 2-D int32 [T, topk]; got {topk_ids.dtype} {tuple(topk_ids.shape)}")
    T, topk = topk_ids.shape
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK": BLOCK, "LOOP_STAGES": LOOP_STAGES}
    point = {"T": T, "topk": topk, "E": num_experts, "BLOCK_SIZE_M": block_size_m}
    pl = plan(cfg, point, scan_rows)
    ids = topk_ids.contiguous()
    E = num_experts
    lay = _layout(E, pl)
    out = torch.empty(lay["numel"], dtype=torch.int32, device=ids.device)
    table = torch.empty((pl["ctas"], pl["E_P"]), dtype=torch.int32, device=ids.device)
    counts = out[:E]
    offsets = out[E:2 * E + 1]
    expert_ids = out[lay["expert_ids"]:lay["sorted"]]
    sorted_ids = out[lay["sorted"]:]
    kw = {"num_warps": num_warps, "num_stages": num_stages}
    _kernel[(pl["ctas"],)](**_kernel_args(ids, table, cfg, pl, E), **kw)
    _scan_kernel[(1,)](**_scan_args(table, counts, offsets, cfg, pl, E, block_size_m), **kw)
    _scatter_kernel[(pl["ctas"],)](**_scatter_args(ids, table, counts, offsets, sorted_ids, expert_ids, cfg, pl, E,
                                                   block_size_m), **kw)
    if packed:
        return out
    return sorted_ids, expert_ids, offsets[E:], counts, offsets


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Skewed routing: Zipf-like popularity over a random expert order, topk distinct experts a
    token by Gumbel-top-k (drawn on the CPU, then moved)."""
    import torch
    _check_point(point)
    T, topk, E = point["T"], point["topk"], point["E"]
    if topk > E:
        raise ValueError(f"topk={topk} > E={E}: a token's experts are distinct")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    rank = torch.randperm(E, generator=gen).double() + 1.0
    logp = -ZIPF_S * torch.log(rank)
    u = torch.rand((T, E), generator=gen, dtype=torch.float64).clamp_(1e-12, 1 - 1e-12)
    ids = torch.topk(logp[None, :] - torch.log(-torch.log(u)), topk, dim=1).indices.to(torch.int32)
    return {"topk_ids": ids.to(device), "E": E, "BLOCK_SIZE_M": point["BLOCK_SIZE_M"]}


def launch(inputs, cfg):
    return moe_align_block_size(inputs["topk_ids"], inputs["E"], inputs["BLOCK_SIZE_M"], BLOCK_T=cfg["BLOCK_T"],
                                BLOCK=cfg["BLOCK"], LOOP_STAGES=cfg["LOOP_STAGES"], num_warps=cfg["num_warps"],
                                num_stages=cfg["num_stages"], scan_rows=inputs.get("scan_rows"), packed=True)


def reference(inputs):
    """The packed output in torch (a stable sort of the slots by expert), as fp32 (every value an
    integer < 2^24, so exact)."""
    import torch
    ids = inputs["topk_ids"].reshape(-1).long().cpu()
    E, bm = inputs["E"], inputs["BLOCK_SIZE_M"]
    T, topk = inputs["topk_ids"].shape
    pl = plan({"BLOCK_T": 1, "BLOCK": 16, "LOOP_STAGES": 1}, {"T": T, "topk": topk, "E": E, "BLOCK_SIZE_M": bm})
    N = pl["N"]
    ok = (ids >= 0) & (ids < E)
    counts = torch.bincount(ids[ok], minlength=E)
    padded = (counts + bm - 1) // bm * bm
    offsets = torch.zeros(E + 1, dtype=torch.long)
    offsets[1:] = torch.cumsum(padded, 0)
    sorted_ids = torch.full((pl["max_rows"],), N, dtype=torch.long)
    expert_ids = torch.full((pl["max_blocks"],), -1, dtype=torch.long)
    slots = torch.arange(N)
    for e in range(E):
        mine = slots[ids == e]
        sorted_ids[offsets[e]:offsets[e] + mine.numel()] = mine
        expert_ids[offsets[e] // bm:offsets[e + 1] // bm] = e
    return torch.cat([counts, offsets, expert_ids, sorted_ids]).float().to(inputs["topk_ids"].device)


def torch_baseline(inputs):
    """What a torch user writes: a stable argsort by expert, bincount, the padded scatter; packed the same way."""
    import torch
    ids2 = inputs["topk_ids"]
    E, bm = inputs["E"], inputs["BLOCK_SIZE_M"]
    T, topk = ids2.shape
    pl = plan({"BLOCK_T": 1, "BLOCK": 16, "LOOP_STAGES": 1}, {"T": T, "topk": topk, "E": E, "BLOCK_SIZE_M": bm})
    ids = ids2.reshape(-1).long()
    dev = ids.device
    ok = (ids >= 0) & (ids < E)
    key = torch.where(ok, ids, torch.full_like(ids, E))
    order = torch.sort(key, stable=True).indices
    counts = torch.bincount(key, minlength=E + 1)[:E]
    padded = (counts + bm - 1) // bm * bm
    offsets = torch.zeros(E + 1, dtype=torch.long, device=dev)
    offsets[1:] = torch.cumsum(padded, 0)
    ccounts = torch.cumsum(counts, 0) - counts
    n_ok = int(ok.sum())
    skey = key[order][:n_ok]
    rows = offsets[skey] + torch.arange(n_ok, device=dev) - ccounts[skey]
    sorted_ids = torch.full((pl["max_rows"],), pl["N"], dtype=torch.long, device=dev)
    sorted_ids[rows] = order[:n_ok]
    blk = torch.arange(pl["max_blocks"], device=dev) * bm
    expert_ids = torch.searchsorted(offsets[1:], blk, right=True)
    expert_ids = torch.where(blk < offsets[E], expert_ids, torch.full_like(expert_ids, -1))
    return torch.cat([counts, offsets, expert_ids, sorted_ids]).to(torch.int32)


def bytes_moved(point) -> int:
    """topk_ids read once (stage 3's second read hits L2), the packed output written once (counts,
    offsets, expert_ids, every row of sorted_ids); the table stays in L2."""
    pl = plan(BASELINE, point)
    return 4 * pl["N"] + 4 * _layout(point["E"], pl)["numel"]


def flops(point) -> int:
    """Integer work, no floating point: one count and one placement a slot."""
    return 2 * point["T"] * point["topk"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens (stage 1; stage 3 has the same grid)."""
    return plan(cfg, point)["ctas"]


def loop_iterations(cfg, point) -> int:
    """Steps of BLOCK slots per CTA of stage 1."""
    return plan(cfg, point)["steps"]


def cta_iterations(cfg, point) -> list:
    """Each CTA's steps: the last CTA's chunk may be shorter."""
    pl = plan(cfg, point)
    last = pl["N"] - (pl["ctas"] - 1) * pl["slots"]
    return [pl["steps"]] * (pl["ctas"] - 1) + [triton.cdiv(last, cfg["BLOCK"])]


def secondary_kernels(cfg, point) -> list:
    """The scan (one CTA, two passes over the [CTAs, E_P] table in SCAN_ROWS-row tiles, just
    written: from L2) and the scatter (the stage-1 grid, its chunk's ids again: from L2, plus its
    share of the GEMM blocks' expert ids and padding)."""
    pl = plan(cfg, point)
    return [{"name": "_scan_kernel", "grid": 1, "iterations": 2 * triton.cdiv(pl["ctas"], pl["scan_rows"]),
             "tile_bytes": 4 * pl["scan_rows"] * pl["E_P"], "dram_bytes": 0, "blocks_per_sm": 1},
            {"name": "_scatter_kernel", "grid": pl["ctas"], "iterations": pl["steps"] + pl["blocks_per_cta"],
             "tile_bytes": 4 * cfg["BLOCK"], "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    pl = plan(cfg, point)
    ids = torch.empty((point["T"], point["topk"]), dtype=torch.int32, device="meta")
    table = torch.empty((pl["ctas"], pl["E_P"]), dtype=torch.int32, device="meta")
    return _kernel_args(ids, table, cfg, pl, point["E"])


def secondary_example_args(cfg, point) -> dict:
    """The launch arguments of `_scan_kernel` and `_scatter_kernel` (name -> args), on the meta
    device, as moe_align_block_size passes them (the packed output's parts are views of one
    buffer: counts at 0, offsets at E, so their alignment follows E)."""
    import torch
    pl = plan(cfg, point)
    E, bm = point["E"], point["BLOCK_SIZE_M"]
    lay = _layout(E, pl)
    out = torch.empty(lay["numel"], dtype=torch.int32, device="meta")
    ids = torch.empty((point["T"], point["topk"]), dtype=torch.int32, device="meta")
    table = torch.empty((pl["ctas"], pl["E_P"]), dtype=torch.int32, device="meta")
    counts, offsets = out[:E], out[E:2 * E + 1]
    expert_ids, sorted_ids = out[lay["expert_ids"]:lay["sorted"]], out[lay["sorted"]:]
    return {"_scan_kernel": _scan_args(table, counts, offsets, cfg, pl, E, bm),
            "_scatter_kernel": _scatter_args(ids, table, counts, offsets, sorted_ids, expert_ids, cfg, pl, E, bm)}
