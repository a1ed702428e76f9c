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
* Results are cached on disk (``$OCCMODEL_CACHE_DIR`` or ``~/.cache/occmodel``),
  failures included, keyed by the kernel's source hash (``fn.cache_key``, which
  covers its dependencies), signature, constexprs, the backend's full resolved
  options, arch, Triton version and Triton's cache-invalidating environment.

Compiles in one process are serialised (stdout/stderr are captured at the file
descriptor level to keep MLIR and ptxas diagnostics); use :func:`compile_many`
(in :mod:`occmodel.compile_pool`) for parallel sweeps.
"""

from __future__ import annotations

import contextlib
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

from . import triton_compat as tc
from .cubin import parse_cubin
from .errors import CompileError, suggest

STATUSES = ("ok", "out_of_resources", "compile_error")
CACHE_FORMAT = 1
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
    while not hasattr(fn, "params") and hasattr(getattr(fn, "fn", None), "__call__"):
        fn = fn.fn
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
    root = os.environ.get("OCCMODEL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "occmodel")
    return Path(root) / "compile"


def _entry_path(key: str, suffix: str = ".json") -> Path:
    return cache_dir() / key[:2] / f"{key}{suffix}"


def _load_entry(key: str, keep_ir: bool) -> CompileResult | None:
    path = _entry_path(key)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.pop("format", None) != CACHE_FORMAT:
        return None
    data.pop("total_shared", None)
    if keep_ir and data["status"] == "ok":
        try:
            for name in ("ttgir", "ptx", "sass"):
                data[name] = _entry_path(key, f".{name}").read_text()
            data["cubin"] = _entry_path(key, ".cubin").read_bytes()
        except OSError:
            return None
    data["cached"] = True
    try:
        return CompileResult(**data)
    except TypeError:
        return None


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _store_entry(res: CompileResult) -> None:
    try:
        for name in ("ttgir", "ptx", "sass"):
            if getattr(res, name) is not None:
                _atomic_write(_entry_path(res.key, f".{name}"), getattr(res, name).encode())
        if res.cubin is not None:
            _atomic_write(_entry_path(res.key, ".cubin"), res.cubin)
        data = dict(res.as_dict(), format=CACHE_FORMAT)
        _atomic_write(_entry_path(res.key), json.dumps(data, indent=1, default=str).encode())
    except OSError:
        pass   # a read-only or full cache never fails a compile


# --------------------------------------------------------------- compile
@dataclass(frozen=True)
class _Request:
    """A validated compile request (everything the key and the compile need)."""

    fn: Any
    signature: dict[str, str]
    constants: dict[str, Any]
    cc: int
    num_warps: int
    num_stages: int
    options: dict[str, Any]          # extra user options
    compiler_options: dict[str, Any] # what triton.compile receives
    key: str


def _request(fn, signature, constexprs, args, arch, num_warps, num_stages, options) -> _Request:
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
    ident = {
        "format": CACHE_FORMAT, "fn": fn.fn.__qualname__, "src": fn.cache_key,
        "sig": sig, "const": {k: _jsonable(v) for k, v in consts.items()}, "cc": cc,
        "opts": resolved, "triton": tc.TRITON_VERSION, "env": tc.cache_env(),
    }
    key = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()
    return _Request(fn, sig, consts, cc, num_warps, num_stages, extra, copts, key)


def compile_kernel(fn, signature: Mapping[str, str] | str | None = None, constexprs: Mapping[str, Any] | None = None,
                   *, args: Sequence[Any] | Mapping[str, Any] | None = None, arch: Any = "sm_120",
                   num_warps: int = 4, num_stages: int = 3, options: Mapping[str, Any] | None = None,
                   keep_ir: bool = False, cache: bool = True) -> CompileResult:
    """Compile `fn` for `arch` without a GPU and report what the kernel uses (see the module doc).

    `options`: further Triton compiler options (``maxnreg``, ``enable_fp_fusion``...).
    `keep_ir`: also return (and cache) the TTGIR, PTX, SASS and cubin.
    `cache=False`: neither read nor write the on-disk cache.
    `fn` may also be a reference string, ``"package.module:name"`` or ``"path/to/file.py:name"``."""
    if isinstance(fn, str):
        from .compile_pool import load_kernel
        fn = load_kernel(fn)
    req = _request(fn, signature, constexprs, args, arch, num_warps, num_stages, options)
    if cache:
        hit = _load_entry(req.key, keep_ir)
        if hit is not None:
            return hit
    _check_arch(req.cc)
    res, cacheable = _compile(req, keep_ir)
    if cache and cacheable:
        _store_entry(res)
    return res


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


def _compile(req: _Request, keep_ir: bool) -> tuple[CompileResult, bool]:
    """Run Triton; (result, whether the result may be cached)."""
    base = dict(kernel=req.fn.__name__, arch=f"sm_{req.cc}", num_warps=req.num_warps, num_stages=req.num_stages,
                triton_version=tc.TRITON_VERSION, signature=req.signature,
                constexprs={k: _jsonable(v) for k, v in req.constants.items() if k not in req.signature},
                options=req.options, cached=False, key=req.key)
    types = {n: s.partition(":")[0] for n, s in req.signature.items()}
    divisible = {n for n, s in req.signature.items() if s.endswith(":16")}
    constants = dict(req.constants, **{n: 1 for n, s in req.signature.items() if s.endswith(":1")})
    _log_compile(req.key)
    start = time.perf_counter()
    with _LOCK:
        try:
            with _captured_fds() as out:
                art = tc.compile_source(req.fn, types, divisible, constants, req.cc, req.compiler_options)
        except Exception as exc:            # the compiler's failure is data, not a crash
            status, message, detail = _classify(exc, "".join(out))
            res = CompileResult(status=status, message=message, detail=detail, shared=None, static_shared=None,
                                n_regs=None, n_spills=None, local_bytes=None, reserved_shared=None,
                                ptxas_version="", compile_seconds=round(time.perf_counter() - start, 3), **base)
            # an environment failure (missing tool, full disk, no memory) may not recur: do not cache it
            return res, not isinstance(exc, (OSError, MemoryError))
    seconds = time.perf_counter() - start
    cub = parse_cubin(art.cubin)
    fres = cub.kernel(art.name)
    ir = {}
    if keep_ir:
        ir = dict(ttgir=art.asm.get("ttgir", ""), ptx=art.asm.get("ptx", ""), sass=disassemble(art.cubin),
                  cubin=art.cubin)
    res = CompileResult(status="ok", message="", shared=art.shared, static_shared=fres.static_shared,
                        n_regs=fres.regs, n_spills=fres.n_spills, local_bytes=fres.local_bytes,
                        reserved_shared=cub.reserved_shared,
                        ptxas_version=cub.ptxas_version or tc.ptxas_version(req.cc),
                        compile_seconds=round(seconds, 3), **base, **ir)
    return res, True


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
            summary = f"{name}: {lines[-1] if lines else ''}"
        elif mlir:
            summary = "MLIR: " + mlir[0].split("error:", 1)[1].strip()
        else:
            summary = f"{name}: {lines[0] if lines else ''}"
    oor = tc.is_out_of_resources(exc) or re.search(
        r"out of resource|too much (shared|local) data|insufficient registers", detail, re.I)
    return ("out_of_resources" if oor else "compile_error"), summary[:300], detail


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


def __getattr__(name):
    # compile_many lives in compile_pool; keep `from occmodel.compile import compile_many` working.
    if name in ("compile_many", "CompileJob"):
        from . import compile_pool
        return getattr(compile_pool, name)
    raise AttributeError(f"module 'occmodel.compile' has no attribute {name!r}")
