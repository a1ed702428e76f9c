"""Per-row top-k of logits (the top-k step of an LLM sampler, as vLLM's / SGLang's sampling
path runs it before top-p and the draw), a two-stage bare @triton.jit kernel + its merge
kernel + the launcher.

    values[r, :], indices[r, :] = the k largest logits[r, :] and their columns, largest first

logits: [B, V] fp32 / bf16 / fp16 (an LM head's output; V need not be a power of two; rows may
be strided, columns contiguous). values: [B, k] in the logits' dtype, indices: [B, k] int64,
sorted descending; equal values are ordered by the smaller column (what a stable descending
sort gives). -inf logits (banned tokens) are ordinary values (below every finite one); -0.0
orders just below +0.0; NaN is not handled (a positive NaN orders above +inf, a negative one
below -inf, where torch.topk puts every NaN first). Needs 1 <= k <= min(V, 1024).

The selection key. Each logit becomes one integer whose signed order is the order "larger value
first, then smaller column first": the float's bits with the magnitude bits flipped when the
sign is set (a monotone map of floats onto signed integers), shifted up, ORed with
(2^b - 1 - column) in the low b bits. One integer max then picks the largest value and, among
equal values, the first column; the keys are unique, so "the largest key below the previous
pick" walks the top-k in order with no mask state. 16-bit logits use int32 keys (16 value bits
and a column within the CTA's span of the row, <= 65536 columns); fp32 logits, or a 16-bit
span wider than 65536 columns (WIDE), use int64 keys (32 + 32 bits): the int64 compare / select
/ max cost about twice the int32 ones, so fp32 selects at about half the bf16 rate.

Stage 1, ``_kernel``: grid (n_groups, B). The row is cut into chunks of STEP columns, and CTA
(g, r) walks CHUNKS_PER_CTA consecutive chunks of row r (the last group of a row may get fewer):
per chunk it loads a [BLOCK_V // K_PAD, K_PAD] register tile (K_PAD = next power of two >= k)
and runs k passes, each one masked max over the tile (a whole-CTA reduction) that yields the
next key. With CHUNKS_PER_CTA == 1 the tile is the chunk (STEP = BLOCK_V). With CHUNKS_PER_CTA
> 1 the tile's first row carries the running top-k of the chunks before (the previous chunk's
k picks, broadcast into row 0) and the other rows hold STEP = BLOCK_V - K_PAD new columns, so
the CTA ends with the top-k of its whole span: CHUNKS_PER_CTA x fewer candidates for stage 2
and fewer CTAs, for K_PAD dead lanes per chunk. Each CTA writes its k keys (as global int64
keys: value bits << 32 | 2^32 - 1 - column) to a workspace [B, n_groups * k]; when one CTA
covers the whole row (n_groups == 1) it decodes them and writes values / indices itself, and
stage 2 is skipped.
Stage 2, ``_merge_kernel``: one CTA per row, k passes over the row's n_groups * k candidate keys
(just written, from L2): in registers when they fit one MERGE_BLOCK tile, else each pass streams
the row's tiles and keeps an elementwise max (one reduction per pass); decodes and writes the row.

The work is k reduction passes over every logit (B V k masked int compare / select / max) plus
B n_groups k passes over a K_PAD-wide carry row, and k whole-CTA reductions (shuffles, a shared-
memory exchange and barriers) per chunk; the logits are read once.

Tunables: BLOCK_V (power of two >= K_PAD, >= 2 K_PAD when CHUNKS_PER_CTA > 1), CHUNKS_PER_CTA
(>= 1), num_warps, num_stages (no dot and a loop nest: with triton 3.6 for sm_90 the chunk loop's
loads are not pipelined, num_stages changes nothing in the SASS).
Problem parameters (a workload point): B (rows), V (vocabulary), k, dtype (of the logits).
Timing covers both kernels; grid / loop_iterations describe ``_kernel`` (its chunk loop),
secondary_kernels the merge.
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_K = 1024
MERGE_MAX_BLOCK = 2048      # candidate keys one stage-2 tile holds (int64: 8 a thread at 8 warps)
NARROW_SPAN = 65536         # columns an int32 key (16 value bits + 16 column bits) can tell apart


@triton.jit
def _float_key(x, SIGN_MASK: tl.constexpr, WIDTH: tl.constexpr):
    """The monotone signed-integer key (int32, sign-extended for 16-bit floats) of float x."""
    if WIDTH == 16:
        b = x.to(tl.int16, bitcast=True).to(tl.int32)
    else:
        b = x.to(tl.int32, bitcast=True)
    return tl.where(b < 0, b ^ SIGN_MASK, b)


@triton.jit
def _global_key(key, group_start, WIDE: tl.constexpr):
    """A CTA-local key (int32 narrow / int64 wide, column relative to group_start) as the global
    int64 key: value key << 32 | 2^32 - 1 - column; the sentinel (the type's minimum) stays one."""
    LOW32 = tl.full([], 4294967295, tl.int64)
    if WIDE:
        vkey = key >> 32
        col = LOW32 - (key & LOW32) + group_start
        sentinel = key == -9223372036854775807 - 1
    else:
        vkey = (key >> 16).to(tl.int64)
        col = (65535 - (key & 65535)).to(tl.int64) + group_start
        sentinel = key == -2147483647 - 1
    g = (vkey << 32) | (LOW32 - col)
    return tl.where(sentinel, -9223372036854775807 - 1, g)


@triton.jit
def _store_decoded(gkey, VALS, IDX, kar, K, SIGN_MASK: tl.constexpr, WIDTH: tl.constexpr):
    """Decode global int64 keys into (value, column) and store the first K of them."""
    LOW32 = tl.full([], 4294967295, tl.int64)
    vkey = (gkey >> 32).to(tl.int32)
    col = LOW32 - (gkey & LOW32)
    bits = tl.where(vkey < 0, vkey ^ SIGN_MASK, vkey)
    if WIDTH == 16:
        val = bits.to(tl.int16).to(VALS.dtype.element_ty, bitcast=True)
    else:
        val = bits.to(VALS.dtype.element_ty, bitcast=True)
    ok = kar < K
    tl.store(VALS + kar, val, mask=ok)
    tl.store(IDX + kar, col, mask=ok)


@triton.jit
def _kernel(LOGITS, CAND, VALS, IDX, V, K, stride_row, stride_cand, stride_out,
            BLOCK_V: tl.constexpr, CHUNKS_PER_CTA: tl.constexpr, K_PAD: tl.constexpr, WIDE: tl.constexpr,
            SIGN_MASK: tl.constexpr, WIDTH: tl.constexpr, FINAL: tl.constexpr):
    g = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    ROWS: tl.constexpr = BLOCK_V // K_PAD
    CARRY: tl.constexpr = 1 if CHUNKS_PER_CTA > 1 else 0      # tile row 0 holds the running top-k
    STEP: tl.constexpr = (ROWS - CARRY) * K_PAD               # new columns per chunk
    if WIDE:
        KEY_MIN: tl.constexpr = -9223372036854775807 - 1
        KEY_MAX: tl.constexpr = 9223372036854775807
        LOW: tl.constexpr = 4294967295
        head = tl.full([K_PAD], KEY_MIN, tl.int64)            # the picks so far, best first
    else:
        KEY_MIN: tl.constexpr = -2147483647 - 1
        KEY_MAX: tl.constexpr = 2147483647
        LOW: tl.constexpr = 65535
        head = tl.full([K_PAD], KEY_MIN, tl.int32)

    n_chunks = tl.cdiv(V, STEP)
    c_first = g * CHUNKS_PER_CTA
    c_last = tl.minimum(c_first + CHUNKS_PER_CTA, n_chunks)
    group_start = c_first * STEP                               # columns of this CTA's keys are relative to it

    r_idx = tl.arange(0, ROWS)[:, None]
    kar = tl.arange(0, K_PAD)
    tile_off = (r_idx - CARRY) * K_PAD + kar[None, :]          # column of each lane within its chunk
    x_row = LOGITS + row * stride_row
    for c in range(c_first, c_last):
        cols = c * STEP + tile_off
        x = tl.load(x_row + cols, mask=(r_idx >= CARRY) & (cols < V))
        key = _float_key(x, SIGN_MASK, WIDTH)
        local = cols - group_start
        if WIDE:
            key = (key.to(tl.int64) << 32) | (LOW - local.to(tl.int64))
        else:
            key = (key << 16) | (LOW - local)
        key = tl.where((r_idx >= CARRY) & (cols < V), key, KEY_MIN)
        if CARRY:
            key = tl.where(r_idx == 0, head[None, :], key)
        prev = tl.full([], KEY_MAX, key.dtype)
        for j in range(0, K):
            cur = tl.max(tl.where(key < prev, key, KEY_MIN))
            head = tl.where(kar == j, cur, head)
            prev = cur

    gkey = _global_key(head, group_start, WIDE)
    if FINAL:
        _store_decoded(gkey, VALS + row * stride_out, IDX + row * stride_out, kar, K, SIGN_MASK, WIDTH)
    else:
        tl.store(CAND + row * stride_cand + g * K + kar, gkey, mask=kar < K)


@triton.jit
def _merge_kernel(CAND, VALS, IDX, NC, K, stride_cand, stride_out,
                  MERGE_BLOCK: tl.constexpr, K_PAD: tl.constexpr, ONE_TILE: tl.constexpr,
                  SIGN_MASK: tl.constexpr, WIDTH: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    KEY_MIN: tl.constexpr = -9223372036854775807 - 1
    c_row = CAND + row * stride_cand
    offs = tl.arange(0, MERGE_BLOCK)
    kar = tl.arange(0, K_PAD)
    head = tl.full([K_PAD], KEY_MIN, tl.int64)
    prev = tl.full([], 9223372036854775807, tl.int64)
    if ONE_TILE:
        key = tl.load(c_row + offs, mask=offs < NC, other=KEY_MIN)
        for j in range(0, K):
            cur = tl.max(tl.where(key < prev, key, KEY_MIN))
            head = tl.where(kar == j, cur, head)
            prev = cur
    else:
        for j in range(0, K):
            best = tl.full([MERGE_BLOCK], KEY_MIN, tl.int64)
            for s in range(0, NC, MERGE_BLOCK):
                key = tl.load(c_row + s + offs, mask=s + offs < NC, other=KEY_MIN)
                best = tl.maximum(best, tl.where(key < prev, key, KEY_MIN))
            cur = tl.max(best)
            head = tl.where(kar == j, cur, head)
            prev = cur
    _store_decoded(head, VALS + row * stride_out, IDX + row * stride_out, kar, K, SIGN_MASK, WIDTH)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_V", "CHUNKS_PER_CTA", "num_warps", "num_stages")
BASELINE = {"BLOCK_V": 4096, "CHUNKS_PER_CTA": 1, "num_warps": 8, "num_stages": 1}

# Sampler-side top-k of three serving shapes. The logits are read once: 131 MB, 19.5 MB and
# 131 MB (27, 4 and 27 us at 4.8 TB/s); the k selection passes (B V k key compare / select /
# max: 1.6e9, 1.9e8 and 5.2e8) and their k CTA-wide reductions per chunk bind, not DRAM. On an
# H200 (triton 3.6, CUDA-graph replays) the sweep of scripts/rank_study.py took 0.90-3.1 ms,
# 48-160 us and 125-440 us (torch.topk: 0.45 ms, 122 us, 542 us).
#   Llama-3 (V 128256), a 256-sequence decode batch, top-k 50, fp32 logits (vLLM's sampler
#     upcasts them): int64 keys, many candidates per row for stage 2
#   Qwen2.5 (V 152064), a 64-sequence decode batch, top-k 20 (its generation config's), bf16:
#     fewer rows than SMs, so the row must be split over many CTAs, and the merge's 64 CTAs
#     (k passes each) are a visible part of the time
#   Llama-2 / Mistral-7B (V 32000), 2048 rows (speculative-decoding verification of a
#     batch, or the top-8 logprobs of a 2k-token prompt), top-k 8, bf16: enough rows that one
#     CTA per row (no stage 2) is possible
POINTS = [
    {"B": 256, "V": 128256, "k": 50, "dtype": "fp32"},
    {"B": 64, "V": 152064, "k": 20, "dtype": "bf16"},
    {"B": 2048, "V": 32000, "k": 8, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (the logits')") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (the logits')")
    return 4 if name == "fp32" else 2


def k_pad(k: int) -> int:
    """The power of two >= k that a tile row (and the stage-2 pick vector) holds."""
    return 1 << max(0, int(k) - 1).bit_length()


def _check_k(k: int, V: int) -> None:
    if not isinstance(k, int) or not 1 <= k <= min(V, MAX_K):
        raise ValueError(f"k={k} must be an int with 1 <= k <= min(V={V}, {MAX_K})")


def _check_cfg(cfg, k: int) -> None:
    bv, cpc = cfg["BLOCK_V"], cfg["CHUNKS_PER_CTA"]
    if not isinstance(cpc, int) or cpc < 1:
        raise ValueError(f"CHUNKS_PER_CTA={cpc} must be an int >= 1")
    kp = k_pad(k)
    least = 2 * kp if cpc > 1 else kp
    if bv < least or bv & (bv - 1):
        raise ValueError(f"BLOCK_V={bv} must be a power of two >= {least} (K_PAD={kp} for k={k}"
                         f"{', one carry row and one of new columns' if cpc > 1 else ''})")


def plan(cfg, point) -> dict:
    """The launch plan of `cfg` at `point`: STEP (new columns per chunk), n_chunks, n_groups,
    WIDE (int64 keys), the stage-2 candidates per row NC and its tile MERGE_BLOCK / warps."""
    V, k = point["V"], point["k"]
    _check_k(k, V)
    _check_cfg(cfg, k)
    width = 8 * _elem_bytes(point.get("dtype", "fp32"))
    kp = k_pad(k)
    cpc = cfg["CHUNKS_PER_CTA"]
    step = cfg["BLOCK_V"] - (kp if cpc > 1 else 0)
    n_chunks = -(-V // step)
    n_groups = -(-n_chunks // cpc)
    nc = n_groups * k
    mb = min(MERGE_MAX_BLOCK, max(64, k_pad(nc)))
    return {"STEP": step, "n_chunks": n_chunks, "n_groups": n_groups, "K_PAD": kp,
            "WIDE": width == 32 or cpc * step > NARROW_SPAN, "WIDTH": width,
            "SIGN_MASK": 0x7FFFFFFF if width == 32 else 0x7FFF, "NC": nc, "MERGE_BLOCK": mb,
            "ONE_TILE": nc <= mb, "merge_warps": 4 if mb <= 512 else 8}


def _kernel_args(logits, cand, vals, idx, k, cfg, pl) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(LOGITS=logits, CAND=cand, VALS=vals, IDX=idx, V=logits.shape[1], K=k,
                stride_row=logits.stride(0), stride_cand=cand.stride(0), stride_out=vals.stride(0),
                BLOCK_V=cfg["BLOCK_V"], CHUNKS_PER_CTA=cfg["CHUNKS_PER_CTA"], K_PAD=pl["K_PAD"],
                WIDE=pl["WIDE"], SIGN_MASK=pl["SIGN_MASK"], WIDTH=pl["WIDTH"], FINAL=pl["n_groups"] == 1)


def _merge_kernel_args(cand, vals, idx, k, pl) -> dict:
    """Every argument of one `_merge_kernel` launch, by name."""
    return dict(CAND=cand, VALS=vals, IDX=idx, NC=pl["NC"], K=k, stride_cand=cand.stride(0),
                stride_out=vals.stride(0), MERGE_BLOCK=pl["MERGE_BLOCK"], K_PAD=pl["K_PAD"],
                ONE_TILE=pl["ONE_TILE"], SIGN_MASK=pl["SIGN_MASK"], WIDTH=pl["WIDTH"])


def row_topk(logits, k: int, *, BLOCK_V=4096, CHUNKS_PER_CTA=1, num_warps=8, num_stages=1):
    """(values [B, k] in logits' dtype, indices [B, k] int64): the k largest of each row of
    logits [B, V] (fp32 / bf16 / fp16, unit column stride), largest first, ties to the smaller
    column."""
    import torch
    if logits.dim() != 2:
        raise ValueError(f"logits must be [B, V]; got shape {tuple(logits.shape)}")
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be fp32, bf16 or fp16; got {logits.dtype}")
    B, V = logits.shape
    if B == 0 or V == 0:
        raise ValueError(f"empty logits: B={B}, V={V}")
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    name = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[logits.dtype]
    cfg = {"BLOCK_V": BLOCK_V, "CHUNKS_PER_CTA": CHUNKS_PER_CTA}
    pl = plan(cfg, {"V": V, "k": k, "dtype": name})
    vals = torch.empty((B, k), dtype=logits.dtype, device=logits.device)
    idx = torch.empty((B, k), dtype=torch.int64, device=logits.device)
    if pl["n_groups"] == 1:
        cand = idx                      # not touched: the CTA writes the outputs itself
    else:
        cand = torch.empty((B, pl["NC"]), dtype=torch.int64, device=logits.device)
    _kernel[(pl["n_groups"], B)](**_kernel_args(logits, cand, vals, idx, k, cfg, pl), num_warps=num_warps,
                                 num_stages=num_stages)
    if pl["n_groups"] > 1:
        _merge_kernel[(B,)](**_merge_kernel_args(cand, vals, idx, k, pl), num_warps=pl["merge_warps"],
                            num_stages=1)
    return vals, idx


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Logits ~ N(0, 2.5^2) drawn in fp32 on the CPU (reproducible per seed), cast to the point's
    dtype (bf16 / fp16 rows of 32k-152k columns hold many equal values: the tie rule matters)."""
    import torch
    B, V, k = point["B"], point["V"], point["k"]
    _check_k(k, V)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn((B, V), generator=gen) * 2.5).to(dt)
    return {"logits": logits.to(device), "k": k}


def _run(inputs, cfg):
    return row_topk(inputs["logits"], inputs["k"], BLOCK_V=cfg["BLOCK_V"], CHUNKS_PER_CTA=cfg["CHUNKS_PER_CTA"],
                    num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def launch(inputs, cfg):
    """values [B, k] (the logits' dtype); the indices, the other output, are checked by the
    tests (tests/test_examples_round13_c.py) against reference_indices, exactly."""
    return _run(inputs, cfg)[0]


def reference_indices(inputs):
    """indices [B, k] int64: a stable descending sort of the logits (ties to the smaller column)."""
    x = inputs["logits"].float()
    return x.sort(dim=1, descending=True, stable=True)[1][:, :inputs["k"]]


def reference(inputs):
    """values [B, k] fp32: the logits at reference_indices (exact: a gather)."""
    return inputs["logits"].float().gather(1, reference_indices(inputs))


def torch_baseline(inputs):
    """torch.topk (sorted), as vLLM's apply_top_k_only / a torch sampler calls it; values like
    launch (its indices may order equal values differently)."""
    import torch
    return torch.topk(inputs["logits"], inputs["k"], dim=1, largest=True, sorted=True)[0]


def bytes_moved(point) -> int:
    """The logits read once, values and int64 indices written once (the stage-1 candidates,
    B n_groups k int64, are written and read back while they sit in the L2)."""
    B, V, k = point["B"], point["V"], point["k"]
    e = _elem_bytes(point.get("dtype", "fp32"))
    return B * V * e + B * k * (e + 8)


def flops(point) -> int:
    """One key compare-select-max per logit per pick (integer ops; the merge's not counted)."""
    return point["B"] * point["V"] * point["k"]


def grid(cfg, point) -> tuple:
    """(n_groups, B): CTA (g, r) takes chunks [g CHUNKS_PER_CTA, (g + 1) CHUNKS_PER_CTA) of row r."""
    return (plan(cfg, point)["n_groups"], point["B"])


def loop_iterations(cfg, point) -> int:
    """Chunks per CTA (each k selection passes over a BLOCK_V tile): CHUNKS_PER_CTA, fewer when
    the row has fewer chunks."""
    return min(cfg["CHUNKS_PER_CTA"], plan(cfg, point)["n_chunks"])


def cta_iterations(cfg, point) -> list:
    """Chunks of each CTA in launch order (group fastest): the last group of a row may take fewer."""
    pl = plan(cfg, point)
    cpc, n = cfg["CHUNKS_PER_CTA"], pl["n_chunks"]
    per_row = [min(cpc, n - g * cpc) for g in range(pl["n_groups"])]
    return per_row * point["B"]


def secondary_kernels(cfg, point) -> list:
    """The merge, when a row spans more than one CTA: one CTA per row, k passes over the row's
    NC = n_groups k int64 candidates just written (so from L2: dram_bytes 0). When they fit one
    MERGE_BLOCK tile they are loaded once and the k passes run in registers (iterations k, the
    8 NC bytes spread over them); else every pass streams the row's tiles again (k x tiles
    iterations of one 8 MERGE_BLOCK-byte tile, from L1 / L2)."""
    pl = plan(cfg, point)
    if pl["n_groups"] == 1:
        return []
    k = point["k"]
    if pl["ONE_TILE"]:
        iters, tile = k, -(-8 * pl["NC"] // k)
    else:
        iters, tile = k * -(-pl["NC"] // pl["MERGE_BLOCK"]), 8 * pl["MERGE_BLOCK"]
    return [{"name": "_merge_kernel", "grid": point["B"], "iterations": iters, "tile_bytes": tile,
             "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    B, V, k = point["B"], point["V"], point["k"]
    dt = _torch_dtype(point.get("dtype", "fp32"))
    pl = plan(cfg, point)
    logits = torch.empty((B, V), dtype=dt, device="meta")
    vals = torch.empty((B, k), dtype=dt, device="meta")
    idx = torch.empty((B, k), dtype=torch.int64, device="meta")
    cand = idx if pl["n_groups"] == 1 else torch.empty((B, pl["NC"]), dtype=torch.int64, device="meta")
    return _kernel_args(logits, cand, vals, idx, k, cfg, pl)
