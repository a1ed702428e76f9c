"""Compile many configs in parallel: :func:`compile_many`.

    results = compile_many([CompileJob(fn, signature=..., constexprs=..., arch="sm_90", num_warps=w)
                            for w in (4, 8)])

Contracts: results come back in input order; cache hits never reach a worker;
a failing compile is a result (see :func:`~occmodel.compile.compile_kernel`),
and a compiler process that dies only fails its own job. Invalid inputs (bad
arch, type string, names) raise :class:`~occmodel.errors.CompileError` before
anything compiles, naming the job.

Faults: Ctrl-C cancels every queued compile at once, stops the workers and
returns the results finished so far, the others with status ``"interrupted"``
(never cached); :func:`interrupted` then says so. Under the CLI later calls in
the same command compile nothing new, and it prints the partial rows and exits
130 (see :mod:`occmodel._interrupt`). Workers
ignore SIGINT (the parent decides) and die with their parent: PR_SET_PDEATHSIG
on Linux, and a thread that watches the parent's pid everywhere, so a killed
parent leaves no workers behind. When every job failed for an environmental
reason (ptxas missing or killed, no disk) there is nothing to report:
:class:`~occmodel.errors.CompileError`.

Engines: ``compile_many(jobs, executor=...)`` runs the compiles on any
``concurrent.futures.Executor`` instead of the local pool (the CLI's ``--executor``
connects to a Dask cluster, :mod:`occmodel.engine`). The caller checks every result
against its own key and caches it, so a cluster's results land in the caller's cache;
see :func:`_run_executor` for what happens when a worker dies or disagrees.

Size and progress: a sweep compiling more than a few dozen new configs first says how
many and about how long (:func:`estimate_seconds`), then shows progress
(:class:`_Progress`); under the CLI, one larger than ``--max-configs`` raises
:class:`SweepTooLarge` before compiling anything (see :mod:`occmodel._sweep`). Triton's
own cache under occmodel's folder is trimmed to its bound after each sweep.

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
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, CancelledError, Executor, ProcessPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .compile import (INTERRUPTED, CompileResult, accept_remote, cached_result, check_target, compile_request,
                      failed_result, jit_function, load_kernel, make_request)
from . import _cache, _interrupt, _sweep
from .errors import CompileError

__all__ = ["CompileJob", "compile_many", "kernel_ref", "load_kernel", "interrupted", "reset_interrupted",
           "SweepTooLarge", "estimate_seconds"]

_INTERRUPTED = _interrupt.EVENT


def interrupted() -> bool:
    """True once a Ctrl-C has cut a :func:`compile_many` short (see :mod:`occmodel._interrupt`)."""
    return _INTERRUPTED.is_set()


def reset_interrupted() -> None:
    """Let later :func:`compile_many` calls compile again (after an interrupt was handled)."""
    _INTERRUPTED.clear()


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
    return compile_request(make_request(load_kernel(ref), **kwargs), keep_ir)


def _init_worker(parent: int) -> None:
    """Worker start-up: leave SIGINT to the parent, and die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)        # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:        # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="occmodel-parent-watch", daemon=True).start()


class _Progress:
    """Progress of one sweep on stderr: a one-line bar with count and ETA when stderr is a
    terminal; when it is not, a plain line every ``_sweep.LINE_EVERY_S`` seconds, and only for a
    sweep that compiles more than ``_sweep.ANNOUNCE`` new configs (small ones stay quiet)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.cached, self.failed = total, 0, 0, 0
        self.tty = sys.stderr.isatty()
        self.enabled = enabled and total > 0 and self.tty
        self.lines = False
        self.start = time.monotonic()
        self.new = self.new_done = 0
        self.each, self.slots = _sweep.DEFAULT_SECONDS, 1
        self.last_line = self.start

    def plan(self, new: int, each: float, slots: int, enabled: bool) -> None:
        """`new` configs to compile, about `each` seconds apiece, `slots` at once (for the ETA)."""
        self.new, self.each, self.slots = new, each, max(1, slots)
        self.start = self.last_line = time.monotonic()
        self.lines = enabled and not self.tty and new > _sweep.ANNOUNCE

    def eta(self) -> float:
        """Seconds left: the rate measured so far once a compile finished, else the estimate."""
        left = max(0, self.new - self.new_done)
        if self.new_done:
            return left * (time.monotonic() - self.start) / self.new_done
        return left * self.each / self.slots

    def update(self, res: CompileResult) -> None:
        self.done += 1
        self.cached += res.cached
        self.failed += res.status != "ok"
        if not res.cached:
            self.new_done += 1
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total)
            secs = int(time.monotonic() - self.start)
            eta = f"  ETA {_sweep.duration(self.eta())}" if self.new_done < self.new else ""
            sys.stderr.write(f"\rcompile [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                             f"  cached {self.cached}  failed {self.failed}  {secs // 60}:{secs % 60:02d}{eta} ")
            sys.stderr.flush()
        elif self.lines and (time.monotonic() - self.last_line >= _sweep.LINE_EVERY_S or self.done == self.total):
            self.last_line = time.monotonic()
            self._line()

    def _line(self) -> None:
        secs = time.monotonic() - self.start
        left = f", about {_sweep.duration(self.eta())} left" if self.new_done < self.new else ""
        sys.stderr.write(f"occmodel: compiled {self.new_done:,}/{self.new:,} new configs "
                         f"({self.done:,}/{self.total:,} in all, {self.failed:,} failed), "
                         f"{_sweep.duration(secs)} so far{left}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _crashed(req, exc: BaseException) -> CompileResult:
    return failed_result(req, "compile_error", f"compiler process died: {type(exc).__name__}: {exc}",
                         detail=repr(exc), environmental=True)


def _not_compiled(req) -> CompileResult:
    return failed_result(req, INTERRUPTED, "not compiled: interrupted (Ctrl-C)")


def compile_many(jobs: Iterable[CompileJob | Mapping[str, Any]], processes: int | None = None,
                 progress: bool = True, executor: Executor | None = None) -> list[CompileResult]:
    """Compile every job, in parallel over `processes` (default: the CPUs this process may use),
    or on `executor`: any ``concurrent.futures.Executor`` (a Dask ``Client.get_executor()``, a
    ``ProcessPoolExecutor`` you own...), which compiles in its workers; their results are checked
    against this process's cache key and cached here (see :func:`_run_executor`).

    Returns one CompileResult per job, in input order (status ``"interrupted"`` for the
    jobs a Ctrl-C kept from compiling). Under the CLI, ``--executor`` supplies the executor
    and ``--max-configs`` / ``--yes`` the largest sweep that starts unasked (:mod:`occmodel._sweep`)."""
    jobs = [_as_job(j) for j in jobs]
    reqs, fns = [], []
    for i, job in enumerate(jobs):
        fn = load_kernel(job.fn) if isinstance(job.fn, str) else job.fn
        try:
            req = make_request(fn, job.signature, job.constexprs, job.args, job.arch, job.num_warps,
                               job.num_stages, job.options)
            check_target(req.cc)
        except CompileError as exc:
            raise CompileError(f"job {i}: {exc}") from None
        reqs.append(req)
        fns.append(fn)

    if not _interrupt.STICKY:
        reset_interrupted()              # a library call starts afresh after an earlier Ctrl-C
    results: list[CompileResult | None] = [None] * len(jobs)
    bar = _Progress(len(jobs), progress)
    todo: dict[str, list[int]] = {}                 # key -> job indices (duplicates compile once)
    hits = []
    for i, (job, req) in enumerate(zip(jobs, reqs)):
        hit = cached_result(req, job.keep_ir)
        if hit is not None:
            results[i] = hit
            hits.append(hit)
        else:
            todo.setdefault(req.key, []).append(i)

    def finish(idx: list[int], res: CompileResult) -> None:
        for i in idx:
            results[i] = res
            bar.update(res)
        if not res.cached and bar.new_done % 100 == 0:
            _cache.trim_triton()              # a long sweep keeps Triton's cache bounded as it goes

    try:
        if todo and not interrupted():
            _cache.check_usable()
            if executor is None and _sweep.EXECUTOR:
                from .engine import connect
                engine = connect(_sweep.EXECUTOR)
                executor, slots = engine.executor, engine.slots()
            elif executor is not None:
                slots = int(getattr(executor, "_max_workers", 0) or 1)
            else:
                slots = min(processes or _cpu_count(), len(todo))
            _gate_and_announce(bar, [reqs[idx[0]] for idx in todo.values()], len(jobs), slots, progress)
            for hit in hits:
                bar.update(hit)
            remote, local = [], []
            for key, idx in todo.items():
                i = idx[0]
                payload = _payload(fns[i], reqs[i], jobs[i])
                (remote if payload is not None else local).append((key, idx, payload))
            workers = min(processes or _cpu_count(), len(remote))
            if executor is not None and remote:
                local += _run_executor(remote, executor, reqs, finish)
            elif workers > 1:
                local += _run_pool(remote, workers, reqs, finish)
            else:
                local = remote + local
            for _key, idx, _unused in local:
                finish(idx, _compile_here(reqs[idx[0]], jobs[idx[0]].keep_ir))
        else:
            for hit in hits:
                bar.update(hit)
    except KeyboardInterrupt:
        _INTERRUPTED.set()
    finally:
        bar.close()
        if bar.new_done:
            _cache.trim_triton()
    for i, res in enumerate(results):
        if res is None:
            results[i] = _not_compiled(reqs[i])
    compiled = [r for r in results if r.status != INTERRUPTED and not r.cached]
    if compiled and all(r.environmental for r in compiled) and not any(r.ok for r in results):
        first = compiled[0]
        raise CompileError(f"no config could be compiled, for a reason of this machine, not the kernel "
                           f"({len(compiled)} tried): {first.message}")
    return results  # type: ignore[return-value]


def estimate_seconds(reqs: list) -> tuple[float, str]:
    """(seconds one compile of these requests takes on one core, where that figure comes from):
    the median compile_seconds of the cache's compiles for their arch, else a stated default."""
    import statistics
    arches = sorted({f"sm_{r.cc}" for r in reqs})
    times = [t for arch in arches for t in _cache.compile_times(arch)]
    if len(times) >= _sweep.MIN_SAMPLES:
        return statistics.median(times), f"median of {len(times):,} compiles for {', '.join(arches)} in the cache"
    return _sweep.DEFAULT_SECONDS, f"a default: the cache holds too few compiles for {', '.join(arches)} to measure"


