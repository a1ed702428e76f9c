"""`occmodel compile`, `table --compiled` and `accuracy`, run as a user runs them (subprocess,
both `occmodel` and `python -m occmodel`), on the built-in card and on a user kernel file
(tests/kernels_for_tests.py). CPU only: Triton compiles for sm_120 / sm_90 without a GPU.
One compile cache for the whole session (shared with test_pipeline / test_fit), so each
config compiles once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

TESTS = Path(__file__).resolve().parent
ENTRY_POINTS = [[sys.executable, "-m", "occmodel"]]
if shutil.which("occmodel"):
    ENTRY_POINTS.append(["occmodel"])
ADD = f"{TESTS / 'kernels_for_tests.py'}:add_kernel"
ADD_SIG = "*fp16:16,*fp16:16,*fp16:16,i32"


@pytest.fixture(scope="module")
def env(shared_cache):
    e = dict(os.environ, OCCMODEL_CACHE_DIR=shared_cache, TRITON_DEFAULT_FP_FUSION="1",
             PYTHONPATH=os.pathsep.join([str(TESTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return e


def run(env, *args, entry=None, rc=0):
    proc = subprocess.run((entry or ENTRY_POINTS[0]) + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=600)
    if rc is not None:
        assert proc.returncode == rc, proc.stdout + proc.stderr
    return proc


def doc(env, *args, **kw):
    return json.loads(run(env, *args, "--format", "json", **kw).stdout)


def section(d, title_part):
    return next(s for s in d["sections"] if title_part in s["title"])


# ------------------------------------------------------------------ the card
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda e: " ".join(e[-2:]))
def test_card_actual_vs_predicted(env, entry):
    d = doc(env, "compile", "--warps", "8", "--stages", "3", entry=entry)
    assert d["command"] == "compile" and d["arch"] == "sm_120"
    rows = {r["metric"].split(",")[0].split(" (")[0]: r for r in d["sections"][0]["rows"]}
    shared = rows["shared memory per block"]
    # q tiles 16x576x2 = 18,432; KV ring (S-1) x 16x576x2; P tile 16x16x2 = 512:
    # S=2 -> 18,432 + 18,432 + 512 = 37,376;  S=3 -> + 18,432 = 55,808
    assert (shared["base_actual"], shared["cand_actual"]) == (37376, 55808)
    assert shared["base_error"] == "0" and shared["cand_error"] == "0"
    assert rows["registers per thread"]["base_actual"] > 0
    assert rows["compile status"]["cand_actual"] == "ok"
    # 55,808 + 1 KB reserved per block: one block fits in sm_120's 100 KB, 8 warps of 256 threads
    assert (rows["resident blocks per SM"]["cand_actual"], rows["resident warps per SM"]["cand_actual"]) == (1, 8)
    # one premise per lever, then the combination: at the combined config num_warps no longer adds warps
    # (the KV ring of S=3 leaves one block), while num_stages still deepens the pipeline
    alone_w, alone_s, both = section(d, "Premises")["rows"]
    assert alone_w["premise"].startswith("num_warps 4->8 raises") and alone_s["premise"].startswith("num_stages 2->3")
    assert alone_s["mechanism"] == "holds" and "TTGIR" in alone_s["why"]
    assert "num_warps: fails (compiled resident warps/SM stay 8 -> 8" in both["why"] and "num_stages: holds" in both["why"]
    assert any("ptxas" in a for a in d["assumptions"]) and any("signature used" in a for a in d["assumptions"])


def test_card_markdown_and_sm90(env):
    out = run(env, "compile", "--stages", "3", "--spec", "sm_90", "--format", "markdown").stdout
    assert out.startswith("### decode_attention on sm_90 (compiled for sm_90)") and "**Assumptions**" in out


# ------------------------------------------------------------- user kernels
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda e: " ".join(e[-2:]))
def test_user_kernel_sweep(env, entry):
    d = doc(env, "compile", "--kernel", ADD, "--signature", ADD_SIG, "-D", "BLOCK=1024,2048", "--warps", "4,8",
            "--stages", "2,3", entry=entry)
    rows = d["sections"][0]["rows"]
    assert len(rows) == 8 and all(r["status"] == "ok" for r in rows)
    assert {(r["BLOCK"], r["num_warps"], r["num_stages"]) for r in rows} == {
        (b, w, s) for b in (1024, 2048) for w in (4, 8) for s in (2, 3)}
    assert all(r["shared"] == 0 and r["regs"] > 0 and r["spills"] == 0 for r in rows)
    assert all(r["blocks_per_sm"] >= 1 and 0 < r["occupancy"] <= 1 for r in rows)


def test_user_kernel_module_form_and_pipeline_column(env):
    d = doc(env, "compile", "--kernel", "kernels_for_tests:matmul_kernel", "--signature",
            "A=*fp16:16,B=*fp16:16,C=*fp16:16,M=i32,N=i32,K=i32,stride_am=i32:16,stride_bk=i32:16,stride_cm=i32:16",
            "-D", "BM=64", "-D", "BN=64", "-D", "BK=32", "--stages", "2,3", "--pipeline")
    rows = d["sections"][0]["rows"]
    assert [r["num_stages"] for r in rows] == [2, 3]
    # B's K-tile ring is num_stages - 1 deep (A's masked, unaligned-K load stays a plain tt.load)
    assert "cp.async x1" in rows[0]["pipelined"] and "cp.async x2" in rows[1]["pipelined"]
    assert "plain" in rows[0]["pipelined"]


def test_failing_config_is_a_row_not_a_crash(env):
    proc = run(env, "compile", "--kernel", f"{TESTS / 'kernels_for_tests.py'}:failing_kernel",
               "--signature", "*fp32:16", "-D", "BLOCK=32,128", "--format", "json")
    rows = json.loads(proc.stdout)["sections"][0]["rows"]
    assert [r["status"] for r in rows] == ["ok", "compile_error"]
    assert "BLOCK must be at most 64" in rows[1]["message"] and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def sm70_spec(tmp_path_factory):
    text = (Path(__file__).resolve().parents[1] / "occmodel" / "specs" / "sm_80.yaml").read_text()
    text = text.replace("name: sm_80", "name: sm_70").replace("arch: sm_80", "arch: sm_70") \
        .replace("compute_capability: [8, 0]", "compute_capability: [7, 0]")
    path = tmp_path_factory.mktemp("specs") / "sm_70.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("args, fragment", [
    (["--kernel", "tests/no_such_file.py:k", "--signature", "i32"], "does not exist"),
    (["--kernel", f"{TESTS / 'kernels_for_tests.py'}:nope"], "has no attribute 'nope'"),
    (["--kernel", ADD, "--signature", "*fp17:16,*fp16,*fp16,i32", "-D", "BLOCK=64"], "'*fp17:16' of parameter 'X'"),
    (["--kernel", ADD, "--signature", "*fp16:16", "-D", "BLOCK=64"], "1 types for 4 runtime parameters"),
    (["--kernel", ADD, "--signature", ADD_SIG, "-D", "BLK=64"], "unknown parameter 'BLK'"),
    (["--kernel", ADD, "--signature", ADD_SIG, "-D", "BLOCK=64", "--warps", "3"], "num_warps=3 is not allowed"),
    (["--kernel", ADD, "--signature", ADD_SIG, "-D", "BLOCK=64", "--spec", "SM70"], "cannot be targeted by triton"),
    (["--spec", "SM70"], "arch sm_70 cannot be targeted"),
    (["--warps", "4,8"], "compile compares one candidate"),
    (["--kernel", "occmodel.kernels.matmul:CARD", "--signature", "i32"], "--signature is for bare"),
])
def test_bad_input_one_line_exit_2(env, sm70_spec, args, fragment):
    args = [sm70_spec if a == "SM70" else a for a in args]
    proc = run(env, "compile", *args, rc=2)
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith("occmodel: error: ") and fragment in lines[0], proc.stderr


# -------------------------------------------------------- table --compiled
def test_table_compiled_columns(env):
    d = doc(env, "table", "--compiled", "--warps", "4,8", "--stages", "2,3")
    s = d["sections"][0]
    assert s["columns"][-6:] == ["c_shared", "c_regs", "c_spills", "c_blocks", "c_occupancy", "c_status"]
    by = {(r["num_warps"], r["num_stages"]): r for r in s["rows"]}
    assert all(r["c_status"] == "ok" and r["c_regs"] > 0 for r in by.values())
    assert by[(4, 2)]["c_shared"] == 37376 and by[(8, 3)]["c_shared"] == 55808
    assert by[(4, 2)]["c_blocks"] == 2 and by[(4, 3)]["c_blocks"] == 1


# ----------------------------------------------------------------- accuracy
def test_accuracy_small_sweep(env):
    d = doc(env, "accuracy", "--warps", "4,8", "--stages", "2,3", "-D", "BLOCK_T=16,32")
    m = d["metrics"]
    assert (m["configs"], m["compiled"], m["failed"]) == (8, 8, 0)
    assert m["shared_exact_rate"] == 1.0          # the card states its shared memory exactly
    assert 0 <= m["regs_abs_median"] <= m["regs_abs_worst"]
    assert m["spill_hits"] + m["spill_misses"] == 8
    assert 0 <= m["occupancy_agreement"] <= 1
    titles = [s["title"] for s in d["sections"]]
    assert titles[0].startswith("Model accuracy: decode_attention on sm_120") and titles[-1] == "All configs"
    md = run(env, "accuracy", "--warps", "4", "--stages", "2,3", "--format", "markdown").stdout
    assert "### Model accuracy" in md and "| shared memory: exact match" in md


def test_accuracy_rejects_a_bare_kernel(env):
    proc = run(env, "accuracy", "--kernel", ADD, rc=2)
    assert "`occmodel fit`" in proc.stderr
