"""`occmodel fit` end to end on a small GEMM from tests/kernels_for_tests.py: the derived
model (occmodel.derive) in place of the old regression. CPU only; compiles 12 configs
(the designed sample, then the held-out ones) through a session-local compile cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "occmodel-cache"
    path.mkdir(exist_ok=True)
    return dict(os.environ, OCCMODEL_CACHE_DIR=str(path), TRITON_DEFAULT_FP_FUSION="1")


def test_fit_cli_on_a_gemm(env):
    pytest.importorskip("triton")
    proc = subprocess.run(
        [sys.executable, "-m", "occmodel", "fit", "--kernel", f"{TESTS / 'kernels_for_tests.py'}:matmul_kernel",
         "--signature", "*fp16:16,*fp16:16,*fp16:16,i32,i32,i32,i32:16,i32:16,i32:16",
         "-D", "BM=64", "-D", "BN=64", "-D", "BK=16,32,64", "--stages", "2,3,4,5", "--format", "json"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    # designed sample: base BK=32, S=3, then each other value one at a time (BK 16, 64; S 2, 4, 5)
    assert len(d["sample"]) == 6 and d["sample_fraction"] == 0.5
    # B's K tile through a (num_stages - 1)-deep cp.async ring, A (its unaligned K mask keeps it a
    # plain load) through one staging buffer, the epilogue conversion 64 x 64 x 4 / ... alone after the loop
    exprs = {b["expression"] for b in d["buffers"]}
    assert {"128*BK*(num_stages - 1)", "128*BK"} <= exprs
    held = d["held_out"]
    assert held["shared"]["exact"] == "6/6" and held["shared"]["worst"] == 0
    assert held["regs"]["worst_rel"] is not None and held["regs"]["worst_rel"] < 0.5
    rows = next(s for s in d["sections"] if s["title"] == "Held-out configs")["rows"]
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)
    assert all(1 <= r["regs_pred"] <= 255 and r["shared_pred"] == r["shared"] for r in rows)


def test_fit_rejects_a_card_and_an_empty_sweep(env):
    for args, fragment in ((["--kernel", "decode_attention"], "nothing to fit"),
                           (["--kernel", f"{TESTS / 'kernels_for_tests.py'}:add_kernel", "--signature",
                             "*fp16:16,*fp16:16,*fp16:16,i32", "-D", "BLOCK=64"], "nothing to fit")):
        proc = subprocess.run([sys.executable, "-m", "occmodel", "fit", *args], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr
