"""Which operand strips each CTA streams, in launch order: the input to rank's L2-reuse term.

A tiled kernel's CTAs read overlapping data -- a GEMM's CTAs in one tile row all stream the same
A rows over K -- and whether the second reader finds them in L2 depends on the *order* the
program ids map to tiles (GROUP_M swizzles) and on how many CTAs run at once. No hook states that
mapping; the TTGIR does: before and in the main loop every load's pointer is scalar arithmetic on
``tt.get_program_id``, the launch's integer arguments and constants.

    s = strips(ttgir, pipeline_report, {"M": 4096, "N": 28672, ...}, grid=(14336, 1, 1), iterations=64)
    s.revisits(wave_ctas=528)      # per strip: first reads, and the bytes streamed before each re-read

The TTGIR is evaluated once for all program ids at once (numpy vectors), each tensor standing for
its first element (a make_range for its start, a splat for its scalar): a load's pointer at the
main loop's first iteration becomes (kernel argument, byte offset of the first element of the
tile the body loads -- in a pipelined loop that is the tile `ahead` iterations on, the same shift
for every CTA) per program id: a key two CTAs share exactly when they stream the same strip (the
same rows of A over the whole K loop). A strip is the load's bytes per iteration x the loop's
iterations. Loads whose pointer comes from loaded data (a gather through an index tensor), or
from ops this evaluator does not know, are left out (read once, as bytes_moved says).

Strips that start at different offsets can still share data: a sliding-window attention's neighbouring
query blocks walk almost the same key rows. Each load's advance -- the bytes its pointer moves an
iteration, from the main loop's scf.yield (a carried pointer) or from the walk taken again with the
loop index one step on (a pointer recomputed from it) -- cuts such strips into their iterations' tiles,
keyed by each tile's first element, so the replay sees the shared tiles (Strip.tiles). Only where two
strips share a tile and a tile is no larger than the advance; elsewhere a strip stays whole, as before.

A persistent kernel's main loop sits in a tile loop (``for tile in range(pid, num_tiles, programs)``):
each CTA's j-th trip of it is one virtual CTA, the tile loop's induction variable evaluated as
lb + j x step per program id (trips past its upper bound dropped), and all CTAs' j-th trips make
wave j (the persistent CTAs run together and walk their tiles at about the same pace). A strip is
then the load's bytes x the main loop's own trips (its bounds, evaluated). The tile loop's carried
values (iter_args) are unknown past its first trip, so loads that depend on them give no strip; a
main loop nested deeper gives no strips at all. A tile loop Triton flattens into the K loop
(``tl.range(..., flatten=True)``, as in Triton's tutorial 09 persistent matmul) is one loop whose tile
index is a carried value: no strips either (that kernel with flatten=False: GROUP_SIZE_M=1 estimated
42 % slower than 8 at M, N, K = 4096, 28672, 4096 on sm_90, 6.2 GB re-read against 0.9 GB; not measured).

Contract: pure (string processing and numpy), no torch, no GPU. Checked on triton 3.6 and 3.9
TTGIR, whose arith / tt ops and func signatures (``%M: i32``, names from the Python source) read
alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .pipeline import _BYTES, _OP, _STRINGS, _TENSOR_PTR, _dims

_SSA = r"%[\w.#-]+"
_ARG = re.compile(rf"({_SSA}):\s*(!tt\.ptr<(\w+)>|i\d+)")
_PTR = re.compile(r"!tt\.ptr<(\w+)>")
_FOR = re.compile(rf"scf\.for\s+({_SSA})\s*=\s*({_SSA})\s+to\s+({_SSA})\s+step\s+({_SSA})")
LOAD_OPS = ("tt.load", "ttg.async_copy_global_to_local")
_SAME = ("tt.splat", "tt.broadcast", "tt.expand_dims", "ttg.convert_layout", "tt.reshape", "tt.trans",
         "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")
_CMP = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
        "sge": np.greater_equal, "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}


# Most (entry, tile) pairs a strip is cut into for the replay (Strip.tiles); past it the strip is one piece.
TILE_LIMIT = 4_000_000


def elem_bytes(dtype: str) -> int:
    """Bytes of a TTGIR element type (f8E4M3FN and the other 8-bit floats: 1)."""
    return 1 if dtype.startswith("f8") else _BYTES.get(dtype, 0)


def _div(a, b):
    """arith.divsi: truncation toward zero (C), not numpy's floor."""
    q = np.abs(a) // np.maximum(np.abs(b), 1)
    return np.where((np.asarray(a) < 0) ^ (np.asarray(b) < 0), -q, q)


