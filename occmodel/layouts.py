"""How many 32-bit registers one thread needs to hold a TTGIR tensor, from its layout.

    lay = Layouts(ttgir_text)                       # the #blocked / #mma / #linear aliases
    lay.words("tensor<16x512xf32, #mma>", num_warps=4)   # -> 64.0

Elements per thread, by layout (``TritonGPU`` attribute definitions):

* ``#ttg.linear``: 2 ** (number of ``register`` bases) -- exact;
* ``#ttg.blocked``: per dim, ``sizePerThread`` x the times the CTA tile
  (sizePerThread x threadsPerWarp x warpsPerCTA) repeats over the shape, at least
  one tile (a smaller shape is broadcast, each thread still holds its
  min(sizePerThread, shape) elements);
* ``#ttg.nvidia_mma`` v2 (mma.sync, 16 x 8 tiles per warp, 4 accumulators per thread
  per tile: 2 rows x 2 columns): 4 x ceil(M / 16 wm) x ceil(N / 8 wn), a dimension of
  size 1 (a row vector, a slice) 1 instead of 2; other versions: M x N / threads;
* ``#ttg.slice<{dim, parent}>``: the parent's count with that dimension collapsed;
* ``#ttg.dot_op`` operands of mma v2: A 8 x ceil(M / 16 wm) x ceil(K / 16),
  B 4 x ceil(N / 8 wn) x ceil(K / 16) (kWidth packing aside);
* anything else: elements / threads, at least 1.

A 16-bit element takes half a register (two pack in one), 64-bit ones and pointers two.
An estimate of what is held, not of ptxas's allocation: callers calibrate on compiles.
Pure: string processing.
"""

from __future__ import annotations

import math
import re

_DEF = re.compile(r"^(#[\w]+)\s*=\s*(#ttg\.\w+)<\{(.*)\}>\s*$")
_TENSOR = re.compile(r"tensor<((?:\d+x)+)(!tt\.ptr<\w+>|[a-zA-Z]\w*)(?:, (.*))?>$")


def _ints(body: str, key: str) -> list[int]:
    m = re.search(rf"{key} = \[([-\d, ]*)\]", body)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else []


def elem_words(dtype: str) -> float:
    if dtype.startswith("!tt.ptr") or dtype in ("i64", "f64", "u64"):
        return 2.0
    m = re.search(r"(\d+)", dtype)
    bits = int(m.group(1)) if m else 32
    return 0.5 if bits == 16 else 0.25 if bits == 8 else 1.0


class Layouts:
    def __init__(self, text: str):
        self.defs: dict[str, tuple[str, str]] = {}
        for ln in text.splitlines():
            m = _DEF.match(ln.strip())
            if m:
                self.defs[m.group(1)] = (m.group(2), m.group(3))
            elif ln.startswith("module"):
                break

    def _resolve(self, enc: str) -> tuple[str, str]:
        enc = enc.strip()
        if enc in self.defs:
            return self.defs[enc]
        m = re.match(r"(#ttg\.\w+)<\{(.*)\}>$", enc)
        return (m.group(1), m.group(2)) if m else ("", "")

    def elements(self, shape: list[int], enc: str, threads: int) -> float:
        kind, body = self._resolve(enc)
        numel = math.prod(shape)
        if kind == "#ttg.linear":
            reg = re.search(r"register = \[(.*?)\]\], lane", body) or re.search(r"register = \[\]", body)
            return float(2 ** reg.group(1).count("[")) if reg and reg.groups() else 1.0
        if kind == "#ttg.blocked":
            spt, tpw, wpc = _ints(body, "sizePerThread"), _ints(body, "threadsPerWarp"), _ints(body, "warpsPerCTA")
            if len(spt) == len(shape) == len(tpw) == len(wpc):
                n = 1.0
                for d, s, t, w in zip(shape, spt, tpw, wpc):
                    n *= min(s, d) * max(1, math.ceil(d / (s * t * w)))
                return n
        if kind == "#ttg.nvidia_mma" and len(shape) >= 2:
            ver = re.search(r"versionMajor = (\d+)", body)
            w = _ints(body, "warpsPerCTA")
            wm, wn = (w[-2], w[-1]) if len(w) >= 2 else (1, 1)
            if ver and ver.group(1) == "2":          # per 16 x 8 tile: 2 rows x 2 columns (1 of a size-1 dim)
                return (min(2, shape[-2]) * math.ceil(shape[-2] / (16 * wm))
                        * min(2, shape[-1]) * math.ceil(shape[-1] / (8 * wn)))
        if kind == "#ttg.slice":
            dim = re.search(r"dim = (\d+)", body)
            parent = re.search(r"parent = (#[\w.]+(?:<\{.*\}>)?)\s*$", body)
            if dim and parent:
                full = list(shape)
                full.insert(int(dim.group(1)), 1)
                return self.elements(full, parent.group(1), threads)
        if kind == "#ttg.dot_op" and len(shape) >= 2:
            idx = re.search(r"opIdx = (\d+)", body)
            parent = re.search(r"parent = (#[\w.]+)", body)
            pk, pb = self._resolve(parent.group(1)) if parent else ("", "")
            w = _ints(pb, "warpsPerCTA")
            if pk == "#ttg.nvidia_mma" and "versionMajor = 2" in pb and len(w) >= 2 and idx:
                wm, wn = w[-2], w[-1]
                if idx.group(1) == "0":
                    return 8.0 * math.ceil(shape[-2] / (16 * wm)) * math.ceil(shape[-1] / 16)
                return 4.0 * math.ceil(shape[-1] / (8 * wn)) * math.ceil(shape[-2] / 16)
        return max(1.0, numel / threads)

    def words(self, type_text: str, num_warps: int) -> float:
        """32-bit registers per thread for a value of this type (scalars: by element width)."""
        m = _TENSOR.search(type_text.strip())
        if not m:
            t = type_text.strip()
            return elem_words(t) if t and not t.startswith("!ttg") else 0.0
        shape = [int(d) for d in m.group(1).split("x") if d]
        return self.elements(shape, m.group(3) or "", 32 * num_warps) * elem_words(m.group(2))
