"""The L2 requests and 32-byte sectors one main-loop iteration of a CTA moves: rank's term (c), counted as
the memory system counts it.

The L2 serves an SM in 32-byte sectors (CUDA C++ Programming Guide, "Device Memory Accesses": a warp's
global access is split into the 32-byte segments it touches). A tile whose lanes read neighbouring
elements moves about the bytes it asks for; a gather whose lanes fall in different sectors moves a whole
sector for each -- an NCHW bilinear resize whose warp spans 16 channel planes asks 2 bytes of each sector
it pulls. Counting bytes asked for, rank saw those configs as cheap as the coalesced ones (round 22:
bilinear_resize's BLOCK_C 128 / 4-element configs ran 4-7x slower than estimated, the estimate's #1
1.87x the best).

This module evaluates the compiled TTGIR of a few sample CTAs, every element of every tensor (not the
first element as occmodel.tile_order does), down to the main loop's first iteration, and collects the
byte addresses of each global tt.load and tt.store in the loop body, masked-off lanes left out (a
pipelined cp.async tile is left out: a GEMM's BLOCK_K = 32 rows use half of each line, and charging the
other half made the development set's GEMMs rank worse, session 25).
One iteration moves, per CTA, the distinct sectors and 128-byte lines its loads touch (a line two loads
of the iteration share is fetched once: the L1 keeps it) and, separately, those its stores write.

    tr = traffic(ttgir, report, {"C": 256, ...}, grid=(18625, 16), float_args={"scale_h": 0.2539})
    tr.request_bytes       # 128 x (load lines + store requests) per CTA per iteration
    tr.waste_bytes         # of those, the bytes not asked for: what rank adds to the tile's bytes
    tr.sector_bytes        # 32 x (load sectors + store sectors)
    tr.asked_bytes         # the distinct bytes the same accesses ask for

The L2 serves requests, each one line's sectors, at about the rate of whole lines (measured with Nsight
Compute, reports/GPU_NOTES.md 31): a line counts 128 bytes whether the CTA uses 2 of them or all. Loads
count each distinct line once (the L1 serves the second ask); stores -- and global atomics, which cost about
what stores to the same lines cost (reports/GPU_NOTES.md 38) -- are not merged, so each warp
instruction's lines count (the #blocked layout says which elements one instruction moves) -- on the four
bilinear configs profiled, within 2 % of the measured write requests. What the load count leaves out,
measured there: L1 hits across CTAs of one SM (the worst config reads from L2 half the lines counted) and
several warps missing on one line at once (the best config reads 2.2x the lines counted).

A kernel without a main loop is counted over its body outside every loop, as one iteration. None when the
walk cannot reach the loop, or when a global access in its body cannot be evaluated (its pointer comes from
loaded data not given, a tensor descriptor, an op not modelled)
or sits in a loop inside it: a partial count would read as coalesced. Loaded data can be given (`data`: the
launcher's CPU tensors, KernelCard.tensor_data): a load from such a tensor has its values, so a gather
through loaded ids or coordinates has addresses and is counted like any other access.

Contract: pure (string processing and numpy), no torch, no GPU. The values follow the TTGIR's types: i32
arithmetic in int64 (no wrap-around), f32 in float32 (so an fp32 source coordinate truncates as the GPU's
does), pointers as (kernel argument, byte offset).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .pipeline import _OP, _STRINGS, ATOMIC_OPS    # atomics: counted with the stores in traffic, not in store_lines
from .tile_order import _BINARY, _CMP, _FOR, _iter_args, _operands, elem_bytes, launch_dims, program_ids

SECTOR = 32
LINE = 128
SAMPLES = 8          # CTAs evaluated, spread evenly over the launch (the first and the last among them)
MAX_ELEMENTS = 1 << 20   # a larger tensor is not evaluated (the count gives up: None)

_ARG = re.compile(r"(%[\w.#-]+):\s*(!tt\.ptr<(\w+)>|i\d+|f16|bf16|f32|f64)")
_SHAPE = re.compile(r"tensor<((?:\d+x)+)")
_RESULT_PTR = re.compile(r"!tt\.ptr<(\w+)>")
_PTR_LAYOUT = re.compile(r"!tt\.ptr<\w+>,\s*(#\w+)>")
_BLOCKED = re.compile(r"^(#\w+)\s*=\s*#ttg\.blocked<\{sizePerThread = \[([\d, ]+)\], threadsPerWarp = \[([\d, ]+)\], "
                      r"warpsPerCTA = \[([\d, ]+)\], order = \[([\d, ]+)\]")
_FCMP = {"oeq": np.equal, "one": np.not_equal, "olt": np.less, "ole": np.less_equal, "ogt": np.greater,
         "oge": np.greater_equal, "ueq": np.equal, "une": np.not_equal, "ult": np.less, "ule": np.less_equal,
         "ugt": np.greater, "uge": np.greater_equal}
_FBINARY = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide,
            "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin, "arith.maximumf": np.maximum,
            "arith.minimumf": np.minimum}
_FUNARY = {"math.floor": np.floor, "math.ceil": np.ceil, "math.absf": np.abs, "arith.negf": np.negative}
_IDENTITY = ("ttg.convert_layout", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast",
             "arith.index_castui")
_DIVIDES = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.floordivsi")
_GLOBAL_LOADS = ("tt.load",)                   # counted; a pipelined cp.async tile is not (module doc)
_ASYNC = "ttg.async_copy_global_to_local"
_OPAQUE_ACCESS = ("tt.descriptor_load", "tt.descriptor_store", "ttng.async_tma_copy_global_to_local",
                  "ttng.async_tma_copy_local_to_global", "tt.descriptor_gather", "tt.descriptor_scatter")


@dataclass(frozen=True)
class SectorTraffic:
    """Per CTA per main-loop iteration, the mean over the sampled CTAs."""

    load_sectors: float     # distinct 32-byte sectors the loads touch
    store_sectors: float    # distinct 32-byte sectors the stores write
    load_bytes: float       # distinct bytes the loads ask for (masked-off elements left out)
    store_bytes: float
    ctas: int               # CTAs sampled
    load_lines: float = 0.0   # distinct 128-byte lines the loads touch
    store_lines: float = 0.0
    store_requests: float = 0.0   # the stores' L2 requests: each warp instruction's distinct lines, summed
                                  # (a #blocked layout's; the distinct lines for any other layout)
    load_requests: float = 0.0    # the loads' warp instructions' distinct lines, summed the same way (what the
                                  # L1 looks up: a line two instructions share is looked up twice)

    @property
    def sector_bytes(self) -> float:
        """Bytes between L2 and the SM, whole sectors: 32 x (load + store sectors)."""
        return SECTOR * (self.load_sectors + self.store_sectors)

    @property
    def request_bytes(self) -> float:
        """The L2's view: 128 bytes for each distinct line the loads touch (the L1 serves a line twice
        asked) and for each store request (a warp instruction's line: stores are not merged). An L2
        request carries one line's sectors and costs about a whole line's time whatever it carries
        (Nsight Compute on an H100, reports/GPU_NOTES.md 31: 81-95 G requests/s at full load, one-sector
        requests included, against the 104 G lines/s of the measured L2 bandwidth)."""
        return LINE * (self.load_lines + self.store_requests)

    @property
    def waste_bytes(self) -> float:
        """What term (c) adds to the tile's bytes: the requests' bytes the accesses do not ask for
        (request_bytes less asked_bytes, loads and stores each at least 0); about 0 for a coalesced tile."""
        return (max(0.0, LINE * self.load_lines - self.load_bytes)
                + max(0.0, LINE * self.store_requests - self.store_bytes))

    @property
    def asked_bytes(self) -> float:
        return self.load_bytes + self.store_bytes

    @property
    def efficiency(self) -> float:
        """Bytes asked for over bytes moved (1.0: every sector fully used; 1.0 when nothing moves)."""
        return self.asked_bytes / self.sector_bytes if self.sector_bytes else 1.0


@dataclass(frozen=True)
class _P:
    root: str               # the kernel argument
    off: np.ndarray         # byte offsets, the leading axis over sampled CTAs (or 1: the same for all)


class _Unknown(Exception):
    """A global access of the main loop whose addresses cannot be evaluated."""


def traffic(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int],
            float_args: Mapping[str, float] | None = None, samples: int = SAMPLES,
            data: Mapping[str, np.ndarray] | None = None) -> SectorTraffic | None:
    """The main loop's sector traffic (see the module doc) -- a kernel without a main loop, its body outside
    every loop as one iteration --; None when it cannot be counted. `data`: the tensors whose values are
    known (kernel argument -> flat array in memory order), so that a gather whose addresses come from them
    is counted."""
    if report is None:
        return None
    got = _sampled(ttgir, report, grid, samples)
    if got is None:
        return None
    dims, target, pid = got
    try:
        acc = _walk(ttgir, int_args, float_args or {}, pid, dims, target, data=data, atomics=True)
        if acc is None:
            return None
        n = len(pid)
        (ls, lb, ll, lr), (ss, sb, sl, sr) = _count(acc[0], n), _count(acc[1], n)
    except (_Unknown, ValueError, TypeError, IndexError, KeyError):
        return None                  # an access not evaluated, or shapes this reading of the TTGIR got wrong
    return SectorTraffic(ls, ss, lb, sb, n, ll, sl, sr, lr)


def _sampled(ttgir: str, report: Any, grid: Sequence[int], samples: int, last: int = 1) -> tuple | None:
    """(launch dims, the main loop's index -- None without one --, the sampled program ids: `samples` spread
    evenly from the first CTA to the `last`-th from the end) of a launch; None when the grid is not known."""
    dims = launch_dims(ttgir, grid) if ttgir else None
    if dims is None:
        return None
    main = getattr(report, "main", None)
    target = next(i for i, lp in enumerate(report.loops) if lp is main) if main is not None else None
    end = max(0, dims["x"] * dims["y"] * dims["z"] - last)
    return dims, target, np.unique(np.linspace(0, end, max(1, min(samples, end + 1))).round().astype(np.int64))


def atomic_lines(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int],
                 float_args: Mapping[str, float] | None = None, samples: int = SAMPLES,
                 data: Mapping[str, np.ndarray] | None = None) -> dict[str, float] | None:
    """Per kernel argument the global atomics update: the line requests (each warp instruction's distinct
    128-byte lines) per CTA per main-loop iteration, the mean over sampled CTAs; a kernel without a main loop,
    its body outside every loop as one iteration. Loads are not collected (as store_lines): an atomic whose
    address comes from loaded ids is counted only when `data` gives them. None when an atomic's address
    cannot be evaluated; {} when the main loop has none."""
    got = _sampled(ttgir, report, grid, samples)
    if got is None:
        return None
    dims, target, pid = got
    try:
        sink: list = []
        if _walk(ttgir, int_args, float_args or {}, pid, dims, target, stores_only=True, data=data, atomics=True,
                 atomic_sink=sink) is None:
            return None
        return {r: _count([a for a in sink if a[0].root == r], len(pid))[3] for r in dict.fromkeys(a[0].root for a in sink)}
    except (_Unknown, ValueError, TypeError, IndexError, KeyError):
        return None


WRITE_GRANULE = 128  # bytes DRAM writes as one piece: the L2 line (see StoreLines) ...
WALKED_GRANULE = 64  # ... or half of one where the CTA's own next iterations write the rest (fitted, StoreLines)
NEAR = 32            # launch neighbours on each side a CTA's stores count as written beside its own, at once
FAR_SAMPLES = 4      # sampled CTAs whose distant neighbours are evaluated (when their pieces are not whole)


@dataclass(frozen=True)
class StoreLines:
    """How whole the WRITE_GRANULE-byte pieces of memory are that the main loop's stores write (store_lines),
    per CTA per iteration, the mean over the sampled CTAs. DRAM writes a piece whole: one the L2 lets go
    with part of it written costs the whole piece, and again when the rest arrives (rank.partial_store_bytes).
    The piece is fitted, not documented. Where CTAs far off in the launch write the rest, 16 / 32 / 64-byte
    stores cost about 8.7x / 2.3x / ~0.5x their bytes more (hashgrid_encode's LEVELS 1 / 2 / 4 with the level
    outermost, its 550 MB output, on an H200: reports/h200/rank_study_round28_h200.json): the 128-byte line,
    128 / p - 1 = 7 / 3 / 1. Where the CTA's own next iterations write it, 8 / 16 / 32-byte stores cost about
    7.5x / 2x / 0x more (maxpool_bwd_scatter's NHWC BLOCK_C 4 / 8 / 16 gather configs on an H100, reports/h200/
    rank_study_round21_h100.json; hashgrid_encode's level-innermost LEVELS 1 about 2-5x): half a line,
    64 / p - 1 = 7 / 3 / 1 (128-byte lines would read 15 / 7 / 3)."""

    asked: float         # distinct bytes written
    fill: float          # asked / (WRITE_GRANULE x the distinct pieces written): 1 when every piece is whole
    fill_near: float     # the share of those pieces' bytes the CTA and its launch neighbours within NEAR write
    reach: float         # the launch distance, as a share of the grid, at which the rest of those pieces is
                         # written (the farthest sampled distance that adds to them; 1.0: by no other CTA)
    walks: bool          # the next iteration writes into pieces this one wrote (the loop walks along the rows)


def store_lines(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int],
                float_args: Mapping[str, float] | None = None, samples: int = SAMPLES,
                granule: int = WRITE_GRANULE, data: Mapping[str, np.ndarray] | None = None) -> StoreLines | None:
    """The main loop's stores' piece fill (StoreLines): the first iteration of sampled CTAs; where their pieces
    are not whole, of their neighbours at launch distances 1, 2, 4, ... (and those times the grid's x and
    x * y extents and the divisors its program id is split by) on either side -- who writes the rest, and
    how far off -- and of the same CTAs' second iteration. A kernel without a main loop: its body outside
    every loop, as one iteration. Loads are not collected; their values are known only from `data` (as
    traffic), so a scatter through loaded ids is counted only with them.
    None when the loop stores nothing or a store cannot be evaluated."""
    G = granule
    got = _sampled(ttgir, report, grid, samples, last=2)   # the launch's last CTA may end its tensor mid-piece
    if got is None:
        return None
    dims, target, pid = got
    total = dims["x"] * dims["y"] * dims["z"]
    fa = float_args or {}
    try:
        divisors: set = set()
        acc = _walk(ttgir, int_args, fa, pid, dims, target, stores_only=True, divisors=divisors, data=data)
        if acc is None or not acc[1]:
            return None
        own = [_written(acc[1], c) for c in range(len(pid))]
        asked = float(np.mean([o.size for o in own]))      # a CTA's bytes, CTAs past the data (none) included
        fill = float(np.mean([o.size / (G * np.unique(o // G).size) for o in own if o.size] or [1.0]))
        if not asked:
            return None
        if fill >= 1.0:
            return StoreLines(asked, 1.0, 1.0, 0.0, False)
        far = pid[np.unique(np.linspace(0, len(pid) - 1, min(FAR_SAMPLES, len(pid))).round().astype(np.int64))]
        # launch distances: powers of two, and those times the grid's x and x * y extents and the divisors the
        # kernel splits its program id by (the CTA one row of tiles on)
        span = max(1, int(total - 1).bit_length())
        units = {1, dims["x"], dims["x"] * dims["y"]} | {d for d in divisors if d < total}
        steps = sorted({u << k for u in units for k in range(span if u == 1 else 4) if 0 < u << k < total}) or [1]
        around = np.concatenate([far] + [np.clip(far + sgn * d, 0, total - 1) for d in steps for sgn in (-1, 1)])
        got = _walk(ttgir, int_args, fa, around, dims, target, stores_only=True, data=data)
        nxt = _walk(ttgir, int_args, fa, far, dims, target, iteration=1, stores_only=True, data=data)
        m, near, reach, walks, storing = len(far), 0.0, 0.0, 0, 0
        for c in range(m):
            mine = _written(got[1], c)
            if not mine.size:                       # a CTA whose stores are all masked off (past the data)
                continue
            storing += 1
            lines = np.unique(mine // G)
            covered, farthest, near_c = mine, 0, 0.0
            for i, d in enumerate(steps):
                for j in (1, 2):
                    other = _written(got[1], m * (2 * i + j) + c)
                    more = np.union1d(covered, other[np.isin(other // G, lines)])
                    farthest, covered = (d if more.size > covered.size else farthest), more
                if d <= NEAR:
                    near_c = covered.size / (G * lines.size)
                if covered.size >= G * lines.size:
                    break
            near += near_c
            # the distances are sampled: the farthest one that adds to the lines stands for where their rest is
            # written (within 2x); none: no other CTA writes it
            reach += min(1.0, farthest / total) if farthest else 1.0
            if nxt is not None and nxt[1]:
                walks += np.intersect1d(lines, np.unique(_written(nxt[1], c) // G)).size > 0
    except (_Unknown, ValueError, TypeError, IndexError, KeyError):
        return None
    if not storing:                                 # no sampled neighbourhood stores: own fill, no partner seen
        return StoreLines(asked, fill, fill, 1.0, False)
    return StoreLines(asked, fill, min(1.0, near / storing), reach / storing, walks > storing / 2)


def _written(accesses: list, c: int) -> np.ndarray:
    """The distinct byte keys (argument << 48 | byte offset) CTA `c` of a walk writes with `accesses`."""
    roots = {r: i for i, r in enumerate(sorted({a[0].root for a in accesses}))}
    keys = []
    for p, mask, eb, _ in accesses:
        off, _ = _lanes(p, mask, c)
        keys.append(_byte_keys(roots[p.root], off, eb))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)


def _lanes(p: Any, mask: np.ndarray | None, c: int) -> tuple[np.ndarray, np.ndarray | None]:
    """CTA `c`'s byte offsets of an access to `p`, its masked-off lanes left out, and which lanes were kept
    (None: all)."""
    off = p.off[c if p.off.shape[0] > 1 else 0].ravel()
    if mask is None:
        return off, None
    keep = np.broadcast_to(mask[c if mask.shape[0] > 1 else 0], p.off.shape[1:]).ravel() != 0
    return off[keep], keep


def _byte_keys(root: int, off: np.ndarray, eb: int) -> np.ndarray:
    """A key (argument index << 48 | byte offset) for every byte of the `eb`-byte elements at `off`."""
    base = np.int64(root) << np.int64(48)
    return np.repeat(base + off, eb) + np.tile(np.arange(eb, dtype=np.int64), off.size)


def _count(accesses: list, n: int) -> tuple[float, float, float, float]:
    """(distinct sectors, distinct bytes asked, distinct lines, requests) per sampled CTA, the mean, over
    `accesses` ((pointer, mask or None, element bytes, instruction ids or None)); requests: each access's
    warp instructions' distinct lines, summed (its distinct lines without instruction ids)."""
    if not accesses:
        return 0.0, 0.0, 0.0, 0.0
    roots = {r: i for i, r in enumerate(dict.fromkeys(a[0].root for a in accesses))}
    sectors, asked, lines, requests = 0, 0, 0, 0
    for c in range(n):
        keys_s, keys_b = [], []
        for p, mask, eb, groups in accesses:
            off, keep = _lanes(p, mask, c)
            grp = groups.ravel() if groups is not None else np.zeros(p.off.shape[1:], np.int64).ravel()
            grp = grp if keep is None else grp[keep]
            keys_s.append((np.int64(roots[p.root]) << np.int64(48)) + off // SECTOR)
            keys_b.append(_byte_keys(roots[p.root], off, eb))
            requests += np.unique(np.stack([grp, off // LINE]), axis=1).shape[1] if off.size else 0
        uniq = np.unique(np.concatenate(keys_s))
        sectors += uniq.size
        lines += np.unique(uniq // (LINE // SECTOR)).size
        asked += np.unique(np.concatenate(keys_b)).size
    return sectors / n, asked / n, lines / n, requests / n


def instruction_ids(shape: Sequence[int], layout: tuple, elem: int) -> np.ndarray | None:
    """Per element of a tensor in a #ttg.blocked layout (sizePerThread, threadsPerWarp, warpsPerCTA,
    order), an id shared by exactly the elements one warp instruction moves: the same warp, the same
    register slot (a thread's run along order[0] split into 16-byte vectors). None when the layout's
    rank is not the tensor's."""
    spt, tpw, wpc, order = layout
    if not (len(spt) == len(tpw) == len(wpc) == len(order) == len(shape)) or not shape:
        return None
    idx = np.indices(tuple(shape), dtype=np.int64)
    warp, reg, w_mult, r_mult = np.zeros(tuple(shape), np.int64), np.zeros(tuple(shape), np.int64), 1, 1
    for k in order:                                    # warps numbered order[0] fastest
        tile = spt[k] * tpw[k] * wpc[k]
        warp += ((idx[k] % tile) // (spt[k] * tpw[k]) % wpc[k]) * w_mult
        w_mult *= wpc[k]
    for k in range(len(shape)):                        # a thread's registers: repetition x slot
        tile = spt[k] * tpw[k] * wpc[k]
        slot = idx[k] % spt[k]
        if k == order[0]:
            slot //= max(1, 16 // max(1, elem))
        reg += ((idx[k] // tile) * spt[k] + slot) * r_mult
        r_mult *= (-(-shape[k] // tile)) * spt[k]
    return warp * r_mult + reg


def _shape(rest: str) -> tuple[int, ...]:
    """The result's tensor shape: the last tensor type on the line (() for a scalar); _Unknown past
    MAX_ELEMENTS."""
    found = _SHAPE.findall(rest)
    shape = tuple(int(d) for d in found[-1].split("x") if d) if found else ()
    if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
        raise _Unknown(f"a tensor of {shape}")
    return shape


def _float_type(rest: str) -> Any:
    tail = rest.rsplit("->", 1)[-1].rsplit(" to ", 1)[-1]
    return np.float64 if "f64" in tail else np.float32


def _lead(v: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A per-CTA scalar (n,) or a value (n, ...) broadcast to (n, *shape)."""
    v = np.asarray(v)
    v = v.reshape(v.shape[:1] + (1,) * len(shape)) if v.ndim == 1 and shape else v
    return np.broadcast_to(v, v.shape[:1] + shape)


def _constant(rest: str) -> np.ndarray | None:
    m = re.match(r"\s*(?:dense<)?(true|false|-?[\d.]+(?:e[+-]?\d+)?|0x[0-9A-Fa-f]+)>?\s*(?::\s*(\S+))?", rest)
    if not m:
        return None
    text, shape = m.group(1), _shape(rest)
    if text in ("true", "false"):
        val: Any = text == "true"
    elif text.startswith("0x"):
        return None                                   # a float given by its bits (inf, nan)
    elif re.search(r":\s*(?:tensor<[^>]*x)?(f16|bf16|f32|f64)", rest):
        val = float(text)
    else:
        try:
            val = int(text)
        except ValueError:
            return None
    arr = np.asarray(val, dtype=_float_type(rest) if isinstance(val, float) else np.int64)
    return np.broadcast_to(arr, (1,) + shape)


def _walk(ttgir: str, int_args: Mapping[str, int], float_args: Mapping[str, float], pid: np.ndarray,
          dims: Mapping[str, int], target: int | None, iteration: int = 0,
          stores_only: bool = False, divisors: set | None = None,
          data: Mapping[str, np.ndarray] | None = None, atomics: bool = False,
          atomic_sink: list | None = None) -> tuple[list, list] | None:
    """Evaluate the kernel for the CTAs `pid` to the end of the main loop's first iteration; the body's
    (loads, stores), each (pointer, mask or None, element bytes). None when the main loop is never reached.
    `iteration` k > 0: the main loop's induction variable at lower bound + k x step (values it carries
    from one iteration to the next keep their initial ones); `stores_only`: loads are not collected (their
    pointers may come from loaded data); `divisors`: collects the integer divisors (> 1) the kernel divides
    or takes remainders by (a 1-D grid's program id split into tile coordinates); `data`: the tensors whose
    values are known (kernel argument -> flat array in memory order): a load from one has its values, so a
    gather through them has addresses; `atomics`: global atomics count with the stores (each warp
    instruction's lines a request: they cost about what stores to the same lines cost, reports/GPU_NOTES.md
    38), and are also appended to `atomic_sink` when given. `target` None: the kernel has no main loop, and its body outside
    every loop counts as the one iteration."""
    if target is None and iteration:
        return None
    ids = {k: v for k, v in program_ids(pid, dims).items()}
    env: dict[str, Any] = {}
    loads: list = []
    stores: list = []
    fors, depth, depth_main, in_func = -1, 0, None, False
    inner: list[int] = []                           # depths of loops opened inside the main loop
    layouts: dict[str, tuple] = {}
    for ln in ttgir.splitlines():
        if not in_func:
            b = _BLOCKED.match(ln)
            if b:
                layouts[b.group(1)] = tuple(tuple(int(v) for v in b.group(i).split(",")) for i in range(2, 6))
            if "tt.func public" in ln:
                in_func, depth = True, 1
                depth_main = 0 if target is None else None
                for name, pty, _ in _ARG.findall(ln):
                    key = name.lstrip("%")
                    if pty.startswith("!tt.ptr"):
                        env[name] = _P(key, np.zeros((1,), np.int64))
                    elif key in int_args:
                        env[name] = np.asarray([int(int_args[key])], np.int64)
                    elif key in float_args:
                        env[name] = np.asarray([float(float_args[key])], np.float64 if pty == "f64" else np.float32)
            continue
        m = _OP.match(ln)
        res, op, rest = (m.group(1), m.group(2), ln[m.end():]) if m else (None, "", "")
        if op == "scf.for":
            fors += 1
            f = _FOR.search(ln)
            if f and f.group(2) in env and not isinstance(env[f.group(2)], _P):
                env[f.group(1)] = env[f.group(2)]   # the first iteration
                if fors == target and iteration:
                    if f.group(4) not in env or isinstance(env[f.group(4)], _P):
                        raise _Unknown("the main loop's step")
                    env[f.group(1)] = env[f.group(2)] + iteration * np.asarray(env[f.group(4)])
                    ub = env.get(f.group(3))
                    if ub is None or isinstance(ub, _P) or np.any(env[f.group(1)] >= ub):
                        return None                   # a CTA whose loop has no such iteration
            for alias, init in _iter_args(ln):
                if init in env:
                    env[alias] = env[init]
            if fors == target:
                depth_main = depth
            elif depth_main is not None:
                inner.append(depth)
        elif depth_main is not None and (op in _GLOBAL_LOADS or op == "tt.store" or op in _OPAQUE_ACCESS
                                         or (atomics and op in ATOMIC_OPS)) \
                and not (stores_only and op != "tt.store" and not (atomics and op in ATOMIC_OPS)):
            if inner or op in _OPAQUE_ACCESS:
                raise _Unknown(op)
            writes = op == "tt.store" or op in ATOMIC_OPS
            access = _access(op, rest, env, layouts)
            (stores if writes else loads).append(access)
            if atomic_sink is not None and op in ATOMIC_OPS:
                atomic_sink.append(access)
        if res is not None and op not in ("scf.for",):
            try:
                v = _loaded(rest, env, data) if op in _GLOBAL_LOADS else \
                    None if op == _ASYNC else _evaluate(op, rest, env, ids, dims)
            except (ValueError, TypeError, IndexError):
                v = None
            if v is not None:
                env[res] = v
            else:
                env.pop(res, None)
            if divisors is not None and op in _DIVIDES:
                by = env.get((_operands(rest) or ["", ""])[-1])
                if by is not None and not isinstance(by, _P) and np.asarray(by).size == 1 and int(np.asarray(by).ravel()[0]) > 1:
                    divisors.add(int(np.asarray(by).ravel()[0]))
        bare = _STRINGS.sub('""', ln)
        depth += bare.count("{") - bare.count("}")
        while inner and depth <= inner[-1]:
            inner.pop()
        if depth_main is not None and depth <= depth_main:
            return loads, stores                      # the main loop closed
        if depth <= 0:
            break
    return None


def _loaded(rest: str, env: Mapping[str, Any], data: Mapping[str, np.ndarray] | None) -> Any:
    """A tt.load's values when its pointer is an offset into a tensor of `data` (element = byte offset //
    the pointer's element bytes): masked-off lanes take the load's `other` (0 without one); None when the
    pointer or data is unknown, an unmasked lane falls outside the tensor, or an integer load reads float
    data."""
    ops = _operands(rest)
    ptr = env.get(ops[0]) if ops else None
    if not data or not isinstance(ptr, _P) or ptr.root not in data:
        return None
    t = _RESULT_PTR.search(rest.split(":", 1)[1] if ":" in rest else "")
    eb = elem_bytes(t.group(1)) if t else 0
    values = data[ptr.root]
    if not eb or not values.size:
        return None
    is_float = t.group(1).startswith(("f", "bf"))     # f16 / bf16 / f32 / f64 / f8E4M3FN ...; else i1 ... i64
    if not is_float and values.dtype.kind == "f":
        return None
    idx = ptr.off // eb
    keep = np.ones(idx.shape, bool)
    if len(ops) > 1:                                  # masked: its lanes must be known
        m = env.get(ops[1])
        if m is None or isinstance(m, _P):
            return None
        keep = np.broadcast_to(np.asarray(m) != 0, np.broadcast_shapes(np.shape(m), idx.shape))
        idx = np.broadcast_to(idx, keep.shape)
    if np.any(keep & ((idx < 0) | (idx >= values.size))):
        return None
    got = values[np.where(keep, idx, 0)]
    other = env.get(ops[2]) if len(ops) > 2 else None
    fill = np.asarray(0 if other is None or isinstance(other, _P) else other)
    out = np.where(keep, got, fill)
    return out.astype(np.float32 if is_float else np.int64)


def _access(op: str, rest: str, env: Mapping[str, Any], layouts: Mapping[str, tuple]) -> tuple:
    """(pointer, mask or None, element bytes, instruction ids or None: from `layouts`, the #blocked
    layouts by name) of a global load / store; _Unknown when its pointer is not known."""
    ops = _operands(rest)
    ptr = env.get(ops[0]) if ops else None
    t = _RESULT_PTR.search(rest.split(":", 1)[1] if ":" in rest else "")
    if not isinstance(ptr, _P) or t is None or not elem_bytes(t.group(1)):
        raise _Unknown(op)
    if op in ("tt.store", "tt.atomic_rmw"):           # (pointer, value, mask); atomic_cas has no mask
        mask_name = ops[2] if len(ops) > 2 else None
    elif op == "tt.atomic_cas":
        mask_name = None
    else:
        mask_name = ops[1] if len(ops) > 1 else None
    mask = None
    if mask_name is not None:
        mv = env.get(mask_name)
        mask = None if mv is None or isinstance(mv, _P) else np.asarray(mv)
    lay = _PTR_LAYOUT.search(rest)
    groups = instruction_ids(ptr.off.shape[1:], layouts[lay.group(1)], elem_bytes(t.group(1))) \
        if lay and lay.group(1) in layouts and ptr.off.ndim > 1 else None
    return ptr, mask, elem_bytes(t.group(1)), groups


def _evaluate(op: str, rest: str, env: Mapping[str, Any], ids: Mapping[str, np.ndarray],
              dims: Mapping[str, int]) -> Any:
    """One op's result, (n or 1, *shape); None when unknown (loaded data, an op not modelled)."""
    shape = _shape(rest)
    if op == "arith.constant":
        return _constant(rest)
    if op in ("tt.get_program_id", "tt.get_num_programs"):
        m = re.match(r"\s*(x|y|z)\b", rest)
        if not m:
            return None
        return ids[m.group(1)] if op == "tt.get_program_id" else np.asarray([dims[m.group(1)]], np.int64)
    if op == "tt.make_range":
        lo, hi = (re.search(rf"{k} = (-?\d+)", rest) for k in ("start", "end"))
        return np.arange(int(lo.group(1)), int(hi.group(1)), dtype=np.int64)[None] if lo and hi else None
    ops = _operands(rest)
    vals = [env.get(o) for o in ops]
    if not ops or any(v is None for v in vals):
        return None
    if op in ("tt.splat", "tt.broadcast"):
        v = vals[0]
        return _P(v.root, _lead(v.off, shape)) if isinstance(v, _P) else _lead(v, shape)
    if op == "tt.expand_dims":
        m = re.search(r"axis = (\d+)", rest)
        v = vals[0]
        f = lambda a: np.expand_dims(a, int(m.group(1)) + 1)
        return None if not m else _P(v.root, f(v.off)) if isinstance(v, _P) else f(v)
    if op in ("tt.reshape", "tt.trans"):
        v = vals[0]
        if op == "tt.trans":
            m = re.search(r"order = array<i32:([\d,\s]+)>", rest)
            if not m:
                return None
            perm = (0,) + tuple(int(o) + 1 for o in m.group(1).split(","))
            f = lambda a: np.transpose(a, perm)
        else:
            f = lambda a: np.reshape(a, a.shape[:1] + shape)
        return _P(v.root, f(v.off)) if isinstance(v, _P) else f(v)
    if op in _IDENTITY:
        return vals[0]
    if op == "tt.addptr":
        p, off = vals[0], vals[1]
        t = _RESULT_PTR.search(rest)
        if not isinstance(p, _P) or isinstance(off, _P) or not t or not elem_bytes(t.group(1)):
            return None
        return _P(p.root, p.off + np.asarray(off).astype(np.int64) * elem_bytes(t.group(1)))
    if any(isinstance(v, _P) for v in vals):
        return None
    if op in _BINARY and len(vals) == 2:
        return _BINARY[op](*(np.asarray(v).astype(np.int64) for v in vals))
    if op in _FBINARY and len(vals) == 2:
        return _FBINARY[op](vals[0], vals[1])
    if op in _FUNARY:
        return _FUNARY[op](vals[0])
    if op in ("arith.cmpi", "arith.cmpf"):
        m = re.match(r"\s*(\w+),", rest)
        fn = (_CMP if op == "arith.cmpi" else _FCMP).get(m.group(1)) if m else None
        return fn(*vals) if fn and len(vals) == 2 else None
    if op == "arith.select" and len(vals) == 3:
        return np.where(np.asarray(vals[0]) != 0, vals[1], vals[2])
    if op in ("arith.sitofp", "arith.uitofp", "arith.extf", "arith.truncf"):
        return np.asarray(vals[0]).astype(_float_type(rest))
    if op in ("arith.fptosi", "arith.fptoui"):
        return np.trunc(vals[0]).astype(np.int64)
    return None
