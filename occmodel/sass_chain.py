"""How long one warp takes to run one trip of a SASS loop when it has its scheduler to itself.

A warp issues in program order, at most one instruction a cycle, and an instruction waits until the
registers it reads are written (the scoreboard) and its pipe is free. So one warp's trip takes at
least its instruction count, and longer when the body is a chain of dependent operations (a
recurrence's exp -> multiply -> add per step, a reduction tree of shuffles): the critical path.
:func:`trip_cycles` replays the listing's trip in order with a latency and a pipe occupancy for each
class of instruction (``LATENCY`` / ``PIPE_CYCLES``, ``XU_OPCODES``), three trips back to back so that registers a
trip carries into the next one count, and returns the cycles one trip adds in that steady state.

What it leaves out, on purpose: the latency of global loads (LDG; the rank model's latency term
charges the memory system's wait), asynchronous tensor-core work (HGMMA / the wgmma waits: term (e)),
and other warps (a scheduler with w warps interleaves them: the rank model takes the larger of this
chain and w x the trip's issue slots). The latencies are the typical figures of microbenchmark papers
for Volta-Hopper (dependent FP32 arithmetic 4 cycles, shared loads ~30, special functions ~18), not
per-chip measurements; the result is an estimate of the kind the rank model's issue term needs, not a
cycle-exact simulation. Pure text parsing: no GPU.
"""

from __future__ import annotations

import re
from functools import lru_cache

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@(!?U?P\w+)\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_REG = re.compile(r"\b(U?R\d+|U?P\d)\b")
_PRED = re.compile(r"^!?U?P(\d|T)$")
_NUMBERED = re.compile(r"(U?[RP])(\d+)")

# Cycles from an instruction's issue until a dependent instruction can issue, by opcode prefix (the
# first that matches; DEFAULT_LATENCY otherwise). Global loads (None) take the memory latency the caller
# gives; async copies and wgmma 0: the rank model charges their waits in its own terms.
LATENCY = (
    ("MUFU", 18), ("LDS", 30), ("LDSM", 30), ("LDL", 32), ("LD.", None), ("SHFL", 24), ("S2R", 20),
    ("S2UR", 20), ("CS2R", 4), ("F2F", 8), ("I2F", 8), ("F2I", 8), ("FRND", 8), ("HMMA", 32), ("IMMA", 32),
    ("DFMA", 8), ("DADD", 8), ("DMUL", 8), ("LDGSTS", 0), ("LDG", None), ("ATOMG", None), ("HGMMA", 0), ("IGMMA", 0),
    ("QGMMA", 0), ("MATCH", 24), ("VOTE", 4), ("REDUX", 24), ("POPC", 8), ("FLO", 8), ("BREV", 8),
)
DEFAULT_LATENCY = 4
# The XU pipe: special functions and the int <-> float / float <-> float conversions, 4 lanes a
# sub-partition on sm_80..sm_120 (16 an SM), so XU_CYCLES a warp op. Which conversions run there was
# measured on an H100 (reports/GPU_NOTES.md section 28, scripts/convert_pipe_probe.py): I2F.S16, I2F.S8,
# F2F.BF16.F32 and F2I took 8.6-9.1 scheduler cycles a warp op, as MUFU.EX2's 8.1; sm_90's I2FP.F32.S32
# (a 32-bit integer to fp32) and F2FP.*.PACK_AB (two fp32 to a packed fp16 / bf16 pair) did not (3.6-3.7
# cycles for a step of three instructions): they are not XU ops. FRND (round to integral) is counted
# with the conversions, not measured. An opcode is matched by its name before the first dot.
XU_OPCODES = frozenset(("MUFU", "I2F", "F2I", "F2F", "FRND"))
XU_CYCLES = 8
# Cycles a warp instruction holds its pipe on one SM sub-partition (32 / the pipe's lanes there on
# sm_80..sm_120): the XU pipe above, the integer / logic ALU and fp64 16, FP32 32. Other instructions
# take one issue cycle.
PIPE_CYCLES = (("DFMA", "fp64", 2), ("DADD", "fp64", 2), ("DMUL", "fp64", 2))
# A block-wide barrier: the warp waits for the others (running the same code in step) and the
# barrier's own round trip before its next instruction.
BARRIER_CYCLES = 20
# Instructions that write no register (stores, branches, barriers, async copies and their waits).
_NO_DEST = ("ST", "RED", "BAR", "BRA", "EXIT", "DEPBAR", "LDGDEPBAR", "LDGSTS", "MEMBAR", "FENCE", "ERRBAR",
            "NOP", "CCTL", "WARPGROUP", "BSSY", "BSYNC", "WARPSYNC", "CALL", "RET", "YIELD", "UTMA", "SYNCS",
            "ARRIVES", "JMP", "KILL", "BPT", "HGMMA", "IGMMA", "QGMMA", "UBLKCP", "UTMAPF", "PREEXIT")
