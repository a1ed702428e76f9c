"""Compile any ``@triton.jit`` function for any arch, with no GPU, and read what it uses.

    res = compile_kernel(fn, signature={"X": "*fp16:16", "N": "i32"}, constexprs={"BLOCK": 1024},
                         arch="sm_120", num_warps=4, num_stages=2)
    res.status, res.shared, res.static_shared, res.n_regs, res.n_spills

Contracts:

* ``signature`` uses Triton's AOT convention (``triton/tools/compile.py``):
  ``*fp16:16`` a 16-byte-aligned pointer, ``i32:16`` an int divisible by 16,
  ``i32:1`` the constant 1, no suffix no hint. It is a dict (name -> type) or
  the AOT string (``"*fp16:16, i32, 1024"``: positional, a bare number is a
  constexpr value). Or pass ``args=`` (example tensors / ints / floats, a
  sequence or a name -> value mapping) and get exactly the specialisation
  Triton's launcher would apply (see :func:`signature_from_args`).
* Compiler failures (Triton front-end errors, MLIR pass failures, ptxas errors,
  OutOfResources) come back as a :class:`CompileResult` with a status and the
  compiler's text, never as an exception; :class:`~occmodel.errors.CompileError`
  is raised only when the compile cannot be attempted (bad arch, type string,
  parameter names or options).
* Registers, stack and static shared memory are read from the cubin itself
  (:mod:`occmodel.cubin`) and equal what the CUDA driver reports for the loaded
  kernel (``NUM_REGS``, ``LOCAL_SIZE_BYTES``, ``SHARED_SIZE_BYTES``; checked on
  an H200). ``n_spills`` is local bytes / 4, as Triton reports it; ``shared``
  is Triton's ``metadata.shared`` (dynamic shared memory); ``total_shared`` =
  shared + static_shared is what occupancy must use (the driver's reserved
  1 KB per block is occupancy's to add, not part of it). A compile that
  needs more shared memory than the GPU offers is still ``ok`` here: occupancy
  decides fit.
* Results are cached on disk (``$OCCMODEL_CACHE_DIR`` or ``~/.cache/occmodel``,
  see :mod:`occmodel._cache`), compiler failures included, keyed by the kernel's
  source hash (``fn.cache_key``, which covers its dependencies), signature, every
  constexpr's value and type, the backend's full resolved options, arch, Triton
  version, the ptxas binary (path, version, size, mtime) and the compiler's
  environment. An entry is served only if it has exactly the shape written and
  its stored key equals the lookup key; anything else is a miss, recompiled and
  rewritten. Failures of the machine (a ptxas missing or killed by a signal, a
  timeout, no memory or disk) are never cached and are marked ``environmental``.

Compiles in one process are serialised (stdout/stderr are captured at the file
descriptor level to keep MLIR and ptxas diagnostics); use :func:`compile_many`
(in :mod:`occmodel.compile_pool`) for parallel sweeps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import _cache
from . import triton_compat as tc
from .cubin import parse_cubin
from .errors import CompileError, suggest

STATUSES = ("ok", "out_of_resources", "compile_error")
CACHE_FORMAT = 2          # 2: typed constexprs, ptxas and env in the key; sidecar hashes
INTERRUPTED = "interrupted"   # the status of a config a Ctrl-C kept from compiling (never cached)
_LOCK = threading.Lock()


@dataclass(frozen=True)
class CompileResult:
    """One compile of one config. Resource fields are None unless status is "ok"."""

    status: str                       # "ok" | "out_of_resources" | "compile_error"
    message: str                      # one-line summary of the compiler's message ("" when ok)
    kernel: str                       # the function's name
    arch: str                         # "sm_120"
    num_warps: int
    num_stages: int
    shared: int | None                # metadata.shared: dynamic shared memory bytes per block
    static_shared: int | None         # .nv.shared.<kernel> bytes (from the cubin)
    n_regs: int | None                # registers per thread (from the cubin)
    n_spills: int | None              # local_bytes // 4: the driver's (and Triton's) n_spills
    local_bytes: int | None           # per-thread local memory: stack (spills, frames) + local data
    reserved_shared: int | None       # shared ptxas reserves inside the driver's 1 KB per block
    ptxas_version: str
    triton_version: str
    signature: dict[str, str]         # normalised AOT signature, e.g. {"X": "*fp16:16"}
    constexprs: dict[str, Any]        # JSON-able constexpr values (tl.float16 -> "fp16")
    options: dict[str, Any]           # extra compiler options given (beyond warps/stages)
    compile_seconds: float
    cached: bool
    key: str                          # the cache key
    detail: str = ""                  # the compiler's full text (failures)
    environmental: bool = False       # failed because of the machine (tool missing/killed, no disk), not the kernel
    ttgir: str | None = None          # keep_ir=True only
    ptx: str | None = None
    sass: str | None = None
    cubin: bytes | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def total_shared(self) -> int | None:
        """All shared memory of one block, static plus dynamic: what occupancy should use."""
        return None if self.shared is None else self.shared + (self.static_shared or 0)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able fields (IRs and the cubin left out); total_shared added."""
        d = {f.name: getattr(self, f.name) for f in fields(self)
             if f.name not in ("ttgir", "ptx", "sass", "cubin")}
        d["total_shared"] = self.total_shared
        return d


