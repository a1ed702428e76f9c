"""validate without a GPU: the plan, the static premise checks, and the no-GPU error."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from occmodel import load_spec
from occmodel.card import load_card
from occmodel.premise import MECHANISM_FAILS, MECHANISM_HOLDS
from occmodel.validate import plan

ROOT = Path(__file__).parent.parent
USER_CARD = f"{ROOT / 'examples' / 'user_card.py'}:CARD"


def occmodel(*args):
    return subprocess.run([sys.executable, "-m", "occmodel", *args], capture_output=True, text=True, timeout=600)


def test_no_gpu_is_one_line_exit_2():
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    proc = occmodel("validate", "--candidate", "num_warps=8", "--points", "C=8")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("occmodel: error: validate needs a CUDA GPU and none is visible "
                                   "(torch.cuda.is_available() is False); use --dry-run to see the plan on this machine")


def test_dry_run_shows_the_seed_plan_and_static_verdicts():
    proc = occmodel("validate", "--kernel", "decode_attention", "--spec", "sm_90",
                    "--baseline", "BLOCK_T=16,num_warps=4,num_stages=2", "--candidate", "num_warps=8",
                    "--candidate", "num_stages=3", "--points", "C=1,8,48,64,96", "-D", "ctx=8192",
                    "--dry-run", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    plan_rows = {r["item"]: r["value"] for r in doc["sections"][0]["rows"]}
    assert plan_rows["candidates"] == "num_warps 4->8; num_stages 2->3"
    assert plan_rows["workload points"].count("ctx=8192") == 5
    assert float(plan_rows["estimated device time"].split()[0]) < 180
    static = {r["config"]: r for r in doc["sections"][1]["rows"]}
    assert static["num_stages 2->3"]["shared"] > static["baseline"]["shared"]   # one more KV tile
    premises = doc["sections"][2]["rows"]
    # num_warps 4->8: whether occupancy rises depends on the registers this triton's ptxas allocates
    # (triton 3.6 on the H200: 128 -> 94 regs, 16 -> 16 warps/SM, fails; triton 3.9: 126 -> 80, 16 -> 24)
    base_w, cand_w = static["baseline"]["warps_per_sm"], static["num_warps 4->8"]["warps_per_sm"]
    assert premises[0]["mechanism"] == (MECHANISM_HOLDS if cand_w > base_w else MECHANISM_FAILS)
    assert f"compiled resident warps/SM {'stay' if cand_w == base_w else ''}".strip() in premises[0]["why"]
    assert premises[1]["mechanism"] == MECHANISM_HOLDS


def test_plan_for_a_users_card_file():
    card = load_card(USER_CARD)
    base = card.resolve()
    p = plan(card, load_spec("sm_90"), base, [card.resolve({"num_warps": 8})], [card.resolve_point({})], rounds=15)
    assert p.static[0].compiled.status == "ok" and p.static[0].compiled.source == "compiled"
    # the user's model of shared memory (4 B per warp for the reductions) matches the compile
    assert [r.model.shared for r in p.static] == [r.compiled.shared for r in p.static] == [16, 32]
    assert p.premises[0].mechanism == MECHANISM_FAILS           # already 64 warps/SM: nothing to raise


@pytest.mark.parametrize("bad, fragment", [
    (["--candidate", "num_warps=3"], "num_warps=3 is not allowed; allowed: 1, 2, 4, 8, 16, 32"),
    (["--candidate", "num_stages=2", "--points", "Q=1,2"], "--points Q: not a workload parameter"),
    (["--candidate", "num_stages=2", "--rounds", "3"], "--rounds 3 is too few; allowed >= 5"),
    (["--candidate", "BLOK_T=32"], "did you mean 'BLOCK_T'"),
    ([], "no --candidate given"),
])
def test_bad_validate_input_is_one_line(bad, fragment):
    proc = occmodel("validate", "--dry-run", "--no-compile", *bad)
    assert proc.returncode == 2 and fragment in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_result_report_from_synthetic_timings():
    """The A/B note, built from recorded-style samples (no GPU): verdict, band and bandwidth columns."""
    import numpy as np

    from occmodel import validate as V
    from occmodel.commands.validate import result_report
    from occmodel.report import render
    from occmodel.stats import compare
    card, spec = load_card("matmul"), load_spec("sm_90")
    base, cand = card.resolve(), card.resolve({"num_warps": 8})
    p = plan(card, spec, base, [cand], [card.resolve_point({})], rounds=15, compiled=False)
    rng = np.random.default_rng(0)
    a, a2 = (1e-4 * rng.lognormal(0, 0.01, 15) for _ in range(2))
    c = 1.1e-4 * rng.lognormal(0, 0.01, 15)                       # candidate 10 % slower
    pr = V.PointResult(point=p.points[0], base_throughput=card.work_units(p.points[0]) / 1e-4, base_bytes=4 * 10**8,
                       correctness={"baseline": {"ok": True}, "num_warps 4->8": {"ok": True}},
                       outcomes={"num_warps 4->8": compare(a, a2, c)}, torch_ref_s=2e-4)
    res = V.Result(p, {"gpu": "NVIDIA H200"}, [pr], {"num_warps 4->8": "REFUTED"}, 4.0e12, 12.0)
    doc = json.loads(render(result_report(res, None), "json"))
    row = next(s for s in doc["sections"] if s["title"].startswith("num_warps 4->8"))["rows"][0]
    assert row["verdict"].startswith("REFUTED") and row["delta"].startswith("-9.")
    # 4e8 B in ~1e-4 s = ~4,000 GB/s: ~100 % of the 4 TB/s copy, ~83 % of the H200's 4.8 TB/s
    assert "of copy" in row["bw"] and "of H200 peak" in row["bw"]
    assert doc["overall"] == {"num_warps 4->8": "REFUTED"}
    assert load_spec("sm_120").product_for_gpu("NVIDIA GeForce RTX 5090").name == "RTX 5090"
    assert load_spec("sm_90").product_for_gpu("NVIDIA H100 80GB HBM3").name == "H100 SXM"


def test_a_two_lever_candidate_is_timed_lever_by_lever():
    args = ["validate", "--candidate", "num_warps=8,num_stages=3", "--points", "C=8", "-D", "ctx=8192",
            "--dry-run", "--no-compile", "--format", "json"]
    doc = json.loads(occmodel(*args).stdout)
    static = [r["config"] for r in doc["sections"][1]["rows"]]
    assert static == ["baseline", "num_warps 4->8", "num_stages 2->3", "num_warps 4->8 + num_stages 2->3"]
    premises = [r["premise"] for r in doc["sections"][2]["rows"]]
    assert premises[0].startswith("num_warps 4->8 raises") and premises[1].startswith("num_stages 2->3 deepens")
    combined = json.loads(occmodel(*args, "--combined-only").stdout)
    assert [r["config"] for r in combined["sections"][1]["rows"]] == ["baseline", "num_warps 4->8 + num_stages 2->3"]


def test_no_op_candidate_and_a_gpu_that_is_not_the_spec_are_refused():
    proc = occmodel("validate", "--candidate", "num_warps=4", "--dry-run", "--no-compile")
    assert proc.returncode == 2 and "equals the baseline" in proc.stderr
    from occmodel.errors import ConfigError
    from occmodel.validate import check_target
    check_target(load_spec("sm_90"), {"gpu": "NVIDIA H200", "compute_capability": "9.0"})
    with pytest.raises(ConfigError, match=r"NVIDIA H200 \(sm_90\) while --spec sm_120"):
        check_target(load_spec("sm_120"), {"gpu": "NVIDIA H200", "compute_capability": "9.0"})
