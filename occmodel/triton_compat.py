"""Everything occmodel needs from Triton's internals, in one place.

Tested with triton 3.6 and 3.9. What this module hides:

* how a specialised signature is handed to ``ASTSource`` (name -> type with
  ``"constexpr"`` for constants, constants keyed by name, ``tt.divisibility``
  attrs keyed by ``(index,)``) — :func:`compile_source`;
* which ptxas Triton runs for an arch (3.6: ``ptxas-blackwell`` from sm_100;
  3.9: from sm_90) and which archs that ptxas accepts — :func:`ptxas_for`,
  :func:`supported_capabilities`;
* the launcher's defaults that reach the compiler (``debug``,
  ``instrumentation_mode``) — :func:`launcher_options`;
* the launcher's specialisation of an int / float / bool / tensor argument
  (identical in 3.6 and 3.9, checked in the tests against
  ``native_specialize_impl``) — :func:`specialize_value`.

Importing this module imports triton (not torch, not a GPU driver).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any

import triton
from triton.backends.compiler import GPUTarget

TRITON_VERSION: str = triton.__version__
MIN_CAPABILITY = 75          # oldest arch Triton's NVIDIA backend lowers for

try:                          # the launcher's own table of type names and aliases
    from triton.runtime.jit import type_canonicalisation_dict as _CANON
except ImportError:          # pragma: no cover - other triton versions
    _CANON = {}
SCALAR_TYPES: tuple[str, ...] = tuple(sorted({v for v in _CANON.values() if v != "void"} or {
    "i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32", "fp64",
    "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16"}))


def canonical_type(name: str) -> str | None:
    """Triton's canonical name of a scalar type ('float16' -> 'fp16'), or None if unknown."""
    name = name.strip()
    if name in SCALAR_TYPES:
        return name
    canon = _CANON.get(name) or _CANON.get(name.replace("_t", ""))
    return canon if canon in SCALAR_TYPES else None


# ------------------------------------------------------------------ ptxas
def ptxas_for(cc: int):
    """The ``NvidiaTool`` (``.path``, ``.version``) Triton runs for compute capability `cc`."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        return get_ptxas(cc)
    except (ImportError, TypeError):  # pragma: no cover - other triton versions
        from triton import knobs
        return knobs.nvidia.ptxas_blackwell if cc >= 100 else knobs.nvidia.ptxas


def ptxas_version(cc: int) -> str:
    """Full version ("12.8.93") of the ptxas Triton runs for `cc`; "" if it cannot run."""
    return ptxas_identity(cc)["version"]


def ptxas_identity(cc: int) -> dict[str, Any]:
    """Which ptxas Triton runs for `cc` now: path (``TRITON_PTXAS_PATH`` /
    ``TRITON_PTXAS_BLACKWELL_PATH`` respected), version, size and mtime. Part of the
    compile cache key: a different ptxas must never be served another's registers."""
    try:
        path = ptxas_for(cc).path
    except (OSError, AttributeError, RuntimeError):
        return {"path": "", "version": "", "size": -1, "mtime": -1}
    try:
        st = os.stat(path)
        size, mtime = st.st_size, st.st_mtime_ns
    except OSError:
        size, mtime = -1, -1
    return {"path": path, "version": _ptxas_version_of(path, size, mtime), "size": size, "mtime": mtime}


@functools.lru_cache(maxsize=None)
def _ptxas_version_of(path: str, size: int, mtime: int) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else ""


@functools.lru_cache(maxsize=None)
def _ptxas_archs(path: str) -> frozenset[int]:
    """Compute capabilities a ptxas binary accepts for --gpu-name (from its --help)."""
    text = subprocess.run([path, "--help"], capture_output=True, text=True, check=False).stdout
    return frozenset(int(m) for m in re.findall(r"'sm_(\d+)[af]?'", text))


