"""Compile sweeps on a real Dask cluster: a scheduler and worker processes on 127.0.0.1 that
each test starts (occmodel.engine.LocalCluster: `dask scheduler` / `dask worker --no-nanny`,
each its own OS process), no mocks. Tiny kernels (add_kernel), few configs, sm_90.

What must hold: workers compile (their compile logs say so, this process's stays empty),
results come back checked against this process's key and land in THIS process's cache
(the workers' own occmodel caches stay empty); a worker SIGKILLed in the middle of a compile
costs nothing (its task reruns on the other worker, every config ends ok and cached); an
engine that lost every worker stalls, and the rest compiles here; the CLI's --executor works,
and a scheduler that is not there is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("distributed")

import kernels_for_tests as K  # noqa: E402
from occmodel.compile import cached_result, compile_kernel, make_request, accept_remote  # noqa: E402
from occmodel.compile_pool import CompileJob, compile_many  # noqa: E402
from occmodel.engine import LocalCluster  # noqa: E402

TESTS = Path(__file__).resolve().parent
PYTHONPATH = os.pathsep.join([str(TESTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p])


def jobs(blocks, warps=(2,)):
    return [CompileJob(K.add_kernel, K.ADD_SIG, {"BLOCK": b}, arch="sm_90", num_warps=w, num_stages=1)
            for b in blocks for w in warps]


def lines(path) -> list[str]:
    try:
        return Path(path).read_text().split()
    except FileNotFoundError:
        return []


def start_cluster(base: Path, n: int = 2) -> LocalCluster:
    base.mkdir(parents=True, exist_ok=True)
    logs = [str(base / f"w{i}.log") for i in range(n)]
    cluster = LocalCluster(n, env={"OCCMODEL_CACHE_DIR": str(base / "worker-cache"), "PYTHONPATH": PYTHONPATH,
                                   "TRITON_DEFAULT_FP_FUSION": "1"},
                           worker_env=[{"OCCMODEL_COMPILE_LOG": log} for log in logs], folder=str(base))
    cluster.logs = logs
    return cluster.start()


@pytest.fixture
def here(tmp_path, monkeypatch):
    """This process's own cache and compile log."""
    monkeypatch.setenv("OCCMODEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OCCMODEL_COMPILE_LOG", str(tmp_path / "here.log"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    return tmp_path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("dask"))
    yield c
    c.stop()


def test_workers_compile_and_results_land_in_this_cache(cluster, here):
    todo = jobs((256, 1024), warps=(2, 4))
    res = compile_many(todo, executor=cluster.executor(), progress=False)
    assert [r.status for r in res] == ["ok"] * 4 and not any(r.cached for r in res)
    keys = {r.key for r in res}
    assert keys <= set(lines(cluster.logs[0]) + lines(cluster.logs[1]))      # compiled by the workers
    assert lines(here / "here.log") == []                                     # not here
    for job, r in zip(todo, res):                                             # a valid entry under our key
        hit = cached_result(make_request(job.fn, job.signature, job.constexprs, None, job.arch, job.num_warps,
                                         job.num_stages))
        assert hit is not None and hit.cached and (hit.n_regs, hit.shared) == (r.n_regs, r.shared)
    assert not (Path(cluster.env["OCCMODEL_CACHE_DIR"]) / "compile").exists()  # workers cache nothing of ours
    again = compile_many(todo, executor=cluster.executor(), progress=False)
    assert all(r.cached for r in again)
    # the same numbers as a compile in this process
    local = compile_kernel(K.add_kernel, K.ADD_SIG, {"BLOCK": 256}, arch="sm_90", num_warps=2, num_stages=1,
                           cache=False)
    assert (local.n_regs, local.shared, local.key) == (res[0].n_regs, res[0].shared, res[0].key)


def test_any_executor_works_and_a_foreign_result_is_not_trusted(here):
    import multiprocessing
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        res = compile_many(jobs((512,)), executor=pool, progress=False)
    assert res[0].ok and not res[0].cached and cached_result(make_request(
        K.add_kernel, K.ADD_SIG, {"BLOCK": 512}, arch="sm_90", num_warps=2, num_stages=1)) is not None
    other = make_request(K.add_kernel, K.ADD_SIG, {"BLOCK": 2048}, arch="sm_90", num_warps=2, num_stages=1)
    assert accept_remote(other, res[0]) is None                   # another config's key: not trusted
    assert accept_remote(other, "not a result") is None
    assert cached_result(other) is None                           # and nothing was cached for it


def test_a_worker_killed_mid_sweep_loses_nothing(here, tmp_path, monkeypatch):
    c = start_cluster(tmp_path / "dask2")
    try:
        todo = jobs((128, 256, 512, 1024), warps=(2, 4))
        out: dict = {}
        t = threading.Thread(target=lambda: out.setdefault("res", compile_many(todo, executor=c.executor(),
                                                                              progress=False)))
        t.start()
        deadline = time.monotonic() + 90
        while not lines(c.logs[0]) and time.monotonic() < deadline:
            time.sleep(0.005)
        c.kill(0)                                  # w0 has just started a compile: SIGKILL it mid-compile
        killed_during = lines(c.logs[0])[-1]
        t.join(120)
        assert not t.is_alive()
        res = out["res"]
        assert [r.status for r in res] == ["ok"] * len(todo)
        assert killed_during in {r.key for r in res}
        assert killed_during in lines(c.logs[1])   # its task reran on the surviving worker
        assert lines(here / "here.log") == []
        for job in todo:                           # every result is in this process's cache
            assert cached_result(make_request(job.fn, job.signature, job.constexprs, None, job.arch,
                                              job.num_warps, job.num_stages)) is not None

        # every worker gone: the engine finishes nothing, and after the stall the rest compiles here
        c.kill(1)
        monkeypatch.setenv("OCCMODEL_EXECUTOR_STALL_S", "3")
        res = compile_many(jobs((2048,)), executor=c.executor(), progress=False)
        assert res[0].ok and lines(here / "here.log") == [res[0].key]
    finally:
        c.stop()


def occ(*args, env=None, rc=0):
    proc = subprocess.run([sys.executable, "-m", "occmodel", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    return proc


def test_cli_executor_flag(cluster, here):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, OCCMODEL_EXECUTOR_TIMEOUT_S="3")
    kernel = f"{TESTS / 'kernels_for_tests.py'}:add_kernel"
    args = ["compile", "--kernel", kernel, "--signature", "*fp16:16,*fp16:16,*fp16:16,i32", "-D", "BLOCK=64",
            "--warps", "1,2", "--stages", "1", "--spec", "sm_90", "--format", "json"]
    doc = json.loads(occ(*args, "--executor", cluster.address, env=env).stdout)
    assert [r["status"] for r in doc["results"]] == ["ok", "ok"]
    assert lines(here / "here.log") == []
    keys = {r["key"] for r in doc["results"]}
    assert keys <= set(lines(cluster.logs[0]) + lines(cluster.logs[1]))
    # the scheduler file works as an address too; everything is cached now
    doc = json.loads(occ(*args, "--executor", cluster.scheduler_file, env=env).stdout)
    assert all(r["cached"] for r in doc["results"])

    env["OCCMODEL_CACHE_DIR"] = str(here / "other-cache")      # something to compile, nobody to do it
    proc = occ(*args, "--executor", "127.0.0.1:9", env=env, rc=2)
    assert proc.stdout == "" and proc.stderr.startswith("occmodel: error: cannot reach the Dask scheduler")
    assert len(proc.stderr.strip().splitlines()) == 1
