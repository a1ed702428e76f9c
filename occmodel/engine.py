"""Compile sweeps on a Dask distributed cluster: ``--executor ADDRESS``.

    occmodel accuracy --kernel mycard.py:CARD --yes --executor tcp://10.0.0.5:8786

:func:`connect` opens a :class:`distributed.Client` to a running scheduler (an address
such as ``tcp://host:8786`` / ``host:8786``, or the path of a ``--scheduler-file``) and
hands :func:`~occmodel.compile_pool.compile_many` its ``concurrent.futures.Executor``
(``Client.get_executor()``). Each worker re-imports the kernel by reference and
compiles; its result comes back here, is checked against this process's cache key and
written to this process's cache, exactly as a local compile is (see
:mod:`occmodel.compile_pool`). A worker that dies mid-compile is Dask's to handle: the
scheduler reruns its task on another worker.

What workers need: the same occmodel, Triton and ptxas as this process (a result whose
key differs, e.g. another ptxas, is not trusted and is compiled here instead), the
kernel's file at the same path (or its module importable), and one thread per worker
process (Triton compiles are serialised per process): ``dask worker ADDR --nthreads 1
--nworkers N``. Dask is optional: ``pip install 'occmodel[distributed]'``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .errors import OccmodelError

CONNECT_TIMEOUT_S = 15.0     # $OCCMODEL_EXECUTOR_TIMEOUT_S overrides both
WORKER_WAIT_S = 30.0


def _timeout(default: float) -> float:
    try:
        return float(os.environ.get("OCCMODEL_EXECUTOR_TIMEOUT_S") or default)
    except ValueError:
        return default


class EngineError(OccmodelError):
    """The compile engine cannot be used: not installed, unreachable, or without workers."""


@dataclass
class Engine:
    address: str
    client: Any
    executor: Any

    def slots(self) -> int:
        """Compiles that can run at once: the cluster's worker threads now (at least 1)."""
        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        except TypeError:                    # older distributed: no n_workers argument
            workers = self.client.scheduler_info()["workers"].values()
        except Exception:
            return 1
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers))

    def close(self) -> None:
        try:
            self.client.close(timeout=5)
        except Exception:
            pass


_OPEN: dict[str, Engine] = {}


def connect(address: str) -> Engine:
    """The engine at `address` (one connection per address per process); EngineError (one line) if
    Dask is not installed, the scheduler cannot be reached, or it has no worker within 30 s."""
    if address in _OPEN:
        return _OPEN[address]
    try:
        from distributed import Client
    except ImportError:
        raise EngineError("--executor needs Dask distributed, which is not installed; "
                          "pip install 'occmodel[distributed]' (or: pip install distributed)") from None
    kw: dict[str, Any] = {}
    if address.endswith(".json") or os.path.isfile(address):
        if not os.path.isfile(address):
            raise EngineError(f"--executor {address!r}: no such scheduler file")
        kw["scheduler_file"] = address
    else:
        kw["address"] = address if "://" in address else f"tcp://{address}"
    try:
        client = Client(timeout=_timeout(CONNECT_TIMEOUT_S), set_as_default=False, **kw)
    except (OSError, TimeoutError, ValueError) as exc:
        raise EngineError(f"cannot reach the Dask scheduler at {address!r}: "
                          f"{' '.join(str(exc).split()) or type(exc).__name__}; start one with "
                          f"`dask scheduler` and pass its address (tcp://HOST:8786)") from None
    wait_s = _timeout(WORKER_WAIT_S)
    try:
        client.wait_for_workers(1, timeout=wait_s)
    except Exception:
        try:
            client.close(timeout=5)
        except Exception:
            pass
        raise EngineError(f"the Dask scheduler at {address!r} has no worker after {wait_s:g} s; start "
                          f"some: dask worker {address} --nthreads 1 --nworkers N") from None
    engine = Engine(address, client, client.get_executor(pure=False))
    _OPEN[address] = engine
    return engine


def close_all() -> None:
    """Close every connection :func:`connect` opened (the CLI does at the end of a command)."""
    while _OPEN:
        _OPEN.popitem()[1].close()


class LocalCluster:
    """A Dask scheduler and `workers` worker processes on 127.0.0.1, each its own OS process
    (``dask scheduler`` / ``dask worker --no-nanny --nthreads 1``), for trying ``--executor`` on
    one machine, for the tests and for the benchmark::

        with LocalCluster(workers=2) as cluster:
            compile_many(jobs, executor=cluster.executor())
            cluster.kill(0)                      # SIGKILL one worker process

    Everything stops by itself: the scheduler after 10 idle minutes, a worker 60 s after its
    scheduler is gone. `env` adds variables to every worker's environment (`worker_env[i]` to
    worker i's only)."""

    def __init__(self, workers: int = 2, env: dict[str, str] | None = None,
                 worker_env: list[dict[str, str]] | None = None, folder: str | None = None):
        import tempfile
        self.n = workers
        self.env = dict(env or {})
        self.worker_env = list(worker_env or [{} for _ in range(workers)])
        self._tmp = tempfile.TemporaryDirectory(prefix="occmodel-dask-", dir=folder)
        self.scheduler_file = os.path.join(self._tmp.name, "scheduler.json")
        self.scheduler = None
        self.workers: list = []
        self._client = None

    def start(self, timeout: float = 90.0) -> "LocalCluster":
        import subprocess
        import sys
        import time
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.scheduler = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--idle-timeout", "600s", "--scheduler-file", self.scheduler_file],
            env=dict(os.environ, **self.env), **quiet)
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.scheduler_file):
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise EngineError("the local Dask scheduler did not start")
            time.sleep(0.05)
        for i in range(self.n):
            self.add_worker(i)
        self.client().wait_for_workers(self.n, timeout=max(1.0, deadline - time.monotonic()))
        return self

    def add_worker(self, i: int | None = None):
        import subprocess
        import sys
        i = len(self.workers) if i is None else i
        extra = self.worker_env[i] if i < len(self.worker_env) else {}
        proc = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", self.scheduler_file,
             "--no-nanny", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{i}",
             "--death-timeout", "60s"],
            env=dict(os.environ, **self.env, **extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.workers.append(proc)
        return proc

    @property
    def address(self) -> str:
        import json
        with open(self.scheduler_file) as f:
            return json.load(f)["address"]

    def client(self):
        if self._client is None:
            from distributed import Client
            self._client = Client(scheduler_file=self.scheduler_file, set_as_default=False, timeout=30)
        return self._client

    def executor(self):
        return self.client().get_executor(pure=False)

    def kill(self, i: int) -> None:
        """SIGKILL worker process i (no goodbye to the scheduler: a crash, as the OOM killer does)."""
        import signal
        self.workers[i].send_signal(signal.SIGKILL)
        self.workers[i].wait(30)

    def stop(self) -> None:
        import contextlib
        import subprocess
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close(timeout=5)
            self._client = None
        procs = [p for p in self.workers + [self.scheduler] if p is not None]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        self._tmp.cleanup()

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
