"""Which loads Triton software-pipelined, and how deep: a text analysis of the TTGIR.

    res = compile_kernel(fn, ..., keep_ir=True)
    rep = analyze(res)                      # or parse_ttgir(text)
    rep.main.loads                          # one LoopLoad per load of the main scf.for

Contract (checked on triton 3.6 and 3.9, whose TTGIR spells these ops alike):

* a load is **pipelined** when, inside the loop body, it is an asynchronous copy
  into shared memory -- ``ttg.async_copy_global_to_local`` (cp.async) or
  ``ttng.async_tma_copy_global_to_local`` (TMA) -- whose destination is a slot
  of a ring ``ttg.local_alloc : () -> !ttg.memdesc<D x ...>``; D is the ring's
  depth (**buffers**), and ``buffers - 1`` tiles can be in flight while one is
  consumed (**ahead**). Copies of one source load into several rings (Triton
  stages a value once per consumer layout) are one load.
* a load that stays ``tt.load`` / ``tt.descriptor_load`` in the loop body is
  **plain** (not pipelined); ``in_branch`` says it sits in an ``scf.if`` region.
* loads are named by the source variable Triton records in the location
  (``loc("k_lat"(...))``) and placed by file:line when the location has one.

Pure: string processing; compiling is occmodel.evidence's job.
"""

from __future__ import annotations

import linecache
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from .bank_conflicts import load_conflict
from .layouts import Layouts, _ints

ASYNC_OPS = {"ttg.async_copy_global_to_local": "cp.async", "ttng.async_tma_copy_global_to_local": "TMA",
             "ttng.async_tma_gather": "TMA"}
PLAIN_OPS = ("tt.load", "tt.descriptor_load", "tt.descriptor_gather")
DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "tt.dot_scaled")
_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "tf32": 4}

_FOR = re.compile(r"scf\.for\s+%[\w.#-]+\s*=\s*(%[\w.#-]+)\s+to\s+(%[\w.#-]+)\s+step\s+(%[\w.#-]+)")
_ELSE = re.compile(r"^\s*\}\s*else\s*\{")
_OP = re.compile(r'^\s*(?:(%[\w.#-]+)(?::\d+)?(?:\s*,\s*%[\w.#-]+)*\s*=\s*)?"?([a-z_][\w]*\.[\w.]+)"?')
_MEMDESC = re.compile(r"!ttg\.memdesc<((?:\d+x)+)([a-zA-Z]\w*)")
_TENSOR_PTR = re.compile(r"tensor<([0-9x]+)x!tt\.ptr<(\w+)>")
_SCALAR_PTR = re.compile(r":\s*!tt\.ptr<(\w+)>")
_DESC = re.compile(r"!tt\.tensordesc<([0-9x]+)x(\w+)")
_LOCREF = re.compile(r"loc\((#loc\d*)\)\s*$")
_LOCDEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
ATOMIC_OPS = ("tt.atomic_rmw", "tt.atomic_cas")   # global atomics (atomics, sectors, atomic_roots)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_PTR_TYPE = re.compile(r"tensor<((?:\d+x)+)!tt\.ptr<(\w+)>,\s*(#[\w.]+(?:<\{.*?\}>)?)>")   # shape, dtype, layout
_WAIT = re.compile(r"\{num = (\d+) : i32\}")
_MMA_DEF = re.compile(r"^(#[\w]+)\s*=\s*#ttg\.nvidia_mma<\{(.*)\}>")
_REDUCE_TYPES = re.compile(r"^\s*\}\)\s*:\s*\((tensor<[^>]*>)\)\s*->\s*(tensor<.*>)\s*loc")
# ops a pointer passes through on its way from a kernel argument to a load (first operand followed)
_POINTER_OPS = ("tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims", "ttg.convert_layout", "tt.reshape",
                "tt.trans", "tt.advance", "tt.make_tensor_ptr", "tt.make_tensor_descriptor")
# local_load results a loop uses in registers (an elementwise use of a staged tile); a #linear or dot_op
# result is a dot's operand on its way (a transposed B), which LoopDot counts
_REGISTER_USE = ("#ttg.blocked", "#ttg.nvidia_mma")
_LOCAL_LOAD = re.compile(r"(%[\w.#-]+)\s*=\s*ttg\.local_load\b.*?:\s*!ttg\.memdesc<((?:\d+x)+)(\w+),\s*(#\w+)([^>]*)>"
                         r"\s*->\s*tensor<((?:\d+x)+)(\w+),\s*(#[\w.]+(?:<\{.*\}>)?)>")
_OPERAND = re.compile(r"(tensor|!ttg\.memdesc)<((?:\d+x)+)([a-zA-Z]\w*)")


@dataclass(frozen=True)
class LoopLoad:
    name: str                  # source variable ("k_lat") or the SSA name without its suffix
    kind: str                  # "cp.async" | "TMA" | "plain"
    buffers: int               # ring depth (0 for a plain load)
    tile: str                  # one slot / the loaded tensor, e.g. "16x512xbf16"
    slot_bytes: int            # bytes of one slot (summed over the rings the load is staged into)
    rings: int = 0             # how many rings hold this load (>1: staged once per consumer layout)
    in_branch: bool = False    # inside an scf.if region of the loop body
    where: str = ""            # "file.py:106" when known
    source: str = ""           # that source line, stripped
    root: str = ""             # the kernel argument the pointer is computed from ("X"; "" when not traced)
    run_bytes: int = 0         # contiguous bytes per row of the tile in global memory: its extent along the
                               # layout's fastest dimension (order[0]) x the element size (0: not read)
    walks_rows: bool = False   # the loop advances the pointer by that extent (a constant): the next
                               # iteration reads on along the same rows (a K loop over K-contiguous data)
    thread_bytes: float = 0.0  # a plain load: bytes one thread loads (its layout's elements per thread,
                               # replicated elements included); 0 when unknown or pipelined

    @property
    def pipelined(self) -> bool:
        return self.kind != "plain"

    @property
    def ahead(self) -> int:
        """Tiles that can be in flight while one is consumed: buffers - 1 (0 when plain)."""
        return max(self.buffers - 1, 0)


