"""The loops of a kernel's SASS (``cuobjdump -sass``): what one trip of each loop issues.

    loops = sass_loops(result.sass)          # innermost first, then by address
    lp = main_loop(loops)                    # the loop rank costs (see its doc)
    lp.instructions, lp.global_load_bytes, lp.xu, lp.mma

A loop is a backward branch: ``BRA`` to an address at or before its own; its body is
every instruction from the target to the branch. ptxas unrolls Triton's loops (a
``for`` over column chunks becomes a body with 4 chunks' loads hoisted to its top and
a remainder loop), so a trip of the SASS loop can cover several source iterations:
:func:`unroll` recovers that factor from the bytes the trip loads. What a trip issues
(instructions, special-function ops, tensor-core ops) is what the rank model's issue
term costs. Pure text parsing: no GPU, no CUDA toolkit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .sass_chain import XU_CYCLES

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_BRA = re.compile(r"^BRA(\.\w+)*$")
# global load widths by suffix (bytes per thread); plain LDG.E is 32 bits
_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


@dataclass(frozen=True)
class SassLoop:
    start: int                  # byte address of the loop's first instruction
    end: int                    # address of its backward branch
    instructions: int           # instructions in one trip (NOPs left out)
    global_load_bytes: int      # bytes one thread loads from global memory per trip (LDG)
    global_loads: int           # LDG instructions per trip
    xu: int                     # XU-pipe ops per trip: special functions (MUFU.EX2, .RCP, ...) and the
                                # int <-> float conversions I2F / F2I / F2F (sass_chain.is_xu)
    mma: int                    # tensor-core instructions per trip (HMMA, HGMMA, ...)
    async_copies: int           # LDGSTS / UTMALDG per trip (pipelined loads)
    inner: bool                 # no other loop inside it
    barriers: int = 0           # block-wide barriers per trip (BAR.SYNC: e.g. a reduction across warps)
    shared_ops: int = 0         # shared-memory loads and stores per trip (LDS / STS / ATOMS; not ldmatrix,
                                # stmatrix or async copies): a cross-warp exchange's round trips
    load_waves: int = 0         # runs of global loads per trip that a store or barrier separates: a load
                                # cannot be hoisted above an earlier store (it may alias), so each run
                                # waits the memory latency on its own
    narrow_stores: int = 0      # of shared_ops, the byte stores (STS.U8 / .S8): registers written to shared
                                # memory a byte at a time -- an 8-bit operand transposed for the tensor
                                # cores -- bank-conflicted, see rank's term (g)
    alu: int = 0                # integer / logic ops of the ALU pipe per trip (ISETP, LOP3, SEL, IADD3, ...)
    mma_waits: int = 0          # waits for every warpgroup MMA in flight to complete (WARPGROUP.DEPBAR.LE
                                # gsb0, 0x0): each exposes one wgmma's latency to the warpgroup; ptxas's
                                # serialized wgmma waits after every one
    chain: float = 0.0          # cycles one warp alone on its scheduler takes per trip: its in-order issue
                                # and dependency chains (sass_chain.trip_cycles); 0 when not worked out
    dependent_loads: float = 0.0  # global loads per trip whose address waits for an earlier load's data
                                  # (sass_chain.dependent_loads: a gather's index, a search's next probe)
    load_waits: float = 0.0     # full global-load latencies one warp waits out per trip (sass_chain.load_waits:
                                # once per round of loads it uses before it issues the next)
    local_bytes: int = 0        # bytes one thread stores to and loads from local memory per trip (STL / LDL:
                                # registers ptxas spilled)
    commits: int = 0            # async-copy groups committed per trip (LDGDEPBAR): with the source loop's
                                # commits per iteration, the unroll of a loop that loads only by cp.async


def _ldg_bytes(op: str) -> int:
    width = 4
    for part in op.split(".")[1:]:
        width = _WIDTH.get(part, width)
    return width


def instructions(sass: str) -> list[tuple[int, str, str]]:
    """(address, opcode, operands) of every instruction in the listing, in order."""
    return [(int(m.group(1), 16), m.group(3), m.group(4).strip()) for m in _LINE.finditer(sass or "")]


def sass_loops(sass: str) -> list[SassLoop]:
    """Every loop (backward branch) of the listing; innermost loops first, then by address."""
    insts = instructions(sass)
    spans = []
    for addr, op, args in insts:
        if _BRA.match(op):
            target = re.findall(r"0x([0-9a-f]+)", args)
            if target:
                to = int(target[-1], 16)
                if to < addr:                          # a branch to itself is the exit trap
                    spans.append((to, addr))
    loops = []
    for start, end in spans:
        inner = not any(s != (start, end) and start <= s[0] and s[1] <= end for s in spans)
        loops.append(_span(insts, start, end, inner, sass))
    return sorted(loops, key=lambda lp: (not lp.inner, lp.start))


def straight_line(sass: str) -> SassLoop | None:
    """The whole listing as one trip, for a kernel with no loop at all (its source loop was a
    tl.static_range, or ptxas unrolled it fully): what one CTA's threads run once. None when the
    listing is empty or has a loop."""
    insts = instructions(sass)
    if not insts or sass_loops(sass):
        return None
    return _span(insts, insts[0][0], insts[-1][0], True, sass)


def _span(insts: list[tuple[int, str, str]], start: int, end: int, inner: bool, sass: str = "") -> SassLoop:
    """The counts of the instructions from address `start` to `end` (NOPs left out); with the listing,
    one warp's chain cycles, dependent loads and load waits too (sass_chain)."""
    from .sass_chain import dependent_loads, is_xu, load_waits, trip_cycles
    kept = [(op, args) for a, op, args in insts if start <= a <= end and not op.startswith("NOP")]
    body = [op for op, _ in kept]
    ldg = [op for op in body if _is_global_load(op)]
    return SassLoop(start, end, len(body), sum(_ldg_bytes(op) for op in ldg), len(ldg),
                    sum(is_xu(op) for op in body),
                    sum(op.startswith(("HMMA", "HGMMA", "IGMMA", "QGMMA", "UTCHMMA", "UTCMMA", "IMMA", "QMMA", "OMMA"))
                        for op in body),
                    sum(op.startswith(("LDGSTS", "UTMALDG")) for op in body), inner,
                    sum(op.startswith("BAR.SYNC") or op == "BAR" for op in body),
                    sum(_is_shared_op(op) for op in body), _load_waves(body),
                    sum(op.startswith(("STS.U8", "STS.S8")) for op in body), sum(op.split(".")[0] in ALU_OPS for op in body),
                    sum(op.startswith("WARPGROUP.DEPBAR") and args.replace(" ", "").endswith("gsb0,0x0")
                        for op, args in kept),
                    trip_cycles(sass, start, end) if sass else 0.0,
                    dependent_loads(sass, start, end) if sass else 0.0,
                    load_waits(sass, start, end) if sass else 0.0,
                    sum(_ldg_bytes(op) for op in body if _is_local(op)),
                    sum(op == "LDGDEPBAR" for op in body))