# ------------------------------------------------------------- arguments
def parse_arch(arch: Any) -> int:
    """Compute capability from "sm_120", "sm_90a", "sm120", 90, (9, 0) or a HardwareSpec."""
    cc_pair = getattr(arch, "compute_capability", None)
    if cc_pair is not None:
        arch = tuple(cc_pair)
    if isinstance(arch, tuple) and len(arch) == 2 and all(isinstance(x, int) for x in arch):
        return arch[0] * 10 + arch[1]
    if isinstance(arch, int) and not isinstance(arch, bool):
        return arch
    m = re.fullmatch(r"(?:sm_?)?(\d{2,3})[af]?", str(arch).strip().lower())
    if not m:
        allowed = ", ".join(f"sm_{c}" for c in tc.supported_capabilities())
        raise CompileError(f"arch {arch!r} is not an arch name; use e.g. 'sm_120' or 'sm_90a' "
                           f"(triton {tc.TRITON_VERSION} targets: {allowed})")
    return int(m.group(1))


def _check_arch(cc: int) -> None:
    supported = tc.supported_capabilities()
    if cc not in supported:
        allowed = ", ".join(f"sm_{c}" for c in supported)
        raise CompileError(f"arch sm_{cc} cannot be targeted by triton {tc.TRITON_VERSION} "
                           f"(its ptxas and backend); allowed: {allowed}")


def jit_function(fn):
    """The JITFunction under `fn` (unwrapping @triton.autotune / @triton.heuristics); CompileError if none."""
    while not hasattr(fn, "params") and getattr(fn, "fn", None) is not None:
        fn = fn.fn              # an Autotuner under a Heuristics has no __call__ (fla's kernels stack both)
    if not hasattr(fn, "params") or not hasattr(fn, "arg_names"):
        raise CompileError(f"{fn!r} is not a @triton.jit function")
    return fn


def _params(fn) -> list[tuple[str, bool, bool, bool, str]]:
    if not hasattr(fn, "params") or not hasattr(fn, "arg_names"):
        raise CompileError(f"{fn!r} is not a @triton.jit function")
    return tc.param_info(fn)


def _describe(fn) -> str:
    parts = [f"{n}: constexpr" if c else n for n, c, *_ in tc.param_info(fn)]
    return f"{fn.__name__}({', '.join(parts)})"