_BINARY = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.divsi": _div, "arith.divui": lambda a, b: a // np.maximum(b, 1),
    "arith.remsi": lambda a, b: a - _div(a, b) * b, "arith.remui": lambda a, b: a % np.maximum(b, 1),
    "arith.ceildivsi": lambda a, b: -((-a) // np.maximum(b, 1)), "arith.floordivsi": lambda a, b: a // np.maximum(b, 1),
    "arith.minsi": np.minimum, "arith.maxsi": np.maximum, "arith.minui": np.minimum, "arith.maxui": np.maximum,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.shli": np.left_shift, "arith.shrsi": np.right_shift, "arith.shrui": np.right_shift,
}


@dataclass(frozen=True)
class _Ptr:
    root: str            # the kernel argument
    offset: Any          # byte offset of the first element: int or an int64 vector over program ids


@dataclass(frozen=True)
class Strip:
    """One main-loop load's strip: which one each program id streams (`keys`, equal ids = the same
    data) and its bytes over the whole loop (bytes per iteration x iterations). With `advance` (the
    bytes its pointer moves each iteration, the same for every CTA) the strip is `trips` tiles whose
    first elements sit at key + i x advance: strips that start at different keys but share tiles (a
    sliding window's neighbouring query blocks) share those tiles' reads (`tiles`). The tile's first
    element stands for it: tiles of one strip must not overlap one another (checked there)."""

    root: str
    keys: np.ndarray     # int64, one per program id (launch order)
    nbytes: float
    advance: int = 0     # bytes the load's pointer moves an iteration (0: unknown -- the strip is one piece)
    trips: int = 1       # main-loop iterations the strip spans (its tiles, when `advance` is known)

    def tiles(self, limit: int = TILE_LIMIT) -> tuple[np.ndarray, np.ndarray, float]:
        """(tile keys, the entry each belongs to, bytes a tile): the strip cut into its `trips` tiles
        when `advance` is known, a tile's bytes are no more than it (an iteration's tile cannot overlap
        the next one's: a window of key rows -- not a window sum's run of elements sliding one chunk an
        iteration, whose tiles' keys would each stand for bytes mostly shared), some two strips share a
        tile and keys x trips stays under `limit`; else the strip whole (one piece per entry). Strips
        that never share a tile replay exactly alike either way."""
        n = len(self.keys)
        if (self.advance and self.trips > 1 and n * self.trips <= limit and self.nbytes / self.trips <= self.advance
                and self._overlap()):
            step = np.arange(self.trips, dtype=np.int64) * self.advance
            return ((self.keys[:, None] + step[None, :]).ravel(), np.repeat(np.arange(n), self.trips),
                    self.nbytes / self.trips)
        return self.keys, np.arange(n), self.nbytes

    def _overlap(self) -> bool:
        """Whether two different strips share a tile: keys in one residue class of `advance` closer
        than the strip's span (advance x trips). Without it the cut changes nothing, so it is skipped."""
        u = np.unique(self.keys)
        if len(u) < 2:
            return False
        r = u % self.advance
        o = np.lexsort((u, r))
        u, r = u[o], r[o]
        return bool(np.any((r[1:] == r[:-1]) & (np.diff(u) < self.advance * self.trips)))


@dataclass(frozen=True)
class Revisits:
    """Per strip: how many distinct strips there are (each read from DRAM at least once) and, for
    every later wave that reads one again, the bytes all CTAs streamed since its previous read."""

    nbytes: tuple[float, ...]              # per strip kind: bytes of one piece (a tile, or the whole strip)
    distinct: tuple[int, ...]              # distinct pieces of that kind over the launch
    streamed: tuple[np.ndarray, ...]       # per kind: bytes streamed between a read and its re-read


