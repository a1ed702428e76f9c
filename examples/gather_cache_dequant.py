"""Gather a paged KV cache into a contiguous buffer, dequantising on the way (vLLM's
gather_and_maybe_dequant_cache for MLA chunked-prefill context, and the prefix-cache
recompute gather), a bare @triton.jit kernel + its launcher.

    for every sequence b and token t < len_b = cu[b + 1] - cu[b]:
        out[cu[b] + t, :] = dequant(cache[block_table[b, t // PAGE], t % PAGE, :])

cache: [num_blocks, PAGE, D], D contiguous (any block / slot strides), either fp8 e4m3 with
one fp32 scale for the whole tensor (dequant(x) = float(x) * scale, rounded once to bf16) or
bf16 passed through unchanged (the scale is not read); block_table: [B, max_blocks] int32,
the physical page of each logical page of a sequence (random, non-contiguous); cu_seq_lens:
[B + 1] int32, the prefix sums of the ragged lengths (cu[0] = 0, empty sequences allowed);
out: [total_tokens, D] bf16, row stride free, D contiguous.

A CTA moves TILES_PER_CTA consecutive token tiles of BLOCK_T tokens, every column of D: for
each tile it looks up the tiles' pages once (one int32 block-table load a token, a shift and a
mask for a power-of-two PAGE), then walks D in BLOCK_D column chunks (one [BLOCK_T, BLOCK_D]
load of the cache rows, dequant, one store; D % BLOCK_D != 0 masks the last chunk's columns).
The token tiles a CTA actually holds are a runtime trip count, so CTAs past a sequence's end
(or past the last token) run no iteration at all. Two grid layouts (FLAT):

  FLAT=0 (per sequence): grid (cdiv(max_len, TILES_PER_CTA BLOCK_T), B), program_id(1) the
     sequence; a CTA's tokens all belong to it (cu[b] and cu[b + 1] two scalar loads). Short
     sequences in a long-tailed batch leave many CTAs with nothing to do.
  FLAT=1 (flat tokens): grid (cdiv(total_tokens, TILES_PER_CTA BLOCK_T),), every CTA full but
     the last; each token finds its sequence by a binary search over cu_seq_lens
     (ceil(log2 B) steps of a gathered int32 load, all L1 / L2 hits), so a tile may straddle
     sequences -- the layout for many short ragged sequences.

Tunables: BLOCK_T (power of two >= 1: tokens a tile), BLOCK_D (power of two >= 16: columns a
load), TILES_PER_CTA (>= 1: token tiles a CTA walks), FLAT (0 / 1: the grid layout above),
num_warps, num_stages (no dot: the loads are plain, not pipelined; triton 3.6 gives the same
sm_90 cubin for num_stages 1, 2 and 3).
Problem parameters (a workload point): B (sequences), len_min / len_max (the sequence lengths,
uniform in between, drawn by random.Random(len_seed): part of the workload, the same for every
input seed), D (columns a token), page (tokens a cache block), dtype ("fp8": e4m3 + a per-tensor
scale; "bf16": passthrough), spare (free cache blocks beyond those the table uses, a fraction).
"""

from __future__ import annotations

import functools
import random

import triton
import triton.language as tl

DTYPES = ("fp8", "bf16")        # the cache's; the output is always bf16