def _parse_type(name: str, text: str) -> tuple[str, str]:
    """'*fp16:16' -> ('*fp16', '16'); CompileError naming the bad string and the valid types."""
    ty, _, hint = str(text).strip().partition(":")
    ptr = ty.startswith("*")
    canon = tc.canonical_type(ty[1:] if ptr else ty)
    if canon is None:
        valid = ", ".join(tc.SCALAR_TYPES)
        raise CompileError(f"type {text!r} of parameter {name!r} is not a Triton type; valid: {valid} "
                           f"(prefix '*' for a pointer, suffix ':16' or ':1' for a hint)"
                           f"{suggest(ty.lstrip('*'), tc.SCALAR_TYPES)}")
    ty = ("*" if ptr else "") + canon
    hint = hint.strip()
    if hint not in ("", "16", "1"):
        raise CompileError(f"hint ':{hint}' of parameter {name!r} ({text!r}) is not valid; "
                           "use ':16' (divisible by 16), ':1' (equal to 1) or none")
    if hint == "1" and (ptr or canon[0] not in "iu" or canon == "u1"):
        raise CompileError(f"hint ':1' of parameter {name!r} ({text!r}) applies to integers only")
    if hint == "16" and not (ptr or (canon[0] in "iu" and canon != "u1")):
        raise CompileError(f"hint ':16' of parameter {name!r} ({text!r}) applies to pointers and integers only")
    return ty, hint


def _number(text: str) -> int | float | None:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return None


