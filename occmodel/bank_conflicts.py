"""Shared-memory bank conflicts of a TTGIR ``ttg.local_load``: how many times the conflict-free
number of shared-memory wavefronts it takes, from its buffer's swizzle and the layout it loads into.

    load_conflict([16, 128], 2, ("#ttg.swizzled_shared", "vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]"),
                  ("#ttg.dot_op", "opIdx = 0, parent = #mma, kWidth = 2"), ("#ttg.nvidia_mma", "versionMajor = 2, ..."))
    # -> 8.0: an ldmatrix phase's 8 rows are 256 B apart, all in the same 4 banks; 1.0 is conflict-free (or unknown)

The hardware rule: 32 banks of 4-byte words, threads reading the same word share it (CUDA C++ Programming
Guide, "Shared Memory", compute capability 5.x-12.x); a warp's request is served in phases of 128 bytes
(32 threads of 4-byte accesses, 16 of 8-byte, 8 of 16-byte; ldmatrix: 8 row addresses of 16 bytes a phase
-- Nsight Compute's wavefront counts, not the Guide); a phase takes as many wavefronts as the most
distinct words any one bank is asked for.

Triton's ``#ttg.swizzled_shared<{vec, perPhase, maxPhase, order}>`` (TritonGPUAttrDefs.td): along the
fastest dimension order[0], element c of row r sits at ((c / vec) XOR ((r / perPhase) % maxPhase)) x vec
+ c % vec; maxPhase = 1 is no swizzle at all. Triton picks such an unswizzled buffer when one pipelined
tile feeds consumers in different layouts (measured: reports/GPU_NOTES.md section 30, a 16 x 128 fp16
tile read 8-way conflicted, 7.2x the shared wavefronts of its unpipelined twin).

Consumers modelled: ldmatrix (a dot operand of mma.sync where Triton uses ldmatrix: _dot_operand), the mma.sync accumulator layout, and #blocked
layouts, on 2-D buffers. Anything else -- NVMMA (hardware-swizzled) buffers, linear or sliced layouts,
3-D buffers -- is 1.0: unknown counts as conflict-free, as before this module. Pure: arithmetic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

BANKS, WORD, PHASE_BYTES = 32, 4, 128


@dataclass(frozen=True)
class Swizzle:
    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, int]      # order[0]: the fastest (contiguous) dimension

    def offset(self, idx: Sequence[int], shape: Sequence[int]) -> int:
        """Element offset of logical index `idx` (2-D) in a buffer of `shape` (the allocation's: a
        sub-slice keeps its parent's rows). The XOR wraps at the row's end, as Triton's
        swizzledSharedToLinearLayout takes (vec x phase) modulo the row length."""
        fast, slow = self.order
        row, col = idx[slow], idx[fast]
        phase = (row // self.per_phase) % self.max_phase % max(shape[fast] // self.vec, 1)
        col = ((col // self.vec) ^ phase) * self.vec + col % self.vec
        return row * shape[fast] + col


def parse_swizzle(body: str) -> Swizzle | None:
    """A swizzled_shared attribute body -> Swizzle (None unless it is 2-D and complete)."""
    vals = {k: int(v) for k, v in re.findall(r"(vec|perPhase|maxPhase) = (\d+)", body)}
    order = re.search(r"order = \[(\d+), (\d+)\]", body)
    if len(vals) < 3 or not order:
        return None
    return Swizzle(max(vals["vec"], 1), max(vals["perPhase"], 1), max(vals["maxPhase"], 1),
                   (int(order.group(1)), int(order.group(2))))


def phase_wavefronts(addresses: Sequence[int], width: int) -> int:
    """Wavefronts of one phase: threads reading `width` bytes at each byte address; the most distinct
    4-byte words any bank serves (a `width` > 4 access covers width / 4 consecutive banks)."""
    per_bank: dict[int, set[int]] = {}
    for a in addresses:
        for w in range(max(width, WORD) // WORD):
            word = a // WORD + w
            per_bank.setdefault(word % BANKS, set()).add(word)
    return max((len(s) for s in per_bank.values()), default=1)


def _factor(phases: list[tuple[list[int], int]]) -> float:
    """Mean wavefronts per phase over the phases given (each conflict-free at 1)."""
    if not phases:
        return 1.0
    return sum(phase_wavefronts(a, w) for a, w in phases) / len(phases)


def ldmatrix_conflict(shape: Sequence[int], elem_bytes: int, sw: Swizzle,
                      full: Sequence[int] | None = None) -> float:
    """ldmatrix: a phase is 8 rows of 16 contiguous bytes along order[0], at 8 consecutive indices of the
    other dimension (the same 16-byte column chunk); averaged over every chunk and row group of the
    loaded `shape`, addressed in the allocation `full` (default: the same)."""
    full = full or shape
    fast, slow = sw.order
    per_chunk = max(16 // elem_bytes, 1)
    phases = []
    for r0 in range(0, shape[slow], 8):
        for c in range(0, shape[fast], per_chunk):
            addrs = []
            for r in range(r0, min(r0 + 8, shape[slow])):
                idx = [0, 0]
                idx[slow], idx[fast] = r, c
                addrs.append(sw.offset(idx, full) * elem_bytes)
            phases.append((addrs, 16))
    return _factor(phases)


def lanes_conflict(shape: Sequence[int], elem_bytes: int, sw: Swizzle, lanes: list[tuple[int, int]],
                   vec_dim: int, vec_elems: int, span: Sequence[int], regs: Sequence[tuple[int, int]] = ((0, 0),),
                   full: Sequence[int] | None = None) -> float:
    """A register layout: lane i reads `vec_elems` elements along `vec_dim` from logical index lanes[i] plus
    each register offset in `regs`; the warp's tile (`span`, per dim) repeats over `shape`. An access is
    one vector when its elements are contiguous in shared memory (vec_dim is the buffer's fastest
    dimension, within one swizzle vector; a 16-byte cap), else one element; phases of 128 bytes."""
    full = full or shape
    run = vec_elems if vec_dim == sw.order[0] else 1
    if sw.max_phase > 1:
        run = min(run, sw.vec)
    width = min(run * elem_bytes, 16)
    per_phase = max(PHASE_BYTES // max(width, WORD), 1)
    phases = []
    for o0 in range(0, shape[0], span[0]):
        for o1 in range(0, shape[1], span[1]):
            for d0, d1 in regs:
                addrs = [sw.offset(((r + d0 + o0) % shape[0], (c + d1 + o1) % shape[1]), full) * elem_bytes
                         for r, c in lanes]
                for p in range(0, len(addrs), per_phase):
                    phases.append((addrs[p:p + per_phase], width))
    return _factor(phases)


def mma_v2_lanes() -> list[tuple[int, int]]:
    """mma.sync's accumulator: lane l holds row l / 4, columns 2 (l % 4) and the next (a pair)."""
    return [(lane // 4, 2 * (lane % 4)) for lane in range(32)]


def blocked_lanes(spt: Sequence[int], tpw: Sequence[int], order: Sequence[int]) -> list[tuple[int, int]]:
    """A 2-D #blocked layout's lanes: lane ids run fastest along order[0]; each starts its
    sizePerThread run."""
    fast, slow = order[0], order[1]
    out = []
    for lane in range(32):
        idx = [0, 0]
        idx[fast] = (lane % tpw[fast]) * spt[fast]
        idx[slow] = (lane // tpw[fast]) % tpw[slow] * spt[slow]
        out.append((idx[0], idx[1]))
    return out


def load_conflict(shape: Sequence[int], elem_bytes: int, shared: tuple[str, str], result: tuple[str, str],
                  parent: tuple[str, str] = ("", ""), full: Sequence[int] | None = None) -> float:
    """The conflict factor (>= 1) of loading a `shape` tile of a buffer allocated as `full` (default:
    `shape`; a sub-slice of a K-split operand is narrower than its rows) with encoding `shared` (kind,
    body) into the register layout `result` (kind, body; `parent`: a dot operand's resolved parent)."""
    kind, body = shared
    sw = parse_swizzle(body) if kind == "#ttg.swizzled_shared" else None
    full = list(full) if full and len(full) == len(shape) else list(shape)
    if sw is None or len(shape) != 2 or elem_bytes not in (1, 2, 4, 8):
        return 1.0
    rk, rb = result
    if rk == "#ttg.dot_op":
        return _dot_operand(shape, elem_bytes, sw, rb, parent, full)
    if rk == "#ttg.nvidia_mma" and "versionMajor = 2" in rb:
        return lanes_conflict(shape, elem_bytes, sw, mma_v2_lanes(), 1, 2, (16, 8), ((0, 0), (8, 0)), full)
    if rk == "#ttg.blocked":
        nums = {k: [int(x) for x in v.split(",")] for k, v in
                re.findall(r"(sizePerThread|threadsPerWarp|order) = \[([\d, ]+)\]", rb)}
        spt, tpw, order = nums.get("sizePerThread", []), nums.get("threadsPerWarp", []), nums.get("order", [])
        if len(spt) == len(tpw) == len(order) == 2:
            slow = order[1]
            regs = [(j, 0) if slow == 0 else (0, j) for j in range(spt[slow])]
            return lanes_conflict(shape, elem_bytes, sw, blocked_lanes(spt, tpw, order), order[0], spt[order[0]],
                                  (spt[0] * tpw[0], spt[1] * tpw[1]), regs, full)
    return 1.0


def _dot_operand(shape, elem_bytes, sw: Swizzle, body: str, parent: tuple[str, str], full) -> float:
    """An mma.sync operand: ldmatrix under the conditions Triton's LocalLoadOpConversion uses it (kWidth x
    the element = 4 bytes; an unswizzled buffer or swizzle vectors of at least 16 bytes; a transposed read
    only of 16-bit elements; a tile of at least 8 rows of 16 bytes); anything else loads otherwise: 1.0."""
    kw = re.search(r"kWidth = (\d+)", body)
    idx = re.search(r"opIdx = (\d+)", body)
    if parent[0] != "#ttg.nvidia_mma" or elem_bytes > 2 or not kw or int(kw.group(1)) * elem_bytes != 4:
        return 1.0
    if sw.max_phase > 1 and sw.vec * elem_bytes < 16:
        return 1.0
    k_dim = 1 if (idx and idx.group(1) == "0") else 0          # A is [M, K], B is [K, N]
    if sw.order[0] != k_dim and elem_bytes != 2:                # ldmatrix.trans is b16 only
        return 1.0
    fast, slow = sw.order
    if shape[slow] < 8 or shape[fast] * elem_bytes < 16:
        return 1.0
    return ldmatrix_conflict(shape, elem_bytes, sw, full)
