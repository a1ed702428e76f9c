"""Compile many configs in parallel: :func:`compile_many`.

    results = compile_many([CompileJob(fn, signature=..., constexprs=..., arch="sm_90", num_warps=w)
                            for w in (4, 8)])

Contracts: results come back in input order; cache hits never reach a worker;
a failing compile is a result (see :func:`~occmodel.compile.compile_kernel`),
and a compiler process that dies only fails its own job. Invalid inputs (bad
arch, type string, names) raise :class:`~occmodel.errors.CompileError` before
anything compiles, naming the job.

Workers are fresh ``spawn`` processes (Triton's MLIR/LLVM state is not
fork-safe). Each re-imports the kernel by reference: ``module:name`` when its
module is importable by name, else ``/path/to/file.py:name`` from the
function's code object (so kernels in user scripts and in files loaded by path
work). A kernel that cannot be re-imported (defined in a REPL, inside a
function, or whose constexprs cannot be pickled) is compiled in this process.
"""

from __future__ import annotations

import importlib.machinery
import os
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .compile import CompileResult, _compile, _load_entry, _request, _check_arch, _store_entry
from .errors import CompileError


@dataclass(frozen=True)
class CompileJob:
    """The arguments of one :func:`~occmodel.compile.compile_kernel` call."""

    fn: Any                                  # a JITFunction, or "module:name" / "path.py:name"
    signature: Any = None
    constexprs: Mapping[str, Any] | None = None
    args: Any = None
    arch: Any = "sm_120"
    num_warps: int = 4
    num_stages: int = 3
    options: Mapping[str, Any] | None = None
    keep_ir: bool = False


def kernel_ref(fn) -> str | None:
    """How a worker process can re-import `fn` ("module:name" or "/abs/file.py:name"), or None."""
    from .compile import jit_function
    try:
        inner = jit_function(fn).fn
    except CompileError:
        return None
    qual, mod = inner.__qualname__, inner.__module__
    if "." in qual or "<" in qual:
        return None
    top = mod.split(".")[0]
    if mod not in ("__main__", "__mp_main__") and (
            top in sys.builtin_module_names or importlib.machinery.PathFinder.find_spec(top) is not None):
        return f"{mod}:{qual}"
    path = inner.__code__.co_filename
    return f"{os.path.abspath(path)}:{qual}" if os.path.isfile(path) else None


def load_kernel(ref: str):
    """Import the JITFunction a :func:`kernel_ref` names (KernelError if it cannot)."""
    from .card import load_object
    where = ref.rpartition(":")[0]
    if where.endswith(".py"):
        folder = os.path.dirname(where)       # let the file import its neighbours, as Triton's AOT tool does
        if folder not in sys.path:
            sys.path.insert(0, folder)
    return load_object(ref)


def _as_job(job: Any) -> CompileJob:
    if isinstance(job, CompileJob):
        return job
    if isinstance(job, Mapping):
        try:
            return CompileJob(**job)
        except TypeError as exc:
            raise CompileError(f"bad compile job {dict(job)!r}: {exc}") from None
    raise CompileError(f"a compile job is a CompileJob or a mapping of compile_kernel arguments, not {job!r}")


def _worker(ref: str, kwargs: dict[str, Any], keep_ir: bool, cache_dir: str | None) -> CompileResult:
    """Runs in a worker: re-import the kernel and compile it (the result is cached here too)."""
    import warnings
    warnings.simplefilter("ignore")        # this process's Triton warnings were already shown in the parent
    if cache_dir is not None:
        os.environ["OCCMODEL_CACHE_DIR"] = cache_dir
    return _compile_here(_request(load_kernel(ref), **kwargs), keep_ir)