@dataclass(frozen=True)
class LoopDot:
    """One matrix-multiply op of a loop body, with the warp layout of its accumulator."""

    op: str                    # "tt.dot" (mma.sync, versionMajor 2) | "ttng.warp_group_dot" (wgmma, 3) | ...
    m: int
    n: int
    k: int
    a_bytes: int               # element size of A and B
    b_bytes: int
    version: int               # nvidia_mma versionMajor (2 mma.sync, 3 wgmma, 5 tcgen05; 0 unknown)
    warps: tuple[int, int]     # warpsPerCTA of the accumulator layout (M, N)
    instr_n: int               # the instruction's N (8 for mma.sync, up to 256 for wgmma)
    a_in_registers: bool       # wgmma with A as a register tensor: no shared-memory read of A
    where: str = ""
    a_conflict: float = 1.0    # shared-memory bank conflicts of the A / B operand loads: wavefronts over the
    b_conflict: float = 1.0    # conflict-free count (occmodel.bank_conflicts; 1.0: none or unknown)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def fp16_flops(self) -> float:
        """The flops at the fp16 tensor rate: 1-byte operands (fp8, int8) run at twice the fp16
        rate and 4-byte ones (tf32) at half on sm_80..sm_120 (NVIDIA's A100 / H100 / H200 /
        RTX Blackwell datasheets: e.g. H100 SXM 989 dense fp16, 1,979 fp8 and int8, 495 tf32)."""
        return self.flops * max(self.a_bytes, self.b_bytes) / 2

    @property
    def shared_read_bytes(self) -> int:
        """Bytes the CTA reads from shared memory for this dot's operands (per execution).

        mma.sync (v2): every warp loads (ldmatrix) the A rows of its M slice for its whole
        K, and the B columns of its N slice; warps [wm, wn] -> A read wn times, B wm times,
        and a dimension with fewer 16-row (A) / 8-column (B) tiles than warps replicates
        the tile (each warp still loads it).
        wgmma (v3): one instruction is m64 x instr_n x k16 reading both operands from
        shared, so A is read ceil(N / instr_n) times (0 when A sits in registers) and B
        ceil(M / 64) times. Other versions: A and B once. Each operand's bytes count its bank
        conflicts (a_conflict, b_conflict: shared wavefronts over the conflict-free count).
        """
        a = self.m * self.k * self.a_bytes
        b = self.n * self.k * self.b_bytes
        wm, wn = self.warps
        ca, cb = self.a_conflict, self.b_conflict
        if self.version == 2:
            m_eff, n_eff = max(self.m, 16 * wm), max(self.n, 8 * wn)
            return round(wn * m_eff * self.k * self.a_bytes * ca + wm * n_eff * self.k * self.b_bytes * cb)
        if self.version == 3:
            reads_a = 0 if self.a_in_registers else a * -(-self.n // max(1, self.instr_n))
            return round(reads_a * ca + b * -(-self.m // 64) * cb)
        return round(a * ca + b * cb)


@dataclass(frozen=True)
class LoopInfo:
    where: str                 # the scf.for's source position
    depth: int                 # nesting depth among loops (0 = outermost)
    has_dot: bool
    loads: tuple[LoopLoad, ...]
    wait_groups: int | None    # smallest `num` of the ttg.async_wait ops in the body (groups left in flight)
    groups_per_iteration: int  # ttg.async_commit_group ops in the body
    dots: tuple[LoopDot, ...] = ()   # the body's matrix multiplies (K-chunked dots listed per chunk)
    exchange_elements: float = 0.0   # the widest reduction ACROSS WARPS in the body: elements per thread of
                                     # its result (0: none; 1: a scalar per row; > 1: a vector, whose shared
                                     # scratch round trip is bank-conflicted: rank's term (g))
    parent: int = -1                 # index (in PipelineReport.loops) of the loop this one sits in; -1: none
    stores: tuple[tuple[str, int], ...] = ()   # (kernel argument, bytes per iteration) of the body's tt.store ops
    shared_other: float = 0.0        # bytes per iteration the body's other ttg.local_load ops read into a
                                     # #blocked / #mma layout (a staged tile's elementwise use, not a dot's
                                     # operand), x their bank-conflict factor
    unroll: int = 1                  # source iterations one iteration of this scf.for covers: Triton's loop
                                     # unroller (tl.range(..., loop_unroll_factor=u)) leaves a loop of step
                                     # u x s and a remainder loop of step s from its upper bound (_unrolls;
                                     # 1 where the trip count is a constant: no remainder loop to read it by)
    arms: tuple[tuple[int, int], ...] = ()   # the scf.if regions it sits in: (the if's TTGIR line, 0 then / 1 else)

    def exclusive(self, other: "LoopInfo") -> bool:
        """Do the two loops sit in different branches of one scf.if (only one of them runs)?"""
        mine = dict(self.arms)
        return any(line in mine and mine[line] != b for line, b in other.arms)

    @property
    def dot_read_bytes(self) -> int:
        """The body's dots' shared-memory operand reads per iteration, bank conflicts counted (LoopDot)."""
        return sum(d.shared_read_bytes for d in self.dots)

    @property
    def shared_read_bytes(self) -> int:
        """Shared-memory reads per iteration: the dots' operand reads and the body's other local_load
        ops' (shared_other), each with its bank conflicts."""
        return self.dot_read_bytes + round(self.shared_other)

    def conflicts(self) -> list[str]:
        """The body's bank-conflicted dot operand reads, for people: ["dot A 8-way (file.py:130)"]."""
        return [f"dot {op} {c:g}-way" + (f" ({d.where})" if d.where else "")
                for d in self.dots for op, c in (("A", d.a_conflict), ("B", d.b_conflict)) if c > 1]

    @property
    def dot_flops(self) -> int:
        return sum(d.flops for d in self.dots)

    @property
    def dot_fp16_flops(self) -> float:
        """The body's dot flops counted at the fp16 tensor rate (LoopDot.fp16_flops)."""
        return sum(d.fp16_flops for d in self.dots)


@dataclass(frozen=True)
class PipelineReport:
    kernel: str
    arch: str
    num_stages: int | None
    loops: tuple[LoopInfo, ...] = field(default_factory=tuple)
    exchange_elements: float = 0.0   # the widest cross-warp reduction outside every loop (LoopInfo's sense)
    atomic_roots: tuple[str, ...] = ()   # the kernel arguments its global atomics update (tt.atomic_rmw / _cas)

    @property
    def main(self) -> LoopInfo | None:
        """The loop that matters: the innermost one with a dot, else the one that loads the most bytes
        per iteration (then the outermost, then the most loads). By bytes, not by loads: a channel loop
        that loads a scalar weight and bias around an inner loop streaming x is not the main loop."""
        if not self.loops:
            return None
        dotted = [lp for lp in self.loops if lp.has_dot]
        if dotted:
            return max(dotted, key=lambda lp: (lp.depth, len(lp.loads)))
        return max(self.loops, key=lambda lp: (sum(ld.slot_bytes for ld in lp.loads), -lp.depth, len(lp.loads)))

    @property
    def ahead(self) -> int:
        """The deepest prefetch of the main loop's loads (0: nothing in flight during compute)."""
        m = self.main
        return max((ld.ahead for ld in m.loads), default=0) if m else 0

    def passes(self) -> Passes:
        """The loops at the main loop's outermost level that load (themselves or in loops nested in
        them), in program order -- a two-pass row kernel's pass 1 and pass 2, a pass whose loads sit
        in an inner loop (a per-channel loop around a loop over the row) counted as one -- and what a
        later pass loads again from a kernel argument an earlier pass already loaded. A main loop
        that holds a dot is one pass: its sibling loops that load the same operands are other tiles'
        K loops (a Stream-K GEMM's data-parallel phase and its split phase), whose reuse the tile
        order costs (occmodel.tile_order), not a second pass over the same row."""
        m = self.main
        if m is None:
            return Passes(0, 0, 0)
        top = self._top(m)
        passes = []
        for i, lp in enumerate(self.loops):
            if m.has_dot and i != top:
                continue
            if lp.parent == self.loops[top].parent:
                tree = [t for t in self.loops if self._top(t) == i and t.loads]
                if tree:
                    passes.append(tree)
        first: dict[str, int] = {}                # argument -> bytes per iteration of the first pass loading it
        again: dict[str, int] = {}                # argument -> bytes per iteration, summed over later passes
        for tree in passes:
            here: dict[str, int] = {}
            for ld in (ld for lp in tree for ld in lp.loads):
                if ld.root:
                    here[ld.root] = here.get(ld.root, 0) + ld.slot_bytes
            for root, nbytes in here.items():
                if root in first:
                    again[root] = again.get(root, 0) + nbytes
                else:
                    first[root] = nbytes
            for root, nbytes in (st for lp in tree for st in lp.stores):
                first.setdefault(root, nbytes)   # what a pass stores, a later pass may load back
        streams = [max(tree, key=lambda lp: (sum(ld.slot_bytes for ld in lp.loads), lp.depth)) for tree in passes]
        return Passes(len(passes), sum(first[r] for r in again), sum(again.values()),
                      tuple(sum(ld.thread_bytes for ld in lp.loads) if all(ld.thread_bytes for ld in lp.loads) else 0.0
                            for lp in streams),
                      tuple(max(lp.exchange_elements for lp in tree) for tree in passes))

    def siblings(self) -> tuple[int, ...]:
        """Indexes of the outermost loops beside a top-level main loop that load nothing, themselves or in
        loops nested in them, in program order: a CTA's serial compute before or after its main loop (a
        triangular solve's substitution steps after the K loop that built its matrix), run once per CTA.
        Loops that load are passes (passes()); a loop in the other branch of an scf.if than the main loop's
        (a kernel's two versions of its loop, one run) is none; () when the main loop sits in a loop."""
        m = self.main
        if m is None or m.parent >= 0:
            return ()
        top = self._top(m)
        return tuple(i for i, lp in enumerate(self.loops) if lp.parent < 0 and i != top and not lp.exclusive(m)
                     and not any(t.loads for t in self.loops if self._top(t) == i))

    def _top(self, lp: LoopInfo) -> int:
        """Index of the outermost loop `lp` sits in (itself when it is outermost)."""
        i = next(j for j, other in enumerate(self.loops) if other is lp)    # by identity: loops can be equal
        while self.loops[i].parent >= 0:
            i = self.loops[i].parent
        return i


@dataclass(frozen=True)
class Passes:
    """Sibling loops of the main loop that load (count) and, per iteration of one such loop, the
    bytes of the arguments read again by a later loop: `first_bytes` as the first loop reading them
    loads them, `again_bytes` summed over the loops that read them again."""

    count: int
    first_bytes: int
    again_bytes: int
    thread_bytes: tuple[float, ...] = ()   # per loop: bytes one thread loads per iteration (0: a load is
                                           # pipelined or its layout unknown)
    exchange_elements: tuple[float, ...] = ()   # per loop: its widest cross-warp reduction (LoopInfo's sense)


class _Locations:
    """Resolves ``loc(#locN)`` references to (name, "file:line", file, line)."""

    def __init__(self, lines: list[str]):
        self.defs = {}
        for ln in lines:
            m = _LOCDEF.match(ln.strip())
            if m:
                self.defs[m.group(1)] = m.group(2)

    def resolve(self, body: str, limit: int = 8, callees: list | None = None) -> tuple[str, str, str, int, int]:
        """(name, "file:line", file, line, col) of a location body, a helper's operation at its outermost
        call site; `callees` (when given) receives the "file:line:col" of each call's callee, innermost
        first -- what tells apart the operations inlined from one helper call."""
        name, file, line, col = "", "", 0, 0
        for _ in range(limit):
            m = re.match(r'^"([^"]*)"\((#loc\d*)\)$', body)
            if m:                                    # a named location: loc("k_lat"(#loc34))
                name = name or m.group(1)
                body = self.defs.get(m.group(2), "")
                continue
            m = re.match(r'^"([^"]*)":(\d+):(\d+)$', body)
            if m:
                file, line, col = m.group(1), int(m.group(2)), int(m.group(3))
                break
            m = re.match(r"^callsite\((#loc\d*) at (#loc\d*)\)$", body)
            if m:
                if callees is not None:
                    callees.append(":".join(map(str, self.resolve(self.defs.get(m.group(1), ""))[2:])))
                body = self.defs.get(m.group(2), "")
                continue
            m = re.match(r"^(#loc\d*)$", body)
            if m:
                body = self.defs.get(m.group(1), "")
                continue
            break
        short = f"{file.rsplit('/', 1)[-1]}:{line}" if file else ""
        return name, short, file, line, col

    def of(self, text: str, callees: list | None = None) -> tuple[str, str, str, int, int]:
        """`resolve` of a line's trailing location (a #loc reference or a literal "file":line:col)."""
        m = _LOCREF.search(text)
        if m:
            return self.resolve(self.defs.get(m.group(1), ""), callees=callees)
        m = re.search(r"loc\((\"[^\"]*\":\d+:\d+)\)\s*$", text)
        return self.resolve(m.group(1), callees=callees) if m else ("", "", "", 0, 0)


def _dims(text: str) -> list[int]:
    return [int(d) for d in text.split("x") if d]


def _elem_bytes(dtype: str) -> int:
    """Bytes of one element of a TTGIR element type (fp8 variants: 1; unknown: 4)."""
    return _BYTES.get(dtype, 1 if dtype.startswith(("f8", "i8")) else 4)


def _slot(dims: list[int], dtype: str) -> tuple[str, int]:
    size = 1
    for d in dims:
        size *= d
    nbytes = size * _elem_bytes(dtype)
    return "x".join(map(str, dims + [dtype])) if dims else dtype, nbytes


def _plain_tile(text: str) -> tuple[str, int]:
    m = _TENSOR_PTR.search(text)
    if m:
        return _slot(_dims(m.group(1)), m.group(2))
    m = _DESC.search(text)
    if m:
        return _slot(_dims(m.group(1)), m.group(2))
    m = _SCALAR_PTR.search(text)
    return _slot([], m.group(1)) if m else ("?", 0)


def parse_ttgir(text: str, kernel: str = "", arch: str = "", num_stages: int | None = None) -> PipelineReport:
    """Every scf.for of the public kernel function, with the loads in its body."""
    lines = text.splitlines()
    locs = _Locations(lines)
    mmas = _mma_layouts(lines)
    lay = Layouts(text)
    defs: dict[str, tuple[str, str]] = {}           # ssa -> (op, line); iter_args -> ("iter_arg", init)
    at: dict[str, list[tuple[int, str, str]]] = {}   # ssa -> every (line number, op, line) defining it
    for no, ln in enumerate(lines):
        m = _OP.match(ln)
        if m and m.group(1):
            defs[m.group(1)] = (m.group(2), ln)
            at.setdefault(m.group(1), []).append((no, m.group(2), ln))
        if "iter_args(" in ln:
            for alias, init in re.findall(r"(%[\w.#-]+) = (%[\w.#-]+)", ln.split("iter_args(", 1)[1]):
                defs.setdefault(alias, ("iter_arg", init))
                at.setdefault(alias, []).append((no, "iter_arg", init))

    def ring_of(value: str, hops: int = 8) -> tuple[str, list[int], str] | None:
        """(alloc ssa, dims, dtype) of the ring a memdesc value is a slot of."""
        for _ in range(hops):
            op, ln = defs.get(value, ("", ""))
            if op == "ttg.local_alloc":
                m = _MEMDESC.search(ln.split("->", 1)[-1])
                return (value, _dims(m.group(1)), m.group(2)) if m else None
            if op == "iter_arg":
                value = ln
                continue
            m = re.search(rf"{re.escape(op)}\s+(%[\w.#-]+)", ln) if op in (
                "ttg.memdesc_index", "ttg.memdesc_subview") else None
            if not m:
                return None
            value = m.group(1)
        return None

    def root_of(value: str, line: int, hops: int = 24) -> str:
        """The kernel argument a pointer value used on `line` is computed from (through addptr,
        splat, broadcast, layout conversions and loop-carried values); "" when it leads elsewhere.
        Sibling regions reuse SSA names, so each name is its nearest definition above its use."""
        for _ in range(hops):
            if value not in at:
                return value.lstrip("%")
            before = [d for d in at[value] if d[0] <= line]
            if not before:
                return ""
            line, op, ln = before[-1]
            if op == "iter_arg":
                value = ln
                continue
            m = re.search(rf"{re.escape(op)}\s+(%[\w.#-]+)", ln) if op in _POINTER_OPS else None
            if not m:
                return ""
            value = m.group(1)
        return ""

    warps = re.search(r'"ttg.num-warps" = (\d+)', text)
    threads = 32 * int(warps.group(1)) if warps else 0

    def thread_bytes(ln: str) -> float:
        """Bytes one thread loads for a plain tt.load line (0 when its layout cannot be read)."""
        m = re.search(r":\s*tensor<((?:\d+x)+)!tt\.ptr<(\w+)>,\s*(#[\w.]+(?:<\{.*?\}>)?)>", ln)
        if not m or not threads:
            return 0.0
        return lay.elements(_dims(m.group(1)), m.group(3), threads) * _BYTES.get(m.group(2), 2)

    def shared_load(ln: str) -> tuple[str, float, float, str] | None:
        """(result ssa, bytes its warps read, bank-conflict factor, result layout kind) of a ttg.local_load line."""
        m = _LOCAL_LOAD.search(ln)
        if not m or not threads:
            return None
        dims, dtype, enc = _dims(m.group(2)), m.group(3), m.group(4)
        alloc = re.search(r",\s*((?:\d+x)*\d+)\s*$", m.group(5))      # a sub-slice's allocation shape
        full = [int(d) for d in alloc.group(1).split("x")][-len(dims):] if alloc else dims
        res_dims, res_enc = _dims(m.group(6)), m.group(8)
        result = lay._resolve(res_enc)
        parent = re.search(r"parent = (#[\w.]+)", result[1]) if result[0] == "#ttg.dot_op" else None
        factor = load_conflict(dims, _elem_bytes(dtype), lay._resolve(enc), result,
                               lay._resolve(parent.group(1)) if parent else ("", ""), full)
        return (m.group(1), lay.elements(res_dims, res_enc, threads) * threads * _elem_bytes(dtype), factor,
                result[0])

    spans: list[tuple[int, int]] = []                # every scf.for: (its line, the line closing its region)
    for no, ln in enumerate(lines):
        if _OP.match(ln) and _OP.match(ln).group(2) == "scf.for":
            depth = 0
            for end in range(no, len(lines)):
                bare = _STRINGS.sub('""', lines[end])
                depth += bare.count("{") - bare.count("}")
                if depth <= 0 and end > no:
                    break
            spans.append((no, end))

    def advance(value: str, line: int) -> int | None:
        """The constant (elements) the innermost loop around `line` adds to a pointer value each
        iteration: the value is `tt.addptr %iter_arg, %c` of that loop's iter_arg with %c an
        `arith.constant dense<V>`, or that loop's iter_arg which such an addptr in its body advances;
        None when the step is not a constant (a runtime stride) or not found there. Only that loop's
        lines count: sibling regions reuse SSA names."""
        inside = [sp for sp in spans if sp[0] <= line <= sp[1]]
        if not inside:
            return None
        first, last = max(inside)                     # the innermost: the latest start around the line
        carried = lambda v: any(d[1] == "iter_arg" and d[0] == first for d in at.get(v, []))
        before = [d for d in at.get(value, []) if first <= d[0] <= line]
        if not before:
            return None
        _, op, ln = before[-1]
        if op == "tt.addptr":
            steps = [ln]
        elif op == "iter_arg" and carried(value):
            steps = [d[2] for v in at.values() for d in v if d[1] == "tt.addptr" and first < d[0] <= last
                     and re.search(rf"tt\.addptr\s+{re.escape(value)}\s*,", d[2])]
        else:
            steps = []
        for st in steps:
            m = re.search(r"tt\.addptr\s+(%[\w.#-]+)\s*,\s*(%[\w.#-]+)", st)
            if m and carried(m.group(1)):
                c = re.search(r"arith\.constant dense<(-?\d+)>", defs.get(m.group(2), ("", ""))[1])
                if c:
                    return int(c.group(1))
        return None

    def run_bytes(ln: str, line: int) -> tuple[int, bool]:
        """(contiguous bytes per tile row in global memory, whether the loop walks along those rows)
        of a load line: the pointer tensor's extent along its blocked layout's order[0] (the coalescing
        pass orders the contiguous dimension first) x the element size, and whether the loop advances
        the pointer by exactly that extent; a descriptor block's last dimension (not walked: unknown);
        (0, False) when neither can be read."""
        m = _PTR_TYPE.search(ln)
        if m:
            kind, body = lay._resolve(m.group(3))
            order, dims = _ints(body, "order") if kind == "#ttg.blocked" else [], _dims(m.group(1))
            if not order or order[0] >= len(dims):
                return 0, False
            ptr = re.search(r"(?:tt\.load|async_copy_global_to_local)\s+(%[\w.#-]+)", ln)
            step = advance(ptr.group(1), line) if ptr else None
            return dims[order[0]] * _elem_bytes(m.group(2)), step == dims[order[0]]
        m = _DESC.search(ln)
        return (_dims(m.group(1))[-1] * _elem_bytes(m.group(2)), False) if m else (0, False)

    loops: list[dict[str, Any]] = []
    top: dict[str, Any] = {"axes": [], "exchange": 0.0}     # the kernel body outside every loop
    stack: list[tuple[str, dict | None]] = []        # (op opening a region, loop record or None)
    arm: dict[int, tuple[int, int]] = {}             # stack index of an open scf.if -> (its line, 0 then / 1 else)
    for no, ln in enumerate(lines):
        m = _OP.match(ln)
        op = m.group(2) if m else ""
        in_func = any(kind == "tt.func public" for kind, _ in stack)
        inner = max((i for i, (_, rec) in enumerate(stack) if rec is not None), default=None)
        if in_func and inner is not None:
            branch = any(kind == "scf.if" for kind, _ in stack[inner + 1:])
            _collect(stack[inner][1], op, ln, branch, locs, ring_of, mmas, lambda v: root_of(v, no), thread_bytes,
                     lambda ln: run_bytes(ln, no), shared_load)
            _reduction(stack[inner][1], op, ln, lay)
        elif in_func:
            _reduction(top, op, ln, lay)
        bare = _STRINGS.sub('""', ln)
        net = bare.count("{") - bare.count("}")
        if _ELSE.match(bare) and stack and stack[-1][0] == "scf.if":
            arm[len(stack) - 1] = (arm[len(stack) - 1][0], 1)
        for _ in range(max(net, 0)):
            rec = None
            if op == "scf.for" and in_func:
                outer = [r for _, r in stack if r is not None]
                bounds = _FOR.search(ln)
                rec = {"where": locs.of(ln)[1], "depth": len(outer),
                       "parent": next(i for i, r in enumerate(loops) if r is outer[-1]) if outer else -1,
                       "dot": False, "dots": [], "loads": {}, "waits": [], "commits": 0, "axes": [],
                       "exchange": 0.0, "stores": {}, "smem": {}, "dot_operands": set(),
                       "bounds": bounds.groups() if bounds else None,
                       "arms": tuple(arm[i] for i in sorted(arm))}
                loops.append(rec)
            kind = "tt.func public" if op == "tt.func" and " public " in ln else op
            if kind == "scf.if":
                arm[len(stack)] = (no, 0)
            stack.append((kind, rec))
            op = ""                                   # further braces on the line open plain regions
        for _ in range(max(-net, 0)):
            if stack:
                _, rec = stack.pop()
                arm.pop(len(stack), None)
                if rec is not None and not rec["where"]:      # the loop's location closes it
                    rec["where"] = locs.of(ln)[1]
    infos = tuple(LoopInfo(rec["where"], rec["depth"], rec["dot"], tuple(_merge(rec["loads"])),
                           min(rec["waits"]) if rec["waits"] else None, rec["commits"], tuple(rec["dots"]),
                           rec["exchange"], rec["parent"], tuple(rec["stores"].items()),
                           sum(b for ssa, (b, _, kind) in rec["smem"].items()
                               if ssa not in rec["dot_operands"] and kind in _REGISTER_USE), u, rec["arms"])
                  for rec, u in zip(loops, _unrolls(loops, defs)))
    pointers = [(no, re.search(r"tt\.atomic_(?:rmw|cas)\s+(?:\w+\s*,\s*)*(%[\w.#-]+)", ln)) for no, ln in enumerate(lines)
                if (m := _OP.match(ln)) and m.group(2) in ATOMIC_OPS]       # the pointer: the first SSA operand
    roots = tuple(dict.fromkeys(r for r in (root_of(p.group(1), no) for no, p in pointers if p) if r))
    return PipelineReport(kernel, arch, num_stages, infos, top["exchange"], roots)


def _unrolls(loops: list[dict], defs: Mapping[str, tuple[str, str]]) -> list[int]:
    """Per loop, the source iterations one of its iterations covers: u where Triton's unroller split it
    (the loop's constant step is u times the constant step of the next loop beside it, which starts at
    its upper bound, in the same scf.if branch: the remainder), else 1. Seen on sinkhorn_knopp (round 27):
    `tl.range(0, ITERS, loop_unroll_factor=2)` is `scf.for %0 to %g step %c2` then `scf.for %g to %ITERS step
    %c1`. A constant trip count leaves no remainder loop (or straight-line code): that unroll reads 1."""
    def const(v: str) -> int | None:
        op, ln = defs.get(v, ("", ""))
        m = re.search(r"arith\.constant\s+(-?\d+)\s*:", ln) if op == "arith.constant" else None
        return int(m.group(1)) if m else None
    out = [1] * len(loops)
    for i, rec in enumerate(loops):
        nxt = next((j for j in range(i + 1, len(loops)) if loops[j]["parent"] == rec["parent"]
                    and loops[j]["depth"] == rec["depth"]), None)
        # no next loop, or one in another branch (or after the if): no remainder
        if nxt is None or loops[nxt]["arms"] != rec["arms"] or not rec["bounds"] or not loops[nxt]["bounds"]:
            continue
        (_, ub, step), (lb2, _, step2) = rec["bounds"], loops[nxt]["bounds"]
        a, b = const(step), const(step2)
        if lb2 == ub and a and b and a > b > 0 and a % b == 0:
            out[i] = a // b
    return out


def _mma_layouts(lines: list[str]) -> dict[str, tuple[int, tuple[int, int], list[int]]]:
    """#mma aliases -> (versionMajor, warpsPerCTA (M, N), instrShape)."""
    out = {}
    for ln in lines:
        m = _MMA_DEF.match(ln.strip())
        if not m:
            continue
        body = m.group(2)
        ver = re.search(r"versionMajor = (\d+)", body)
        warps = re.search(r"warpsPerCTA = \[([\d, ]+)\]", body)
        instr = re.search(r"instrShape = \[([\d, ]+)\]", body)
        w = [int(x) for x in warps.group(1).split(",")] if warps else [1, 1]
        out[m.group(1)] = (int(ver.group(1)) if ver else 0, (w[-2], w[-1]) if len(w) >= 2 else (w[0], 1),
                           [int(x) for x in instr.group(1).split(",")] if instr else [])
    return out


def _dot(op: str, ln: str, where: str, mmas: Mapping[str, Any]) -> LoopDot | None:
    """A LoopDot from one dot op line (None when its operand shapes cannot be read)."""
    operands = _OPERAND.findall(ln)
    if len(operands) < 2:
        return None
    (kind_a, dims_a, t_a), (_, dims_b, t_b) = operands[0], operands[1]
    a, b = _dims(dims_a), _dims(dims_b)
    if len(a) < 2 or len(b) < 2:
        return None
    result = ln.rsplit("->", 1)[1] if "->" in ln else ""
    enc = re.search(r"(#mma\w*)\s*>", result)
    version, warps, instr = mmas.get(enc.group(1), (0, (1, 1), [])) if enc else (0, (1, 1), [])
    if op == "ttng.tc_gen5_mma":
        version = 5
    size = lambda t: _BYTES.get(t, 1 if t.startswith(("f8", "i8", "f4")) else 2)
    instr_n = instr[1] if len(instr) >= 2 else 8
    return LoopDot(op, a[-2], b[-1], a[-1], size(t_a), size(t_b), version, warps, instr_n,
                   version == 3 and kind_a == "tensor", where)


def _collect(rec: dict, op: str, ln: str, branch: bool, locs: _Locations, ring_of,
             mmas: Mapping[str, Any] = {}, root_of=lambda v: "", thread_bytes=lambda ln: 0.0,
             run_bytes=lambda ln: (0, False), shared_load=lambda ln: None) -> None:
    if op in DOT_OPS:
        rec["dot"] = True
        dot = _dot(op, ln, locs.of(ln)[1], mmas)
        args = re.search(rf"{re.escape(op)}\s+(%[\w.#-]+)\s*,\s*(%[\w.#-]+)", ln)
        if args:
            rec["dot_operands"] |= {args.group(1), args.group(2)}
        if dot is not None and args:
            conflict = lambda v: rec["smem"].get(v, (0.0, 1.0, ""))[1]
            dot = replace(dot, a_conflict=conflict(args.group(1)), b_conflict=conflict(args.group(2)))
        if dot is not None:
            rec["dots"].append(dot)
    elif op == "ttg.local_load":
        got = shared_load(ln)
        if got:
            ssa, nbytes, factor, kind = got
            rec["smem"][ssa] = (nbytes * factor, factor, kind)
    elif op == "ttg.async_wait":
        m = _WAIT.search(ln)
        if m:
            rec["waits"].append(int(m.group(1)))
    elif op == "ttg.async_commit_group":
        rec["commits"] += 1
    elif op == "tt.store":
        ptr = re.search(r"tt\.store\s+(%[\w.#-]+)", ln)
        root = root_of(ptr.group(1)) if ptr else ""
        if root:
            rec["stores"][root] = rec["stores"].get(root, 0) + _plain_tile(ln)[1]
    elif op in ASYNC_OPS or op in PLAIN_OPS:
        inlined: list = []                          # one helper call's loads share its call site: its callees part them
        name, where, file, line, col = locs.of(ln, inlined)
        ssa = (_OP.match(ln).group(1) or "").lstrip("%")
        name = name or re.sub(r"_\d+$", "", ssa) or "?"
        entry = rec["loads"].setdefault((name, where, col, tuple(inlined)) if where else (name, ssa), {
            "name": name, "where": where, "col": col, "file": file, "line": line, "kinds": set(), "rings": {},
            "plain": None, "branch": False, "root": "", "thread_bytes": 0.0, "run": (0, False)})
        entry["branch"] = entry["branch"] or branch
        ptr = re.search(rf"{re.escape(op)}\s+(%[\w.#-]+)", ln)
        entry["root"] = entry["root"] or (root_of(ptr.group(1)) if ptr else "")
        entry["run"] = entry["run"] if entry["run"][0] else run_bytes(ln)
        if op in PLAIN_OPS:
            entry["plain"] = _plain_tile(ln)
            entry["thread_bytes"] = thread_bytes(ln)
            return
        entry["kinds"].add(ASYNC_OPS[op])
        pattern = (r"async_copy_global_to_local\s+%[\w.#-]+\s*,\s*(%[\w.#-]+)"
                   if op == "ttg.async_copy_global_to_local" else r"\]\s*(%[\w.#-]+)")
        dst = re.search(pattern, ln)
        ring = ring_of(dst.group(1)) if dst else None
        if ring is not None:
            entry["rings"][ring[0]] = (ring[1], ring[2])


def _reduction(rec: dict, op: str, ln: str, lay: Any) -> None:
    """A tt.reduce in the loop body: its axis is on the op's line, its types on the line closing its
    region (``}) : (tensor<..., #in>) -> tensor<..., #out>``); one whose input layout spreads the axis
    over several warps goes through shared memory (rec["exchange"]: its result's elements per thread)."""
    if op == "tt.reduce":
        m = re.search(r"axis = (\d+)", ln)
        rec["axes"].append(int(m.group(1)) if m else None)
        return
    m = _REDUCE_TYPES.match(ln)
    if not m or not rec["axes"]:
        return
    axis = rec["axes"].pop()
    src = re.match(r"tensor<((?:\d+x)+)\w+, (.*)>$", m.group(1))
    if axis is None or not src:
        return
    kind, body = lay._resolve(src.group(2))
    wpc = _ints(body, "warpsPerCTA") if kind == "#ttg.blocked" else []
    if axis < len(wpc) and wpc[axis] > 1:
        out = re.match(r"tensor<((?:\d+x)+)\w+, (.*)>$", m.group(2))
        threads = 32 * math.prod(wpc)
        elems = lay.elements(_dims(out.group(1)), out.group(2), threads) if out else 1.0
        rec["exchange"] = max(rec["exchange"], elems)


def _merge(loads: Mapping[tuple, dict]) -> Iterable[LoopLoad]:
    seen: dict[tuple[str, str], int] = {}
    for entry in loads.values():
        seen[(entry["name"], entry["where"])] = seen.get((entry["name"], entry["where"]), 0) + 1
    for entry in loads.values():
        if entry["where"] and seen[(entry["name"], entry["where"])] > 1:   # two loads on one line
            entry["where"] += f":{entry['col']}"
        source = linecache.getline(entry["file"], entry["line"]).strip() if entry["file"] else ""
        if entry["kinds"]:
            rings = list(entry["rings"].values())
            buffers = max((d[0] for d, _ in rings if d), default=1)
            tiles = [_slot(d[1:], t) for d, t in rings] or [("?", 0)]
            yield LoopLoad(entry["name"], "+".join(sorted(entry["kinds"])), buffers, tiles[0][0],
                           sum(b for _, b in tiles), len(rings), entry["branch"], entry["where"], source,
                           entry["root"], *entry["run"])
        else:
            tile, nbytes = entry["plain"] or ("?", 0)
            yield LoopLoad(entry["name"], "plain", 0, tile, nbytes, 0, entry["branch"], entry["where"], source,
                           entry["root"], *entry["run"], entry["thread_bytes"])


def analyze(res: Any) -> PipelineReport:
    """The pipelining report of a CompileResult compiled with keep_ir=True (ValueError without TTGIR)."""
    if not getattr(res, "ttgir", None):
        raise ValueError("no TTGIR: compile with keep_ir=True (and status ok)")
    return parse_ttgir(res.ttgir, res.kernel, res.arch, res.num_stages)


# ------------------------------------------------------------- comparisons
SIGNIFICANT = 0.10          # a load carrying < 10 % of the loop's bytes per iteration does not decide a premise


def _describe(ld: LoopLoad | None) -> str:
    if ld is None:
        return "absent"
    if not ld.pipelined:
        return "plain tt.load"
    return f"{ld.kind} {ld.buffers} buffer{'s' if ld.buffers != 1 else ''} ({ld.ahead} ahead)"


def prefetch_change(base: PipelineReport, cand: PipelineReport) -> tuple[bool, str]:
    """(deeper, why): does the candidate keep a significant load of the main loop further
    ahead than the baseline? `why` names each load's change (the evidence for a premise)."""
    bm, cm = base.main, cand.main
    if cm is None:
        return False, "the kernel has no scf.for loop: num_stages has nothing to pipeline"
    before = {(ld.name, ld.where): ld for ld in (bm.loads if bm else ())}
    total = sum(ld.slot_bytes for ld in cm.loads) or 1
    parts, deeper, minor = [], False, []
    for ld in cm.loads:
        old = before.get((ld.name, ld.where))
        share = ld.slot_bytes / total
        change = (f"{_describe(old)} -> {_describe(ld)}" if _describe(old) != _describe(ld)
                  else f"stays {_describe(ld)}")
        text = f"{ld.name} [{ld.tile}] {change}"
        if share < SIGNIFICANT:
            minor.append(f"{text}, {100 * share:.0f}% of the loop's bytes")
            continue
        parts.append(text)
        deeper = deeper or ld.ahead > (old.ahead if old else 0)
    where = f" ({cm.where})" if cm.where else ""
    why = f"TTGIR of the main loop{where}, num_stages {base.num_stages} -> {cand.num_stages}: " + "; ".join(parts)
    if minor:
        why += "; minor: " + "; ".join(minor)
    if not any(ld.pipelined for ld in cm.loads):
        why += ". No load of the loop is pipelined"
    elif not deeper:
        why += ". No load that matters is prefetched further ahead"
    return deeper, why


def fill_rows(card: Any, cfg: Mapping[str, Any], report: PipelineReport,
              points: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Main-loop iterations per CTA at each workload point against the tiles in flight.
    A CTA with n iterations overlaps at most n - 1 of them with a copy in flight; with
    n <= ahead the prologue's extra tiles fall past the end (predicated off) and the
    pipeline never reaches its depth. Points where the kernel does not state its loop
    iterations (``loop_iterations`` None) are left out."""
    ahead = report.ahead
    rows = []
    for point in points:
        pt = card.resolve_point(point)
        n = card.loop_iterations(cfg, pt)
        if n is None:
            continue
        n = int(n)
        note = ""
        if n <= ahead:
            note = f"too few: {n} iteration(s) cannot fill {ahead} tile(s) ahead"
        elif ahead and n < 4 * (ahead + 1):
            note = "short: the prologue and drain are a large share of the loop"
        grid = card.grid(cfg, pt)
        rows.append({"point": ", ".join(f"{k}={v}" for k, v in pt.items()), "ctas": None if grid is None else int(grid),
                     "iterations": n, "ahead": ahead,
                     "prologue_share": round(min(1.0, ahead / n), 3) if n else None, "note": note})
    return rows
