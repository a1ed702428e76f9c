"""Read a kernel's resource usage straight from a CUDA cubin (an ELF file).

No GPU and no driver: ptxas writes everything the driver reports into the
cubin, and this module reads it back with ``struct`` alone.

* registers:  ``EIATTR_REGCOUNT`` (function symbol, count) in ``.nv.info``;
* stack:      ``EIATTR_MIN_STACK_SIZE`` (the stack a thread needs, callees
  included; ``EIATTR_MAX_STACK_SIZE`` when ptxas emits it instead, and the
  function's own ``EIATTR_FRAME_SIZE`` as the last resort) — this is what the
  driver reports as ``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES``, and what Triton's
  ``n_spills`` divides by 4;
* local:      the size of a ``.nv.local.<kernel>`` section (module-scope
  ``.local`` data; none in Triton kernels), added to the stack;
* static shared: the size of ``.nv.shared.<kernel>`` less the system-reserved
  window at its start. From sm_90 on, ptxas lays a block's shared memory out
  after the 1 KB the driver reserves per block (symbol ``.nv.reservedSmem.cap``
  = 1024 on sm_100/sm_120; implied by the ``.nv.reservedSmem.*`` symbols on
  sm_90), so a kernel whose only shared memory is Triton's dynamic
  ``global_smem`` has a 1024-byte section and 0 static bytes. Checked against
  ``CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`` on an H200 for 0, 112, 2048 and 40000
  static bytes. ``cuobjdump -res-usage`` prints the raw section (SHARED);
  ``.nv.shared.reserved.*`` (what ptxas itself uses inside the window) is
  reported separately and belongs to neither;
* ptxas version and the SASS arch, from ``.note.nv.tkinfo`` and ``e_flags``.

``cuobjdump -res-usage`` prints the same numbers (REG, STACK, SHARED, LOCAL);
the tests check the two readings against each other.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from .errors import CompileError

# EIATTR codes (.nv.info attribute ids) this reader uses.
EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_CRS_STACK_SIZE = 0x1E
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C
EIFMT_SVAL = 0x04             # variable-size payload: u16 size, then bytes
_PER_FUNCTION = (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE, EIATTR_MAX_STACK_SIZE)

RESERVED_WINDOW = 1024       # the driver's per-block system shared memory (sm_80+)
SHT_SYMTAB = 2
SHT_NOTE = 7
STT_FUNC = 2


class CubinError(CompileError):
    """The bytes are not a CUDA cubin this reader understands."""


@dataclass(frozen=True)
class FunctionResources:
    """What one function of a cubin uses, per thread / per block."""

    name: str
    regs: int                  # registers per thread (EIATTR_REGCOUNT)
    stack_bytes: int           # stack per thread, callees included
    frame_bytes: int           # the function's own stack frame
    local_bytes: int           # stack + module-scope local data: the driver's LOCAL_SIZE_BYTES
    static_shared: int         # static shared bytes: what the driver reports (SHARED_SIZE_BYTES)
    shared_section: int        # raw size of .nv.shared.<name> (cuobjdump's SHARED)
    max_regs: int | None       # EIATTR_MAXREG_COUNT (ptxas's register cap), if present
    reqntid: tuple[int, ...] | None   # the block shape the kernel was compiled for
    num_barriers: int | None
    is_entry: bool             # a kernel (has .nv.info.<name>), not a device function

    @property
    def n_spills(self) -> int:
        """Local memory in 4-byte words: what Triton's ``CompiledKernel.n_spills`` reports."""
        return self.local_bytes // 4


@dataclass(frozen=True)
class Cubin:
    """A parsed cubin: per-function resources plus module facts."""

    functions: dict[str, FunctionResources]
    sm: int                    # SASS arch from e_flags, e.g. 90 or 120
    reserved_shared: int       # bytes of .nv.shared.reserved.* sections
    ptxas_version: str         # e.g. "13.4.59" ("" if the note is missing)
    ptxas_tool: str            # e.g. "ptxas-blackwell"

    def kernel(self, name: str | None = None) -> FunctionResources:
        """The entry function `name`, or the only entry function when `name` is None."""
        entries = [f for f in self.functions.values() if f.is_entry]
        if name is not None:
            if name in self.functions:
                return self.functions[name]
            raise CubinError(f"cubin has no function {name!r}; functions: {', '.join(self.functions) or 'none'}")
        if len(entries) != 1:
            raise CubinError(f"cubin has {len(entries)} kernels ({', '.join(f.name for f in entries)}); name one")
        return entries[0]


