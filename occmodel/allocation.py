"""Triton's shared-memory allocation, read from the IR and replayed in Python.

    text = triton_compat.allocate_shared(res.ttgir, cc)     # the TTGIR after Triton's allocator
    alloc = parse_allocated(text)
    alloc.shared                       # ttg.shared: bytes Triton asked for (metadata.shared)
    alloc.buffers                      # every buffer: kind, shape, bytes, alignment, offset, liveness
    offsets, total = replay([b.bytes for b in alloc.buffers], alloc.buffers)   # == the compiler's

What the allocator does (``lib/Analysis/Allocation.cpp``, triton 3.6 and 3.9):

* **buffers**: each ``ttg.local_alloc`` (explicit: shape x element bits / 8 bytes,
  aligned to its encoding's alignment -- 16 for ``swizzled_shared``, 128 x maxPhase for
  ``nvmma_shared``, or an ``alignment`` attribute) and the *scratch* of ops that
  exchange data through shared memory (``ttg.convert_layout``, ``tt.reduce``,
  ``tt.scan``, atomics...; 128-aligned; 3.9 writes its size as ``allocation.size``);
* **liveness**: ops are numbered in post-order; an explicit buffer is live over the
  ops where its value or any alias of it (``memdesc_index`` views, block arguments
  it is passed to) is live, by MLIR's block liveness on the ``cf`` form; a scratch
  buffer only at its own op;
* **offsets**: buffers sorted by size, largest first (stable), placed by the
  triple-based first fit of "Algorithms for Compile-Time Memory Optimization", then
  bumped by first-fit graph colouring until no two buffers live at the same time
  overlap; ``ttg.shared`` = the highest end.

:func:`replay` reimplements the last step; :func:`parse_allocated` reads the rest.
A buffer is keyed by what stays the same across configs of one code path (op, source
variable, source line, rank, shared encoding, occurrence), so buffers can be matched between compiles;
a layout conversion also records the value it converts (``Buffer.src``: its own location is the
one Triton's layout passes gave it, which can move between configs -- see
:func:`occmodel.derive.same_conversions`).
Pure: string processing, no triton.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .pipeline import _BYTES, _Locations

SCRATCH_ALIGN = 128
_OPNAME = re.compile(r'^\s*(?:(%[\w.#$-]+(?::\d+)?(?:\s*,\s*%[\w.#$-]+)*)\s*=\s*)?"?([a-z_][\w]*\.[\w.]+)"?')
_VALUE = re.compile(r"%[\w.#$-]+")
_BLOCK = re.compile(r"^\s*\^(bb\d+)(?:\((.*)\))?:")
_SUCC = re.compile(r"\^(bb\d+)(?:\(([^)]*)\))?")
_OFFSET = re.compile(r"allocation\.offset = (\d+)")
_SIZE = re.compile(r"allocation\.size = (\d+)")
_SHARED = re.compile(r"ttg\.shared = (\d+)")
_MEMDESC = re.compile(r"!ttg\.memdesc<((?:\d+x)+)([a-zA-Z]\w*)((?:, [^,>]+)*)>")
_TENSOR = re.compile(r"tensor<((?:\d+x)+)([a-zA-Z!][\w.<>]*?)(?:, (#[\w.]+))?>")
_ENC_DEF = re.compile(r"^(#[\w]+)\s*=\s*(#ttg\.\w+)<\{(.*)\}>")


class AllocationError(ValueError):
    """The IR could not be read as an allocated TTGIR module."""


@dataclass(frozen=True)
class Buffer:
    key: str                  # stable identity across configs: "kind op name@file:line#n"
    kind: str                 # "explicit" | "scratch"
    op: str                   # "ttg.local_alloc", "ttg.convert_layout", "tt.reduce", ...
    name: str                 # source variable, or "" when Triton recorded none
    where: str                # "file.py:123"
    dims: tuple[int, ...]     # explicit: the memdesc shape; scratch: the op's first tensor shape
    dtype: str                # element type of dims
    bytes: int
    alignment: int
    offset: int
    start: int                # liveness [start, end) in post-order op ids
    end: int
    src: str = ""             # a layout conversion: the value it converts, "name@file:line#n" of its
                              # defining op (n-th conversion of it in IR order); "" otherwise

    @property
    def label(self) -> str:
        base = self.name or self.op.split(".")[-1]
        return f"{base} ({self.op.split('.')[-1]}{', ' + self.where if self.where else ''})"


@dataclass(frozen=True)
class Allocation:
    shared: int                       # ttg.shared of the module
    buffers: tuple[Buffer, ...]       # in the allocator's insertion order (explicit, then scratch; IR order)

    @property
    def structure(self) -> tuple[str, ...]:
        """The buffer keys: equal for two configs that take the same code path."""
        return tuple(b.key for b in self.buffers)


# ------------------------------------------------------------------ replay
def _meets(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def replay(sizes, buffers) -> tuple[list[int], int]:
    """Offsets and total Triton's allocator gives buffers of these `sizes` (bytes) with the
    alignments and liveness of `buffers` (a sequence of Buffer, in insertion order).
    The algorithm of Allocation.cpp's computeOffsets (no partitioned or warp-specialized
    buffers: those are not read by :func:`parse_allocated`)."""
    n = len(sizes)
    live = [(b.start, b.end) for b in buffers]
    align = [b.alignment for b in buffers]
    order = sorted(range(n), key=lambda i: -sizes[i])            # stable: ties keep insertion order
    offset = [0] * n
    # calculateStarts: the triple-based first fit
    INF = 1 << 62
    triples: list[tuple[int, int, tuple[int, int]]] = [(0, 0, (0, INF))]   # (offset, seq, range)
    seq = 1
    todo = list(order)
    while todo:
        triples.sort(key=lambda t: (t[0], t[1]))                 # multimap: by offset, then insertion
        off, _, rng = triples.pop(0)
        chosen = None
        for i in todo:
            if not _meets(live[i], rng):
                continue
            if any(_meets(t[2], live[i]) for t in triples):
                continue
            chosen = i
            break
        if chosen is None:
            continue
        offset[chosen] = _align(off, align[chosen])
        xr = live[chosen]
        triples.append((offset[chosen] + sizes[chosen], seq, (max(rng[0], xr[0]), min(rng[1], xr[1]))))
        seq += 1
        if rng[0] < xr[0]:
            triples.append((off, seq, (rng[0], xr[1])))
            seq += 1
        if xr[1] < rng[1]:
            triples.append((off, seq, (xr[0], rng[1])))
            seq += 1
        todo.remove(chosen)

    def interference() -> dict[int, set[int]]:
        g: dict[int, set[int]] = {}
        for x in order:
            for y in order:
                if x != y and _meets(live[x], live[y]) and _meets(
                        (offset[x], offset[x] + sizes[x]), (offset[y], offset[y] + sizes[y])):
                    g.setdefault(x, set()).add(y)
        return g

    total = 0
    graph = interference()
    while True:
        total = 0
        colors = {i: (0 if i == order[0] else -1) for i in order}
        for x in order:                                             # first-fit colouring
            used = {colors[y] for y in graph.get(x, ()) if colors[y] >= 0}
            c = 0
            while c in used:
                c += 1
            colors[x] = c
        for x in order:
            new = max((offset[y] + sizes[y] for y in graph.get(x, ())), default=0)
            if colors[x] != 0:
                offset[x] = _align(new, align[x])
            total = max(total, offset[x] + sizes[x])
        graph = interference()
        if not graph:
            break
    return offset, total


# ------------------------------------------------------------------- parse
def _elem_bytes(dtype: str) -> int:
    if dtype in _BYTES:
        return _BYTES[dtype]
    m = re.match(r"[a-z]+(\d+)", dtype)
    return max(1, int(m.group(1)) // 8) if m else 4


def _encodings(lines: list[str]) -> dict[str, tuple[int, str]]:
    """Alignment and kind of each shared encoding alias (#shared -> (16, "swizzled_shared"),
    (128 x maxPhase, "nvmma_shared") ...)."""
    out = {}
    for ln in lines:
        m = _ENC_DEF.match(ln.strip())
        if not m:
            continue
        alias, kind, body = m.groups()
        if kind == "#ttg.nvmma_shared":
            sw = re.search(r"swizzlingByteWidth = (\d+)", body)
            width = int(sw.group(1)) if sw else 0
            out[alias] = (128 * (width // 16) if width else 128, "nvmma_shared")
        elif kind.endswith("_shared"):
            out[alias] = (16, kind.split(".")[-1])
    return out


def _uses(text: str) -> list[str]:
    """SSA values an op line uses (attributes and locations stripped)."""
    text = re.sub(r'loc\(.*$', "", text)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return _VALUE.findall(text)


@dataclass
class _Op:
    id: int
    name: str
    results: list[str]
    uses: list[str]
    head: str                 # the line that starts the op
    tail: str                 # the line that closes it (== head without regions)
    block: int                # index of its block in the function body (-1: nested)
    succ: list[tuple[str, list[str]]]


def _function_lines(lines: list[str]) -> list[str]:
    """Lines of the body of the public tt.func."""
    start = next((i for i, ln in enumerate(lines) if re.match(r"\s*tt\.func public", ln)), None)
    if start is None:
        raise AllocationError("no public tt.func in the module")
    depth, out = 0, []
    for ln in lines[start:]:
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', ln)
        depth += bare.count("{") - bare.count("}")
        out.append(ln)
        if depth <= 0 and len(out) > 1:
            break
    return out[1:-1]


def _ops(body: list[str]) -> tuple[list[_Op], list[tuple[str, list[str]]]]:
    """Ops in post-order ids and the function's blocks [(label, block args)]."""
    ops: list[_Op] = []
    blocks: list[tuple[str, list[str]]] = [("bb0", [])]
    stack: list[dict] = []                   # open region ops
    for ln in body:
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', ln)
        closes = bare.lstrip().startswith("}")
        if closes:
            rec = stack.pop() if stack else None
            net = bare.count("{") - bare.count("}")
            if rec is not None and net + 1 <= 0:
                ops.append(_Op(len(ops), rec["name"], rec["results"], rec["uses"] + _uses(ln), rec["head"], ln,
                               rec["block"] if not stack else -1, []))
            continue
        mb = _BLOCK.match(ln)
        if mb:
            if not stack:
                args = _VALUE.findall(re.sub(r"loc\([^()]*(?:\([^()]*\)[^()]*)*\)", "", mb.group(2) or ""))
                blocks.append((mb.group(1), args))
            continue
        m = _OPNAME.match(ln)
        if not m:
            continue
        results = _VALUE.findall(m.group(1) or "")
        if m.group(1) and re.search(r":(\d+)\s*$", m.group(1).strip()):
            base, count = results[0], int(re.search(r":(\d+)\s*$", m.group(1).strip()).group(1))
            results = [f"{base}#{i}" for i in range(count)] + [base]
        rest = ln[m.end():]
        net = bare.count("{") - bare.count("}")
        block = len(blocks) - 1 if not stack else -1
        if net > 0 and re.search(r"\(\{\s*$|\{\s*$", bare.rstrip()):
            stack.append({"name": m.group(2), "results": results, "uses": _uses(rest), "head": ln, "block": block})
            continue
        succ = [(s, _VALUE.findall(a.split(":")[0]) if a else []) for s, a in _SUCC.findall(rest)] \
            if m.group(2).startswith("cf.") else []
        ops.append(_Op(len(ops), m.group(2), results, _uses(rest), ln, ln, block, succ))
    return ops, blocks