def _gate_and_announce(bar: _Progress, new_reqs: list, total: int, slots: int, progress: bool) -> None:
    """Say how many configs will compile and about how long (when more than a few dozen), and stop a
    sweep larger than the CLI's --max-configs before anything compiles."""
    n = len(new_reqs)
    big = n > _sweep.ANNOUNCE or (_sweep.MAX_NEW is not None and n > _sweep.MAX_NEW)
    each, source = estimate_seconds(new_reqs) if big else (_sweep.DEFAULT_SECONDS, "")
    bar.plan(n, each, slots, progress)
    if not big:
        return
    arches = ", ".join(sorted({f"sm_{r.cc}" for r in new_reqs}))
    about = (f"{n:,} new configs for {arches} ({total - n:,} of {total:,} cached): about "
             f"{_sweep.duration(n * each / max(1, slots))} at {each:.1f} s each ({source}), {slots} at a time")
    if _sweep.MAX_NEW is not None and n > _sweep.MAX_NEW:
        raise SweepTooLarge(f"this sweep would compile {about}; pass --yes to start it, --max-configs {n} to "
                            f"allow up to {n:,}, or a smaller sweep (--warps, --stages, -D lists)")
    if progress:
        sys.stderr.write(f"occmodel: compiling {about}; Ctrl-C keeps what is done\n")
        sys.stderr.flush()


class SweepTooLarge(CompileError):
    """A sweep compiles more new configs than the CLI's --max-configs allows (nothing compiled)."""


def _compile_here(req, keep_ir: bool) -> CompileResult:
    return compile_request(req, keep_ir)


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