def _is_local(op: str) -> bool:
    """A thread's load from or store to local memory (LDL / STL): a spilled register's round trip."""
    return op.startswith(("LDL", "STL"))


def local_bytes(sass: str) -> int:
    """Bytes one thread moves to and from local memory over the whole listing, each instruction once."""
    return sum(_ldg_bytes(op) for _, op, _ in instructions(sass) if _is_local(op))


def _load_waves(ops: list[str]) -> int:
    """Runs of LDG in a trip separated by a global store, reduction or barrier."""
    waves, open_run = 0, False
    for op in ops:
        if _is_global_load(op):
            waves += not open_run
            open_run = True
        elif op.startswith(("STG", "RED", "ATOMG", "BAR")):
            open_run = False
    return waves


def _is_global_load(op: str) -> bool:
    """A load from global memory into registers (LDG), not an async copy into shared memory (LDGSTS)
    nor the barrier that waits for a group of them (LDGDEPBAR)."""
    return op.startswith("LDG") and not op.startswith(("LDGSTS", "LDGDEPBAR"))


def _is_shared_op(op: str) -> bool:
    """A warp-level shared-memory load or store (LDS, STS, ATOMS), not ldmatrix / stmatrix (a dot's
    operands, costed as shared reads) nor an async copy (LDGSTS: a global load)."""
    return op.startswith(("LDS", "STS", "ATOMS")) and not op.startswith(("LDSM", "STSM", "LDGSTS"))


def main_loop(loops: list[SassLoop]) -> SassLoop | None:
    """The loop that carries the kernel's work: among innermost loops, the one with tensor-core
    ops, else the one that loads the most bytes per trip, else the longest -- unless that one
    neither loads nor multiplies and a loop around it loads: then the innermost such loop (a
    chunk loop whose inner loop computes on the chunk it loaded: a top-k's k selection passes)."""
    inner = [lp for lp in loops if lp.inner] or loops
    if not inner:
        return None
    best = max(inner, key=lambda lp: (lp.mma > 0, lp.global_load_bytes + 16 * lp.async_copies, lp.instructions))
    if best.mma or best.global_loads or best.async_copies:
        return best
    return next((lp for lp in _around(loops, best) if lp.global_loads or lp.async_copies), best)


def _within(inner: SassLoop, outer: SassLoop) -> bool:
    """Whether `inner` is a loop inside `outer` (not itself)."""
    return inner is not outer and outer.start <= inner.start and inner.end <= outer.end


def _around(loops: list[SassLoop], inner: SassLoop) -> list[SassLoop]:
    """The loops around `inner`, innermost first."""
    return sorted((lp for lp in loops if _within(inner, lp)), key=lambda lp: lp.end - lp.start)


def nested(loops: list[SassLoop], outer: SassLoop) -> list[SassLoop]:
    """The loops directly inside `outer` (inside no other loop inside it), by address."""
    inside = [lp for lp in loops if _within(lp, outer)]
    return sorted((lp for lp in inside if not any(_within(lp, o) for o in inside)), key=lambda lp: lp.start)


