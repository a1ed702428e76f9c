"""occmodel.fit (pure) and `occmodel fit` end to end on a small GEMM from tests/kernels_for_tests.py.
CPU only; the end-to-end test compiles 12 configs (6 sampled, 6 held out) through the
session's shared compile cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sympy

from occmodel.fit import basis, choose_sample, fit_expression

TESTS = Path(__file__).resolve().parent
GRID = [{"BK": k, "num_warps": w, "num_stages": s} for k in (16, 32, 64) for w in (4, 8) for s in (2, 3, 4, 5)]


def test_basis_has_stage_factors_and_per_warp_terms():
    names = [n for n, _ in basis(["BK", "num_warps", "num_stages"], "shared")]
    assert names[0] == "1" and "BK*num_stages" in names and "BK*Max(1, num_stages - 1)" in names
    assert not any("/num_warps" in n for n in names)
    regs = [n for n, _ in basis(["BK", "num_warps", "num_stages"], "regs")]
    assert "BK/num_warps" in regs and "1/num_warps" in regs


def test_sample_covers_every_value_and_respects_the_fraction():
    idx = choose_sample(GRID, 0.35)
    assert len(idx) == 9 and len(set(idx)) == 9                      # ceil(0.35 x 24)
    for key in ("BK", "num_warps", "num_stages"):
        assert {GRID[i][key] for i in idx} == {c[key] for c in GRID}
    assert choose_sample(GRID, 0.35) == idx                          # seeded: reproducible
    assert len(choose_sample(GRID[:4], 0.35)) == 4                   # never more than there is


def test_exact_relationship_is_recovered_with_integer_coefficients():
    # a pipelined GEMM's ring: (S - 1) x (64 x BK + BK x 64) x 2 B, plus a 4 KB epilogue buffer
    truth = lambda c: 256 * c["BK"] * (c["num_stages"] - 1) + 4096  # noqa: E731
    idx = choose_sample(GRID, 0.35)
    f = fit_expression([GRID[i] for i in idx], [truth(GRID[i]) for i in idx], ["BK", "num_warps", "num_stages"])
    assert f.exact and f.loo_rmse < 1e-6
    # 256*BK*Max(1, num_stages - 1) + 4096: the same for every num_stages >= 2 swept
    assert f.terms == ("BK*Max(1, num_stages - 1)", "1")
    assert all(isinstance(a, sympy.Integer) for a in f.expr.atoms(sympy.Number) if a not in (1, -1))
    assert all(round(f.predict(c)) == truth(c) for c in GRID)         # held-out configs too


def test_a_max_floor_is_set_aside_as_outliers():
    # ring 128*BK*(S+1), but a 8 KB epilogue buffer wins the Max() at BK=16, S=2 (wgmma GEMM on sm_90)
    truth = lambda c: max(128 * c["BK"] * (c["num_stages"] + 1), 8192)  # noqa: E731
    f = fit_expression(GRID, [truth(c) for c in GRID], ["BK", "num_warps", "num_stages"])
    assert f.exact and [(GRID[i]["BK"], GRID[i]["num_stages"]) for i in f.outliers] == [(16, 2), (16, 2)]
    assert all(round(f.predict(c)) == 128 * c["BK"] * (c["num_stages"] + 1) for c in GRID)


def test_inexact_data_is_reported_as_such():
    noisy = [40 + 600 / c["num_warps"] + (7 if c["BK"] == 32 else 0) for c in GRID]
    f = fit_expression(GRID, noisy, ["BK", "num_warps", "num_stages"], "regs")
    assert not f.exact and f.sample_max_error > 0.5


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
    assert len(d["sample"]) == 6                                      # max(6, ceil(0.35 x 12))
    shared = d["fit"]["shared"]
    assert shared["exact_on_sample"]
    # B's K tile goes through a (num_stages - 1)-deep cp.async ring, A (its unaligned K mask keeps
    # it a plain load) through one staging buffer: 128 BK (S - 1) + 128 BK = 128 BK S on sm_120
    BK, S = sympy.symbols("BK num_stages", integer=True, positive=True)
    assert sympy.simplify(sympy.sympify(shared["expression"], locals={"BK": BK, "num_stages": S})
                          - 128 * BK * S) == 0
    held = d["held_out"]
    assert held["shared"]["exact"] == "6/6" and held["shared"]["worst"] == 0
    assert held["regs"]["worst_rel"] is not None and held["regs"]["worst_rel"] < 0.5
    rows = next(s for s in d["sections"] if s["title"] == "Held-out configs")["rows"]
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)


def test_fit_rejects_a_card_and_an_empty_sweep(env):
    for args, fragment in ((["--kernel", "decode_attention"], "nothing to fit"),
                           (["--kernel", f"{TESTS / 'kernels_for_tests.py'}:add_kernel", "--signature",
                             "*fp16:16,*fp16:16,*fp16:16,i32", "-D", "BLOCK=64"], "nothing to fit")):
        proc = subprocess.run([sys.executable, "-m", "occmodel", "fit", *args], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr
