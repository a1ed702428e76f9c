"""The probe side of a GPU hash join / id -> row lookup: an open-addressing hash table with linear probing,
a bare @triton.jit kernel + its launcher:

    out[q] = table_vals[s]   where table_keys[s] == probe_keys[q], s on the key's probe sequence
           = -1              where the key is absent (or is the EMPTY sentinel itself)
    hits   = the number of probe keys found (optional: one int64 counter, COUNT)

The table (what the build side produced): table_keys [S] int32 / int64 with EMPTY = -1 in the free slots,
table_vals [S] int32 / int64 payloads (a build row index; -1 in the free slots), S a power of two, both
contiguous; the build side's keys distinct (cuDF's distinct_hash_join, an id -> row map). A key's home
slot is its murmur3 finalizer masked to S: fmix32 of the 32 key bits for int32 keys, fmix64 of the 64
for int64 keys (cuco's murmurhash3_fmix_32 / _64 hashers), h & (S - 1); it lives at the first slot of
home, home + 1, ... (mod S) that was free when it was inserted (`build_table`, on the host, inserts as a
GPU build does: all pending keys try their next slot at once, one wins each free slot). Without
deletions no EMPTY slot lies between a key's home and its slot, so a probe stops at a match or at the
first EMPTY; and no key sits farther than the table's longest displacement from its home, so a probe
may also stop once it covered `max_probes` = longest displacement + 1 slots (build_table returns it: the
longest walk any lookup needs, hit or miss; None: S). probe_keys [Q], the table's key dtype, any stride
(a column of a wider row-major batch is read in place); a probe key equal to EMPTY is never found. out
[Q] in the payloads' dtype, fresh and contiguous.

Real uses: the probe phase of RAPIDS cuDF's hash joins (distinct_hash_join: one build row per key, the
probe row's build row or a no-match value -- what cudf-polars and Spark RAPIDS run for a join on a
primary key; the hit count sizes an inner join's output), Polars / DuckDB-style GPU joins on TPC-H keys,
and the id -> row remapping of recommender embeddings (TorchRec's managed-collision / ZCH remapper,
HugeCTR / HierarchicalKV embedding caches: a hashed 64-bit id to a row of the cached embedding table).

One program owns BLOCK_Q consecutive probe keys (one coalesced load, evict-first: streamed once). Per
key: its hash and home slot, and its state -- one int32, its slot: -1 walking, >= 0 found there, -3
absent, -2 no key (past Q) -- held as a [BLOCK_Q, 1] column in the window tile's layout, so nothing
changes layout inside the loop. The probe loop then walks every key's sequence BUCKET slots a step: the
aligned window of BUCKET slots holding the key's next slot, read whole with a mask constant along it
(one vector load of 4-64 bytes where the window is 16-byte aligned; windows never straddle the table's
end, S being a power of two >= BUCKET); the first window's slots before home are not compared (they
belong to other keys' sequences). A step compares the window's keys with the probe key: a match records
its slot, a match or an EMPTY ends the key's walk. The loop is data-dependent -- `while` any key of the
program is still walking (one CTA-wide max a step), for at most (max_probes + 2 BUCKET - 2) // BUCKET
windows (max_probes slots from home, whatever the key's offset in its first window): a program runs as
many steps as its slowest key needs -- linear probing's clusters at high load make that tail long --
and keys done early are masked off (no traffic). Then each found key's payload is gathered (EAGER 0), or
-- EAGER 1 -- every step loads the window's BUCKET payloads beside its keys (an independent load in the
same step, as an array-of-pairs table delivers them: cuco's slots are (key, value) pairs) and keeps the
matched one, trading BUCKET payloads a step for the dependent gather after the loop. One store of the
BLOCK_Q results (evict-first, as the probe keys' load: the streams leave L2 to the table); with COUNT, one
relaxed int64 atomic add of the program's hit count.

How this differs from examples/hashgrid_encode.py (instant-NGP's hash encoding): there a hash addresses a
feature row directly (collisions are tolerated, no keys stored, no probing); here the slot's stored key is
compared, the walk is data-dependent and a miss is an answer. From examples/searchsorted.py: a binary search
over sorted keys (log2 M dependent steps for every query); here one expected step or a few, but a
data-dependent tail. From examples/embedding_gather.py: rows gathered by given ids; here the row is found
from the key first.

Tunables: BLOCK_Q (probe keys a program, 128 / 256 / 512: with num_warps the keys a thread, and the
program's tail -- its slowest key's steps), BUCKET (slots a step, 1 / 2 / 4 / 8: wider vector loads and
fewer steps against more bytes a step and threads a key -- Triton spreads a window of more than 16 bytes
over several lanes, cuco's cooperative probing), EAGER (0 / 1, above), num_warps (4 / 8), num_stages (a
`while` loop: nothing for the compiler to pipeline, held at 1). On sm_90 every config of the sweep compiles
at every point without spills under triton 3.6 and 3.9 (registers and shared memory: the test file's
test_sweep_fits_the_points).
Problem parameters (a workload point): gen (how make_inputs draws the keys: "uniform" dense keys 1..N
probed uniformly, a TPC-H foreign key; "runs" TPC-H's sparse orderkeys probed by lineitem's ascending
runs of 1-7 rows an order, the build side a random hit fraction of the orders; "zipf" random 62-bit ids
probed by a Zipf(zipf) law over the ids' popularity, misses fresh ids), N (keys in the table), S (slots),
Q (probe keys), hit (the fraction of probes that find their key), keys (the key dtype), dtype (the
payload's and out's dtype), count (0 / 1: the hit counter), zipf (the "zipf" law's exponent).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _home(k, SMASK, KEY64: tl.constexpr):
    """The home slot of keys k: murmur3's fmix64 (int64 keys) / fmix32 (int32 keys), masked to S."""
    if KEY64:
        h = k.to(tl.uint64, bitcast=True)
        h = h ^ (h >> 33)
        h = h * 0xFF51AFD7ED558CCD
        h = h ^ (h >> 33)
        h = h * 0xC4CEB9FE1A85EC53
        h = h ^ (h >> 33)
        return (h & SMASK.to(tl.uint64)).to(tl.int32)
    else:
        h = k.to(tl.uint32, bitcast=True)
        h = h ^ (h >> 16)
        h = h * 0x85EBCA6B
        h = h ^ (h >> 13)
        h = h * 0xC2B2AE35
        h = h ^ (h >> 16)
        return (h & SMASK.to(tl.uint32)).to(tl.int32)


@triton.jit
def _kernel(PROBE, TKEYS, TVALS, OUT, COUNT, Q, SMASK, MAX_PROBES, stride_q,
            KEY64: tl.constexpr, HAS_COUNT: tl.constexpr, EAGER: tl.constexpr,
            BLOCK_Q: tl.constexpr, BUCKET: tl.constexpr):
    pid = tl.program_id(0)
    q = pid * BLOCK_Q + tl.arange(0, BLOCK_Q)
    q_ok = q < Q
    kq = tl.load(PROBE + q.to(tl.int64) * stride_q, mask=q_ok, other=-1, eviction_policy="evict_first")
    # each key's state is a [BLOCK_Q, 1] column in the window tile's layout, and only its slot changes in
    # the loop: -1 walking, >= 0 found there, -3 absent (an EMPTY reached, or the EMPTY key itself), -2 no
    # key (past Q); a key still walking when the bound is reached is absent too. (One int32 of state: a
    # loop-carried i1 vector went through a stack slot in triton 3.6's PTX, and more loop-carried per-key
    # values made ptxas spill a register pair at 40-100 registers.)
    k = kq[:, None]
    home = _home(k, SMASK, KEY64)
    slot = tl.where(q_ok, tl.where(kq != -1, -1, -3), -2)[:, None]
    j = tl.arange(0, BUCKET)[None, :]
    if EAGER:
        val = tl.full([BLOCK_Q, 1], -1, OUT.dtype.element_ty)
    # max_probes slots from home are covered after w_end / BUCKET windows, whatever the key's skip (a key
    # may look at up to BUCKET - 1 slots past them: none holds its key, an EMPTY there confirms the miss)
    w_end = (MAX_PROBES + 2 * BUCKET - 2) // BUCKET * BUCKET
    w = 0                                       # the step's window: w slots past the key's first
    go = tl.max(tl.max((slot == -1).to(tl.int32), axis=0), axis=0) > 0
    while go & (w < w_end):
        # the aligned window of BUCKET slots (a fresh value each step: a hint on a loop-carried one would
        # be dropped), read whole -- a mask constant along it keeps the vector loads; the first window's
        # slots before home (skip of them) are not compared
        skip = home & (BUCKET - 1)
        base = tl.multiple_of((home - skip + w) & SMASK, [BUCKET, BUCKET])
        walking = slot == -1
        ok = walking & (j + w >= skip)
        tk = tl.load(TKEYS + base + j, mask=walking, other=-1)
        hit = ok & (tk == k)
        stop = ok & ((tk == -1) | hit)
        at = tl.max(tl.where(hit, j, -1), axis=1, keep_dims=True)      # the match's place in the window
        ended = tl.max(stop.to(tl.int32), axis=1, keep_dims=True) > 0
        if EAGER:
            tv = tl.load(TVALS + base + j, mask=walking, other=0)
            # (distinct keys: at most one match a window)
            val = tl.where(at >= 0, tl.sum(tl.where(hit, tv, 0), axis=1, keep_dims=True).to(OUT.dtype.element_ty),
                           val)
        slot = tl.where(at >= 0, base + at, tl.where(ended, -3, slot))
        w += BUCKET
        go = tl.max(tl.max((slot == -1).to(tl.int32), axis=0), axis=0) > 0
    if not EAGER:
        val = tl.load(TVALS + slot, mask=slot >= 0, other=-1)
    tl.store(OUT + q[:, None], val, mask=slot != -2, eviction_policy="evict_first")
    if HAS_COUNT:
        n = tl.sum(tl.sum((slot >= 0).to(tl.int32), axis=0), axis=0)
        tl.atomic_add(COUNT, n.to(tl.int64), sem="relaxed")