def signature_from_args(fn, args: Sequence[Any] | Mapping[str, Any],
                        constexprs: Mapping[str, Any] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """The (signature, constexprs) Triton's launcher would compile for a call ``fn[grid](*args)``.

    `args` is positional (constexpr values at their positions, as in a launch) or a
    name -> value mapping; `constexprs` adds keyword constexprs. Parameters left out
    take their defaults. Honours ``do_not_specialize``, ``do_not_specialize_on_alignment``
    and type annotations exactly as the launcher does."""
    fn = jit_function(fn)
    info = _params(fn)
    names = [p[0] for p in info]
    if isinstance(args, Mapping):
        values = dict(args)
    else:
        if len(args) > len(names):
            raise CompileError(f"{len(args)} arguments for {_describe(fn)}")
        values = dict(zip(names, args))
    for k, v in (constexprs or {}).items():
        if k in values:
            raise CompileError(f"parameter {k!r} given twice (in args and constexprs)")
        values[k] = v
    _check_names(fn, values, "args")
    sig: dict[str, str] = {}
    consts: dict[str, Any] = {}
    for (name, is_constexpr, dns, dns_align, ann), param in zip(info, fn.params):
        if name not in values:
            if not param.has_default:
                raise CompileError(f"missing argument {name!r} for {_describe(fn)}")
            values[name] = param.default
        value = values[name]
        if is_constexpr or value is None:
            consts[name] = value
            continue
        try:
            ty, hint = tc.specialize_value(value, specialize=not dns, align=not dns_align)
        except ValueError as exc:
            raise CompileError(f"argument {name!r}: {exc}") from None
        if ann:                       # an annotated parameter keeps its declared type
            no_spec = ann == "u1" or ann.lstrip("*")[:2] in ("fp", "bf")
            ty, hint = ann, ("" if no_spec or hint == "1" else hint)
        sig[name] = ty + (f":{hint}" if hint else "")
    return sig, consts


def _check_names(fn, given: Mapping[str, Any], what: str) -> None:
    names = [p[0] for p in _params(fn)]
    unknown = [k for k in given if k not in names]
    if unknown:
        raise CompileError(f"unknown parameter {unknown[0]!r} in {what}{suggest(unknown[0], names)}; "
                           f"the kernel is {_describe(fn)}")


def _normalise(fn, signature, constexprs) -> tuple[dict[str, str], dict[str, Any]]:
    """Validated (name -> 'type[:hint]' for runtime params, name -> value for constants)."""
    info = _params(fn)
    names = [p[0] for p in info]
    if isinstance(signature, str):
        entries = [s.strip() for s in signature.split(",") if s.strip()]
        if len(entries) > len(names):
            raise CompileError(f"signature {signature!r} has {len(entries)} entries for {_describe(fn)}")
        signature = dict(zip(names, entries))
    signature = dict(signature or {})
    consts = dict(constexprs or {})
    _check_names(fn, signature, "signature")
    _check_names(fn, consts, "constexprs")
    sig: dict[str, str] = {}
    for (name, is_constexpr, *_), param in zip(info, fn.params):
        text = signature.get(name)
        if text is not None and str(text).strip() != "constexpr":
            value = _number(str(text).strip()) if isinstance(text, str) else text
            if value is not None and not isinstance(value, str):
                if name in consts:
                    raise CompileError(f"parameter {name!r} given twice (in signature and constexprs)")
                consts[name] = value
                continue
            if is_constexpr:
                raise CompileError(f"{name!r} is a constexpr of {_describe(fn)}; pass its value in "
                                   f"constexprs, not a type in the signature")
            if name in consts:
                raise CompileError(f"parameter {name!r} given twice (in signature and constexprs)")
            ty, hint = _parse_type(name, text)
            sig[name] = ty + (f":{hint}" if hint else "")
        elif name not in consts:
            if param.has_default and (is_constexpr or param.default is None):
                consts[name] = param.default
            elif param.has_default:
                ty, hint = tc.specialize_value(param.default)
                sig[name] = ty + (f":{hint}" if hint else "")
            else:
                where = "constexprs" if is_constexpr else "signature"
                raise CompileError(f"missing {'constexpr ' if is_constexpr else ''}parameter {name!r} "
                                   f"(pass it in {where}); the kernel is {_describe(fn)}")
    return sig, consts


def _jsonable(value: Any) -> Any:
    """A stable JSON form of a constexpr value (for the key and the result)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "cache_key") and hasattr(value, "fn"):          # a JITFunction passed as constexpr
        return f"jit:{value.fn.__module__}.{value.fn.__qualname__}:{value.cache_key}"
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        return _jsonable(value.value)
    return str(value)


# ----------------------------------------------------------------- cache
def cache_dir() -> Path:
    """Where compile results live: $OCCMODEL_CACHE_DIR or ~/.cache/occmodel (subfolder compile/)."""
    return _cache.compile_dir()


_SIDECARS = ("ttgir", "ptx", "sass", "cubin")
_RESOURCES = ("shared", "static_shared", "n_regs", "n_spills", "local_bytes", "reserved_shared")
_STORED = ({f.name for f in fields(CompileResult)} - set(_SIDECARS)) | {"format", "total_shared", "sidecars"}


def _is_int(v: Any, lo: int = 0, hi: int | None = None) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


def _entry_ok(data: Any, req: "Request") -> bool:
    """Whether a parsed cache entry has exactly the shape compile_kernel writes, and is req's."""
    if not isinstance(data, dict) or set(data) != _STORED:
        return False
    if data["format"] != CACHE_FORMAT or data["key"] != req.key or data["status"] not in STATUSES:
        return False
    if data["kernel"] != req.fn.__name__ or data["arch"] != f"sm_{req.cc}" \
            or data["num_warps"] != req.num_warps or data["num_stages"] != req.num_stages:
        return False
    if data["environmental"] is not False or not isinstance(data["sidecars"], dict):
        return False
    if not all(isinstance(data[k], str) for k in ("message", "ptxas_version", "triton_version", "detail")):
        return False
    if not all(isinstance(data[k], dict) for k in ("signature", "constexprs", "options")):
        return False
    if not isinstance(data["compile_seconds"], (int, float)) or isinstance(data["compile_seconds"], bool):
        return False
    if data["status"] != "ok":
        return all(data[k] is None for k in _RESOURCES) and data["total_shared"] is None
    if not all(_is_int(data[k]) for k in _RESOURCES) or not _is_int(data["n_regs"], 1, 255):
        return False
    return data["n_spills"] == data["local_bytes"] // 4 and \
        data["total_shared"] == data["shared"] + data["static_shared"]


def _load_entry(req: "Request", keep_ir: bool) -> CompileResult | None:
    """The cached result for `req`, or None (a miss) unless the entry and, with keep_ir, every
    sidecar check out. A damaged, foreign or truncated entry is a miss: recompiled and rewritten."""
    data = _cache.read_json(_cache.entry_path(req.key))
    if not _entry_ok(data, req):
        return None
    hashes = data.pop("sidecars")
    for k in ("format", "total_shared", "cached"):
        data.pop(k)
    if keep_ir and data["status"] == "ok":
        for name in _SIDECARS:
            blob = _cache.read_sidecar(req.key, name, hashes.get(name))
            if blob is None:
                return None
            data[name] = blob if name == "cubin" else blob.decode("utf-8", "replace")
    return CompileResult(**data, cached=True)


def _store_entry(res: CompileResult) -> None:
    """Cache `res` (never an environmental failure); a read-only or full cache never fails a compile."""
    if res.environmental or res.status not in STATUSES:
        return
    sidecars = {}
    for name in _SIDECARS:
        value = getattr(res, name)
        if value is not None:
            sidecars[name] = value if isinstance(value, bytes) else value.encode()
    _cache.store(res.key, dict(res.as_dict(), format=CACHE_FORMAT), sidecars)


def accept_remote(req: "Request", res: Any) -> CompileResult | None:
    """A result compiled by another process or machine (an engine's worker) for `req`, checked
    as a cache entry is checked on read (the same shape, the same key, kernel, arch, warps and
    stages) and then cached here; None when it is not `req`'s (another toolchain gives another
    key) or the worker's machine failed it (environmental): then it is to be compiled here."""
    if not isinstance(res, CompileResult) or res.key != req.key or res.environmental:
        return None
    if not _entry_ok(dict(res.as_dict(), format=CACHE_FORMAT, sidecars={}), req):
        return None
    if res.cached:
        res = dataclasses.replace(res, cached=False)
    _store_entry(res)
    return res


def _atomic_write(path: Path, data: bytes) -> None:
    _cache.atomic_write(path, data)


def _key_value(value: Any) -> Any:
    """A constexpr value with its type, for the key: "fp16", tl.float16, 16 and "16" all differ."""
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        value = value.value
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [_key_value(v) for v in value]]
    kind = type(value)
    return [f"{kind.__module__}.{kind.__qualname__}", _jsonable(value)]