def _liveness(ops: list[_Op], blocks) -> dict[str, tuple[int, int]]:
    """MLIR-style liveness: value -> [min id, max id + 1) over the top-level ops where it is live."""
    nb = len(blocks)
    by_block: list[list[_Op]] = [[] for _ in range(nb)]
    for op in ops:
        if op.block >= 0:
            by_block[op.block].append(op)
    # values used inside a nested region count as used by the top-level op around them
    owner_uses: dict[int, set[str]] = {}
    pending: list[str] = []
    for op in ops:
        if op.block < 0:
            pending.extend(op.uses)
        else:
            owner_uses[op.id] = set(op.uses) | set(pending)
            pending = []
    label = {b[0]: i for i, b in enumerate(blocks)}
    defs = [set(args) for _, args in blocks]
    uses = [set() for _ in range(nb)]
    for i in range(nb):
        for op in by_block[i]:
            uses[i] |= {v for v in owner_uses[op.id] if v not in defs[i]}
            defs[i] |= set(op.results)
    succ = [[label[s] for op in by_block[i] for s, _ in op.succ if s in label] for i in range(nb)]
    live_in = [set() for _ in range(nb)]
    live_out = [set() for _ in range(nb)]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(nb)):
            out = set().union(*[live_in[s] for s in succ[i]]) if succ[i] else set()
            inn = uses[i] | (out - defs[i])
            if out != live_out[i] or inn != live_in[i]:
                live_out[i], live_in[i], changed = out, inn, True
    ranges: dict[str, tuple[int, int]] = {}

    def extend(v: str, lo: int, hi: int) -> None:
        a, b = ranges.get(v, (lo, hi))
        ranges[v] = (min(a, lo), max(b, hi))

    for i in range(nb):
        body = by_block[i]
        if not body:
            continue
        values = live_in[i] | defs[i]
        for v in values:
            if v in live_in[i] or v in blocks[i][1]:
                first = 0
            else:
                first = next((k for k, op in enumerate(body) if v in op.results), None)
                if first is None:
                    continue
            if v in live_out[i]:
                last = len(body) - 1
            else:
                last = max((k for k, op in enumerate(body) if v in owner_uses[op.id]), default=first)
            ids = [op.id for op in body[first:last + 1]]
            extend(v, min(ids), max(ids) + 1)
    return ranges