def _stop(pool) -> None:
    """Cancel what is queued and end the workers now (no waiting for running compiles)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, AttributeError, ValueError):
            pass
    deadline = time.monotonic() + 2.0
    for proc in procs:
        try:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
        except (OSError, AttributeError, ValueError, AssertionError):
            pass


def _run_pool(remote, workers: int, reqs, finish) -> list:
    """Compile `remote` jobs in a spawn pool; a dying worker costs only its own job.
    Returns the jobs to compile in this process instead (the pool could not start)."""
    import multiprocessing
    pending = list(remote)
    isolate = False
    while pending:
        broken = []
        size = 1 if isolate else min(workers, len(pending))
        batches = [[job] for job in pending] if isolate else [pending]
        for n, batch in enumerate(batches):
            try:
                pool = ProcessPoolExecutor(max_workers=size, mp_context=multiprocessing.get_context("spawn"),
                                           initializer=_init_worker, initargs=(os.getpid(),))
                futures = {pool.submit(_worker, *item[2]): item for item in batch}
            except OSError:                         # no processes, pipes or semaphores: compile here
                return [job for b in batches[n:] for job in b] + broken
            try:
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
            except BaseException:
                _stop(pool)
                raise
            pool.shutdown(wait=True)
        pending, isolate = broken, True
    return []


STALL_S = 600.0       # an executor that finishes no compile for this long: the rest compile here


def _remote_worker(ref: str, kwargs: dict[str, Any], keep_ir: bool) -> CompileResult:
    """Runs on an executor's worker (any machine): compile, write nothing to the worker's
    occmodel cache (the result is cached by the process that asked), keep Triton's cache there bounded."""
    import warnings
    warnings.simplefilter("ignore")
    res = compile_request(make_request(load_kernel(ref), **kwargs), keep_ir, cache=False)
    _trim_now_and_then()
    return res


_LAST_TRIM = [0.0]


def _trim_now_and_then() -> None:
    if time.monotonic() - _LAST_TRIM[0] > 60.0:
        _LAST_TRIM[0] = time.monotonic()
        try:
            _cache.trim_triton()
        except OSError:
            pass


def _run_executor(remote, executor: Executor, reqs, finish) -> list:
    """Compile `remote` jobs on `executor`; every result is checked and cached here
    (:func:`~occmodel.compile.accept_remote`). A worker that dies is the engine's to retry
    (Dask reruns its task elsewhere); a task the engine gives up on (Dask's KilledWorker after
    repeated deaths) fails only its own job, as in the local pool. Returns the jobs to compile
    in this process instead: results not this process's (another toolchain), a worker that
    could not import the kernel, a submit refused, or an engine that finished nothing for
    ``STALL_S`` seconds. Ctrl-C cancels what is queued; an executor passed in is never shut down."""
    stall = float(os.environ.get("OCCMODEL_EXECUTOR_STALL_S") or STALL_S)
    futures: dict[Any, tuple] = {}
    here: list = []
    why: list[str] = []
    for n, item in enumerate(remote):
        ref, kwargs, keep_ir, _cache_dir = item[2]
        try:
            futures[executor.submit(_remote_worker, ref, kwargs, keep_ir)] = item
        except Exception as exc:             # shut down, or it cannot take the arguments
            why.append(f"submit refused: {type(exc).__name__}: {exc}")
            here += remote[n:]
            break
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=stall, return_when=FIRST_COMPLETED)
            if not done:
                why.append(f"the executor finished no compile in {stall:g} s")
                for fut in pending:
                    fut.cancel()
                here += [futures[f] for f in pending]
                pending = set()
                break
            for fut in done:
                key, idx, payload = item = futures[fut]
                req = reqs[idx[0]]
                try:
                    res = fut.result()
                except CancelledError:
                    why.append("a task was cancelled by the engine")
                    here.append(item)
                    continue
                except Exception as exc:
                    if type(exc).__name__ == "KilledWorker":      # it killed every worker that tried it
                        finish(idx, _crashed(req, exc))
                    else:
                        why.append(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
                        here.append(item)
                    continue
                ok = accept_remote(req, res)
                if ok is None:
                    why.append("a worker's result is not this process's (another Triton, ptxas or environment: "
                               "another cache key) or its machine failed it" if isinstance(res, CompileResult)
                               else f"a worker returned {type(res).__name__}, not a CompileResult")
                    here.append(item)
                    continue
                finish(idx, ok)
    except BaseException:
        for fut in pending:
            fut.cancel()
        raise
    if here:
        sys.stderr.write(f"occmodel: {len(here):,} of {len(remote):,} compiles run in this process instead of on "
                         f"the executor; first reason: {why[0] if why else 'unknown'}\n")
        sys.stderr.flush()
    return here


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