def _type_class(value: Any) -> Any:
    """The type tree of a constexpr value (what Triton's str-based key cannot see)."""
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        value = value.value
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [_type_class(v) for v in value]]
    return f"{type(value).__module__}.{type(value).__qualname__}"


# --------------------------------------------------------------- compile
@dataclass(frozen=True)
class Request:
    """A validated compile request (everything the key and the compile need); see :func:`make_request`."""

    fn: Any
    signature: dict[str, str]
    constants: dict[str, Any]
    cc: int
    num_warps: int
    num_stages: int
    options: dict[str, Any]          # extra user options
    compiler_options: dict[str, Any] # what triton.compile receives
    key: str
    triton_cache: str                # Triton's cache folder for this request (see occmodel._cache)


def make_request(fn, signature=None, constexprs=None, args=None, arch: Any = "sm_120", num_warps: int = 4,
                 num_stages: int = 3, options=None) -> Request:
    """Validate one compile's arguments (CompileError naming the bad one) and compute its cache key.

    The key covers the kernel's source (``fn.cache_key``, dependencies included), the
    signature, every constexpr's value *and type*, the backend's fully resolved options,
    the arch, the Triton version, the ptxas Triton will run (path, version, size, mtime)
    and the environment that reaches the compiler."""
    fn = jit_function(fn)
    if args is not None:
        if signature is not None:
            raise CompileError("pass either signature= or args=, not both")
        signature, constexprs = signature_from_args(fn, args, constexprs)
    sig, consts = _normalise(fn, signature, constexprs)
    cc = parse_arch(arch)
    if isinstance(num_warps, bool) or not isinstance(num_warps, int) or num_warps < 1 or num_warps & (num_warps - 1):
        raise CompileError(f"num_warps={num_warps!r} must be a power of two (1, 2, 4, 8, 16, 32)")
    if isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages < 0:
        raise CompileError(f"num_stages={num_stages!r} must be an integer >= 0")
    extra = dict(options or {})
    for bad in ("num_warps", "num_stages", "arch"):
        if bad in extra:
            raise CompileError(f"pass {bad} as its own argument, not in options")
    if extra:
        valid = [n for n in tc.option_names(cc) if n not in ("num_warps", "num_stages", "arch")]
        bad = [k for k in extra if k not in valid]
        if bad:
            raise CompileError(f"unknown compiler option {bad[0]!r}{suggest(bad[0], valid)}; "
                               f"valid: {', '.join(valid)}")
    copts = dict(tc.launcher_options(fn), **extra, num_warps=num_warps, num_stages=num_stages)
    try:
        resolved = tc.resolved_options(cc, copts)
    except (AssertionError, ValueError, TypeError) as exc:
        raise CompileError(f"invalid compiler options {extra}: {exc}") from None
    ptxas = tc.ptxas_identity(cc)
    ident = {
        "format": CACHE_FORMAT, "fn": fn.fn.__qualname__, "src": fn.cache_key,
        "sig": sig, "const": {k: _key_value(v) for k, v in consts.items()}, "cc": cc,
        "opts": resolved, "triton": tc.TRITON_VERSION, "env": tc.cache_env(), "ptxas": ptxas,
    }
    key = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()
    types = {k: _type_class(v) for k, v in sorted(consts.items())}
    return Request(fn, sig, consts, cc, num_warps, num_stages, extra, copts, key,
                   _cache.triton_dir(types, ptxas))