@dataclass(frozen=True)
class Strips:
    """Every strip kind's keys over the launch's (virtual) CTAs in launch order: `grid` CTAs, or, for
    a persistent kernel, its CTAs' tile-loop trips (`trip`: which trip each entry is, `pid`: whose)."""

    strips: tuple[Strip, ...]
    grid: int
    trip: np.ndarray | None = None     # persistent: the tile-loop trip of each entry (None: one per CTA)
    pid: np.ndarray | None = None      # persistent: the program id of each entry

    def waves(self, wave_ctas: int) -> np.ndarray:
        """The wave of each entry: program id // wave_ctas. A persistent kernel's CTAs of one wave walk
        their trips together, so trip j of program id p is step (p // wave_ctas) x trips + j."""
        wave_ctas = max(1, int(wave_ctas))
        if self.trip is None:
            return np.arange(self.grid, dtype=np.int64) // wave_ctas
        trips = int(self.trip.max()) + 1 if len(self.trip) else 1
        return (self.pid // wave_ctas) * trips + self.trip

    def distinct_bytes(self) -> dict[str, float]:
        """Per kernel argument: the bytes of its distinct strips over the launch (what it brings from
        DRAM at least once)."""
        out: dict[str, float] = {}
        for s in self.strips:
            keys, _, nbytes = s.tiles()
            out[s.root] = out.get(s.root, 0.0) + len(np.unique(keys)) * nbytes
        return out

    def revisits(self, wave_ctas: int) -> Revisits:
        """The launch replayed in waves of `wave_ctas` CTAs in program-id order (see `waves`): a strip
        read by several CTAs of one wave is one read (they stream it together through L2); one read
        again in a later wave is a revisit, after the bytes of distinct strips the waves in between
        (its own included) streamed -- rank decides how much of that misses L2."""
        waves = self.waves(wave_ctas)
        nw = int(waves.max()) + 1 if len(waves) else 1
        footprint = np.zeros(nw)
        pairs, sizes = [], []
        for s in self.strips:
            keys, entry, nbytes = s.tiles()
            _, kid = np.unique(keys, return_inverse=True)
            up = np.unique(kid.astype(np.int64) * nw + waves[entry])
            k, w = up // nw, up % nw
            footprint += nbytes * np.bincount(w, minlength=nw)
            pairs.append((k, w))
            sizes.append(nbytes)
        cum = np.concatenate([[0.0], np.cumsum(footprint)])
        streamed, distinct = [], []
        for k, w in pairs:
            again = np.flatnonzero(k[1:] == k[:-1]) + 1        # sorted by strip (tile), then wave
            streamed.append(cum[w[again]] - cum[w[again - 1]])
            distinct.append(int(len(k) - len(again)))
        return Revisits(tuple(sizes), tuple(distinct), tuple(streamed))


def _operands(rest: str) -> list[str]:
    """The SSA operands of an op (before its ':' type list and attribute dictionary)."""
    head = re.split(r"\s:\s|\{", rest, maxsplit=1)[0]
    return re.findall(_SSA, head)


def launch_dims(ttgir: str, grid: Sequence[int]) -> dict[str, int] | None:
    """The grid as {"x", "y", "z"} sizes; None when the kernel reads a program-id axis `grid` does not
    state (a grid known only as its CTA count, for a kernel that reads program_id(1))."""
    used = set(re.findall(r"tt\.get_program_id (x|y|z)\b", ttgir)) | set(re.findall(r"tt\.get_num_programs (x|y|z)\b", ttgir))
    if len(grid) < 1 + max(("x", "y", "z").index(a) for a in used | {"x"}):
        return None
    gx, gy, gz = (list(grid) + [1, 1])[:3]
    return {"x": gx, "y": gy, "z": gz}


def program_ids(pid: np.ndarray, dims: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Each axis's program id of the linear program ids `pid` (x fastest)."""
    gx, gy = dims["x"], dims["y"]
    return {"x": pid % gx, "y": (pid // gx) % gy, "z": pid // (gx * gy)}


def kernel_args(ln: str, int_args: Mapping[str, int]) -> dict[str, Any]:
    """The `tt.func public` line's arguments as values: each pointer a _Ptr at offset 0 of itself, each
    integer named in `int_args` its value (the others unknown, left out)."""
    env: dict[str, Any] = {}
    for name, _, pty in _ARG.findall(ln):
        if pty:
            env[name] = _Ptr(name.lstrip("%"), 0)
        elif name.lstrip("%") in int_args:
            env[name] = int(int_args[name.lstrip("%")])
    return env


def strips(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int], iterations: int,
           data: Mapping[str, np.ndarray] | None = None, live: Sequence[bool] | None = None) -> Strips | None:
    """The main loop's strips per program id (see the module doc); `grid` is the launch grid as
    known, x first: (total,) when only the CTA count is (a kernel reading program_id(1) then gives
    None). `data`: index tensors whose values are known (kernel argument -> flat int64 array): a
    scalar loaded from one at a program-id offset (a MoE block's expert id) is that value, so the
    pointers it feeds have strips. `live`: per program id (launch order), False for a CTA that
    returns at once -- it reads nothing and takes no place in a wave. None also when the TTGIR has no
    main loop, the main loop sits deeper than one tile loop, the tile loop's bounds cannot be
    evaluated, or no load's pointer could be evaluated."""
    setup = _main_walk_setup(ttgir, report, grid)
    if setup is None:
        return None
    target, outer, dims, pid = setup
    total = len(pid)
    if outer < 0:
        walk = _advance(_walk(ttgir, int_args, pid, dims, target, data=data),
                        lambda: _walk(ttgir, int_args, pid, dims, target, data=data, shift=1))
        if walk is None:
            return None
        if live is not None and len(live) == total and not all(live):
            keep = np.asarray(live, dtype=bool)   # the live CTAs, renumbered: the waves they fill
            return _strips(walk[0], keep, iterations, total, np.zeros(total, np.int64), np.cumsum(keep) - 1)
        return _strips(walk[0], np.ones(total, bool), iterations, total, None, None)
    first = _walk(ttgir, int_args, pid, dims, target, outer, data=data)   # the tile loop's bounds per program id
    if first is None or first[1] is None:
        return None
    lb, ub, step = (np.broadcast_to(np.asarray(v, dtype=np.int64), (total,)) for v in first[1])
    if np.any(step <= 0):
        return None
    trips = int(np.max(np.maximum(0, -(-(ub - lb) // step)))) if total else 0
    if trips <= 0:
        return None
    trip = np.repeat(np.arange(trips, dtype=np.int64), total)     # trip-major: wave j holds every CTA's trip j
    vpid = np.tile(pid, trips)
    walk = _advance(_walk(ttgir, int_args, vpid, dims, target, outer, trip, data=data),
                    lambda: _walk(ttgir, int_args, vpid, dims, target, outer, trip, data=data, shift=1))
    if walk is None:
        return None
    loads, (lb, ub, step), inner, _ = walk
    valid = np.broadcast_to(np.asarray(lb + trip * step < ub), vpid.shape)
    per_trip = inner if inner else max(1, iterations // max(1, trips))
    return _strips(loads, valid, per_trip, total, trip, vpid)


def _walk(ttgir: str, int_args: Mapping[str, int], pid: np.ndarray, dims: Mapping[str, int], target: int,
          outer: int = -1, trip: np.ndarray | None = None, data: Mapping[str, np.ndarray] | None = None,
          shift: int = 0, through: bool = False) -> tuple[list, Any, int, list] | None:
    """Evaluate the kernel for the program ids `pid` (virtual CTAs) down to the main loop (loop index
    `target`). With a tile loop (`outer`), its induction variable is lb + trip x step; without
    `trip`, the walk stops at the tile loop and returns its (lb, ub, step). Returns (main-loop loads
    as (pointer, bytes per iteration), the tile loop's (lb, ub, step) or None, the main loop's trips
    when its bounds evaluate to one number, else 0, (loop index, mean trips or None) of every loop met
    on the way and inside the main loop); None when the main loop is never reached. A load's entry is
    (pointer, bytes an iteration, advance): the bytes its kernel argument's pointers carried by the
    main loop move each iteration (its scf.yield against its iter_args), 0 when unknown or not one
    step for every program id. `shift`: the main loop's induction variable taken `shift` steps on (a
    pointer recomputed from it each iteration then moves as it does: `_advance`). `through`: go on past the
    main loop to the kernel's end, so that the loops after it are met too (their trips only)."""
    ids = program_ids(pid, dims)
    env: dict[str, Any] = {}
    loads: list[tuple[_Ptr, int]] = []
    carried: list[tuple[str, str]] = []           # the main loop's (carried value, initial value)
    advances: dict[str, set] = {}                 # per kernel argument: its carried pointers' advances
    bounds, inner, nest = None, 0, []
    fors, depth, depth_main, in_func, after = -1, 0, None, False, False
    for ln in ttgir.splitlines():
        if not in_func:
            if "tt.func public" in ln:
                in_func, depth = True, 1
                env.update(kernel_args(ln, int_args))
            continue
        m = _OP.match(ln)
        res, op, rest = (m.group(1), m.group(2), ln[m.end():]) if m else (None, "", "")
        if op == "scf.for":
            fors += 1
            f = _FOR.search(ln)
            lb, ub, step = (env.get(f.group(i)) for i in (2, 3, 4)) if f else (None, None, None)
            if fors == outer:
                if f is None or any(v is None or isinstance(v, _Ptr) for v in (lb, ub, step)):
                    return None
                bounds = (lb, ub, step)
                if trip is None:
                    return loads, bounds, 0, []
                env[f.group(1)] = np.asarray(lb, dtype=np.int64) + trip * np.asarray(step, dtype=np.int64)
            else:
                if f:
                    env[f.group(1)] = lb
                    if fors == target and shift and not any(isinstance(v, _Ptr) or v is None for v in (lb, step)):
                        env[f.group(1)] = np.asarray(lb, dtype=np.int64) + shift * np.asarray(step, dtype=np.int64)
                for alias, init in _iter_args(ln):      # a loop's carried values start as their inits
                    if init in env:
                        env[alias] = env[init]
            nest.append((fors, _mean_trips(lb, ub, step)))
            if fors == target:
                depth_main = depth
                n = _trips(lb, ub, step)
                inner = n if n is not None else 0
                carried = _iter_args(ln)
        elif op == "scf.yield" and depth_main is not None and not after and depth == depth_main + 1:
            # the main loop's next carried values: a pointer's advance an iteration, per kernel argument
            for (alias, _), nxt in zip(carried, _operands(rest)):
                a, b = env.get(alias), env.get(nxt)
                if isinstance(a, _Ptr) and isinstance(b, _Ptr) and a.root == b.root:
                    advances.setdefault(a.root, set()).add(_step(a, b))
        elif op in LOAD_OPS and depth_main is not None and not after:   # in the main loop's body
            ops = _operands(rest)
            ptr = env.get(ops[0]) if ops else None
            t = _TENSOR_PTR.search(rest)
            if isinstance(ptr, _Ptr) and t:
                n = int(np.prod(_dims(t.group(1))))
                loads.append((ptr, n * elem_bytes(t.group(2))))
        elif res is not None:
            v = _loaded(rest, env, data) if op == "tt.load" else _evaluate(op, rest, env, ids, dims)
            if v is not None:
                env[res] = v
            else:
                env.pop(res, None)
        bare = _STRINGS.sub('""', ln)
        depth += bare.count("{") - bare.count("}")
        if depth_main is not None and not after and depth <= depth_main:
            if not through:
                break                                     # the main loop closed
            after = True
        if depth <= 0:
            break
    if depth_main is None:
        return None
    # a load's tiles advance as its argument's carried pointers do, when they agree on one positive step
    step = {root: next(iter(a)) for root, a in advances.items() if len(a) == 1 and None not in a}
    return [(p, n, max(0, step.get(p.root) or 0)) for p, n in loads], bounds, inner, nest


def _advance(walk: tuple | None, on: Any) -> tuple | None:
    """`walk` with each load's advance filled in, where its scf.yield gave none, from `on()` (the same
    walk with the main loop one step on, taken only then): a pointer recomputed from the induction
    variable (p = base + i x stride) moves by the difference, when that is one positive number for
    every program id."""
    if walk is None or all(a for _, _, a in walk[0]):
        return walk
    on = on()
    if on is None or len(walk[0]) != len(on[0]):
        return walk
    loads = []
    for (p, n, a), (q, _, _) in zip(walk[0], on[0]):
        if not a and p.root == q.root:
            a = max(0, _step(p, q) or 0)
        loads.append((p, n, a))
    return (loads, *walk[1:])


def _step(a: _Ptr, b: _Ptr) -> int | None:
    """b's offset less a's when it is one number for every program id, else None."""
    d = np.unique(np.asarray(b.offset, dtype=np.int64) - np.asarray(a.offset, dtype=np.int64))
    return int(d[0]) if len(d) == 1 else None


def _main_walk_setup(ttgir: str, report: Any, grid: Sequence[int]) -> tuple[int, int, dict, np.ndarray] | None:
    """(main loop's index, the loop around it or -1, launch dims, every program id) for a walk to the main
    loop; None without a main loop, with one deeper than one loop, or a grid that cannot be placed."""
    main = getattr(report, "main", None)
    if main is None or not ttgir:
        return None
    if main.parent >= 0 and report.loops[main.parent].parent >= 0:
        return None
    dims = launch_dims(ttgir, grid)
    if dims is None:
        return None                         # the kernel reads an axis the grid does not state
    target = next(i for i, lp in enumerate(report.loops) if lp is main)
    return target, main.parent, dims, np.arange(dims["x"] * dims["y"] * dims["z"], dtype=np.int64)


def loop_trips(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int],
               through: bool = False) -> dict[int, float | None] | None:
    """The trips of every loop the walk to the main loop meets -- the loop around it, the main loop, the
    loops inside it, `through`: the loops after it too -- by loop index (PipelineReport.loops), at the
    main loop's first iteration (the loop around it at its first trip), averaged over the CTAs; an entry
    is None when its bounds cannot be evaluated. None when the walk cannot reach the main loop (see
    strips)."""
    setup = _main_walk_setup(ttgir, report, grid)
    if setup is None:
        return None
    target, _, dims, pid = setup
    walk = _walk(ttgir, int_args, pid, dims, target, through=through)
    return None if walk is None else dict(walk[3])


def nested_trips(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int]) -> tuple[float | None, ...] | None:
    """The trips of each loop directly inside the main loop (TTGIR order; loop_trips): a top-k's
    ``for j in range(0, K)`` inside its chunk loop runs K trips per chunk."""
    trips = loop_trips(ttgir, report, int_args, grid)
    return None if trips is None else inside_main(report, trips)


def inside_main(report: Any, trips: Mapping[int, float | None]) -> tuple[float | None, ...]:
    """Of loop_trips' entries, those of the loops directly inside the main loop, in TTGIR order."""
    return tuple(t for i, t in trips.items() if report.loops[i].parent >= 0
                 and report.loops[report.loops[i].parent] is report.main)


def enclosing_trips(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int]) -> float | None:
    """The trips of the loop the main loop sits in (a per-segment loop around a loop over the segment's
    rows; loop_trips); None when it sits in none or the bounds cannot be evaluated."""
    trips = loop_trips(ttgir, report, int_args, grid)
    main = getattr(report, "main", None)
    return None if trips is None or main is None or main.parent < 0 else trips.get(main.parent)


def _mean_trips(lb: Any, ub: Any, step: Any) -> float | None:
    """A loop's trips averaged over the CTAs (None when a bound is unknown or the step is not positive)."""
    if any(v is None or isinstance(v, _Ptr) for v in (lb, ub, step)) or np.any(np.asarray(step) <= 0):
        return None
    return float(np.mean(np.maximum(0, -(-(np.asarray(ub, dtype=np.int64) - lb) // np.asarray(step, dtype=np.int64)))))


def _loaded(rest: str, env: Mapping[str, Any], data: Mapping[str, np.ndarray] | None) -> Any:
    """A scalar tt.load's value per program id when its pointer is an offset into an index tensor of
    `data` (every offset inside it); None otherwise (a tensor load, unknown data, out of range)."""
    if not data:
        return None
    ops = _operands(rest)
    ptr = env.get(ops[0]) if ops else None
    t = _PTR.search(rest.split(":", 1)[-1]) if ":" in rest else None
    if not isinstance(ptr, _Ptr) or ptr.root not in data or t is None or "tensor<" in rest.split(":", 1)[-1]:
        return None
    eb = elem_bytes(t.group(1))
    values = data[ptr.root]
    if not eb:
        return None
    idx = np.asarray(ptr.offset, dtype=np.int64) // eb
    if idx.size == 0 or np.any(idx < 0) or np.any(idx >= len(values)):
        return None
    return values[idx]


def _trips(lb: Any, ub: Any, step: Any) -> int | None:
    """A loop's trip count when its bounds give one number for every CTA (else None)."""
    if any(v is None or isinstance(v, _Ptr) for v in (lb, ub, step)):
        return None
    n = np.unique(np.maximum(0, -(-(np.asarray(ub, dtype=np.int64) - lb) // np.maximum(1, step))))
    return int(n[0]) if n.size == 1 and n[0] > 0 else None


def _strips(loads: list[tuple[_Ptr, int, int]], valid: np.ndarray, iterations: int, grid: int,
            trip: np.ndarray | None, pid: np.ndarray | None) -> Strips | None:
    """One Strip per distinct (root, keys) load over the `valid` entries; `loads`: (pointer, bytes an
    iteration, the pointer's advance an iteration or 0); `iterations`: the main loop's trips (a strip's
    bytes = bytes per iteration x trips); `trip` / `pid`: each entry's tile-loop trip and the program
    id its wave is counted by (None: one entry per CTA, all valid)."""
    seen: dict[tuple[str, bytes], Strip] = {}
    trips = max(1, iterations)
    for ptr, nbytes, advance in loads:
        if not nbytes:
            continue
        keys = np.broadcast_to(np.asarray(ptr.offset, dtype=np.int64), valid.shape)[valid].copy()
        key = (ptr.root, keys.tobytes())
        if key not in seen:                       # one source load staged into several rings: one strip
            seen[key] = Strip(ptr.root, keys, float(nbytes) * trips, advance, trips)
    if not seen:
        return None
    if trip is None:
        return Strips(tuple(seen.values()), grid)
    return Strips(tuple(seen.values()), grid, trip[valid], pid[valid])


def _evaluate(op: str, rest: str, env: Mapping[str, Any], ids: Mapping[str, np.ndarray],
              dims: Mapping[str, int]) -> Any:
    """The first element's value of one op's result; None when unknown (a load, a float, an op
    not modelled, an unknown operand)."""
    if op == "arith.constant":
        m = re.match(r"\s*(?:dense<)?(-?\d+)>?\s*:\s*(?:tensor<[^>]*x)?i\d+", rest)
        return int(m.group(1)) if m else None
    if op == "tt.get_program_id":
        m = re.match(r"\s*(x|y|z)\b", rest)
        return ids[m.group(1)] if m else None
    if op == "tt.get_num_programs":
        m = re.match(r"\s*(x|y|z)\b", rest)
        return dims[m.group(1)] if m else None
    if op == "tt.make_range":
        m = re.search(r"start = (-?\d+)", rest)
        return int(m.group(1)) if m else None
    ops = _operands(rest)
    vals = [env.get(o) for o in ops]
    if not ops or any(v is None for v in vals):
        return None
    if op in _SAME:
        return vals[0]
    if op == "tt.addptr":
        p, off = vals[0], vals[1]
        t = _PTR.search(rest)
        if not isinstance(p, _Ptr) or isinstance(off, _Ptr) or not t or not elem_bytes(t.group(1)):
            return None
        return _Ptr(p.root, p.offset + np.asarray(off, dtype=np.int64) * elem_bytes(t.group(1)))
    if any(isinstance(v, _Ptr) for v in vals):
        return None
    if op in _BINARY and len(vals) == 2:
        a, b = (np.asarray(v, dtype=np.int64) for v in vals)
        return _BINARY[op](a, b)
    if op == "arith.cmpi":
        m = re.match(r"\s*(\w+),", rest)
        fn = _CMP.get(m.group(1)) if m else None
        return fn(*vals).astype(np.int64) if fn and len(vals) == 2 else None
    if op == "arith.select" and len(vals) == 3:
        return np.where(np.asarray(vals[0]) != 0, vals[1], vals[2])
    return None


def loaded_bounds(ttgir: str, report: Any, hops: int = 40) -> int | None:
    """Where the load sits that the main loop's trip count is read from, or None when it is not read from
    memory: its scf.for's lower or upper bound traced back, at most `hops` steps of defining ops, to a
    tt.load (a segment's offsets, a sequence's length, a CSR row pointer). Returns the index
    (PipelineReport.loops) of the innermost loop holding that load, -1 when it sits in no loop. A value
    an scf.if yields depends on what its branches yield, a loop's carried value (iter_args) on its
    initial value. Such a loop cannot start before that load returns: a latency of its own, once per
    trip of the loop holding the load (rank.bound_waits)."""
    main = getattr(report, "main", None)
    if main is None or not ttgir:
        return None
    target = next(i for i, lp in enumerate(report.loops) if lp is main)
    defs: dict[str, tuple[str, list[str], int]] = {}      # name -> (op, operands, loop holding it)
    fors, depth, in_func = -1, 0, False
    loops: list[tuple[int, int]] = []                     # open scf.for: (index, brace depth at its line)
    ifs: list[tuple[str, int]] = []                       # open scf.if: (its result's name, brace depth)
    for ln in ttgir.splitlines():
        in_func = in_func or "tt.func public" in ln       # loops counted as _walk counts them
        if not in_func:
            continue
        m = _OP.match(ln)
        res, op, rest = (m.group(1), m.group(2), ln[m.end():]) if m else (None, "", "")
        inner = loops[-1][0] if loops else -1
        if op == "scf.for":
            fors += 1
            f = _FOR.search(ln)
            if fors == target:
                return None if f is None else _traced_load(defs, [f.group(2), f.group(3)], hops)
            for alias, init in _iter_args(ln):            # a carried value starts as its init
                defs[alias] = ("iter_args", [init], inner)
            loops.append((fors, depth))
        elif op == "scf.yield" and ifs and ifs[-1][1] == depth - 1:
            name = ifs[-1][0]
            defs[name] = ("scf.if", defs[name][1] + re.findall(_SSA, rest.split(":")[0]), defs[name][2])
        if res is not None and op != "scf.for":
            defs[res] = (op, re.findall(_SSA, rest.split(":")[0] if op != "scf.if" else rest.split("->")[0]), inner)
            if op == "scf.if":
                ifs.append((res, depth))
        bare = _STRINGS.sub('""', ln)
        depth += bare.count("{") - bare.count("}")
        while loops and depth <= loops[-1][1]:
            loops.pop()
        while ifs and depth <= ifs[-1][1]:
            ifs.pop()
        if depth <= 0:
            break
    return None


def _iter_args(ln: str) -> list[tuple[str, str]]:
    """(carried value, its initial value) of an scf.for line's iter_args; [] without any."""
    return re.findall(rf"({_SSA}) = ({_SSA})", ln.split("iter_args(", 1)[1]) if "iter_args(" in ln else []


def _traced_load(defs: Mapping[str, tuple[str, list[str], int]], names: list[str], hops: int) -> int | None:
    """The loop index holding the first tt.load that `names` come from (breadth first, `hops` levels; a
    multi-result op's `%x#1` read as `%x`), -1 for one in no loop; None when none does."""
    todo, seen = [n.split("#")[0] for n in names], set()
    for _ in range(hops):
        nxt = []
        for v in todo:
            if v in seen or v not in defs:
                continue
            seen.add(v)
            op, args, where = defs[v]
            if op == "tt.load":
                return where
            nxt += [a.split("#")[0] for a in args]
        todo = nxt
    return None