def _cstr(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode("utf-8", "replace")


def _sections(data: bytes) -> list[tuple[str, int, int, int, int, int]]:
    """(name, type, offset, size, link, info) of every section header."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise CubinError("not an ELF file (no \\x7fELF magic)")
    if data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF file; cubins always are")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise CubinError("truncated ELF file (section headers past the end)")
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = raw[shstrndx][4]
    return [(_cstr(data, strtab_off + h[0]), h[1], h[4], h[5], h[6], h[7]) for h in raw]


def _nv_info(data: bytes, offset: int, size: int):
    """Yield (attribute, payload bytes or u16 value) for each record of a .nv.info section."""
    pos, end = offset, offset + size
    while pos + 4 <= end:
        fmt, attr, value = data[pos], data[pos + 1], struct.unpack_from("<H", data, pos + 2)[0]
        if fmt == EIFMT_SVAL:
            yield attr, data[pos + 4:pos + 4 + value]
            pos += 4 + value
        else:                                  # NVAL / BVAL / HVAL: a 4-byte record
            yield attr, value
            pos += 4


def parse_cubin(data: bytes) -> Cubin:
    """Parse a cubin; raises CubinError when the bytes are not one."""
    sections = _sections(data)
    symtab = next((s for s in sections if s[1] == SHT_SYMTAB), None)
    if symtab is None:
        raise CubinError("cubin has no symbol table")
    sym_strtab = sections[symtab[4]][2]
    symbols: dict[int, str] = {}
    reserved_syms: dict[str, int] = {}
    for i in range(symtab[3] // 24):
        st_name, st_info, _other, _shndx, st_value = struct.unpack_from("<IBBHQ", data, symtab[2] + 24 * i)
        name = _cstr(data, sym_strtab + st_name)
        if st_info & 0xF == STT_FUNC:
            symbols[i] = name
        elif name.startswith(".nv.reservedSmem"):
            reserved_syms[name] = st_value

    per_fn: dict[str, dict[int, int]] = {name: {} for name in symbols.values()}
    kernel_attrs: dict[str, dict[int, object]] = {}
    sizes = {name: size for name, _t, _o, size, _l, _i in sections}
    for name, _type, off, size, _link, _info in sections:
        if name == ".nv.info":
            for attr, payload in _nv_info(data, off, size):
                if attr in _PER_FUNCTION and isinstance(payload, bytes) and len(payload) >= 8:
                    sym, value = struct.unpack_from("<II", payload)
                    if sym in symbols:
                        per_fn[symbols[sym]][attr] = value
        elif name.startswith(".nv.info."):
            kernel_attrs[name[len(".nv.info."):]] = dict(_nv_info(data, off, size))

    reserved_sections = [n for n, *_ in sections if n.startswith(".nv.shared.reserved.")]
    base = reserved_syms.get(".nv.reservedSmem.cap",
                             RESERVED_WINDOW if reserved_syms or reserved_sections else 0)
    functions = {}
    for fname, attrs in per_fn.items():
        section = sizes.get(f".nv.shared.{fname}", 0)
        k = kernel_attrs.get(fname, {})
        frame = attrs.get(EIATTR_FRAME_SIZE, 0)
        stack = attrs.get(EIATTR_MAX_STACK_SIZE, attrs.get(EIATTR_MIN_STACK_SIZE, frame))
        reqntid = k.get(EIATTR_REQNTID)
        functions[fname] = FunctionResources(
            name=fname,
            regs=attrs.get(EIATTR_REGCOUNT, 0),
            stack_bytes=stack,
            frame_bytes=frame,
            local_bytes=stack + sizes.get(f".nv.local.{fname}", 0),
            static_shared=max(0, section - base) if section else 0,
            shared_section=section,
            max_regs=k.get(EIATTR_MAXREG_COUNT) if isinstance(k.get(EIATTR_MAXREG_COUNT), int) else None,
            reqntid=(struct.unpack_from(f"<{len(reqntid) // 4}I", reqntid)
                     if isinstance(reqntid, bytes) and reqntid else None),
            num_barriers=k.get(EIATTR_NUM_BARRIERS) if isinstance(k.get(EIATTR_NUM_BARRIERS), int) else None,
            is_entry=fname in kernel_attrs,
        )

    tool, version = "", ""
    for name, stype, off, size, _l, _i in sections:
        if stype == SHT_NOTE and name == ".note.nv.tkinfo":
            strings = [s.decode("utf-8", "replace") for s in data[off:off + size].split(b"\0")]
            for i, s in enumerate(strings):
                m = re.search(r"release [\d.]+, V([\d.]+)", s)
                if m:
                    version, tool = m.group(1), strings[i - 1].strip() if i else ""
                    break
    e_flags, = struct.unpack_from("<I", data, 0x30)
    reserved = sum(size for name, _t, _o, size, _l, _i in sections if name.startswith(".nv.shared.reserved."))
    return Cubin(functions=functions, sm=_sm_from_flags(e_flags), reserved_shared=reserved,
                 ptxas_version=version, ptxas_tool=tool)


def _sm_from_flags(e_flags: int) -> int:
    """SASS arch number from a cubin's e_flags (two layouts exist; 0 if unknown)."""
    # Newer cubins (ELF ABI v8+) keep the arch in bits 8..15; older ones in bits 0..7.
    hi, lo = (e_flags >> 8) & 0xFF, e_flags & 0xFF
    return hi if hi >= 50 else lo if lo >= 20 else 0