_request = make_request     # the name older callers used


def check_target(cc: int) -> None:
    """CompileError unless the installed Triton can compile for sm_<cc>."""
    _check_arch(cc)


def cached_result(req: Request, keep_ir: bool = False) -> CompileResult | None:
    """The cached result of `req` if a valid entry exists (see :func:`_load_entry`), else None."""
    return _load_entry(req, keep_ir)


def compile_request(req: Request, keep_ir: bool = False, cache: bool = True) -> CompileResult:
    """Compile `req` now (no cache lookup) and cache the result unless it is environmental."""
    if cache:
        _cache.check_usable()
    res = _compile(req, keep_ir)
    if cache:
        _store_entry(res)
    return res


def compile_kernel(fn, signature: Mapping[str, str] | str | None = None, constexprs: Mapping[str, Any] | None = None,
                   *, args: Sequence[Any] | Mapping[str, Any] | None = None, arch: Any = "sm_120",
                   num_warps: int = 4, num_stages: int = 3, options: Mapping[str, Any] | None = None,
                   keep_ir: bool = False, cache: bool = True) -> CompileResult:
    """Compile `fn` for `arch` without a GPU and report what the kernel uses (see the module doc).

    `options`: further Triton compiler options (``maxnreg``, ``enable_fp_fusion``...).
    `keep_ir`: also return (and cache) the TTGIR, PTX, SASS and cubin.
    `cache=False`: neither read nor write the on-disk cache.
    `fn` may also be a reference string, ``"package.module:name"`` or ``"path/to/file.py:name"``.
    A failure of the environment rather than the kernel (a missing or killed ptxas, no
    disk space) raises :class:`CompileError`: there is no result to report."""
    if isinstance(fn, str):
        fn = load_kernel(fn)
    req = make_request(fn, signature, constexprs, args, arch, num_warps, num_stages, options)
    if cache:
        hit = _load_entry(req, keep_ir)
        if hit is not None:
            return hit
    _check_arch(req.cc)
    res = compile_request(req, keep_ir, cache)
    if res.environmental:
        raise CompileError(f"{res.kernel} could not be compiled for {res.arch}: {res.message}")
    return res


