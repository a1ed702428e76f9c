"""Dictionary-page decode of a columnar reader (Apache Parquet's RLE_DICTIONARY data pages, bit-packed runs),
a bare @triton.jit kernel + its launcher:

    idx[j]  = the bw-bit field at bit (first + j) x bw of the packed stream (little-endian, LSB first)
    out[j]  = dictionary[idx[j]]            (0 where idx[j] >= D: a corrupt index never reads past the page)

The packed stream is what a Parquet data page of a dictionary-encoded column holds after its bit-width byte
and its hybrid run headers: the BIT_PACKED runs of the RLE / bit-packed hybrid encoding, groups of 8 values
packed into bw bytes, value k's bits at bit k x bw of the stream, the lowest bit first (the spec's example:
0..7 at bw 3 are the bytes 0x88 0xC6 0xFA). A reader that decodes a column chunk in one launch (RAPIDS
cuDF's parquet reader, Polars' / DuckDB's GPU scans) lays the pages' runs one after the other; here they
are one stream, handed over as little-endian int32 words (`pack_bits` builds it on the host as a writer
does; padding bits past the last value are 0). `first` skips that many values (a row-range read that starts
inside a page, mid-group). Restrictions (said, not guessed): bit-packed runs only -- no RLE runs, whose
repeated value a host-built run table would expand; REQUIRED columns -- no definition levels / validity
bitmap (a nullable column's indices are those of its valid rows only and need a scan to place); bit widths
1-24; a fixed-width dictionary of int32 (DATE, INT32), int64 (BIGINT, TIMESTAMP), fp32 or fp64 values,
contiguous [D]; out [N] in the dictionary's dtype, fresh and contiguous.

How this differs from examples/embedding_gather.py (rows gathered by given int ids) and
examples/nf4_dequant.py (4-bit codes through a 16-entry table, byte-aligned): here the ids themselves are
unpacked first from a bit stream of any width 1-24 -- a field straddles two 32-bit words for most widths,
its position is (first + j) x bw bits, not byte aligned -- and the table is a page dictionary of thousands
to a million entries (L1, L2 or beyond), one scalar a row.

One program owns BLOCK x STEPS consecutive values, STEPS steps of BLOCK. A step: each value's bit offset,
its two words (w and w + 1: a field of at most 24 bits at a shift of at most 31 lies in them), the field
cut out with 32-bit shifts (the high word shifted in two steps so that a shift of 0 gives 0, not the word),
masked to bw bits; the dictionary gathered at the indices, the step's BLOCK values stored (one coalesced
store). The word loads of neighbouring values hit the same words (bw / 32 words a value): the
stream is read from DRAM once, the rest L1 hits.

Tunables: BLOCK (values a step: 512 / 1024 / 2048 -- with num_warps the values a thread, i.e. the gathers
each thread keeps in flight), STEPS (steps a program: 1 / 2 / 4 / 8 -- fewer, longer programs against the
tail), EVICT (0 / 1: 1 marks the dictionary evict_last and the word stream and out evict_first, so a large
dictionary keeps its L2 lines against the streams; 0 leaves every access to the default policy), num_warps
(4 / 8), num_stages (the step loop's loads feed only its own step: nothing to pipeline, held at 1). On sm_90
every config of the sweep compiles at every point without spills under triton 3.6 and 3.9 (registers and
shared memory: the test file's test_sweep_fits_the_points).
Problem parameters (a workload point): N (values decoded), bw (the page's bit width), D (dictionary
entries, at most 2^bw), first (values skipped at the stream's start), dtype (the dictionary's and out's).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(WORDS, DICT, OUT, N, first, bw, n_words, D,
            EVICT: tl.constexpr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * (BLOCK * STEPS)
    r = tl.arange(0, BLOCK)
    msk = (1 << bw) - 1                                   # bw <= 24: an int32 mask
    for s in range(STEPS):
        j = start + s * BLOCK + r                         # int64 value indices
        ok = j < N
        bit = (j + first) * bw
        w = bit >> 5
        sh = (bit & 31).to(tl.uint32)
        if EVICT:
            lo = tl.load(WORDS + w, mask=ok, other=0, eviction_policy="evict_first")
            hi = tl.load(WORDS + w + 1, mask=ok & (w + 1 < n_words), other=0, eviction_policy="evict_first")
        else:
            lo = tl.load(WORDS + w, mask=ok, other=0)
            hi = tl.load(WORDS + w + 1, mask=ok & (w + 1 < n_words), other=0)
        lo = lo.to(tl.uint32, bitcast=True)
        hi = hi.to(tl.uint32, bitcast=True)
        # the field's low part from lo, its high part from hi (hi << (32 - sh) in two steps: sh 0 gives 0)
        v = (lo >> sh) | ((hi << 1) << (31 - sh))
        idx = v.to(tl.int32, bitcast=True) & msk
        got = ok & (idx < D)
        if EVICT:
            val = tl.load(DICT + idx, mask=got, other=0, eviction_policy="evict_last")
            tl.store(OUT + j, val, mask=ok, eviction_policy="evict_first")
        else:
            val = tl.load(DICT + idx, mask=got, other=0)
            tl.store(OUT + j, val, mask=ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-32"
DTYPES = ("int32", "int64", "fp32", "fp64")           # the dictionary's (and out's) dtype
TUNABLES = ("BLOCK", "STEPS", "EVICT", "num_warps", "num_stages")
BASELINE = {"BLOCK": 1024, "STEPS": 2, "EVICT": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 4 x 2 x 2 = 48 configs (1-16 values a thread a step, 512-16384 values a program,
# with and without the eviction hints; a loop whose loads feed only their own step: num_stages 1)
SWEEP_AXES = {"BLOCK": [512, 1024, 2048], "STEPS": [1, 2, 4, 8], "EVICT": [0, 1], "num_warps": [4, 8],
              "num_stages": [1]}
MAX_BW = 24
MAX_N = 2**31 - 2**16           # value indices (program starts included) in int32 range for the hooks

POINTS = [
    # TPC-H at SF 100, lineitem.l_shipdate (DATE -> int32 days), dictionary-encoded: 2,526 distinct dates
    # (1992-01-02 .. 1998-12-01) -> bit width 12, a 10 KB dictionary (L1-resident); 40M rows (a 6.7 row-group
    # slice of the 600M-row column, read in one launch as cuDF's chunked reader does). Stream 60 MB read,
    # out 160 MB written: ~75 us at 3 TB/s
    {"N": 40_000_000, "bw": 12, "D": 2_526, "first": 0, "dtype": "int32"},
    # TPC-DS at SF 1000, store_sales.ss_item_sk (BIGINT -> int64): 300,000 items -> bit width 19, a 2.4 MB
    # dictionary (L2); 48M rows of a row range starting 5 values into its first page (mid-group). Stream
    # 114 MB read, out 384 MB written: ~0.17 ms
    {"N": 48_000_000, "bw": 19, "D": 300_000, "first": 5, "dtype": "int64"},
    # TPC-H at SF 100, lineitem.l_extendedprice written as DOUBLE (fp64; Polars' / DuckDB's TPC-H parquet)
    # with a raised dictionary-page limit: 1,000,000 distinct prices -> bit width 20, an 8 MB dictionary
    # (misses L1, L2 hits); 36M rows. Stream 90 MB read, out 288 MB written: ~0.13 ms
    {"N": 36_000_000, "bw": 20, "D": 1_000_000, "first": 0, "dtype": "fp64"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK"]
    if not _is_int(b) or b < 32 or b > 8192 or b & (b - 1):
        raise ValueError(f"BLOCK={b!r} must be a power of two from 32 to 8192")
    st = cfg["STEPS"]
    if not _is_int(st) or st < 1 or st > 64:
        raise ValueError(f"STEPS={st!r} must be an int from 1 to 64")
    e = cfg["EVICT"]
    if e not in (0, 1) or not isinstance(e, (int, bool)):
        raise ValueError(f"EVICT={e!r} must be 0 or 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: first 0, dtype int32)."""
    P = {"first": 0, "dtype": "int32", **point}
    N, bw, D, first = P["N"], P["bw"], P["D"], P["first"]
    if not _is_int(N) or N < 1 or N > MAX_N:
        raise ValueError(f"N={N!r} must be an int from 1 to {MAX_N}")
    if not _is_int(bw) or not 1 <= bw <= MAX_BW:
        raise ValueError(f"bw={bw!r} must be an int from 1 to {MAX_BW} (bits a dictionary index)")
    if not _is_int(D) or not 1 <= D <= 2**bw:
        raise ValueError(f"D={D!r} must be an int from 1 to 2**bw = {2**bw} (entries bw={bw} bits address)")
    if not _is_int(first) or first < 0 or first + N > MAX_N:
        raise ValueError(f"first={first!r} must be an int >= 0 with first + N <= {MAX_N}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"int32": torch.int32, "int64": torch.int64, "fp32": torch.float32, "fp64": torch.float64}[name]


# ---------------------------------------------------------------- the bit stream (host)
def n_words(n_values: int, bw: int) -> int:
    """int32 words of a stream of n_values fields of bw bits: whole groups of 8 values (bw bytes each, as the
    hybrid encoding's bit-packed runs store them), rounded up to whole words."""
    return -(-(-(-n_values // 8) * bw) // 4)


def pack_bits(idx, bw: int):
    """The BIT_PACKED payload of the non-negative ints idx (numpy / torch, each < 2^bw) at bit width bw: value
    k's bits at bit k x bw, the lowest first, little-endian -- a torch int32 tensor of n_words words (CPU)."""
    import numpy as np
    import torch
    v = np.asarray(idx, dtype=np.int64).reshape(-1)
    if v.size and (v.min() < 0 or v.max() >= 2**bw):
        raise ValueError(f"indices must lie in [0, 2**bw = {2**bw}) to pack at bw={bw}")
    nw = n_words(v.size, bw)
    bit = np.arange(v.size, dtype=np.int64) * bw
    w, sh = bit >> 5, bit & 31
    part = v << sh                                     # at most 55 bits: the low word's and the next one's
    lo = (part & 0xFFFFFFFF).astype(np.float64)        # disjoint bits: a sum is their or (exact in fp64)
    hi = (part >> 32).astype(np.float64)
    words = np.bincount(w, weights=lo, minlength=nw + 1) + np.bincount(w + 1, weights=hi, minlength=nw + 1)
    words = words[:nw].astype(np.int64).astype(np.uint32).view(np.int32)
    return torch.from_numpy(words.copy())


def unpack_bits(words, bw: int, first: int, n: int):
    """[n] int64: the fields first .. first + n - 1 of the stream (torch, on words' device): each field from
    the 64-bit little-endian pair of words holding it."""
    import torch
    u = words.to(torch.int64) & 0xFFFFFFFF
    u = torch.cat((u, torch.zeros(1, dtype=torch.int64, device=u.device)))
    bit = (torch.arange(n, dtype=torch.int64, device=u.device) + first) * bw
    w = bit >> 5
    pair = u[w] | (u[w + 1] << 32)
    return (pair >> (bit & 31)) & ((1 << bw) - 1)


@functools.lru_cache(maxsize=4)
def _data(items: tuple, seed: int) -> dict:
    """The point's drawn data on the CPU (make_inputs' and example_args' one source): the indices of the
    first + N values (uniform over the D entries: a column with no order, every page's dictionary fully
    used), their packed stream, the dictionary (distinct int values / random prices)."""
    import numpy as np
    import torch
    P = dict(items)
    rng = np.random.Generator(np.random.PCG64(seed))
    N, bw, D, first = P["N"], P["bw"], P["D"], P["first"]
    idx = rng.integers(0, D, size=first + N, dtype=np.int64)
    words = pack_bits(idx, bw)
    dt = _torch_dtype(P["dtype"])
    if P["dtype"] in ("int32", "int64"):
        hi = 2**31 - 1 if P["dtype"] == "int32" else 2**62
        vals = torch.from_numpy(rng.choice(hi, size=D, replace=False) if D < 4096
                                else rng.integers(-hi, hi, size=D, dtype=np.int64)).to(dt)
    else:
        vals = torch.from_numpy(np.round(rng.uniform(-1e5, 1e5, size=D), 2)).to(dt)
    return {"words": words, "dictionary": vals, "idx": torch.from_numpy(idx)}


def _items(P: dict) -> tuple:
    return tuple(sorted(P.items()))


# ---------------------------------------------------------------- the kernel's launch
def _kernel_args(words, dictionary, out, n: int, first: int, bw: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(WORDS=words, DICT=dictionary, OUT=out, N=n, first=first, bw=bw, n_words=words.shape[0],
                D=dictionary.shape[0], EVICT=int(cfg["EVICT"]), BLOCK=cfg["BLOCK"], STEPS=cfg["STEPS"])


def parquet_dict_decode(words, dictionary, bw: int, n: int, first: int = 0, *, BLOCK: int = 1024,
                        STEPS: int = 2, EVICT: int = 1, num_warps: int = 4, num_stages: int = 1):
    """out [n] (dictionary's dtype): dictionary[idx] for the fields first .. first + n - 1 of the bit-packed
    stream `words` (int32 [W] contiguous, little-endian, value k's bw bits at bit k x bw: `pack_bits`), 0
    where a field is >= D. dictionary: [D] int32 / int64 / fp32 / fp64, contiguous. bw: 1-24. BLOCK, STEPS,
    EVICT, num_warps, num_stages: the tunables (module doc)."""
    import torch
    cfg = {"BLOCK": BLOCK, "STEPS": STEPS, "EVICT": EVICT, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if not _is_int(bw) or not 1 <= bw <= MAX_BW:
        raise ValueError(f"bw={bw!r} must be an int from 1 to {MAX_BW}")
    if not _is_int(n) or n < 0 or not _is_int(first) or first < 0 or first + n > MAX_N:
        raise ValueError(f"n={n!r} and first={first!r} must be ints >= 0 with first + n <= {MAX_N}")
    if words.dim() != 1 or words.dtype != torch.int32 or not words.is_contiguous():
        raise ValueError(f"words must be a contiguous 1-d int32 tensor (the packed stream); got "
                         f"{tuple(words.shape)} {words.dtype} strides {words.stride()}")
    need = -(-(first + n) * bw // 32)
    if words.shape[0] < need:
        raise ValueError(f"words holds {words.shape[0]} words; first + n = {first + n} fields of bw={bw} bits "
                         f"need {need}")
    if dictionary.dim() != 1 or dictionary.shape[0] < 1 or dictionary.dtype not in (
            torch.int32, torch.int64, torch.float32, torch.float64):
        raise ValueError(f"dictionary must be a 1-d int32 / int64 / float32 / float64 tensor of >= 1 entries; "
                         f"got {tuple(dictionary.shape)} {dictionary.dtype}")
    if not dictionary.is_contiguous():
        raise ValueError(f"dictionary must be contiguous; got stride {dictionary.stride()}")
    if dictionary.shape[0] > 2**31 - 1:
        raise ValueError(f"dictionary of {dictionary.shape[0]} entries exceeds int32 indices")
    if dictionary.device != words.device:
        raise ValueError(f"dictionary must be on words' device {words.device}; got {dictionary.device}")
    out = torch.empty((n,), dtype=dictionary.dtype, device=words.device)
    if n:
        _kernel[(triton.cdiv(n, BLOCK * STEPS),)](**_kernel_args(words, dictionary, out, n, first, bw, cfg),
                                                  num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """words (the packed stream of first + N uniform indices over the D entries), dictionary [D], bw, n, first;
    drawn on the CPU from a seeded numpy Generator, copied to `device`."""
    P = _check_point(point)
    d = _data(_items(P), int(seed))
    return {"words": d["words"].to(device, copy=True), "dictionary": d["dictionary"].to(device, copy=True),
            "bw": P["bw"], "n": P["N"], "first": P["first"]}


def launch(inputs, cfg):
    """out [N]: the decoded column."""
    return parquet_dict_decode(inputs["words"], inputs["dictionary"], inputs["bw"], inputs["n"], inputs["first"],
                               BLOCK=cfg["BLOCK"], STEPS=cfg["STEPS"], EVICT=cfg["EVICT"],
                               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """out [N] from the stream unpacked with 64-bit pairs of words (unpack_bits), the dictionary gathered in
    float64 (exact for the int32 / fp32 / fp64 values; int64 values rounded to 53 bits), 0 past D."""
    import torch
    d = inputs["dictionary"]
    idx = unpack_bits(inputs["words"], inputs["bw"], inputs["first"], inputs["n"])
    ok = idx < d.shape[0]
    return torch.where(ok, d.double()[idx.clamp(max=d.shape[0] - 1)], torch.zeros((), dtype=torch.float64))


def torch_baseline(inputs):
    """What a torch user writes: unpack_bits (int64 tensor ops over the words), a dictionary gather and a where
    (0 past D), in the dictionary's dtype."""
    import torch
    d = inputs["dictionary"]
    idx = unpack_bits(inputs["words"], inputs["bw"], inputs["first"], inputs["n"])
    return torch.where(idx < d.shape[0], d[idx.clamp(max=d.shape[0] - 1)], torch.zeros((), dtype=d.dtype))


def _elem(dtype: str) -> int:
    return 4 if dtype in ("int32", "fp32") else 8


def bytes_moved(point) -> int:
    """The stream's words of the N values read once (N x bw / 8 B, whole words), the dictionary read once
    (D entries: at the points every entry is used), out written once (N entries)."""
    P = _check_point(point)
    e = _elem(P["dtype"])
    words = n_words(P["first"] + P["N"], P["bw"]) - P["first"] * P["bw"] // 32
    return 4 * words + P["D"] * e + P["N"] * e


def flops(point) -> int:
    """Integer work, no floating point: the unpack's 10 operations a value (bit offset multiply-add, word index
    and shift, two shifts and an or of the words, two shifts of the high word, the mask, the range check)."""
    P = _check_point(point)
    return 10 * P["N"]


def grid(cfg, point) -> int:
    """One program per BLOCK x STEPS consecutive values."""
    P = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(P["N"], cfg["BLOCK"] * cfg["STEPS"])


def loop_iterations(cfg, point) -> int:
    """STEPS steps a program (the last program's steps past N masked, not skipped)."""
    grid(cfg, point)
    return cfg["STEPS"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. The packed stream `WORDS` carries data, on the
    CPU: make_inputs' seed-0 draw (the words each value's two loads read, and through them the dictionary
    entries gathered, follow from it); the dictionary [D] and out [N] are on the meta device."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    d = _data(_items(P), 0)
    dt = _torch_dtype(P["dtype"])
    dic = torch.empty((P["D"],), dtype=dt, device="meta")
    out = torch.empty((P["N"],), dtype=dt, device="meta")
    return _kernel_args(d["words"], dic, out, P["N"], P["first"], P["bw"], cfg)