TRIPS = 3
# Async-copy roles (_async_role); a DEPBAR's role is the count of groups it leaves in flight (>= 0).
COPY, COMMIT, SHARED = -1, -2, -3
_DEPBAR = re.compile(r"SB0,\s*(0x[0-9a-f]+|\d+)$")


def is_xu(op: str) -> bool:
    """True for an opcode the XU pipe runs (XU_OPCODES: MUFU.EX2, I2F.S16, F2F.BF16.F32; not I2FP / F2FP)."""
    return op.split(".", 1)[0] in XU_OPCODES


def _lookup(op: str, table, default):
    for prefix, *value in table:
        if op.startswith(prefix):
            return value if len(value) > 1 else value[0]
    return default


def _width(op: str) -> int:
    """Registers an instruction's destination spans."""
    if ".128" in op or op.startswith(("HMMA.16816.F32", "HMMA.1688.F32", "IMMA")) or op.endswith(".4"):
        return 4
    if ".64" in op or op.startswith(("IMAD.WIDE", "DADD", "DMUL", "DFMA", "HMMA")) or op.endswith(".2"):
        return 2
    return 1


@lru_cache(maxsize=4096)
def _opcode(op: str) -> tuple[bool, int, int, str | None, int, bool]:
    """(writes a register, destination width, latency, pipe, pipe cycles, is a barrier) of an opcode."""
    pipe = ("xu", XU_CYCLES) if is_xu(op) else _lookup(op, PIPE_CYCLES, None)
    return (not op.startswith(_NO_DEST), _width(op), _lookup(op, LATENCY, DEFAULT_LATENCY),
            pipe[0] if pipe else None, pipe[1] if pipe else 1, op.startswith("BAR.SYNC") or op == "BAR")


def _async_role(op: str, args: str) -> int | None:
    """An instruction's part in the async-copy (cp.async) protocol: COPY (an LDGSTS), COMMIT (LDGDEPBAR:
    the copies issued since the last commit form one group), SHARED (a shared-memory load: it reads
    what the copies wrote), or n >= 0 for DEPBAR.LE SB0, n (wait until at most n committed groups are
    still in flight); None for anything else."""
    if op.startswith("LDGSTS"):
        return COPY
    if op == "LDGDEPBAR":
        return COMMIT
    if op.startswith("LDS"):            # LDS, LDSM
        return SHARED
    if op.startswith("DEPBAR"):
        m = _DEPBAR.match(args.strip())
        return int(m.group(1), 16) if m else None
    return None


def _decode(op: str, guard: str | None, args: str) -> tuple[list[str], list[str], int, str | None, int, bool, int | None]:
    """(registers read, registers written, latency, pipe, pipe cycles, is a barrier, async-copy role)."""
    writes, width, latency, pipe, cycles, barrier = _opcode(op)
    ops = [a.strip() for a in args.split(",")]
    dests: list[str] = []
    if writes and ops and ops[0]:
        first = ops[0]
        if _REG.fullmatch(first) or _PRED.match(first):
            dests.append(first)
            if len(ops) > 1 and (_PRED.match(first) or _PRED.match(ops[1])):
                dests.append(ops[1])
    written = []
    for d in dests:
        m = _NUMBERED.fullmatch(d)
        if m and m.group(1).endswith("R"):
            written += [f"{m.group(1)}{int(m.group(2)) + i}" for i in range(width)]
        elif m:
            written.append(d)
    reads = _REG.findall(",".join(ops[len(dests):]))
    if guard:
        reads += _REG.findall(guard)
    return reads, written, latency, pipe, cycles, barrier, _async_role(op, args)