@functools.lru_cache(maxsize=None)
def supported_capabilities() -> tuple[int, ...]:
    """Every compute capability the installed Triton can compile for (sorted).

    An arch counts when Triton's backend lowers for it (>= sm_75) and the ptxas
    Triton would run for it accepts it."""
    def archs(cc: int) -> frozenset[int]:
        try:
            return _ptxas_archs(ptxas_for(cc).path)
        except (OSError, AttributeError, RuntimeError):
            return frozenset()

    candidates = archs(80) | archs(120)          # the two ptxas binaries Triton ships
    return tuple(sorted(cc for cc in candidates if cc >= MIN_CAPABILITY and cc in archs(cc)))


def sass_arch(cc: int) -> str:
    """The ``--gpu-name`` Triton passes to ptxas (``sm_90a`` for 9.0 and newer)."""
    from triton.backends.nvidia.compiler import sm_arch_from_capability
    return sm_arch_from_capability(cc)


def tool_path(name: str) -> str:
    """Path of a CUDA tool shipped in Triton's wheel ('cuobjdump', 'nvdisasm')."""
    from triton import knobs
    return getattr(knobs.nvidia, name).path


# --------------------------------------------------------- launcher rules
def launcher_options(fn) -> dict[str, Any]:
    """Compiler options the JIT launcher adds to every launch of `fn`."""
    from triton import knobs
    opts: dict[str, Any] = {"debug": bool(getattr(fn, "debug", None) or knobs.runtime.debug)}
    mode = getattr(knobs.compilation, "instrumentation_mode", "")
    if mode:
        opts["instrumentation_mode"] = mode
    return opts


def resolved_options(cc: int, options: dict[str, Any]) -> dict[str, Any]:
    """The backend's full option set for `options` (defaults filled from Triton's knobs)."""
    from triton.compiler import make_backend
    backend = make_backend(GPUTarget("cuda", cc, 32))
    return dict(backend.parse_options(dict(options)).__dict__)


def option_names(cc: int) -> list[str]:
    """Names of every compiler option the backend for `cc` accepts."""
    import dataclasses
    from triton.compiler import make_backend
    return [f.name for f in dataclasses.fields(type(make_backend(GPUTarget("cuda", cc, 32)).parse_options({})))]


# variables that only say where files go or what is printed: they never change a cubin
_ENV_NOT_IN_KEY = {"TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR",
                   "TRITON_CACHE_MANAGER", "TRITON_REMOTE_CACHE_BACKEND", "TRITON_PRINT_AUTOTUNING",
                   "TRITON_DEFAULT_FP_FUSION_WARNED", "TRITON_INTERPRET"}


def cache_env() -> dict[str, str]:
    """Environment that may change a compiled kernel: the variables Triton itself says
    invalidate its cache, plus every TRITON_* / MLIR_* / LLVM_* / NVPTX_* variable set
    (knobs such as ``TRITON_PTXAS_PATH`` or ``DISABLE_LLVM_OPT`` reach the compiler)."""
    env: dict[str, str] = {}
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
        env.update(get_cache_invalidating_env_vars())
    except ImportError:  # pragma: no cover
        pass
    for name, value in os.environ.items():
        if name.startswith(("TRITON_", "MLIR_", "LLVM_", "NVPTX_", "DISABLE_LLVM", "DISABLE_MMA")) \
                and name not in _ENV_NOT_IN_KEY:
            env[name] = value
    return dict(sorted(env.items()))


def param_info(fn) -> list[tuple[str, bool, bool, bool, str]]:
    """(name, is_constexpr, do_not_specialize, do_not_specialize_on_alignment, annotation type)
    for each parameter of a JITFunction."""
    out = []
    for p in fn.params:
        out.append((p.name, bool(p.is_constexpr), bool(p.do_not_specialize),
                    bool(getattr(p, "do_not_specialize_on_alignment", False)),
                    getattr(p, "annotation_type", "") or ""))
    return out