def load_kernel(ref: str):
    """Import the JITFunction a reference names ("module:name" or "/path/file.py:name"); KernelError if it cannot."""
    import sys
    from .card import load_object
    where = ref.rpartition(":")[0]
    if where.endswith(".py"):
        folder = os.path.dirname(where)       # let the file import its neighbours, as Triton's AOT tool does
        if folder not in sys.path:
            sys.path.insert(0, folder)
    return load_object(ref)


@contextlib.contextmanager
def _captured_fds():
    """Redirect fds 1 and 2 to a temp file (MLIR and ptxas write there); yield a reader."""
    import sys
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            text: list[str] = []
            yield text
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text.append(sink.read().decode("utf-8", "replace"))


def failed_result(req: Request, status: str, message: str, detail: str = "", environmental: bool = False,
                  seconds: float = 0.0) -> CompileResult:
    """A result with no resources: a compile that failed, or one that never ran."""
    return CompileResult(status=status, message=message[:300], detail=detail, shared=None, static_shared=None,
                         n_regs=None, n_spills=None, local_bytes=None, reserved_shared=None, ptxas_version="",
                         compile_seconds=round(seconds, 3), environmental=environmental, **_base(req))


def _base(req: Request) -> dict[str, Any]:
    return dict(kernel=req.fn.__name__, arch=f"sm_{req.cc}", num_warps=req.num_warps, num_stages=req.num_stages,
                triton_version=tc.TRITON_VERSION, signature=req.signature,
                constexprs={k: _jsonable(v) for k, v in req.constants.items() if k not in req.signature},
                options=req.options, cached=False, key=req.key)


