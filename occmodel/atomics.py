"""Global atomics that many CTAs aim at the same cache lines: the input to rank's atomic floor.

An atomic add to global memory is done in the L2, one request at a time per 128-byte line: CTAs that
add into the same counters (a histogram's bins, a split-K tile's partial sums) queue on those lines
however many SMs issue them. The compiled TTGIR says which lines each CTA hits: every ``tt.atomic_rmw``
/ ``tt.atomic_cas`` pointer is scalar arithmetic on ``tt.get_program_id`` and the integer launch
arguments (evaluated for all program ids at once, as occmodel.tile_order does for loads), and its
layout says how a CTA's warps split the tensor into instructions:

    hot = contention(ttgir, {"N": 33554432, ...}, grid=(65536,))
    hot.requests        # line requests the busiest line receives over the launch

An n-element tensor takes n / 32 warp instructions (one element per lane each; copies a layout holds
for more threads than elements add none). With s contiguous elements per thread (the layout's
sizePerThread along its fastest dimension) the lanes of one instruction sit s elements apart, so it
touches ceil(32 x s x bytes / 128) lines; with s = 1 they are adjacent: ceil(32 x bytes / 128). CTAs whose pointer
tensors start at the same byte of the same argument share those lines: a line group, whose requests
queue together (`requests` sums every request of the group's CTAs to all its lines: what the L2 saw
serialized on expert_histogram's 4-8-line counters, where the constant was measured; a wide split-K
tile of many lines may spread over several L2 slices and queue less). An atomic inside a loop counts
once per trip (when the trip count evaluates to one number) only if its pointer is computed before the
loop; a pointer the loop computes (from its counter or a carried pointer) may move every trip, so its
first trip alone is counted -- an underestimate where the trips share lines. Pointers read from memory
(a scatter through loaded indices) are left out: their lines are data.

Contract: pure (string processing and numpy), no torch, no GPU.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .layouts import Layouts, _ints
from .pipeline import _OP, _PTR_TYPE, _STRINGS, ATOMIC_OPS, _dims, _elem_bytes
from .tile_order import _FOR, _SSA, _Ptr, _evaluate, _operands, _trips, kernel_args, launch_dims, program_ids

LINE_BYTES = 128
_SCALAR = re.compile(r":\s*\(!tt\.ptr<(\w+)>")


@dataclass(frozen=True)
class Contention:
    """The busiest line group of the launch's global atomics (module doc): the requests its CTAs send
    to its lines (`requests`), the CTAs that share it (`ctas`) and how many atomic ops were traced."""

    requests: float
    ctas: int
    traced: int


def requests_per_cta(shape: Sequence[int], nbytes: int, body: str) -> tuple[float, int]:
    """(line requests one CTA's atomic op sends, lines its tensor spans) for a tensor of `shape` with
    elements of `nbytes` in the blocked layout `body` (see the module doc); a layout that is not
    blocked counts as s = 1."""
    n = math.prod(shape)
    lines = max(1, -(-n * nbytes // LINE_BYTES))
    spt, order = _ints(body, "sizePerThread"), _ints(body, "order")
    s = spt[order[0]] if spt and order and order[0] < len(spt) else 1
    per_instr = min(lines, max(1, -(-32 * s * nbytes // LINE_BYTES)) if s > 1 else max(1, -(-32 * nbytes // LINE_BYTES)))
    instr = max(1, -(-n // 32))              # warp instructions: each covers 32 of the n elements
    return instr * per_instr, lines


def contention(ttgir: str, int_args: Mapping[str, int], grid: Sequence[int]) -> Contention | None:
    """The busiest line group over the launch (see the module doc); None when the kernel has no global
    atomic whose pointer could be evaluated, or reads a grid axis `grid` does not state."""
    if not ttgir or not any(op in ttgir for op in ATOMIC_OPS):
        return None
    dims = launch_dims(ttgir, grid)
    if dims is None:
        return None
    total = dims["x"] * dims["y"] * dims["z"]
    ids = program_ids(np.arange(total, dtype=np.int64), dims)
    lay = Layouts(ttgir)
    env: dict[str, Any] = {}
    in_loop: set[str] = set()             # values defined inside an open loop (they may change per trip)
    trips: list[int] = []                 # the open loops' trip counts (1 when unknown)
    opened: list[int] = []                # the depth at which each open loop's region closes
    hits: dict[tuple[str, int], float] = {}
    ctas: dict[tuple[str, int], int] = {}
    traced, depth, in_func = 0, 0, False
    for ln in ttgir.splitlines():
        if not in_func:
            if "tt.func public" in ln:
                in_func, depth = True, 1
                env.update(kernel_args(ln, int_args))
            continue
        m = _OP.match(ln)
        res, op, rest = (m.group(1), m.group(2), ln[m.end():]) if m else (None, "", "")
        if op == "scf.for":
            f = _FOR.search(ln)
            lb, ub, step = (env.get(f.group(i)) for i in (2, 3, 4)) if f else (None, None, None)
            if f:
                env[f.group(1)] = lb
                in_loop.add(f.group(1))
            if "iter_args(" in ln:
                for alias, init in re.findall(rf"({_SSA}) = ({_SSA})", ln.split("iter_args(", 1)[1]):
                    in_loop.add(alias)
                    if init in env:
                        env[alias] = env[init]
            trips.append(_trips(lb, ub, step) or 1)
            opened.append(depth)
        elif op in ATOMIC_OPS:
            ops = _operands(re.sub(r"^\s*(\w+\s*,\s*)+", "", rest))
            ptr = env.get(ops[0]) if ops else None
            t, one = _PTR_TYPE.search(rest), _SCALAR.search(rest)
            if isinstance(ptr, _Ptr) and (t or one):
                per_cta = requests_per_cta(_dims(t.group(1)), _elem_bytes(t.group(2)),
                                           lay._resolve(t.group(3))[1])[0] if t else 1   # a scalar: one request
                offsets = np.broadcast_to(np.asarray(ptr.offset, dtype=np.int64), (total,))
                keys, counts = np.unique(offsets, return_counts=True)
                times = 1 if ops[0] in in_loop else (math.prod(trips) if trips else 1)
                for key, count in zip(keys.tolist(), counts.tolist()):
                    k = (ptr.root, int(key) // LINE_BYTES)
                    hits[k] = hits.get(k, 0.0) + count * per_cta * times
                    ctas[k] = max(ctas.get(k, 0), int(count))
                traced += 1
        elif res is not None:
            v = _evaluate(op, rest, env, ids, dims)
            if v is not None:
                env[res] = v
            else:
                env.pop(res, None)
            if trips and (res in in_loop or any(o in in_loop for o in _operands(rest))):
                in_loop.add(res)
        bare = _STRINGS.sub('""', ln)
        depth += bare.count("{") - bare.count("}")
        while opened and depth <= opened[-1]:
            opened.pop()
            trips.pop()
        if depth <= 0:
            break
    if not hits:
        return None
    hot = max(hits, key=hits.get)
    return Contention(hits[hot], ctas[hot], traced)
