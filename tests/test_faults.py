"""Fault injection: every fault ends in a right number or one line, and nothing finished is lost.

Cache damage of every kind, key collisions, concurrent writers, a ptxas killed by a signal, a
killed parent, Ctrl-C mid-sweep, unusable cache folders, hostile spec and calibration files,
stdout that fails. Compiles are a vector add for sm_90 (well under a second each, most served
by Triton's cache under the module's own OCCMODEL_CACHE_DIR)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("triton")

import kernels_for_tests as K  # noqa: E402
from occmodel import _cache  # noqa: E402
from occmodel.compile import CACHE_FORMAT, compile_kernel, make_request  # noqa: E402
from occmodel.errors import CompileError, SpecError  # noqa: E402

TESTS = Path(__file__).parent
ROOT = TESTS.parent
ARCH = "sm_90"


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(fresh_cache):
    return fresh_cache


def _add(block=256, **kw):
    return compile_kernel(K.add_kernel, K.ADD_SIG, {"BLOCK": block}, arch=ARCH, num_warps=4, num_stages=2, **kw)


def _entry(res) -> Path:
    return _cache.entry_path(res.key)


def _cli(*argv, env=None, timeout=120, **kw):
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), e.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "occmodel", *argv], capture_output=True, text=True,
                          env=e, timeout=timeout, **kw)


def _one_line_error(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("occmodel: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


# ------------------------------------------------------------------ the cache
@pytest.fixture(scope="module")
def good():
    first = _add(keep_ir=True)
    assert first.ok
    return first


CORRUPTIONS = {
    "truncated": lambda text, other: text[: len(text) // 2],
    "empty": lambda text, other: "",
    "null": lambda text, other: "null",
    "a list": lambda text, other: "[1, 2]",
    "not utf-8": lambda text, other: "\udcff",
    "no status": lambda text, other: json.dumps({k: v for k, v in json.loads(text).items() if k != "status"}),
    "another config's entry": lambda text, other: other,
    "n_regs a string": lambda text, other: json.dumps(dict(json.loads(text), n_regs="x")),
    "n_regs zero": lambda text, other: json.dumps(dict(json.loads(text), n_regs=0)),
    "n_regs 999": lambda text, other: json.dumps(dict(json.loads(text), n_regs=999)),
    "shared negative": lambda text, other: json.dumps(dict(json.loads(text), shared=-5)),
    "total_shared inconsistent": lambda text, other: json.dumps(dict(json.loads(text), total_shared=12345)),
    "old format": lambda text, other: json.dumps(dict(json.loads(text), format=CACHE_FORMAT - 1)),
    "extra field": lambda text, other: json.dumps(dict(json.loads(text), surprise=1)),
    "status unknown": lambda text, other: json.dumps(dict(json.loads(text), status="fine")),
    "environmental failure": lambda text, other: json.dumps(dict(json.loads(text), environmental=True)),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_a_damaged_entry_is_a_miss_recompiled_and_rewritten(good, kind):
    other = _add(block=512)
    path = _entry(good)
    text = path.read_text()
    damaged = CORRUPTIONS[kind](text, _entry(other).read_text())
    if kind == "not utf-8":
        path.write_bytes(b"\xff\xfe{")
    else:
        path.write_text(damaged)
    res = _add()
    assert not res.cached and res.ok                       # recompiled, not served
    assert (res.n_regs, res.shared) == (good.n_regs, good.shared)
    again = _add()
    assert again.cached and again.n_regs == good.n_regs    # and rewritten


@pytest.mark.parametrize("damage", ["truncate", "empty", "swap", "delete"])
def test_a_damaged_sidecar_is_a_miss(good, damage):
    ttgir = _cache.entry_path(good.key, ".ttgir")
    if damage == "truncate":
        ttgir.write_text(good.ttgir[: len(good.ttgir) // 3])
    elif damage == "empty":
        ttgir.write_text("")
    elif damage == "swap":
        ttgir.write_text(good.ptx)
    else:
        ttgir.unlink()
    res = _add(keep_ir=True)
    assert not res.cached and res.ttgir == good.ttgir
    assert _add(keep_ir=True).cached


def test_without_keep_ir_a_damaged_sidecar_does_not_matter(good):
    _cache.entry_path(good.key, ".ptx").write_text("garbage")
    assert _add().cached and _add().n_regs == good.n_regs
    assert not _add(keep_ir=True).cached                   # the sidecar is checked when it is used


def test_the_entry_holds_the_hash_of_each_sidecar(good):
    _add(keep_ir=True)
    doc = json.loads(_entry(good).read_text())
    assert set(doc["sidecars"]) == {"ttgir", "ptx", "sass", "cubin"}
    assert doc["sidecars"]["ttgir"] == _cache.sha256(good.ttgir.encode())
    assert doc["key"] == good.key and doc["format"] == CACHE_FORMAT


def test_str_and_dtype_constexprs_do_not_collide_in_either_cache():
    import triton.language as tl
    a = compile_kernel(K.typed_kernel, K.TYPED_SIG, {"DTYPE": "fp16", "BLOCK": 128}, arch=ARCH, keep_ir=True)
    b = compile_kernel(K.typed_kernel, K.TYPED_SIG, {"DTYPE": tl.float16, "BLOCK": 128}, arch=ARCH, keep_ir=True)
    assert a.key != b.key
    # the str takes the `DTYPE == "fp16"` branch (a multiply), the dtype does not: Triton's own
    # cache keys both as "fp16", so without isolation the second compile would get the first's code
    assert "mul.f32" in a.ptx and "mul.f32" not in b.ptx
    assert make_request(K.typed_kernel, K.TYPED_SIG, {"DTYPE": 16, "BLOCK": 128}, arch=ARCH).key != \
        make_request(K.typed_kernel, K.TYPED_SIG, {"DTYPE": "16", "BLOCK": 128}, arch=ARCH).key


def test_the_ptxas_binary_is_in_the_key(tmp_path, monkeypatch):
    from occmodel import triton_compat as tc
    base = make_request(K.add_kernel, K.ADD_SIG, {"BLOCK": 256}, arch=ARCH)
    real = tc.ptxas_for(90).path
    copy = tmp_path / "ptxas"
    os.symlink(real, copy)
    for var in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):
        monkeypatch.setenv(var, str(copy))
    assert tc.ptxas_for(90).path == str(copy)
    other = make_request(K.add_kernel, K.ADD_SIG, {"BLOCK": 256}, arch=ARCH)
    assert other.key != base.key and other.triton_cache != base.triton_cache


def _fake_ptxas(tmp_path, body: str) -> Path:
    from occmodel import triton_compat as tc
    real = tc.ptxas_for(90).path
    script = tmp_path / "ptxas"
    script.write_text(f'#!/bin/sh\ncase "$1" in --version|--help) exec "{real}" "$@";; esac\n{body}\n')
    script.chmod(0o755)
    return script


def test_a_ptxas_killed_by_a_signal_is_never_cached(tmp_path, monkeypatch):
    fake = _fake_ptxas(tmp_path, "kill -9 $$")
    for var in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):
        monkeypatch.setenv(var, str(fake))
    with pytest.raises(CompileError, match="error code -9|SIG|killed"):
        compile_kernel(K.add_kernel, K.ADD_SIG, {"BLOCK": 64}, arch=ARCH)
    req = make_request(K.add_kernel, K.ADD_SIG, {"BLOCK": 64}, arch=ARCH)
    assert not _cache.entry_path(req.key).exists()


def test_concurrent_writers_leave_one_whole_entry(tmp_path):
    path = tmp_path / "entry.json"
    blobs = [json.dumps({"writer": i, "pad": "x" * 200_000}).encode() for i in range(4)]
    _cache.atomic_write(path, blobs[0])
    stop = threading.Event()
    seen, bad = set(), []

    def writer(blob):
        while not stop.is_set():
            _cache.atomic_write(path, blob)

    def reader():
        while not stop.is_set():
            data = _cache.read_json(path)
            if data is None:
                bad.append("unparsable")
            elif data is not None:
                seen.add(data["writer"])

    threads = [threading.Thread(target=writer, args=(b,)) for b in blobs] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join()
    assert not bad and seen
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]      # no temp files left


def test_two_processes_compiling_the_same_config_agree(tmp_path):
    code = ("import kernels_for_tests as K; from occmodel.compile import compile_kernel; "
            "r = compile_kernel(K.add_kernel, K.ADD_SIG, {'BLOCK': 2048}, arch='sm_90', keep_ir=True); "
            "print(r.n_regs, r.status)")
    env = dict(os.environ, OCCMODEL_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert outs[0] == outs[1] and outs[0][1] == "ok"
    entries = list((tmp_path / "compile").rglob("*.json"))
    assert len(entries) == 1 and json.loads(entries[0].read_text())["n_regs"] == int(outs[0][0])


# ------------------------------------------------------------- cache folders
def test_an_unusable_triton_cache_dir_does_not_matter(tmp_path, good):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = _cli("compile", "--kernel", f"{TESTS}/kernels_for_tests.py:add_kernel", "--signature",
                "*fp16:16,*fp16:16,*fp16:16,i32", "-D", "BLOCK=128", "--spec", "sm_90", "--format", "json",
                env={"TRITON_CACHE_DIR": str(blocker / "sub"), "OCCMODEL_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["sections"][0]["rows"][0]
    assert row["status"] == "ok" and row["regs"] > 0


@pytest.mark.parametrize("where", ["a file", "under /proc"])
def test_an_unusable_occmodel_cache_dir_is_one_line_exit_2(tmp_path, where):
    if where == "a file":
        bad = tmp_path / "file"
        bad.write_text("x")
    else:
        bad = Path("/proc/self/occmodel-cache")
    proc = _cli("compile", "--kernel", f"{TESTS}/kernels_for_tests.py:add_kernel", "--signature",
                "*fp16:16,*fp16:16,*fp16:16,i32", "-D", "BLOCK=128", "--spec", "sm_90",
                env={"OCCMODEL_CACHE_DIR": str(bad)})
    line = _one_line_error(proc)
    assert str(bad) in line and "OCCMODEL_CACHE_DIR" in line


# ------------------------------------------------------ processes and signals
def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


SWEEP = ["compile", "--kernel", f"{TESTS}/kernels_for_tests.py:matmul_kernel", "--spec", "sm_90",
         "--signature", "A=*fp16:16,B=*fp16:16,C=*fp16:16,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,stride_cm=i32",
         "-D", "BM=32,64,128", "-D", "BN=32,64", "-D", "BK=32", "--warps", "2,4,8", "--stages", "2,3,4"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: compiles run in-process, no workers")
def test_ctrl_c_mid_sweep_prints_partial_rows_and_exits_130(tmp_path):
    env = dict(os.environ, OCCMODEL_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    proc = subprocess.Popen([sys.executable, "-m", "occmodel", *SWEEP, "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not any("spawn" in _cmdline(c) for c in _children(proc.pid)):        # workers started
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    time.sleep(2)
    workers = _children(proc.pid)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 20                                         # not the whole queue
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "partial" in err
    doc = json.loads(out)
    assert doc["partial"] is True and "PARTIAL" in doc["assumptions"][0]
    statuses = [r["status"] for r in doc["sections"][0]["rows"]]
    assert len(statuses) == 54 and "interrupted" in statuses
    time.sleep(1)
    assert not [w for w in workers if _alive(w)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: compiles run in-process, no workers")
def test_a_killed_parent_leaves_no_workers(tmp_path):
    env = dict(os.environ, OCCMODEL_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    proc = subprocess.Popen([sys.executable, "-m", "occmodel", *SWEEP], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    workers: set[int] = set()
    while not workers:
        assert time.monotonic() < deadline and proc.poll() is None
        workers = {c for c in _children(proc.pid) if "spawn" in _cmdline(c) and "resource_tracker" not in _cmdline(c)}
        time.sleep(0.2)
    time.sleep(1)
    everyone = _children(proc.pid)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 15
    while [w for w in everyone if _alive(w)] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [w for w in everyone if _alive(w)], [_cmdline(w) for w in everyone if _alive(w)]


# ------------------------------------------------------------ hostile files
def _alias_bomb(levels: int, failing: bool = True) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"sm: {{warp_size: *a{levels - 1}}}" if failing else "")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [5, 9])       # 9**5 nodes (under the bound), 9**9 (over it)
def test_the_alias_bomb_ends_fast_in_one_line(tmp_path, levels):
    from occmodel.spec import load_spec
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb(levels))
    assert len(path.read_bytes()) < 700
    start = time.monotonic()
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    assert time.monotonic() - start < 5
    assert "\n" not in str(err.value) and len(str(err.value)) < 5000


@pytest.mark.parametrize("content, needle", [
    (b"sm: " + b"[" * 100_000, "nested too deeply"),
    (bytes(range(256)) * 4, "not UTF-8"),
    (b"name: a\nname: b\n", "appears twice"),
    (b"sm: {max_blocks_per_sm: " + b"9" * 5000 + b"}\n", "malformed YAML"),
])
def test_hostile_spec_files_are_one_line(tmp_path, content, needle):
    path = tmp_path / "s.yaml"
    path.write_bytes(content)
    proc = _cli("predict", "--spec", str(path))
    assert needle in _one_line_error(proc) and str(path) in proc.stderr


@pytest.mark.parametrize("edit, needle", [
    (("carveout_kb: [0,", "carveout_kb: [5000, 0,"), "sm.carveout_kb: 5000 KB exceeds"),
    (("warp_size: 32", "warp_size: 7"), "sm.warp_size: must be 32"),
    (("shared_memory_allocation_unit: 128", "shared_memory_allocation_unit: 3"), "must be a power of two"),
    (("max_registers_per_thread: 255", "max_registers_per_thread: 0"), "sm.max_registers_per_thread: must be > 0"),
    (("barriers_per_block_slot: 2", "barriers_per_block_slot: 0"), "sm.barriers_per_block_slot: must be > 0"),
    (("max_blocks_per_sm: 32", "max_blocks_per_sm: 9223372036854775807"), "at most 2,147,483,647"),
])
def test_nonsense_specs_are_rejected(tmp_path, edit, needle):
    import re
    from occmodel.spec import SPEC_DIR, load_spec
    text = (SPEC_DIR / "sm_90.yaml").read_text()
    old, new = edit
    assert re.search(re.escape(old), text), old
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(SpecError, match=re.escape(needle)):
        load_spec(str(path))


@pytest.mark.parametrize("value, needle", [("0.5", "whole number"), (".nan", "finite"), (".inf", "finite"),
                                           ("0", "positive"), ("100000", "10000")])
def test_bad_calibration_values_name_the_file_and_field(tmp_path, value, needle):
    from occmodel import calibrate as C
    path = tmp_path / "cal.yaml"
    path.write_text(f"spec: sm_90\ngpu: x\nsms: {value}\nbandwidth_gbs: 3000\nlatency_ns: 800\nlaunch_us: 2\n"
                    "l2_bandwidth_gbs: 9000\nsource: test\n")
    with pytest.raises(C.CalibrationError) as err:
        C.load(path)
    assert str(path) in str(err.value) and "sms:" in str(err.value) and needle in str(err.value)
    proc = _cli("rank", "--spec", "sm_90", "--calibration", str(path), "--warps", "4")
    assert "sms:" in _one_line_error(proc)


def test_a_kernel_file_that_exits_is_one_line(tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import sys\nsys.exit(3)\n")
    assert "SystemExit: 3" in _one_line_error(_cli("compile", "--kernel", f"{path}:k"))


@pytest.mark.parametrize("out", ["folder.png", "/proc/occmodel.png", "x" * 300 + ".png"])
def test_plot_out_that_cannot_be_written_is_one_line(tmp_path, out):
    (tmp_path / "folder.png").mkdir()
    proc = _cli("plot", "occupancy", "--threads", "128", "--regs", "96", "--smem", "60K", "--out", out, cwd=tmp_path)
    assert "cannot write --out" in _one_line_error(proc)


# ------------------------------------------------------------------ stdout
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_on_a_full_disk_is_one_line():
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "occmodel", "table"], stdout=full, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert "stdout" in _one_line_error(proc) and "No space" in proc.stderr


def test_a_closed_stdout_exits_141_quietly():
    r, w = os.pipe()
    os.close(r)                                  # the reader is gone before we write: EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "occmodel", "table"], stdout=w, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 141 and proc.stderr == ""


def test_a_compilation_error_gives_the_real_message():
    res = compile_kernel(K.nested_error_kernel, {"X": "*fp32"}, {"BLOCK": 128}, arch=ARCH)
    assert res.status == "compile_error" and "nonexistent_method" in res.message
    assert not res.message.rstrip().endswith("^")