@lru_cache(maxsize=16)
def _listing(sass: str) -> tuple[tuple[int, tuple], ...]:
    """(address, decoded instruction) of every instruction of a listing but NOPs (a listing is decoded
    once: the rank model asks for several loops of the same one)."""
    return tuple((int(m.group(1), 16), _decode(m.group(3), m.group(2), m.group(4)))
                 for m in _LINE.finditer(sass) if not m.group(3).startswith("NOP"))


def decode(sass: str, start: int, end: int) -> list[tuple[list[str], list[str], int, str | None, int, bool, int | None]]:
    """The decoded instructions from address `start` to `end` (NOPs left out)."""
    return [d for a, d in _listing(sass or "") if start <= a <= end]


@lru_cache(maxsize=1024)
def trip_cycles(sass: str, start: int, end: int, memory: float = 0.0, loads_only: bool = False) -> float:
    """Cycles one trip of the loop from `start` to `end` adds for a warp alone on its scheduler, in
    steady state (module doc), a global load's data arriving `memory` cycles after it issues (0: at
    once -- the chain of the trip's own work); 0 for an empty span.

    Async copies (cp.async: LDGSTS) arrive the same `memory` cycles after the last copy of their
    group issues (LDGDEPBAR commits a group); a DEPBAR.LE SB0, n holds the warp until all but the n
    newest groups have arrived, and a shared load after it reads their data. With `loads_only`
    (dependent_loads) nothing but a global load waits for its operands -- not an async copy: a paged
    kernel's block-table entries, which address its copies, hit the cache (session 35) -- and a DEPBAR
    does not hold the warp: its wait reaches a later load only through the data (a cp.async ring that
    brings a gather's indices: LDGSTS -> DEPBAR -> LDS -> LDG)."""
    body = decode(sass, start, end)
    if not body:
        return 0.0
    ready: dict[str, float] = {}
    pipe_free: dict[str, float] = {}
    groups: list[float] = []          # arrival of each committed async-copy group still in flight
    copies: float | None = None       # the last issue of the copies not yet committed
    landed = 0.0                      # when the groups the last DEPBAR waited for arrived
    t = 0.0
    ends = []
    for _ in range(TRIPS):
        for reads, written, latency, pipe, cycles, barrier, role in body:
            operands = max([0.0] + [ready.get(r, 0.0) for r in reads])
            if role == SHARED:
                operands = max(operands, landed)
            waits = not loads_only or latency is None
            at = max(t, operands) if waits else t
            if role is not None and role >= 0:
                cut = max(0, len(groups) - role)        # the groups older than the `role` newest
                landed, groups = max([landed] + groups[:cut]), groups[cut:]
                if not loads_only:
                    at = max(at, landed)
            elif role == COPY:
                copies = max(at, copies or 0.0)
            elif role == COMMIT and copies is not None:
                groups.append(copies + memory)
                copies = None
            if pipe is not None:
                at = max(at, pipe_free.get(pipe, 0.0))
                pipe_free[pipe] = at + cycles
            for w in written:
                ready[w] = max(at, operands) + (memory if latency is None else latency)
            t = at + (BARRIER_CYCLES if barrier else 1)
        ends.append(t)
    return (ends[-1] - ends[0]) / (TRIPS - 1)


_FAR = 1e6


def load_waits(sass: str, start: int, end: int) -> float:
    """Times per trip one warp waits out a global load's full latency: the trip replayed with loads
    that take _FAR cycles, less its own chain, over _FAR. A trip that issues all its loads before it
    uses any waits once; one whose loads feed one another, or that uses each load before it issues
    the next (ptxas interleaves them when registers are short), waits once per such round; loads one
    trip issues for the next are not waited on."""
    if not decode(sass, start, end):
        return 0.0
    return max(0.0, (trip_cycles(sass, start, end, _FAR) - trip_cycles(sass, start, end)) / _FAR)


def dependent_loads(sass: str, start: int, end: int) -> float:
    """Global loads per trip whose address waits for an earlier load's data (a gather's index, a
    search's next probe, a block table's entry): the trip replayed with only loads stalling on their
    operands, loads taking _FAR cycles, less the same with loads at once, over _FAR. 0 for a trip whose
    loads all have addresses known up front."""
    if not decode(sass, start, end):
        return 0.0
    slow = trip_cycles(sass, start, end, _FAR, True)
    return max(0.0, (slow - trip_cycles(sass, start, end, 0.0, True)) / _FAR)