# ---------------------------------------------------------------- launcher
ROLE = "held-out-31"
DTYPES = ("int32", "int64")                  # the payloads' (and out's) dtype
KEY_DTYPES = ("int32", "int64")
GENS = ("uniform", "runs", "zipf")
EMPTY = -1
TUNABLES = ("BLOCK_Q", "BUCKET", "EAGER", "num_warps", "num_stages")
BASELINE = {"BLOCK_Q": 256, "BUCKET": 4, "EAGER": 0, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 4 x 2 x 2 = 48 configs (1/2 to 4 keys a thread, 1-8 slots a step, payloads
# gathered after the walk or loaded every step; a `while` loop: num_stages 1)
SWEEP_AXES = {"BLOCK_Q": [128, 256, 512], "BUCKET": [1, 2, 4, 8], "EAGER": [0, 1], "num_warps": [4, 8],
              "num_stages": [1]}
MAX_Q = 2**31 - 2**13           # int32 probe indices (program starts included)
MAX_S = 2**30                   # int32 slot indices
MAX_LOAD = 0.9
LINES_PER_ORDER = 7             # TPC-H: 1-7 lineitems an order (uniform)

POINTS = [
    # TPC-H at SF 4, lineitem JOIN part ON l_partkey = p_partkey (Q14 / Q17 / Q19's join, probed with all of
    # lineitem): build = part's 800,000 rows (p_partkey dense 1..800,000, INTEGER), payload its int32 build
    # row (cuDF's size_type); 2^21 slots (cuDF sizes at 50 % occupancy: 1.6M, a power of two up -> load
    # 0.38); probe = the ~24.0M lineitem rows' l_partkey, uniform, every one found (a foreign key); the hit
    # count sizes the inner join's output. Probe keys 96 MB read, out 96 MB written; table 16.8 MB (L2):
    # ~70 us of DRAM traffic at 3 TB/s, 0.1-0.3 ms with the walks on an H100
    {"gen": "uniform", "N": 800_000, "S": 2**21, "Q": 24_000_000, "hit": 1.0, "keys": "int32",
     "dtype": "int32", "count": 1},
    # TPC-H at SF 4, lineitem JOIN orders ON l_orderkey = o_orderkey with orders filtered to one year of
    # o_orderdate (Q5's 1994: 15.2 % of the 6,000,000 orders -> 912,000 build rows, BIGINT o_orderkey in
    # TPC-H's sparse key space: 8 of every 32 ids), int32 payloads; 2^21 slots (load 0.43); probe = the 24.0M
    # lineitem rows in their stored order (ascending orderkey in runs of 1-7 rows), 15 % found. Probe keys
    # 192 MB read, out 96 MB written; table 25 MB (L2): ~0.1 ms of DRAM traffic, 0.1-0.4 ms with the walks
    {"gen": "runs", "N": 912_000, "S": 2**21, "Q": 24_000_000, "hit": 0.152, "keys": "int64",
     "dtype": "int32", "count": 0},
    # Recommender id -> row remapping (TorchRec's ZCH remapper / a HugeCTR-HierarchicalKV-style embedding
    # cache): 62-bit hashed ids, 2^22 slots at load 0.8 (3,355,443 cached ids), int64 rows; probed by one
    # batch of MLPerf DLRM-DCNv2's Criteo multi-hot input (214 ids a sample over the 26 features) of 55,296
    # samples -> 11,833,344 ids, Zipf(1.05) popularity, 90 % of the ids cached. Probe keys 95 MB read, out
    # 95 MB written; table 67 MB (more than the 50 MB L2; clusters of hundreds of slots at this load): ~0.1
    # ms of DRAM traffic, 0.2-1 ms with the walks
    {"gen": "zipf", "N": 3_355_443, "S": 2**22, "Q": 11_833_344, "hit": 0.9, "zipf": 1.05, "keys": "int64",
     "dtype": "int64", "count": 0},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int_dtype(name: str, what: str, allowed):
    import torch
    if name not in allowed:
        raise ValueError(f"{what} {name!r} is not one of {', '.join(allowed)}")
    return {"int32": torch.int32, "int64": torch.int64}[name]


def _orderkey(i):
    """TPC-H's sparse orderkeys of order rows i (numpy int64): 8 used ids of every 32, from 1."""
    return (i // 8) * 32 + (i % 8) + 1


def _orders(P) -> int:
    """Orders the "runs" build side is filtered from: round(N / hit)."""
    return int(round(P["N"] / P["hit"]))


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: gen "uniform", hit 1.0, keys and dtype int64, count 0,
    zipf 1.0)."""
    gen = point.get("gen", "uniform")
    if gen not in GENS:
        raise ValueError(f"gen {gen!r} is not one of {', '.join(GENS)}")
    for k in ("N", "S", "Q"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    N, S, Q = point["N"], point["S"], point["Q"]
    if S < 2 or S & (S - 1) or S > MAX_S:
        raise ValueError(f"S={S} slots must be a power of two from 2 to {MAX_S}")
    if N >= S or N > MAX_LOAD * S:
        raise ValueError(f"N={N} keys in S={S} slots: the load N / S must stay at most {MAX_LOAD} (and leave "
                         f"a slot EMPTY)")
    if Q > MAX_Q:
        raise ValueError(f"Q={Q} probe keys exceed the kernel's int32 indices (at most {MAX_Q})")
    hit = point.get("hit", 1.0)
    if not _is_num(hit) or not 0.0 <= hit <= 1.0:
        raise ValueError(f"hit={hit!r} must be a number from 0 to 1")
    keys = point.get("keys", "int64")
    _int_dtype(keys, "keys", KEY_DTYPES)
    dt = point.get("dtype", "int64")
    _int_dtype(dt, "dtype", DTYPES)
    cnt = point.get("count", 0)
    if cnt not in (0, 1) or not isinstance(cnt, (int, bool)):
        raise ValueError(f"count={cnt!r} must be 0 or 1")
    s = point.get("zipf", 1.0)
    if not _is_num(s) or not 0.0 <= s <= 4.0:
        raise ValueError(f"zipf={s!r} must be a number from 0 to 4")
    P = {"gen": gen, "N": N, "S": S, "Q": Q, "hit": float(hit), "keys": keys, "dtype": dt, "count": int(cnt),
         "zipf": float(s)}
    if gen == "runs":
        if hit <= 0.0:
            raise ValueError(f"gen 'runs' needs hit={hit!r} > 0 (the build side is that fraction of the orders)")
        if keys == "int32" and _orderkey(_orders(P) - 1) >= 2**31 - 1:
            raise ValueError(f"gen 'runs' with N={N}, hit={hit}: orderkeys past int32; use keys 'int64'")
    return P


def _check_cfg(cfg) -> None:
    bq = cfg["BLOCK_Q"]
    if not _is_int(bq) or bq < 16 or bq > 4096 or bq & (bq - 1):
        raise ValueError(f"BLOCK_Q={bq!r} must be a power of two from 16 to 4096")
    b = cfg["BUCKET"]
    if not _is_int(b) or b < 1 or b > 64 or b & (b - 1):
        raise ValueError(f"BUCKET={b!r} must be a power of two from 1 to 64")
    if bq * b > 16384:
        raise ValueError(f"BLOCK_Q x BUCKET = {bq} x {b} = {bq * b} slots a step; at most 16384")
    e = cfg["EAGER"]
    if e not in (0, 1) or not isinstance(e, (int, bool)):
        raise ValueError(f"EAGER={e!r} must be 0 or 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


# ---------------------------------------------------------------- the hash and the build (host)
def home_slots(keys, S: int):
    """[n] int64 (CPU) home slots of keys (a CPU int32 / int64 tensor): the kernel's hash -- murmur3 fmix32
    of the 32 bits / fmix64 of the 64 bits -- masked to S (a power of two)."""
    import numpy as np
    import torch
    a = keys.detach().cpu().contiguous().numpy()
    if a.dtype == np.int64:
        h = a.view(np.uint64).copy()
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
    elif a.dtype == np.int32:
        h = a.view(np.uint32).copy()
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    else:
        raise ValueError(f"keys must be int32 / int64; got {keys.dtype}")
    return torch.from_numpy((h & h.dtype.type(S - 1)).astype(np.int64))


def _place(home, S: int):
    """numpy int64 [N] homes -> each key's slot, inserted as a GPU build inserts them (cuco's insert: every
    thread CASes its key's next slot at once): in rounds, each pending key tries its current slot, one of
    the keys that try a free slot wins it (the claim numpy's scatter keeps: deterministic for one numpy),
    the others move one slot on. No EMPTY slot is ever left between a key's home and its slot (a key moves
    on only past an occupied one), whoever wins."""
    import numpy as np
    N = home.size
    pos = home.astype(np.int64)
    owner = np.full(S, -1, dtype=np.int64)
    claim = np.empty(S, dtype=np.int64)
    pending = np.arange(N, dtype=np.int64)
    while pending.size:
        p = pos[pending]
        free = owner[p] < 0
        fp, fr = p[free], pending[free]
        claim[fp] = fr                              # repeated slots: one claim stands
        won = claim[fp] == fr
        owner[fp[won]] = fr[won]
        free[free] = won                            # now: placed this round
        pending = pending[~free]
        pos[pending] = (pos[pending] + 1) & (S - 1)
    return pos


def _build(keys, vals, S: int):
    """(table_keys [S], table_vals [S], displacement [N] numpy int64) of CPU keys / vals."""
    import torch
    home = home_slots(keys, S).numpy()
    pos = _place(home, S)
    at = torch.from_numpy(pos)
    tk = torch.full((S,), EMPTY, dtype=keys.dtype)
    tv = torch.full((S,), -1, dtype=vals.dtype)
    tk[at] = keys
    tv[at] = vals
    return tk, tv, (pos - home) & (S - 1)


def build_table(keys, vals, S: int):
    """The linear-probing table of distinct keys [N] (int32 / int64, CPU or not) with payloads vals [N]
    (int32 / int64) in S slots (a power of two > N): (table_keys [S] (EMPTY = -1 where free), table_vals
    [S] (-1 where free), max_probes = the longest displacement + 1) -- the tables on keys' device. Built on
    the host (the hash of `home_slots`)."""
    import torch
    if keys.dim() != 1 or keys.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"keys must be a 1-d int32 / int64 tensor; got {tuple(keys.shape)} {keys.dtype}")
    if vals.dim() != 1 or vals.dtype not in (torch.int32, torch.int64) or vals.shape[0] != keys.shape[0]:
        raise ValueError(f"vals must be a 1-d int32 / int64 tensor of N={keys.shape[0]} payloads; got "
                         f"{tuple(vals.shape)} {vals.dtype}")
    N = keys.shape[0]
    if not _is_int(S) or S < 2 or S & (S - 1) or S > MAX_S or N >= S:
        raise ValueError(f"S={S!r} must be a power of two from 2 to {MAX_S} above N={N} (a slot left EMPTY)")
    k = keys.detach().cpu()
    if bool((k == EMPTY).any()):
        raise ValueError(f"keys hold the EMPTY sentinel {EMPTY}")
    if torch.unique(k).numel() != N:
        raise ValueError("keys must be distinct (one build row a key)")
    tk, tv, disp = _build(k, vals.detach().cpu(), S)
    return tk.to(keys.device), tv.to(keys.device), int(disp.max()) + 1 if N else 1


# ---------------------------------------------------------------- the draws (host, seeded)
def _distinct_ids(n: int, hi: int, rng):
    """n distinct random ints in [0, hi) (numpy int64), in draw order."""
    import numpy as np
    out = np.empty(0, dtype=np.int64)
    while out.size < n:
        d = np.concatenate((out, rng.integers(0, hi, size=n - out.size + 16, dtype=np.int64)))
        _, first = np.unique(d, return_index=True)
        out = d[np.sort(first)][:n]
    return out


def _fresh_ids(n: int, hi: int, rng, taken):
    """n random ints in [0, hi) (numpy int64), none in the sorted array taken."""
    import numpy as np
    out = rng.integers(0, hi, size=n, dtype=np.int64)
    while True:
        at = np.searchsorted(taken, out).clip(max=taken.size - 1)
        bad = np.flatnonzero(taken[at] == out)
        if bad.size == 0:
            return out
        out[bad] = rng.integers(0, hi, size=bad.size, dtype=np.int64)


def _draw_np(P, seed: int) -> dict:
    """The point's build keys [N] (row order), probe keys [Q] and each probe's build row (-1: a miss), numpy
    int64; drawn from a seeded numpy Generator (gen: module doc)."""
    import numpy as np
    rng = np.random.Generator(np.random.PCG64(seed))
    N, Q, hit = P["N"], P["Q"], P["hit"]
    kmax = 2**31 - 1 if P["keys"] == "int32" else 2**62
    if P["gen"] == "runs":
        M = _orders(P)
        chosen = np.sort(rng.choice(M, size=N, replace=False))      # the filter's orders, in table order
        build = _orderkey(chosen)
        row_of = np.full(M, -1, dtype=np.int64)
        row_of[chosen] = np.arange(N, dtype=np.int64)
        ends = np.cumsum(rng.integers(1, LINES_PER_ORDER + 1, size=M, dtype=np.int64))
        order = np.searchsorted(ends, np.arange(Q, dtype=np.int64) % ends[-1], side="right")
        return {"build": build, "probe": _orderkey(order), "row": row_of[order]}
    miss = np.flatnonzero(rng.random(Q) >= hit) if hit < 1.0 else np.empty(0, dtype=np.int64)
    n_hit = Q - miss.size
    if P["gen"] == "uniform":
        build = np.arange(1, N + 1, dtype=np.int64)
        hits = rng.integers(0, N, size=n_hit, dtype=np.int64)
        fresh = rng.integers(N + 1, 2 * N + 2, size=miss.size, dtype=np.int64)
    else:
        build = _distinct_ids(N, kmax, rng)
        p = np.arange(1, N + 1, dtype=np.float64) ** -P["zipf"]
        counts = rng.multinomial(n_hit, p / p.sum())                # hits a popularity rank
        ranks = rng.permutation(np.repeat(np.arange(N, dtype=np.int64), counts))
        hits = rng.permutation(N)[ranks]                            # ranks scattered over the ids
        fresh = _fresh_ids(miss.size, kmax, rng, np.sort(build))
    row = np.empty(Q, dtype=np.int64)
    is_hit = np.ones(Q, dtype=bool)
    is_hit[miss] = False
    row[is_hit] = hits
    row[miss] = -1
    probe = np.empty(Q, dtype=np.int64)
    probe[is_hit] = build[hits]
    probe[miss] = fresh
    return {"build": build, "probe": probe, "row": row}


def _to_empty(table_keys):
    """[S] int64 (numpy): each slot's distance to the first EMPTY slot at or after it (cyclically)."""
    import numpy as np
    S = table_keys.size
    idx = np.arange(S, dtype=np.int64)
    nxt = np.where(table_keys == EMPTY, idx, 2 * S)
    nxt = np.minimum.accumulate(nxt[::-1])[::-1]
    first = int(nxt[0])
    return np.where(nxt < 2 * S, nxt, first + S) - idx


@functools.lru_cache(maxsize=4)
def _data(items: tuple, seed: int) -> dict:
    """The point's drawn data on the CPU (make_inputs', example_args' and cta_iterations' one source):
    probe_keys [Q], table_keys / table_vals [S] (the table of the build keys with their row indices as
    payloads), max_probes, build_keys / build_vals (the build side sorted by key), per probe its home slot's
    low 6 bits (int8: all a window of up to 64 slots needs) and its stop distance (slots from home to its key
    or the first EMPTY, int32), n_hit (the probes found)."""
    import numpy as np
    import torch
    P = dict(items)
    d = _draw_np(P, seed)
    kt = _int_dtype(P["keys"], "keys", KEY_DTYPES)
    vt = _int_dtype(P["dtype"], "dtype", DTYPES)
    S, N = P["S"], P["N"]
    bkeys = torch.from_numpy(d["build"]).to(kt)
    bvals = torch.arange(N, dtype=vt)
    tk, tv, disp = _build(bkeys, bvals, S)
    probe = torch.from_numpy(d["probe"]).to(kt)
    home_q = home_slots(probe, S).numpy()
    # stop distance: a hit's displacement; a miss's distance to the first EMPTY at or after its home
    row = d["row"]
    stop = _to_empty(tk.numpy())[home_q]
    hit = np.flatnonzero(row >= 0)
    stop[hit] = disp[row[hit]]
    order = torch.argsort(bkeys)
    return {"probe_keys": probe, "table_keys": tk, "table_vals": tv, "max_probes": int(disp.max()) + 1,
            "build_keys": bkeys[order], "build_vals": bvals[order], "home": (home_q & 63).astype(np.int8),
            "stop": stop.astype(np.int32), "n_hit": int(hit.size)}


def _items(P: dict) -> tuple:
    return tuple(sorted(P.items()))


# ---------------------------------------------------------------- the kernel's launch
def _kernel_args(probe_keys, table_keys, table_vals, out, hits, max_probes: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); hits None: out
    stands in for COUNT (never written)."""
    import torch
    S = table_keys.shape[0]
    return dict(PROBE=probe_keys, TKEYS=table_keys, TVALS=table_vals, OUT=out, COUNT=out if hits is None else hits,
                Q=probe_keys.shape[0], SMASK=S - 1, MAX_PROBES=max_probes, stride_q=probe_keys.stride(0),
                KEY64=int(table_keys.dtype == torch.int64), HAS_COUNT=int(hits is not None), EAGER=int(cfg["EAGER"]),
                BLOCK_Q=cfg["BLOCK_Q"], BUCKET=cfg["BUCKET"])


def hash_join_probe(probe_keys, table_keys, table_vals, max_probes: int | None = None, *, count: bool = False,
                    BLOCK_Q: int = 256, BUCKET: int = 4, EAGER: int = 0, num_warps: int = 4, num_stages: int = 1):
    """out [Q] (table_vals' dtype): table_vals at probe_keys[q]'s slot of the linear-probing table
    (table_keys, table_vals: [S] contiguous, S a power of two, EMPTY = -1 in free slots, the hash of
    `home_slots`: what `build_table` returns), -1 where the key is absent or is EMPTY. probe_keys: [Q] in
    table_keys' dtype (int32 / int64), any stride. max_probes: the table's longest displacement + 1
    (build_table's third result; None: S, a bound for any table). count: also return hits, a [1] int64
    tensor with the number of probe keys found. BLOCK_Q, BUCKET, EAGER, num_warps, num_stages: the tunables
    (module doc)."""
    import torch
    cfg = {"BLOCK_Q": BLOCK_Q, "BUCKET": BUCKET, "EAGER": EAGER, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if table_keys.dim() != 1 or table_keys.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"table_keys must be a 1-d int32 / int64 tensor [S]; got {tuple(table_keys.shape)} "
                         f"{table_keys.dtype}")
    S = table_keys.shape[0]
    if S < 2 or S & (S - 1) or S > MAX_S:
        raise ValueError(f"table_keys' S={S} slots must be a power of two from 2 to {MAX_S}")
    if S < BUCKET:
        raise ValueError(f"BUCKET={BUCKET} slots a step exceed the table's S={S}")
    if table_vals.dim() != 1 or table_vals.shape[0] != S or table_vals.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"table_vals must be a 1-d int32 / int64 tensor of S={S} payloads; got "
                         f"{tuple(table_vals.shape)} {table_vals.dtype}")
    if not (table_keys.is_contiguous() and table_vals.is_contiguous()):
        raise ValueError(f"table_keys and table_vals must be contiguous (windows of BUCKET slots); got strides "
                         f"{table_keys.stride()} and {table_vals.stride()}")
    if probe_keys.dim() != 1 or probe_keys.dtype != table_keys.dtype:
        raise ValueError(f"probe_keys must be a 1-d {table_keys.dtype} tensor [Q] (table_keys' dtype); got "
                         f"{tuple(probe_keys.shape)} {probe_keys.dtype}")
    Q = probe_keys.shape[0]
    if Q > MAX_Q:
        raise ValueError(f"Q={Q} probe keys exceed the kernel's int32 indices (at most {MAX_Q})")
    if max_probes is None:
        max_probes = S
    if not _is_int(max_probes) or not 1 <= max_probes <= S:
        raise ValueError(f"max_probes={max_probes!r} must be an int from 1 to S={S}")
    dev = table_keys.device
    for name, t in (("probe_keys", probe_keys), ("table_vals", table_vals)):
        if t.device != dev:
            raise ValueError(f"{name} must be on table_keys' device {dev}; got {t.device}")
    out = torch.empty((Q,), dtype=table_vals.dtype, device=dev)
    hits = torch.zeros((1,), dtype=torch.int64, device=dev) if count else None
    if Q:
        _kernel[(triton.cdiv(Q, BLOCK_Q),)](**_kernel_args(probe_keys, table_keys, table_vals, out, hits,
                                                           max_probes, cfg),
                                            num_warps=num_warps, num_stages=num_stages)
    return (out, hits) if count else out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """probe_keys [Q], the table (table_keys, table_vals [S], max_probes) built from the build side's
    distinct keys with their build rows as payloads, the build side sorted by key (build_keys, build_vals:
    what reference and torch_baseline search), count; drawn on the CPU by the point's gen (module doc) from
    a seeded numpy Generator, copied to `device`."""
    P = _check_point(point)
    d = _data(_items(P), int(seed))
    out = {k: d[k].to(device, copy=True) for k in ("probe_keys", "table_keys", "table_vals", "build_keys",
                                                    "build_vals")}
    out.update(max_probes=d["max_probes"], count=P["count"])
    return out


def launch(inputs, cfg):
    """out [Q]: the payloads found (-1 where absent); the hit count, with inputs["count"], is computed and
    dropped (the wrapper returns it)."""
    res = hash_join_probe(inputs["probe_keys"], inputs["table_keys"], inputs["table_vals"], inputs["max_probes"],
                          count=bool(inputs.get("count", 0)), BLOCK_Q=cfg["BLOCK_Q"], BUCKET=cfg["BUCKET"],
                          EAGER=cfg["EAGER"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return res[0] if isinstance(res, tuple) else res


def reference(inputs):
    """out [Q] in the payloads' dtype from the build side alone (no hash table): a binary search of each
    probe key in the sorted build keys, its build row where equal, else -1 (EMPTY too: never a build key)."""
    import torch
    bk, bv, pk = inputs["build_keys"].long(), inputs["build_vals"], inputs["probe_keys"].long().contiguous()
    if bk.numel() == 0:
        return torch.full(pk.shape, -1, dtype=bv.dtype, device=pk.device)
    at = torch.searchsorted(bk, pk).clamp_(max=bk.numel() - 1)
    return torch.where(bk[at] == pk, bv[at], torch.full_like(bv[at], -1))


def torch_baseline(inputs):
    """What a torch user writes for an id -> row lookup: torch.searchsorted over the build side's sorted keys
    (a sorted-array "index" instead of a hash table: log2 N dependent steps a key), a gather and a where."""
    import torch
    bk, bv, pk = inputs["build_keys"], inputs["build_vals"], inputs["probe_keys"].contiguous()
    at = torch.searchsorted(bk, pk).clamp_(max=bk.numel() - 1)
    return torch.where(bk[at] == pk, bv[at], torch.full_like(bv[at], -1))


def _bytes(name: str) -> int:
    return 4 if name == "int32" else 8


def bytes_moved(point) -> int:
    """The probe keys read once (Q x 4 / 8 B), out written once (Q x 4 / 8 B), the table's keys and payloads
    read once (S x (key + payload) B: at the points the probes touch every line of it; re-reads after an
    eviction -- the 67 MB table of the zipf point -- not counted), the hit counter (8 B)."""
    P = _check_point(point)
    kb, vb = _bytes(P["keys"]), _bytes(P["dtype"])
    return P["Q"] * (kb + vb) + P["S"] * (kb + vb) + 8 * P["count"]


def flops(point) -> int:
    """Integer work, no floating point: the hash's 8 operations a probe key (3 shifts, 3 xors, 2 multiplies;
    the data-dependent slot compares not counted)."""
    P = _check_point(point)
    return 8 * P["Q"]


def grid(cfg, point) -> int:
    """One program per BLOCK_Q consecutive probe keys."""
    P = _check_point(point)
    _check_cfg(cfg)
    if cfg["BUCKET"] > P["S"]:
        raise ValueError(f"BUCKET={cfg['BUCKET']} slots a step exceed the point's S={P['S']}")
    return triton.cdiv(P["Q"], cfg["BLOCK_Q"])


def probe_steps(home, stop, max_probes: int, bucket: int):
    """Each key's probe-loop steps (numpy int32, from integer homes -- their low bits suffice -- and int32
    stop distances): the windows up to the one holding its stop slot (its key or the first EMPTY, `stop`
    slots from `home`; the first window holds home & (bucket - 1) slots before home), at most the
    (max_probes + 2 bucket - 2) // bucket the kernel walks."""
    import numpy as np
    shift = int(bucket).bit_length() - 1
    steps = stop.astype(np.int32) + (home & (bucket - 1)).astype(np.int32)
    steps >>= shift
    steps += 1
    return np.minimum(steps, np.int32((max_probes + 2 * bucket - 2) // bucket), out=steps)


@functools.lru_cache(maxsize=64)
def _cta_steps(items: tuple, block_q: int, bucket: int):
    """[grid] numpy int32: each program's probe-loop steps -- the most any of its keys takes (make_inputs'
    seed-0 draw; an EMPTY probe key takes none)."""
    import numpy as np
    d = _data(items, 0)
    steps = probe_steps(d["home"], d["stop"], d["max_probes"], bucket)
    steps[(d["probe_keys"] == EMPTY).numpy()] = 0
    pad = (-steps.size) % block_q
    return np.pad(steps, (0, pad)).reshape(-1, block_q).max(axis=1)


def loop_iterations(cfg, point) -> int:
    """Probe-loop steps per program, the mean over the programs rounded up (make_inputs' seed-0 draw; each
    program runs its slowest key's steps: cta_iterations)."""
    P = _check_point(point)
    grid(cfg, P)
    s = _cta_steps(_items(P), cfg["BLOCK_Q"], cfg["BUCKET"])
    return -(-int(s.sum()) // s.size)


def cta_iterations(cfg, point) -> list[int]:
    """Each program's probe-loop steps in launch order: the most its BLOCK_Q keys need (probe_steps of
    make_inputs' seed-0 draw: data-dependent, from 1 to a cluster's length / BUCKET)."""
    P = _check_point(point)
    grid(cfg, P)
    return _cta_steps(_items(P), cfg["BLOCK_Q"], cfg["BUCKET"]).tolist()


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. The probe keys [Q] and the table's keys [S]
    carry data, on the CPU: make_inputs' seed-0 draw (the slots a key reads are computed from both); the
    payloads [S], out [Q] and the hit counter [1] int64 are on the meta device; max_probes is the drawn
    table's."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    d = _data(_items(P), 0)
    vt = _int_dtype(P["dtype"], "dtype", DTYPES)
    tv = torch.empty((P["S"],), dtype=vt, device="meta")
    out = torch.empty((P["Q"],), dtype=vt, device="meta")
    hits = torch.empty((1,), dtype=torch.int64, device="meta") if P["count"] else None
    return _kernel_args(d["probe_keys"], d["table_keys"], tv, out, hits, d["max_probes"], cfg)