def parse_allocated(text: str) -> Allocation:
    """Every shared buffer of the public kernel in an allocated TTGIR module (see the module doc)."""
    lines = text.splitlines()
    m = _SHARED.search(next((ln for ln in lines if ln.startswith("module")), ""))
    if not m:
        raise AllocationError("the module has no ttg.shared attribute: it was not through Triton's allocator")
    locs = _Locations(lines)
    aligns = _encodings(lines)
    ops, blocks = _ops(_function_lines(lines))
    ranges = _liveness(ops, blocks)
    # aliases: memdesc views of an alloc and block arguments it flows into
    alias: dict[str, str] = {}
    explicit = [op for op in ops if op.name == "ttg.local_alloc" and op.results]
    for op in explicit:
        alias[op.results[0]] = op.results[0]
    grew = True
    while grew:
        grew = False
        for op in ops:
            if op.name != "ttg.local_alloc" and "!ttg.memdesc" in op.tail.split(":")[-1] and op.results:
                src = next((alias[u] for u in op.uses if u in alias), None)
                if src and op.results[0] not in alias:
                    alias[op.results[0]] = src
                    grew = True
            for s, args in op.succ:
                tgt = next((b for b in blocks if b[0] == s), None)
                for k, v in enumerate(args):
                    if tgt and v in alias and k < len(tgt[1]) and tgt[1][k] not in alias:
                        alias[tgt[1][k]] = alias[v]
                        grew = True
    seen: dict[str, int] = {}
    out: list[Buffer] = []

    def key_of(kind: str, op: _Op, rank: int, enc: str = "") -> tuple[str, str, str]:
        name, where = locs.of(op.tail)[:2]
        if not name and not where:
            name, where = locs.of(op.head)[:2]
        base = f"{kind} {op.name} {name}@{where} r{rank}" + (f" {enc}" if enc else "")
        seen[base] = seen.get(base, 0) + 1
        return f"{base}#{seen[base]}", name, where

    for op in explicit:
        off = _OFFSET.search(op.head)
        if not off:
            continue                                  # not a shared-memory alloc (e.g. tensor memory)
        md = _MEMDESC.search(op.head.split("->")[-1])
        if not md:
            raise AllocationError(f"cannot read the memdesc of {op.head.strip()[:120]}")
        dims = tuple(int(d) for d in md.group(1).split("x") if d)
        dtype = md.group(2)
        enc = md.group(3).split(",")[1].strip() if md.group(3) else ""
        al = re.search(r"alignment = (\d+)", op.head)
        size = _elem_bytes(dtype)
        for d in dims:
            size *= d
        v = op.results[0]
        lo, hi = ranges.get(v, (op.id, op.id + 1))
        for a, src in alias.items():
            if src == v and a in ranges:
                lo, hi = min(lo, ranges[a][0]), max(hi, ranges[a][1])
        align, enc_kind = aligns.get(enc, (16, ""))
        # the encoding is part of the identity: on sm_90 one source line gives an nvmma_shared ring
        # num_stages deep (wgmma) for one tile and a swizzled_shared ring num_stages-1 deep (mma.sync)
        # for another -- two code paths, not one buffer whose depth is a Min over both
        key, name, where = key_of("explicit", op, len(dims), enc_kind)
        out.append(Buffer(key, "explicit", op.name, name, where, dims, dtype, size,
                          int(al.group(1)) if al else align, int(off.group(1)), lo, hi))
    defined = {r: o for o in ops for r in o.results}
    converted: dict[str, int] = {}
    for op in ops:
        if op.name == "ttg.local_alloc":
            continue
        off = _OFFSET.search(op.tail)
        if not off:
            continue
        size = _SIZE.search(op.tail)
        t = _TENSOR.search(op.head if op.head != op.tail else op.tail.split(":", 1)[-1]) or _TENSOR.search(op.tail)
        dims = tuple(int(d) for d in t.group(1).split("x") if d) if t else ()
        key, name, where = key_of("scratch", op, len(dims))
        src = ""
        d = defined.get(op.uses[0]) if op.name == "ttg.convert_layout" and op.uses else None
        if d is not None and any(locs.of(d.tail)[:2]):
            # the value a conversion converts: Triton's layout passes create and move conversions
            # and give each the location of the op they put it beside (its producer on one config,
            # its consumer on another), so its own location can differ where its operand's does not
            base = "{}@{}".format(*locs.of(d.tail)[:2])
            converted[base] = converted.get(base, 0) + 1
            src = f"{base}#{converted[base]}"
        out.append(Buffer(key, "scratch", op.name, name, where, dims, t.group(2) if t else "",
                          int(size.group(1)) if size else -1, SCRATCH_ALIGN, int(off.group(1)), op.id, op.id + 1,
                          src))
    return Allocation(int(m.group(1)), tuple(out))


def check(alloc: Allocation) -> str:
    """"" when :func:`replay` reproduces the compiler's offsets and total, else what differs."""
    if any(b.bytes < 0 for b in alloc.buffers):
        return "this triton does not record scratch sizes (allocation.size)"
    offsets, total = replay([b.bytes for b in alloc.buffers], alloc.buffers)
    if total != alloc.shared:
        return f"replayed total {total} B, compiler {alloc.shared} B"
    bad = [b.label for b, o in zip(alloc.buffers, offsets) if o != b.offset]
    return f"offsets differ for {', '.join(bad)}" if bad else ""