def beside(loops: list[SassLoop], main: SassLoop) -> list[SassLoop]:
    """The outermost loops that neither hold `main` nor sit in it, by address: a CTA's other loops before
    or after its main loop (a triangular solve's substitution after its K loop)."""
    free = [lp for lp in loops if lp is not main and not _within(main, lp) and not _within(lp, main)]
    return sorted((lp for lp in free if not any(_within(lp, o) for o in free)), key=lambda lp: lp.start)


def outside(sass: str) -> SassLoop | None:
    """What the listing issues outside every loop: a CTA's prologue and epilogue, run once (a row
    block's cross-warp sum and store after its loop). None for an empty listing."""
    insts = instructions(sass)
    if not insts:
        return None
    return own(_span(insts, insts[0][0], insts[-1][0], False), sass_loops(sass))


def enclosing(loops: list[SassLoop], inner: SassLoop) -> SassLoop | None:
    """The smallest loop around `inner` (None when it sits in none)."""
    return next(iter(_around(loops, inner)), None)


def own(outer: SassLoop, loops: list[SassLoop]) -> SassLoop:
    """What one trip of `outer` issues outside the loops inside it (its own work: a segment loop's
    offsets, its cross-warp sum and its store)."""
    return with_trips(outer, [(lp, 0.0) for lp in nested(loops, outer)])


_COUNTS = ("instructions", "global_load_bytes", "global_loads", "xu", "mma", "async_copies", "barriers",
           "shared_ops", "load_waves", "narrow_stores", "alu", "mma_waits", "chain",
           "dependent_loads", "load_waits", "local_bytes", "commits")


def with_trips(outer: SassLoop, inner: list[tuple[SassLoop, float]]) -> SassLoop:
    """One trip of `outer` with each of its inner loops run the given number of trips (the listing
    holds each inner body once): every count is outer's, plus (trips - 1) x the inner loop's."""
    add = {f: sum((t - 1) * getattr(lp, f) for lp, t in inner) for f in _COUNTS}
    return SassLoop(outer.start, outer.end, **{f: max(0, round(getattr(outer, f) + add[f])) for f in _COUNTS},
                    inner=outer.inner)


def unroll(loop: SassLoop, threads: int, bytes_per_iteration: int, thread_bytes: float = 0.0) -> int:
    """Source iterations one trip covers: the trip's global-load bytes per thread over what one source
    iteration loads per thread -- `thread_bytes`, its register loads' elements per thread with the
    replicated ones (a load in a broadcast layout is issued by every thread holding a copy), when known,
    else the TTGIR's bytes over the threads; 1 when unknown or the trip loads less. From thread_bytes, a
    ratio no whole number explains to within UNROLL_SLACK (a load Triton issued twice for two layouts)
    reads 1: an unrolled trip repeats every load exactly."""
    if loop.global_load_bytes <= 0:
        return 1
    if thread_bytes > 0:
        r = loop.global_load_bytes / thread_bytes
        return max(1, round(r)) if abs(r - round(r)) <= UNROLL_SLACK else 1
    if bytes_per_iteration <= 0:
        return 1
    return max(1, round(loop.global_load_bytes * threads / bytes_per_iteration))


# how far from a whole number a trip's bytes over one iteration's may be and still read as an unroll
# (session 16: selective_scan's 16-warp trip loads 40 bytes a thread against 24 for one chunk -- u was
# read as 6, issue and chain divided by 6; exact unrolls read 2.0, 4.0)
UNROLL_SLACK = 0.15


# one XU op (a special function or an int <-> float conversion: 16 lanes per clock per SM on
# sm_80..sm_120, sass_chain.XU_OPCODES) takes as many issue slots of a 128-lane op as it holds its pipe
XU_WEIGHT = XU_CYCLES


# the integer / logic ops of the ALU pipe (Nsight Compute's "alu": bit manipulation, logic and integer
# instructions other than IMAD / IMUL, which the FMA pipe runs), and the float compares and selects
ALU_OPS = frozenset(("IADD3", "IADD", "ISETP", "LOP3", "LOP", "PLOP3", "SHF", "SHL", "SHR", "SEL", "IMNMX", "VIMNMX",
                     "LEA", "ISCADD", "SGXT", "PRMT", "BMSK", "FLO", "BREV", "IABS", "P2R", "R2P",
                     "FSETP", "FSEL", "FMNMX"))


def issue_slots(loop: SassLoop, alu_cycles: float = 1.0) -> float:
    """Scheduler cycles of one warp's trip: every instruction one issue slot, XU ops XU_WEIGHT (the
    special-function and conversion units are an eighth of the FP32 lanes: CUDA C++ Programming
    Guide, arithmetic instruction throughput; which conversions, measured: sass_chain.XU_OPCODES) --
    or, when more than 1 / alu_cycles of them are ALU ops, alu_cycles per ALU op: a warp's integer compare, select or logic op takes 32 / (ALU lanes per
    sub-partition) cycles of its pipe (2 on Volta to Hopper: spec sm.alu_lanes_per_partition), and
    the other pipes run meanwhile. A bitonic sort network or a histogram is ALU-bound; a GEMM's
    address arithmetic is not."""
    return max(loop.instructions + (XU_WEIGHT - 1) * loop.xu, alu_cycles * loop.alu)