@triton.jit
def _kernel(CACHE, SCALE, BT, CU, OUT, B, total_tokens, stride_cb, stride_cs, stride_bt, stride_ot,
            D: tl.constexpr, PAGE: tl.constexpr, IS_FP8: tl.constexpr, FLAT: tl.constexpr,
            SEARCH_STEPS: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr,
            TILES_PER_CTA: tl.constexpr):
    pid = tl.program_id(0)
    offs_t = tl.arange(0, BLOCK_T)
    offs_d = tl.arange(0, BLOCK_D)
    first = pid * (TILES_PER_CTA * BLOCK_T)          # the CTA's first token (of its sequence / overall)
    if FLAT:
        remaining = total_tokens - first
        seq_start = 0
        b = 0
    else:
        b = tl.program_id(1)
        seq_start = tl.load(CU + b)
        remaining = tl.load(CU + b + 1) - seq_start - first
    n_tiles = tl.minimum(tl.maximum(tl.cdiv(remaining, BLOCK_T), 0), TILES_PER_CTA)
    if IS_FP8:
        scale = tl.load(SCALE)

    for i in range(0, n_tiles):
        base = first + i * BLOCK_T
        if FLAT:
            tok = base + offs_t
            valid = tok < total_tokens
            tok_c = tl.minimum(tok, total_tokens - 1)
            # the largest b with cu[b] <= token (empty sequences share a cu value: the last wins)
            lo = tl.zeros([BLOCK_T], tl.int32)
            hi = lo + (B - 1)
            for _ in tl.static_range(SEARCH_STEPS):
                mid = (lo + hi + 1) // 2
                go = tl.load(CU + mid) <= tok_c
                lo = tl.where(go, mid, lo)
                hi = tl.where(go, hi, mid - 1)
            t = tok_c - tl.load(CU + lo)
            seq = lo.to(tl.int64)
            row = tok.to(tl.int64)
        else:
            t = base + offs_t
            valid = t < remaining + first
            seq = b.to(tl.int64)
            row = (seq_start + t).to(tl.int64)
        blk = tl.load(BT + seq * stride_bt + t // PAGE, mask=valid, other=0)
        src = CACHE + (blk.to(tl.int64) * stride_cb + (t % PAGE).to(tl.int64) * stride_cs)[:, None]
        dst = OUT + (row * stride_ot)[:, None]
        for d0 in range(0, D, BLOCK_D):
            cols = d0 + offs_d
            if D % BLOCK_D == 0:
                m = valid[:, None]
            else:
                m = valid[:, None] & (cols < D)[None, :]
            x = tl.load(src + cols[None, :], mask=m, other=0.0)
            if IS_FP8:
                y = x.to(tl.float32) * scale
            else:
                y = x
            tl.store(dst + cols[None, :], y.to(OUT.dtype.element_ty), mask=m)


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_T", "BLOCK_D", "TILES_PER_CTA", "FLAT", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 32, "BLOCK_D": 128, "TILES_PER_CTA": 1, "FLAT": 1, "num_warps": 4, "num_stages": 2}

# Three caches as prefill gathers them. Each moves 0.4-0.7 GB (~85-145 us at ~4.8 TB/s), the
# bf16 output the larger half for fp8; every cache exceeds the 50 MB L2.
POINTS = [
    # DeepSeek-V3 MLA latent cache (kv_lora 512 + rope 64), fp8, page 64: 32 long contexts of 2k-16k
    # tokens (~300k tokens: ~170 MB of fp8 read, ~340 MB of bf16 written)
    {"B": 32, "len_min": 2048, "len_max": 16384, "D": 576, "page": 64, "dtype": "fp8", "len_seed": 1,
     "spare": 0.25},
    # a GQA cache (8 KV heads x 128) in bf16, page 16: 16 sequences of 4k-8k (~100k tokens, 2 KiB a token)
    {"B": 16, "len_min": 4096, "len_max": 8192, "D": 1024, "page": 16, "dtype": "bf16", "len_seed": 2,
     "spare": 0.25},
    # many short ragged prefix-cache hits on the MLA cache: 512 sequences of 50-1500 tokens (~400k tokens)
    {"B": 512, "len_min": 50, "len_max": 1500, "D": 576, "page": 64, "dtype": "fp8", "len_seed": 3,
     "spare": 0.25},
]


def seq_lens(point) -> list[int]:
    """The point's sequence lengths (plain ints, fixed by len_seed)."""
    lo, hi = point["len_min"], point["len_max"]
    if not 0 <= lo <= hi:
        raise ValueError(f"need 0 <= len_min <= len_max; got {lo}, {hi}")
    rng = random.Random(point.get("len_seed", 0))
    return [rng.randint(lo, hi) for _ in range(point["B"])]


def _dtype(point) -> str:
    dt = point.get("dtype", "fp8")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)} (the cache's)")
    return dt


def _torch_dtype(name: str):
    import torch
    return {"fp8": torch.float8_e4m3fn, "bf16": torch.bfloat16}[name]


def _shape(point):
    """(lens, total tokens, max_blocks, num_blocks) of a point."""
    lens = seq_lens(point)
    page = point["page"]
    max_blocks = max(1, max(-(-n // page) for n in lens))
    used = sum(-(-n // page) for n in lens)
    num_blocks = max(1, used + int(used * point.get("spare", 0.25)))
    return lens, sum(lens), max_blocks, num_blocks


def _check_cfg(cfg) -> None:
    for name, least in (("BLOCK_T", 1), ("BLOCK_D", 16)):
        v = cfg[name]
        if v < least or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= {least}")
    if cfg["TILES_PER_CTA"] < 1:
        raise ValueError(f"TILES_PER_CTA={cfg['TILES_PER_CTA']} must be >= 1")
    if cfg["FLAT"] not in (0, 1):
        raise ValueError(f"FLAT={cfg['FLAT']} must be 0 (per-sequence grid) or 1 (flat tokens)")


def _search_steps(B: int) -> int:
    return max(0, (B - 1).bit_length())


def _grid(cfg, B: int, total: int, max_len: int):
    chunk = cfg["TILES_PER_CTA"] * cfg["BLOCK_T"]
    if cfg["FLAT"]:
        return (max(1, triton.cdiv(total, chunk)),)
    return (max(1, triton.cdiv(max_len, chunk)), B)


def _kernel_args(cache, scale, block_table, cu, out, B, total, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    import torch
    return dict(CACHE=cache, SCALE=scale, BT=block_table, CU=cu, OUT=out, B=B, total_tokens=total,
                stride_cb=cache.stride(0), stride_cs=cache.stride(1), stride_bt=block_table.stride(0),
                stride_ot=out.stride(0), D=cache.shape[2], PAGE=cache.shape[1],
                IS_FP8=cache.dtype == torch.float8_e4m3fn, FLAT=cfg["FLAT"], SEARCH_STEPS=_search_steps(B),
                BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"], TILES_PER_CTA=cfg["TILES_PER_CTA"])


def gather_cache_dequant(cache, block_table, cu_seq_lens, scale=None, *, max_len=None, total=None, out=None, BLOCK_T=32,
                         BLOCK_D=128, TILES_PER_CTA=1, FLAT=1, num_warps=4, num_stages=2):
    """out[cu[b] + t] = dequant(cache[block_table[b, t // PAGE], t % PAGE]) for every sequence b and
    t < cu[b + 1] - cu[b]. cache [num_blocks, PAGE, D] fp8 e4m3 (scale: an fp32 tensor of one
    element) or bf16 (scale ignored); block_table [B, >= max pages] int32; cu_seq_lens [B + 1]
    int32. max_len (the longest sequence) sizes the FLAT=0 grid and total (cu[-1]) the output; each is read
    from cu when None (a device-to-host copy: pass both to launch inside a CUDA graph)."""
    import torch
    if cache.dim() != 3 or cache.stride(2) != 1:
        raise ValueError(f"cache must be [num_blocks, PAGE, D] with D contiguous; got {tuple(cache.shape)} "
                         f"strides {cache.stride()}")
    if cache.dtype not in (torch.float8_e4m3fn, torch.bfloat16):
        raise ValueError(f"cache must be float8_e4m3fn or bfloat16; got {cache.dtype}")
    page = cache.shape[1]
    if page < 1 or page & (page - 1):
        raise ValueError(f"PAGE={page} must be a power of two")
    if block_table.dtype != torch.int32 or cu_seq_lens.dtype != torch.int32:
        raise ValueError(f"block_table and cu_seq_lens must be int32; got {block_table.dtype}, {cu_seq_lens.dtype}")
    B = cu_seq_lens.numel() - 1
    if B < 1 or block_table.dim() != 2 or block_table.shape[0] != B or block_table.stride(1) != 1:
        raise ValueError(f"expected block_table [B, max_blocks] (unit column stride) and cu_seq_lens [B + 1]; got "
                         f"{tuple(block_table.shape)}, {tuple(cu_seq_lens.shape)}")
    if cache.dtype == torch.float8_e4m3fn:
        if scale is None or scale.numel() != 1 or scale.dtype != torch.float32:
            raise ValueError("an fp8 cache needs scale: an fp32 tensor of one element")
    else:
        scale = cache.new_ones((1,), dtype=torch.float32) if scale is None else scale
    total = int(cu_seq_lens[-1]) if total is None else total
    D = cache.shape[2]
    if out is None:
        out = torch.empty((total, D), dtype=torch.bfloat16, device=cache.device)
    elif tuple(out.shape) != (total, D) or out.dtype != torch.bfloat16 or out.stride(1) != 1:
        raise ValueError(f"out must be bf16 [{total}, {D}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_D": BLOCK_D, "TILES_PER_CTA": TILES_PER_CTA, "FLAT": FLAT}
    _check_cfg(cfg)
    if total == 0:
        return out
    if max_len is None:
        max_len = int((cu_seq_lens[1:] - cu_seq_lens[:-1]).max())
    grid = _grid(cfg, B, total, max_len)
    _kernel[grid](**_kernel_args(cache, scale.reshape(1), block_table, cu_seq_lens, out, B, total, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """A cache of O(1) values (fp8: randn x 4 cast to e4m3 with a scale ~0.03, as a per-tensor KV scale
    amax / 448 is; bf16: randn), each sequence's pages a random non-contiguous set of physical blocks
    (a permutation of the cache's blocks drawn on the CPU, the spare ones never read), the point's
    lengths as cu_seq_lens."""
    import torch
    dt = _dtype(point)
    lens, total, max_blocks, num_blocks = _shape(point)
    page, D = point["page"], point["D"]
    cpu = torch.Generator().manual_seed(seed)
    bt, cu = _tables(point, cpu)
    gen = torch.Generator(device=device).manual_seed(seed)
    if dt == "fp8":
        cache = (torch.randn((num_blocks, page, D), generator=gen, device=device) * 4).to(torch.float8_e4m3fn)
        scale = (0.02 + 0.02 * torch.rand((1,), generator=cpu)).to(device)
    else:
        cache = torch.randn((num_blocks, page, D), generator=gen, device=device).to(torch.bfloat16)
        scale = torch.ones((1,), dtype=torch.float32, device=device)
    return {"cache": cache, "block_table": bt.to(device), "cu_seq_lens": cu.to(device), "scale": scale,
            "max_len": max(lens), "total": sum(lens)}


def launch(inputs, cfg):
    return gather_cache_dequant(inputs["cache"], inputs["block_table"], inputs["cu_seq_lens"], inputs["scale"],
                                max_len=inputs["max_len"], total=inputs["total"], BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"],
                                TILES_PER_CTA=cfg["TILES_PER_CTA"], FLAT=cfg["FLAT"], num_warps=cfg["num_warps"],
                                num_stages=cfg["num_stages"])


def _slots(inputs):
    """(physical block, offset) of every output row, in torch."""
    import torch
    cu = inputs["cu_seq_lens"].long()
    lens = cu[1:] - cu[:-1]
    page = inputs["cache"].shape[1]
    seq = torch.repeat_interleave(torch.arange(lens.numel(), device=cu.device), lens)
    t = torch.arange(int(cu[-1]), device=cu.device) - cu[seq]
    return inputs["block_table"].long()[seq, t // page], t % page


def reference(inputs):
    """The gathered rows in fp64 times the scale (fp8 -> fp64 is exact), fp32 out."""
    blk, off = _slots(inputs)
    x = inputs["cache"][blk, off].double()
    if inputs["cache"].dtype != __import__("torch").bfloat16:
        x = x * inputs["scale"].double()
    return x.float()


def torch_baseline(inputs):
    """Advanced indexing of the cache, then the dequant in eager fp32 (what a torch fallback does)."""
    import torch
    blk, off = _slots(inputs)
    x = inputs["cache"][blk, off]
    if x.dtype == torch.bfloat16:
        return x.clone()
    return (x.float() * inputs["scale"]).to(torch.bfloat16)


def bytes_moved(point) -> int:
    """Each token's cache row read once (D x 1 or 2 bytes), its bf16 row written once, the used
    block-table entries and cu_seq_lens read."""
    lens, total, _, _ = _shape(point)
    el = 1 if _dtype(point) == "fp8" else 2
    pages = sum(-(-n // point["page"]) for n in lens)
    return total * point["D"] * (el + 2) + 4 * pages + 4 * (point["B"] + 1)


def flops(point) -> int:
    """One multiply per element (fp8: the scale); none for a bf16 passthrough."""
    _, total, _, _ = _shape(point)
    return total * point["D"] if _dtype(point) == "fp8" else 0


def grid(cfg, point):
    """The launch grid: (token chunks,) flat, or (chunks of the longest sequence, B) per sequence."""
    lens, total, _, _ = _shape(point)
    return _grid(cfg, point["B"], total, max(lens))


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's main-loop iterations (token tiles it holds x D chunks), program id x fastest."""
    lens, total, _, _ = _shape(point)
    chunk = cfg["TILES_PER_CTA"] * cfg["BLOCK_T"]
    dchunks = triton.cdiv(point["D"], cfg["BLOCK_D"])
    g = _grid(cfg, point["B"], total, max(lens))

    def tiles(rem):
        return min(max(triton.cdiv(rem, cfg["BLOCK_T"]), 0), cfg["TILES_PER_CTA"])

    if cfg["FLAT"]:
        return [tiles(total - c * chunk) * dchunks for c in range(g[0])]
    return [tiles(n - c * chunk) * dchunks for n in lens for c in range(g[0])]


def loop_iterations(cfg, point) -> int:
    """Main-loop iterations ([BLOCK_T, BLOCK_D] load + store steps) of a full CTA: TILES_PER_CTA x
    cdiv(D, BLOCK_D)."""
    return cfg["TILES_PER_CTA"] * triton.cdiv(point["D"], cfg["BLOCK_D"])


@functools.lru_cache(maxsize=4)
def _table_data(key: str):
    """The point's block table and cu_seq_lens with data, on the CPU (rank reads the gathered pages from them):
    make_inputs' seed-0 draw of them (the cache itself is not drawn)."""
    import ast
    import torch
    return _tables(dict(ast.literal_eval(key)), torch.Generator().manual_seed(0))


def _tables(point, cpu):
    """(block_table [B, max_blocks], cu_seq_lens [B + 1]) int32 on the CPU, drawn from the generator `cpu`:
    each sequence's pages a slice of one permutation of the cache's blocks (the tail past its length random,
    never read), the point's lengths as prefix sums."""
    import torch
    lens, _, max_blocks, num_blocks = _shape(point)
    perm = torch.randperm(num_blocks, generator=cpu).to(torch.int32)
    bt = torch.randint(0, num_blocks, (point["B"], max_blocks), generator=cpu, dtype=torch.int32)  # unused tail
    at = 0
    for b, n in enumerate(lens):
        k = -(-n // point["page"])
        bt[b, :k] = perm[at:at + k]
        at += k
    cu = torch.zeros(point["B"] + 1, dtype=torch.int32)
    cu[1:] = torch.cumsum(torch.tensor(lens, dtype=torch.int64), 0).to(torch.int32)
    return bt, cu


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: the block table and cu_seq_lens with data
    (_table_data), the rest on the meta device (no memory)."""
    import torch
    _check_cfg(cfg)
    lens, total, max_blocks, num_blocks = _shape(point)
    B = point["B"]
    cache = torch.empty((num_blocks, point["page"], point["D"]), dtype=_torch_dtype(_dtype(point)), device="meta")
    scale = torch.empty((1,), dtype=torch.float32, device="meta")
    bt, cu = _table_data(repr(sorted(point.items())))
    out = torch.empty((total, point["D"]), dtype=torch.bfloat16, device="meta")
    return _kernel_args(cache, scale, bt, cu, out, B, total, cfg)