class _Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.cached, self.failed = total, 0, 0, 0
        self.enabled = enabled and total > 0 and sys.stderr.isatty()
        self.start = time.monotonic()

    def update(self, res: CompileResult) -> None:
        self.done += 1
        self.cached += res.cached
        self.failed += res.status != "ok"
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total)
            secs = int(time.monotonic() - self.start)
            sys.stderr.write(f"\rcompile [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                             f"  cached {self.cached}  failed {self.failed}  {secs // 60}:{secs % 60:02d} ")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _crashed(req, exc: BaseException) -> CompileResult:
    from .compile import _jsonable
    from . import triton_compat as tc
    return CompileResult(
        status="compile_error", message=f"compiler process died: {type(exc).__name__}: {exc}"[:300],
        kernel=req.fn.__name__, arch=f"sm_{req.cc}", num_warps=req.num_warps, num_stages=req.num_stages,
        shared=None, static_shared=None, n_regs=None, n_spills=None, local_bytes=None, reserved_shared=None,
        ptxas_version="", triton_version=tc.TRITON_VERSION, signature=req.signature,
        constexprs={k: _jsonable(v) for k, v in req.constants.items() if k not in req.signature},
        options=req.options, compile_seconds=0.0, cached=False, key=req.key, detail=repr(exc))


def compile_many(jobs: Iterable[CompileJob | Mapping[str, Any]], processes: int | None = None,
                 progress: bool = True) -> list[CompileResult]:
    """Compile every job, in parallel over `processes` (default: the CPUs this process may use).

    Returns one CompileResult per job, in input order."""
    jobs = [_as_job(j) for j in jobs]
    reqs, fns = [], []
    for i, job in enumerate(jobs):
        fn = load_kernel(job.fn) if isinstance(job.fn, str) else job.fn
        try:
            req = _request(fn, job.signature, job.constexprs, job.args, job.arch, job.num_warps,
                           job.num_stages, job.options)
            _check_arch(req.cc)
        except CompileError as exc:
            raise CompileError(f"job {i}: {exc}") from None
        reqs.append(req)
        fns.append(fn)

    results: list[CompileResult | None] = [None] * len(jobs)
    bar = _Progress(len(jobs), progress)
    todo: dict[str, list[int]] = {}                 # key -> job indices (duplicates compile once)
    for i, (job, req) in enumerate(zip(jobs, reqs)):
        hit = _load_entry(req.key, job.keep_ir)
        if hit is not None:
            results[i] = hit
            bar.update(hit)
        else:
            todo.setdefault(req.key, []).append(i)

    remote, local = [], []
    for key, idx in todo.items():
        i = idx[0]
        payload = _payload(fns[i], reqs[i], jobs[i])
        (remote if payload is not None else local).append((key, idx, payload))

    def finish(idx: list[int], res: CompileResult) -> None:
        for i in idx:
            results[i] = res
            bar.update(res)

    try:
        workers = min(processes or _cpu_count(), len(remote))
        if workers > 1:
            _run_pool(remote, workers, reqs, finish)
        else:
            local = remote + local
        for _key, idx, _unused in local:
            finish(idx, _compile_here(reqs[idx[0]], jobs[idx[0]].keep_ir))
    finally:
        bar.close()
    return results  # type: ignore[return-value]


def _compile_here(req, keep_ir: bool) -> CompileResult:
    res, cacheable = _compile(req, keep_ir)
    if cacheable:
        _store_entry(res)
    return res


def _payload(fn, req, job: CompileJob):
    """Picklable worker arguments, or None when the job must compile in this process."""
    ref = kernel_ref(fn)
    if ref is None:
        return None
    kwargs = dict(signature=req.signature, constexprs={k: v for k, v in req.constants.items()
                                                       if k not in req.signature},
                  args=None, arch=req.cc, num_warps=req.num_warps, num_stages=req.num_stages,
                  options=req.options)
    try:
        pickle.dumps(kwargs)
    except Exception:
        return None
    return ref, kwargs, job.keep_ir, os.environ.get("OCCMODEL_CACHE_DIR")


def _run_pool(remote, workers: int, reqs, finish) -> None:
    """Compile `remote` jobs in a spawn pool; a dying worker costs only its own job."""
    import multiprocessing
    pending = list(remote)
    isolate = False
    while pending:
        broken = []
        size = 1 if isolate else min(workers, len(pending))
        batches = [[job] for job in pending] if isolate else [pending]
        for batch in batches:
            with ProcessPoolExecutor(max_workers=size, mp_context=multiprocessing.get_context("spawn")) as pool:
                futures = {pool.submit(_worker, *item[2]): item for item in batch}
                for fut in as_completed(futures):
                    key, idx, payload = futures[fut]
                    try:
                        res = fut.result()
                    except BrokenProcessPool as exc:
                        if isolate:
                            finish(idx, _crashed(reqs[idx[0]], exc))
                        else:
                            broken.append((key, idx, payload))
                        continue
                    except Exception:                 # re-import failed etc.: compile here instead
                        res = _compile_here(reqs[idx[0]], payload[2])
                    if res.key != key:                # the re-imported source differs: trust this process
                        res = _compile_here(reqs[idx[0]], payload[2])
                    finish(idx, res)
        pending, isolate = broken, True


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
