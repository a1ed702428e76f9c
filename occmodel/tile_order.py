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
from ops this evaluator does not know, are left out (read once, as bytes_moved says); a main loop
inside another loop (a persistent kernel walking tiles) gives no strips at all.

Contract: pure (string processing and numpy), no torch, no GPU. Checked on triton 3.6 and 3.9
TTGIR, whose arith / tt ops and func signatures (``%M: i32``, names from the Python source) read
alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .pipeline import _BYTES, _OP, _TENSOR_PTR, _dims

_SSA = r"%[\w.#-]+"
_ARG = re.compile(rf"({_SSA}):\s*(!tt\.ptr<(\w+)>|i\d+)")
_PTR = re.compile(r"!tt\.ptr<(\w+)>")
_FOR = re.compile(rf"scf\.for\s+({_SSA})\s*=\s*({_SSA})\s+to\s+({_SSA})\s+step\s+({_SSA})")
LOAD_OPS = ("tt.load", "ttg.async_copy_global_to_local")
_SAME = ("tt.splat", "tt.broadcast", "tt.expand_dims", "ttg.convert_layout", "tt.reshape", "tt.trans",
         "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")
_CMP = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
        "sge": np.greater_equal, "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}


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
    data) and its bytes over the whole loop (bytes per iteration x iterations)."""

    root: str
    keys: np.ndarray     # int64, one per program id (launch order)
    nbytes: float


@dataclass(frozen=True)
class Revisits:
    """Per strip: how many distinct strips there are (each read from DRAM at least once) and, for
    every later wave that reads one again, the bytes all CTAs streamed since its previous read."""

    nbytes: tuple[float, ...]              # per strip kind
    distinct: tuple[int, ...]              # distinct strips of that kind over the launch
    streamed: tuple[np.ndarray, ...]       # per kind: bytes streamed between a read and its re-read


@dataclass(frozen=True)
class Strips:
    strips: tuple[Strip, ...]
    grid: int

    def revisits(self, wave_ctas: int) -> Revisits:
        """The launch replayed in waves of `wave_ctas` CTAs in program-id order: a strip read by
        several CTAs of one wave is one read (they stream it together through L2); one read again in
        a later wave is a revisit, after the bytes of distinct strips the waves in between (its own
        included) streamed -- rank decides how much of that misses L2."""
        wave_ctas = max(1, int(wave_ctas))
        waves = np.arange(self.grid, dtype=np.int64) // wave_ctas
        nw = int(waves[-1]) + 1 if self.grid else 1
        footprint = np.zeros(nw)
        pairs = []
        for s in self.strips:
            _, kid = np.unique(s.keys, return_inverse=True)
            up = np.unique(kid.astype(np.int64) * nw + waves)
            k, w = up // nw, up % nw
            footprint += s.nbytes * np.bincount(w, minlength=nw)
            pairs.append((k, w))
        cum = np.concatenate([[0.0], np.cumsum(footprint)])
        streamed, distinct = [], []
        for k, w in pairs:
            again = np.flatnonzero(k[1:] == k[:-1]) + 1        # sorted by strip, then wave
            streamed.append(cum[w[again]] - cum[w[again - 1]])
            distinct.append(int(len(k) - len(again)))
        return Revisits(tuple(s.nbytes for s in self.strips), tuple(distinct), tuple(streamed))


def _operands(rest: str) -> list[str]:
    """The SSA operands of an op (before its ':' type list and attribute dictionary)."""
    head = re.split(r"\s:\s|\{", rest, maxsplit=1)[0]
    return re.findall(_SSA, head)


def strips(ttgir: str, report: Any, int_args: Mapping[str, int], grid: Sequence[int], iterations: int) -> Strips | None:
    """The main loop's strips per program id (see the module doc); `grid` is the launch grid as
    known, x first: (total,) when only the CTA count is (a kernel reading program_id(1) then gives
    None). None also when the TTGIR has no main loop, the main loop sits inside another loop, or no
    load's pointer could be evaluated."""
    main = getattr(report, "main", None)
    if main is None or main.parent >= 0 or not ttgir:
        return None
    used = set(re.findall(r"tt\.get_program_id (x|y|z)\b", ttgir)) | set(re.findall(r"tt\.get_num_programs (x|y|z)\b", ttgir))
    if len(grid) < 1 + max(("x", "y", "z").index(a) for a in used | {"x"}):
        return None                         # the kernel reads an axis the grid does not state
    gx, gy, gz = (list(grid) + [1, 1])[:3]
    target = next(i for i, lp in enumerate(report.loops) if lp is main)
    total = gx * gy * gz
    pid = np.arange(total, dtype=np.int64)
    ids = {"x": pid % gx, "y": (pid // gx) % gy, "z": pid // (gx * gy)}
    env: dict[str, Any] = {}
    loads: list[tuple[str, Any]] = []
    fors = -1
    depth_main = None
    depth = 0
    in_func = False
    for ln in ttgir.splitlines():
        if not in_func:
            if "tt.func public" in ln:
                in_func = True
                depth = 1
                for name, ty, pty in _ARG.findall(ln):
                    if pty:
                        env[name] = _Ptr(name.lstrip("%"), 0)
                    elif name.lstrip("%") in int_args:
                        env[name] = int(int_args[name.lstrip("%")])
            continue
        m = _OP.match(ln)
        res, op, rest = (m.group(1), m.group(2), ln[m.end():]) if m else (None, "", "")
        if op == "scf.for":
            fors += 1
            f = _FOR.search(ln)
            if f:
                env[f.group(1)] = env.get(f.group(2))
            if "iter_args(" in ln:
                for alias, init in re.findall(rf"({_SSA}) = ({_SSA})", ln.split("iter_args(", 1)[1]):
                    if init in env:
                        env[alias] = env[init]
            if fors == target:
                depth_main = depth
        elif op in LOAD_OPS and depth_main is not None:           # in the main loop's body
            ops = _operands(rest)
            ptr = env.get(ops[0]) if ops else None
            t = _TENSOR_PTR.search(rest)
            if isinstance(ptr, _Ptr) and t:
                n = int(np.prod(_dims(t.group(1))))
                loads.append((ptr, n * elem_bytes(t.group(2))))
        elif res is not None:
            v = _evaluate(op, rest, env, ids, {"x": gx, "y": gy, "z": gz})
            if v is not None:
                env[res] = v
            else:
                env.pop(res, None)
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', ln)
        depth += bare.count("{") - bare.count("}")
        if depth_main is not None and depth <= depth_main:
            break                                         # the main loop closed
        if depth <= 0:
            break
    if depth_main is None:
        return None
    return _strips(loads, total, iterations, ids)


def _strips(loads: list[tuple[_Ptr, int]], total: int, iterations: int, ids: Mapping[str, np.ndarray]) -> Strips | None:
    seen: dict[tuple[str, bytes], Strip] = {}
    for ptr, nbytes in loads:
        if not nbytes:
            continue
        keys = np.broadcast_to(np.asarray(ptr.offset, dtype=np.int64), (total,)).copy()
        key = (ptr.root, keys.tobytes())
        if key not in seen:                       # one source load staged into several rings: one strip
            seen[key] = Strip(ptr.root, keys, float(nbytes) * max(1, iterations))
    return Strips(tuple(seen.values()), total) if seen else None


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