def specialize_value(value: Any, *, specialize: bool = True, align: bool = True) -> tuple[str, str]:
    """The launcher's specialisation of one non-constexpr argument, as an AOT type string.

    Returns (type, hint) with hint '' / '16' / '1' ('1' = the value is the constant 1).
    Rules (triton 3.6 and 3.9 alike): int 1 -> constant; ints divisible by 16 -> ':16';
    ints in i32 range -> i32, else i64, >= 2**63 -> u64; float -> fp32, bool -> u1 (never
    hinted); tensors -> '*' + dtype, ':16' when data_ptr() % 16 == 0.
    ``specialize=False`` (do_not_specialize) drops all hints; ``align=False``
    (do_not_specialize_on_alignment) drops ':16' only."""
    if isinstance(value, bool):
        return "u1", ""
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            ty = "i32"
        elif -2**63 <= value < 2**63:
            ty = "i64"
        elif 0 <= value < 2**64:
            ty = "u64"
        else:
            raise ValueError(f"integer {value} does not fit in 64 bits")
        if not specialize:
            return ty, ""
        if value == 1:
            return ty, "1"
        return ty, "16" if align and value % 16 == 0 else ""
    if isinstance(value, float):
        return "fp32", ""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        dtype = str(value.dtype).removeprefix("torch.")
        ty = canonical_type(dtype)
        if ty is None:
            raise ValueError(f"tensor dtype {value.dtype} has no Triton equivalent")
        hint = "16" if specialize and align and value.data_ptr() % 16 == 0 else ""
        return "*" + ty, hint
    raise ValueError(f"cannot specialise an argument of type {type(value).__name__}")


# ---------------------------------------------------------------- compile
@dataclass
class Artifacts:
    """What one Triton compile produced."""

    name: str              # the kernel's symbol in the cubin
    shared: int            # metadata.shared: dynamic shared memory bytes
    cubin: bytes
    asm: dict[str, str]    # 'ttgir', 'ptx' (and whatever else Triton kept), as text
    metadata: dict[str, Any]


@contextlib.contextmanager
def triton_cache_dir(path: str | None):
    """Point Triton's compile cache at `path` for the duration (None: leave it alone)."""
    if path is None:
        yield
        return
    from triton import knobs
    saved_env = os.environ.get("TRITON_CACHE_DIR")
    saved_knob = knobs.cache.__dict__.pop("dir", None)      # a value set in code overrides the env
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        yield
    finally:
        if saved_env is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved_env
        if saved_knob is not None:
            knobs.cache.__dict__["dir"] = saved_knob


def compile_source(fn, types: dict[str, str], divisible: set[str], constants: dict[str, Any],
                   cc: int, options: dict[str, Any]) -> Artifacts:
    """Compile `fn` for ``sm_<cc>`` with Triton; exceptions propagate.

    `types`: name -> Triton type ('*fp16', 'i32') for runtime parameters;
    `divisible`: names hinted ``tt.divisibility = 16``; `constants`: name -> value
    for every compile-time parameter (constexprs and ``:1`` ints)."""
    from triton.compiler import ASTSource

    names = list(fn.arg_names)
    signature = {n: ("constexpr" if n in constants else types[n]) for n in names}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisible}
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(constants), attrs=attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=dict(options))
    md = kernel.metadata
    asm = {k: v for k, v in kernel.asm.items() if isinstance(v, str)}
    meta = md._asdict() if hasattr(md, "_asdict") else dict(vars(md))
    return Artifacts(name=md.name, shared=int(md.shared), cubin=bytes(kernel.asm["cubin"]), asm=asm,
                     metadata={k: v for k, v in meta.items() if isinstance(v, (int, float, str, bool))})


def is_out_of_resources(exc: BaseException) -> bool:
    """True for Triton's OutOfResources (any version's location of the class)."""
    for mod in ("triton.runtime.errors", "triton.runtime.autotuner"):
        try:
            cls = getattr(__import__(mod, fromlist=["OutOfResources"]), "OutOfResources")
        except (ImportError, AttributeError):
            continue
        if isinstance(exc, cls):
            return True
    return False