def _compile(req: Request, keep_ir: bool) -> CompileResult:
    """Run Triton (its cache in req.triton_cache); a compiler failure is a result, not an exception."""
    types = {n: s.partition(":")[0] for n, s in req.signature.items()}
    divisible = {n for n, s in req.signature.items() if s.endswith(":16")}
    constants = dict(req.constants, **{n: 1 for n, s in req.signature.items() if s.endswith(":1")})
    _log_compile(req.key)
    start = time.perf_counter()
    with _LOCK:
        try:
            with _captured_fds() as out, tc.triton_cache_dir(req.triton_cache):
                art = tc.compile_source(req.fn, types, divisible, constants, req.cc, req.compiler_options)
        except Exception as exc:            # the compiler's failure is data, not a crash
            status, message, detail = _classify(exc, "".join(out))
            return failed_result(req, status, message, detail, environmental=_environmental(exc, detail),
                                 seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    try:
        cub = parse_cubin(art.cubin)
        fres = cub.kernel(art.name)
    except Exception as exc:                # a cubin we cannot read is not a number to report
        return failed_result(req, "compile_error", f"unreadable cubin: {type(exc).__name__}: {exc}",
                             environmental=True, seconds=seconds)
    ir = {}
    if keep_ir:
        ir = dict(ttgir=art.asm.get("ttgir", ""), ptx=art.asm.get("ptx", ""), sass=disassemble(art.cubin),
                  cubin=art.cubin)
    return CompileResult(status="ok", message="", shared=art.shared, static_shared=fres.static_shared,
                         n_regs=fres.regs, n_spills=fres.n_spills, local_bytes=fres.local_bytes,
                         reserved_shared=cub.reserved_shared,
                         ptxas_version=cub.ptxas_version or tc.ptxas_version(req.cc),
                         compile_seconds=round(seconds, 3), **_base(req), **ir)


_SIGNAL_EXIT = re.compile(r"(error code|exit status|returned non-zero exit status)\s*-\d+|raised SIG[A-Z]+|"
                          r"killed|signal \d+", re.I)
_MISSING_TOOL = re.compile(r"cannot find ptxas|ptxas.*(not found|no such file)|No such file or directory", re.I)


def _environmental(exc: BaseException, detail: str) -> bool:
    """Whether a failure came from the machine rather than the kernel: a tool missing or killed
    by a signal (the OOM killer), a timeout, no memory, no disk. Such results are never cached."""
    import subprocess
    if isinstance(exc, (OSError, MemoryError, TimeoutError, subprocess.TimeoutExpired)):
        return True
    if isinstance(exc, subprocess.CalledProcessError) and exc.returncode < 0:
        return True
    head = str(exc)[:500]
    return bool(_SIGNAL_EXIT.search(head) or _MISSING_TOOL.search(head))


def _log_compile(key: str) -> None:
    """Append the key of a real (uncached) compile to $OCCMODEL_COMPILE_LOG, if set: how the
    tests count compiles across worker processes (one short O_APPEND write per compile)."""
    path = os.environ.get("OCCMODEL_COMPILE_LOG")
    if path:
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{key}\n".encode())
            finally:
                os.close(fd)


def _classify(exc: BaseException, captured: str) -> tuple[str, str, str]:
    """(status, one-line summary, full text) for a compiler exception."""
    name = type(exc).__name__
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if name == "PTXASError":       # the exception holds ptxas's stderr; Triton also printed the whole PTX
        bad = [ln for ln in lines if re.match(r"ptxas\S*\s+(error|fatal)\s*:", ln)]
        summary = "ptxas: " + (bad[0].split(":", 1)[1].strip() if bad else lines[0] if lines else name)
        detail = f"{name}: {text}"
    else:
        captured = captured.strip()
        if len(captured) > 20000:
            captured = captured[:20000] + "\n[... compiler output truncated ...]"
        detail = f"{name}: {text}" + (f"\n--- compiler output ---\n{captured}" if captured else "")
        mlir = [ln.strip() for ln in captured.splitlines() if "error:" in ln]
        if any(c.__name__ == "CompilationError" for c in type(exc).__mro__):
            summary = f"{name}: {_compilation_message(exc, lines)}"
        elif mlir:
            summary = "MLIR: " + mlir[0].split("error:", 1)[1].strip()
        else:
            summary = f"{name}: {lines[0] if lines else ''}"
    oor = tc.is_out_of_resources(exc) or re.search(
        r"out of resource|too much (shared|local) data|insufficient registers", detail, re.I)
    return ("out_of_resources" if oor else "compile_error"), summary[:300], detail


def _compilation_message(exc: BaseException, lines: list[str]) -> str:
    """The real message of a Triton CompilationError: its text after the source excerpt's
    caret line, else the exception it wraps (Triton leaves the message empty then), with
    the kernel line it points at."""
    where = lines[0].rstrip(":") if lines and lines[0].startswith("at ") else ""
    caret = max((i for i, ln in enumerate(lines) if not set(ln) - set("^~ ")), default=None)
    after = lines[caret + 1:] if caret is not None else lines[-1:]
    message = " ".join(after).strip()
    cause = exc.__cause__ or exc.__context__
    while not message and cause is not None:
        text = [ln.strip() for ln in str(cause).splitlines() if ln.strip() and set(ln.strip()) - set("^~ ")]
        if any(c.__name__ == "CompilationError" for c in type(cause).__mro__):
            message = _compilation_message(cause, [ln.strip() for ln in str(cause).splitlines() if ln.strip()])
        else:
            message = f"{type(cause).__name__}: {text[-1] if text else ''}".rstrip(": ")
        cause = None
    if not message:
        code = [ln for ln in lines[1:caret] if ln] if caret else []
        message = f"error in `{code[-1]}`" if code else "compilation failed"
    return f"{message} ({where})" if where else message


def disassemble(cubin: bytes) -> str:
    """SASS text of a cubin, from cuobjdump in Triton's wheel ("" if it cannot run)."""
    import subprocess
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        proc = subprocess.run([tc.tool_path("cuobjdump"), "-sass", f.name], capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else ""
    except OSError:
        return ""
    finally:
        os.unlink(f.name)
