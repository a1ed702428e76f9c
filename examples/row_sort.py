"""Per-row descending sort with its argsort (the sort in front of a top-p / min-p sampler's
cumulative sum, or of a MoE router's expert ranking, on short rows), a bare @triton.jit kernel
+ its launcher.

    values[r, :], indices[r, :] = x[r, :] sorted largest first, and the columns they came from

x: [B, N] fp32 / bf16 / fp16 (rows may be strided, columns contiguous; N need not be a power of
two, 1 <= N <= 8192). values: [B, N] in x's dtype, indices: [B, N] int32 (fresh, or the caller's
out= buffers). Equal values keep their column order (what a stable descending sort gives);
-inf is an ordinary value (below every finite one); -0.0 ties +0.0 and is written as +0.0;
every NaN sorts first (as torch.sort(descending=True) puts it) and is written as the NaN with
all magnitude bits set.

One sort of packed keys (not a second sort for the indices). Each element becomes one integer
whose signed order is "larger value first, then smaller column first": the float's bits with
the magnitude bits flipped when the sign is set (a monotone map of floats onto signed
integers; -0.0 mapped to +0.0, NaN to the largest key), shifted up, ORed with (65535 -
column) in the low 16 bits. 16-bit inputs give int32 keys (16 value bits + 16 column bits),
fp32 inputs int64 keys (32 + 16 of 64): the bitonic network's compare / select / exchange of
an int64 key costs about twice an int32 one. The keys are unique, so one
``tl.sort(descending=True)`` of them is the stable sort, and the sorted keys decode into the
values (their own bits: exact) and the columns. Lanes past N hold the type's minimum (below
any real key, -inf included), so they sort behind the row and are not stored: the padding
"up to a power of two" is done in registers, never in memory.

The 2D block. BLOCK_N = next_power_of_2(N) (>= 16) columns, ROWS_PER_CTA = max(1, BLOCK_KEYS //
BLOCK_N) rows: one CTA loads a [ROWS_PER_CTA, BLOCK_N] register tile of consecutive rows
(masked past B and N), builds the keys, sorts each row with Triton's bitonic network
(``tl.sort`` over the last dim: log2(BLOCK_N) (log2(BLOCK_N) + 1) / 2 compare-exchange stages,
each a butterfly across registers, lanes (shuffles) or warps (through shared memory, with a
barrier) depending on which bit of the column index that stage flips), decodes and stores both
outputs. BLOCK_KEYS, the keys one tile holds, is the block-size knob rather than ROWS_PER_CTA
itself so that one setting means the same registers per thread on rows of 384 and of 2048
(BLOCK_KEYS x key bytes / (32 num_warps) bytes of keys a thread; a row of 8192 fp32 keys fills
64 KiB of registers, so a fixed ROWS_PER_CTA that suits 384-wide rows would spill there).
The network is unrolled completely: a tile's sort is 1.4k-23k SASS instructions (BLOCK_KEYS
8192 on 4 warps, fp32: 23k), all of it in one loop body; its cross-warp stages exchange keys
through shared memory (with triton 3.6 for sm_90 a buffer of the whole key tile, ROWS_PER_CTA x
BLOCK_N x key bytes).
The grid. A grid-stride loop over the cdiv(B, ROWS_PER_CTA) row blocks (``tl.range`` with
num_stages=LOOP_STAGES, as Triton's fused-softmax tutorial writes it):
PROGRAMS_PER_SM = 0: one program per row block (the loop runs once);
PROGRAMS_PER_SM = k >= 1: persistent, min(k x NUM_SMS, row blocks) programs, program p taking
blocks p, p + S, p + 2S, ... with S = k x NUM_SMS (NUM_SMS: the device's SM count when it runs,
132 -- an H200's -- in example_args). A loop without a dot is software-pipelined only when it
names its own stage count (the launch's num_stages leaves it alone), so LOOP_STAGES is the
pipelining lever: from 2 on, the compiler copies the next LOOP_STAGES - 1 tiles of x into
shared memory (cp.async; N must be a multiple of 16 for the vectorized loads cp.async needs, or
nothing is prefetched) while this one sorts; with PROGRAMS_PER_SM = 0 that is a one-block
prologue, no overlap.

Tunables: BLOCK_KEYS (power of two >= 16), PROGRAMS_PER_SM (0, or >= 1 programs per SM),
LOOP_STAGES (1: plain loads; >= 2: the pipelined loop), num_warps, num_stages (no loop that it
governs: it changes nothing in the cubin).
Problem parameters (a workload point): B (rows), N (columns), dtype (x's); sms (the SM count a
persistent grid is sized for, default the device's / NUM_SMS) is for tests.
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_N = 8192               # the row lives in registers: longer rows are refused
NUM_SMS = 132              # an H200's (H100 SXM has 132 too): the persistent grid's SM count off the GPU
MIN_BLOCK_N = 16


@triton.jit
def _kernel(X, VALS, IDX, B, N, stride_x, stride_v, stride_i,
            BLOCK_KEYS: tl.constexpr, PROGRAMS_PER_SM: tl.constexpr, LOOP_STAGES: tl.constexpr,
            BLOCK_N: tl.constexpr, WIDTH: tl.constexpr, BF16: tl.constexpr, NUM_SMS: tl.constexpr):
    ROWS: tl.constexpr = (BLOCK_KEYS + BLOCK_N - 1) // BLOCK_N       # max(1, BLOCK_KEYS // BLOCK_N): powers of two
    SIGN_MASK: tl.constexpr = 0x7FFF if WIDTH == 16 else 0x7FFFFFFF
    INF_BITS: tl.constexpr = 0x7F800000 if WIDTH == 32 else (0x7F80 if BF16 else 0x7C00)
    SHIFT: tl.constexpr = 16                                          # column bits of a key (N <= 65536)
    LOW: tl.constexpr = 65535

    pid = tl.program_id(0)
    n_blocks = tl.cdiv(B, ROWS)
    if PROGRAMS_PER_SM > 0:
        step = PROGRAMS_PER_SM * NUM_SMS        # persistent: the launcher's grid is min(step, n_blocks)
    else:
        step = n_blocks                         # one program per row block
    r_in = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < N
    for blk in tl.range(pid, n_blocks, step, num_stages=LOOP_STAGES):
        rows = blk * ROWS + r_in
        ok = (rows < B)[:, None] & col_ok[None, :]
        r64 = rows.to(tl.int64)[:, None]
        x = tl.load(X + r64 * stride_x + cols[None, :], mask=ok, other=0.0)

        # the monotone signed-integer image of x, on the bits (exact in any float format)
        if WIDTH == 16:
            b = x.to(tl.int16, bitcast=True).to(tl.int32)
        else:
            b = x.to(tl.int32, bitcast=True)
        mag = b & SIGN_MASK
        b = tl.where(mag == 0, 0, b)                    # -0.0 ties +0.0
        b = tl.where(mag > INF_BITS, SIGN_MASK, b)      # any NaN: the largest key
        v = tl.where(b < 0, b ^ SIGN_MASK, b)
        # packed key: value bits above (2^SHIFT - 1 - column): descending = larger value, then smaller column
        low = LOW - cols[None, :]
        if WIDTH == 16:
            key = tl.where(ok, (v << SHIFT) | low, -2147483647 - 1)
        else:
            key = tl.where(ok, (v.to(tl.int64) << SHIFT) | low.to(tl.int64), -9223372036854775807 - 1)

        key = tl.sort(key, dim=1, descending=True)

        col = LOW - (key & LOW).to(tl.int32)
        v = (key >> SHIFT).to(tl.int32)
        b = tl.where(v < 0, v ^ SIGN_MASK, v)
        if WIDTH == 16:
            val = b.to(tl.int16).to(VALS.dtype.element_ty, bitcast=True)
        else:
            val = b.to(VALS.dtype.element_ty, bitcast=True)
        tl.store(VALS + r64 * stride_v + cols[None, :], val, mask=ok)
        tl.store(IDX + r64 * stride_i + cols[None, :], col, mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_KEYS", "PROGRAMS_PER_SM", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_KEYS": 4096, "PROGRAMS_PER_SM": 0, "LOOP_STAGES": 1, "num_warps": 8, "num_stages": 1}

# Three short-row sorts of serving. Every byte is touched once (x read, values and int32 indices
# written: 75 MB, 34 MB and 25 MB, 5-16 us at 4.8 TB/s); the bitonic network binds: B x BLOCK_N x
# log2(BLOCK_N) (log2(BLOCK_N) + 1) / 2 key compare-exchanges (3.8e8, 2.3e8 and 1.4e8), each a
# butterfly through registers, shuffles or shared memory, int64 keys for fp32 and int32 for bf16.
#   Kimi K2's router (a DeepSeek-V3-style MoE with 384 routed experts), a 16k-token prefill chunk,
#     fp32 scores: many short rows, ragged (384 of a 512-wide block: a quarter of the network
#     sorts padding), int64 keys
#   top-p / min-p over each row's top-1024 candidates (a top_k = 1024 prefilter), 4096 rows
#     (1024 sequences verifying 4 speculative tokens each), bf16 logits: int32 keys
#   top-p over a top-2048 prefilter, 1024 sequences, fp32 probabilities: long rows (66 stages),
#     int64 keys, few rows a tile (BLOCK_KEYS 2048: one, 8192: four)
POINTS = [
    {"B": 16384, "N": 384, "dtype": "fp32"},
    {"B": 4096, "N": 1024, "dtype": "bf16"},
    {"B": 1024, "N": 2048, "dtype": "fp32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (x's)") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (x's)")
    return 4 if name == "fp32" else 2


def block_n(N: int) -> int:
    """The register row: the power of two >= N (at least MIN_BLOCK_N)."""
    if not isinstance(N, int) or not 1 <= N <= MAX_N:
        raise ValueError(f"N={N} must be an int with 1 <= N <= {MAX_N} (a row is sorted in registers)")
    return max(MIN_BLOCK_N, triton.next_power_of_2(N))


def rows_per_cta(cfg, N: int) -> int:
    """ROWS_PER_CTA: max(1, BLOCK_KEYS // BLOCK_N), as the kernel derives it."""
    return max(1, cfg["BLOCK_KEYS"] // block_n(N))


def _check_cfg(cfg) -> None:
    bk = cfg["BLOCK_KEYS"]
    if not isinstance(bk, int) or bk < MIN_BLOCK_N or bk & (bk - 1):
        raise ValueError(f"BLOCK_KEYS={bk} must be a power of two >= {MIN_BLOCK_N}")
    ppm = cfg["PROGRAMS_PER_SM"]
    if not isinstance(ppm, int) or ppm < 0:
        raise ValueError(f"PROGRAMS_PER_SM={ppm} must be an int >= 0 (0: one program per row block)")
    ls = cfg["LOOP_STAGES"]
    if not isinstance(ls, int) or ls < 1:
        raise ValueError(f"LOOP_STAGES={ls} must be an int >= 1")


def _grid_size(cfg, B: int, N: int, sms: int) -> int:
    n_blocks = triton.cdiv(B, rows_per_cta(cfg, N))
    ppm = cfg["PROGRAMS_PER_SM"]
    return n_blocks if ppm == 0 else min(ppm * sms, n_blocks)


def _kernel_args(x, vals, idx, cfg, sms: int) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    import torch
    B, N = x.shape
    return dict(X=x, VALS=vals, IDX=idx, B=B, N=N, stride_x=x.stride(0), stride_v=vals.stride(0),
                stride_i=idx.stride(0), BLOCK_KEYS=cfg["BLOCK_KEYS"], PROGRAMS_PER_SM=cfg["PROGRAMS_PER_SM"],
                LOOP_STAGES=cfg["LOOP_STAGES"], BLOCK_N=block_n(N), WIDTH=8 * x.element_size(),
                BF16=x.dtype == torch.bfloat16, NUM_SMS=sms)


def _device_sms(device) -> int:
    import torch
    if getattr(device, "type", str(device)) == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_properties(device).multi_processor_count
    return NUM_SMS


def row_sort(x, *, out=None, BLOCK_KEYS=4096, PROGRAMS_PER_SM=0, LOOP_STAGES=1, num_warps=8, num_stages=1,
             sms=None):
    """(values [B, N] in x's dtype, indices [B, N] int32): each row of x [B, N] (fp32 / bf16 /
    fp16, N <= 8192) sorted descending, ties in column order, and the columns the values came
    from; into `out` = (values, indices) when given (unit column stride; e.g. a CUDA graph's
    static buffers). `sms`: the SM count a persistent grid is sized for (default: the device's)."""
    import torch
    if x.dim() != 2:
        raise ValueError(f"x must be [B, N]; got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"x must be fp32, bf16 or fp16; got {x.dtype}")
    B, N = x.shape
    if B == 0 or N == 0:
        raise ValueError(f"empty x: B={B}, N={N}")
    block_n(N)
    if x.stride(1) != 1:
        x = x.contiguous()
    cfg = {"BLOCK_KEYS": BLOCK_KEYS, "PROGRAMS_PER_SM": PROGRAMS_PER_SM, "LOOP_STAGES": LOOP_STAGES}
    _check_cfg(cfg)
    sms = _device_sms(x.device) if sms is None else int(sms)
    if sms < 1:
        raise ValueError(f"sms={sms} must be >= 1")
    if out is None:
        vals = torch.empty((B, N), dtype=x.dtype, device=x.device)
        idx = torch.empty((B, N), dtype=torch.int32, device=x.device)
    else:
        vals, idx = out
        if (tuple(vals.shape) != (B, N) or vals.dtype != x.dtype or vals.stride(1) != 1 or tuple(idx.shape) != (B, N)
                or idx.dtype != torch.int32 or idx.stride(1) != 1):
            raise ValueError(f"out must be ({x.dtype} [{B}, {N}], torch.int32 [{B}, {N}]) with unit column strides; "
                             f"got ({vals.dtype} {tuple(vals.shape)}, {idx.dtype} {tuple(idx.shape)})")
    _kernel[(_grid_size(cfg, B, N, sms),)](**_kernel_args(x, vals, idx, cfg, sms), num_warps=num_warps,
                                           num_stages=num_stages)
    return vals, idx


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 2^2) drawn in fp32 on the CPU (reproducible per seed), cast to the point's dtype
    (bf16 / fp16 rows of hundreds of columns hold equal values: the tie rule matters)."""
    import torch
    B, N = point["B"], point["N"]
    block_n(N)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn((B, N), generator=gen) * 2.0).to(dt)
    return {"x": x.to(device), "sms": point.get("sms")}


def _run(inputs, cfg):
    return row_sort(inputs["x"], BLOCK_KEYS=cfg["BLOCK_KEYS"], PROGRAMS_PER_SM=cfg["PROGRAMS_PER_SM"],
                    LOOP_STAGES=cfg["LOOP_STAGES"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                    sms=inputs.get("sms"))


def launch(inputs, cfg):
    """values [B, N] (x's dtype); the indices, the other output, are checked by the tests
    (tests/test_examples_round14_c.py) against reference_indices, exactly."""
    return _run(inputs, cfg)[0]


def reference_indices(inputs):
    """indices [B, N] int64: torch's stable descending sort of x in fp32 (ties in column order)."""
    return inputs["x"].float().sort(dim=1, descending=True, stable=True)[1]


def reference(inputs):
    """values [B, N] fp32: x at reference_indices (exact: a gather)."""
    return inputs["x"].float().gather(1, reference_indices(inputs))


def torch_baseline(inputs):
    """torch.sort(descending=True), as a sampler's top-p / min-p or a router calls it (values;
    its indices are int64)."""
    return inputs["x"].sort(dim=1, descending=True)[0]


def bytes_moved(point) -> int:
    """x read once, values (x's dtype) and int32 indices written once."""
    B, N = point["B"], point["N"]
    e = _elem_bytes(point.get("dtype", "fp32"))
    block_n(N)
    return B * N * (2 * e + 4)


def flops(point) -> int:
    """One integer key compare-select per key of the padded row per bitonic stage:
    B x BLOCK_N x L (L + 1) / 2, L = log2(BLOCK_N)."""
    bn = block_n(point["N"])
    L = bn.bit_length() - 1
    return point["B"] * bn * L * (L + 1) // 2


def _sms(point) -> int:
    return int(point.get("sms") or NUM_SMS)


def grid(cfg, point) -> int:
    """CTAs of one launch: one per row block, or the persistent min(PROGRAMS_PER_SM x SMs, blocks)."""
    _check_cfg(cfg)
    return _grid_size(cfg, point["B"], point["N"], _sms(point))


def cta_iterations(cfg, point) -> list:
    """Row blocks of each program in launch order: program p takes p, p + S, ... < cdiv(B, ROWS_PER_CTA)."""
    _check_cfg(cfg)
    n_blocks = triton.cdiv(point["B"], rows_per_cta(cfg, point["N"]))
    g = grid(cfg, point)
    step = cfg["PROGRAMS_PER_SM"] * _sms(point) if cfg["PROGRAMS_PER_SM"] else n_blocks
    return [len(range(p, n_blocks, step)) for p in range(g)]


def loop_iterations(cfg, point) -> int:
    """Row blocks per program (each one load, one sort of a [ROWS_PER_CTA, BLOCK_N] tile, two
    stores): 1 unless persistent; the first programs' count when they differ."""
    return cta_iterations(cfg, point)[0]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    B, N = point["B"], point["N"]
    dt = _torch_dtype(point.get("dtype", "fp32"))
    _check_cfg(cfg)
    x = torch.empty((B, N), dtype=dt, device="meta")
    vals = torch.empty((B, N), dtype=dt, device="meta")
    idx = torch.empty((B, N), dtype=torch.int32, device="meta")
    return _kernel_args(x, vals, idx, cfg, _sms(point))