# ------------------------------------------------- shared-memory allocation
def _allocation_passes(pm, cc: int, ptx_version: int) -> None:
    """The passes ``make_llir`` runs up to and including Triton's shared-memory
    allocation (triton 3.6 and 3.9 name and sign them slightly differently)."""
    from triton._C.libtriton import passes, nvidia
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    try:
        passes.ttgpuir.add_allocate_warp_groups(pm, False)
    except TypeError:
        passes.ttgpuir.add_allocate_warp_groups(pm)
    passes.convert.add_scf_to_cf(pm)
    inliner = getattr(getattr(passes, "gluon", None), "add_inliner", None) or getattr(
        passes.common, "add_inliner", None)
    if inliner is not None:
        inliner(pm)
    alloc = getattr(nvidia.passes.ttgpuir, "add_allocate_shared_memory_nv", None)
    if alloc is not None:
        alloc(pm, cc, ptx_version)
    else:                                         # pragma: no cover - older triton
        passes.ttgpuir.add_allocate_shared_memory(pm)


def _ptx_version(cc: int) -> int:
    from triton.backends.nvidia.compiler import get_ptx_version_from_options
    from triton.compiler import make_backend
    opts = make_backend(GPUTarget("cuda", cc, 32)).parse_options({})
    return get_ptx_version_from_options(opts, cc)


def allocate_shared(ttgir: str, cc: int) -> str:
    """The TTGIR text after Triton's shared-memory allocation for ``sm_<cc>``: the module
    carries ``ttg.shared = N``; every buffer op ``allocation.offset`` (scratch ops also
    ``allocation.size`` where this triton writes it). Control flow is lowered to ``cf``
    blocks first, as ``make_llir`` does. Exceptions propagate."""
    import os
    import tempfile
    from triton._C.libtriton import ir, nvidia
    ctx = ir.context()
    ir.load_dialects(ctx)
    nvidia.load_dialects(ctx)
    with tempfile.NamedTemporaryFile("w", suffix=".ttgir", delete=False) as f:
        f.write(ttgir)
    try:
        mod = ir.parse_mlir_module(f.name, ctx)
    finally:
        os.unlink(f.name)
    mod.context = ctx
    pm = ir.pass_manager(ctx)
    _allocation_passes(pm, cc, _ptx_version(cc))
    try:
        pm.run(mod, "allocate_shared")
    except TypeError:                             # triton 3.6: run(module)
        pm.run(mod)
    return str(mod)


def compile_to_ttgir(fn, types: dict[str, str], divisible: set[str], constants: dict[str, Any],
                     cc: int, options: dict[str, Any]) -> str:
    """Run Triton's front end and TTIR/TTGIR stages only (no LLVM, no ptxas); the TTGIR text.
    Same arguments as :func:`compile_source`. Exceptions propagate."""
    from triton.compiler import ASTSource, make_backend
    from triton._C.libtriton import ir
    names = list(fn.arg_names)
    signature = {n: ("constexpr" if n in constants else types[n]) for n in names}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisible}
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(constants), attrs=attrs)
    target = GPUTarget("cuda", cc, 32)
    backend = make_backend(target)
    opts = backend.parse_options(dict(options, **src.parse_options()))
    stages: dict[str, Any] = {}
    backend.add_stages(stages, opts, src.language)
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    codegen, module_map = backend.get_codegen_implementation(opts), backend.get_module_map()
    try:
        mod = src.make_ir(target, opts, codegen, module_map, ctx)
    except TypeError:                             # triton 3.6: make_ir(options, codegen_fns, module_map, context)
        mod = src.make_ir(opts, codegen, module_map, ctx)
    metadata: dict[str, Any] = {"target": target, **opts.__dict__}
    for name in ("ttir", "ttgir"):
        mod = stages[name](mod, metadata)
    return str(mod)
