"""The static throughput model (occmodel.rank), the rank CLI, and rank_sweep's pure parts.
Hand-worked numbers in comments next to each assertion."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from occmodel import rank as R
from occmodel.calibrate import Calibration
from occmodel.card import KernelCard

ROOT = Path(__file__).resolve().parent.parent


class Stream(KernelCard):
    """A toy streaming card with every workload figure set by hand."""

    def grid(self, cfg, point):
        return point["grid"]

    def loop_iterations(self, cfg, point):
        return point["n"]

    def bytes_moved(self, cfg, point):
        return point["bytes"]

    def flops(self, cfg, point):
        return point["flops"]

    def loop_tile_bytes(self, cfg):
        return 1000


CARD = Stream(name="toy", summary="", params=(), baseline={})
CAL = Calibration(spec="x", gpu="toy", sms=10, bandwidth_gbs=1000.0, latency_ns=1000.0, launch_us=2.0,
                  l2_bandwidth_gbs=1e9, source="hand")
PEAK = 1e18                       # compute negligible unless a test says otherwise
CFG = {"num_warps": 4, "num_stages": 3}


def est(point, blocks=2, ahead=2, spills=0, peak=PEAK, cal=CAL):
    res = R.Resources(blocks_per_sm=blocks, threads=128, tile_bytes=1000, ahead=ahead, n_spills=spills, source="hand")
    return R.estimate(CARD, cal, CFG, point, res, peak)


def test_roofline_terms():
    e = est({"grid": 20, "n": 10, "bytes": 10**6, "flops": 10**9}, peak=1e12)
    assert e.roofline_mem_s == pytest.approx(1e-6)      # 1e6 B / 1e12 B/s
    assert e.roofline_comp_s == pytest.approx(1e-3)     # 1e9 / 1e12
    assert e.bound == "compute"


def test_littles_law_in_flight_and_achievable_bandwidth():
    # F = tile 1000 B x min(ahead 2, n 10) = 2000 B per CTA; needed per SM = 1e12 B/s x 1e-6 s / 10 SMs = 1e5 B
    # grid 20 = one wave on 10 SMs x 2 slots; per SM 2 CTAs x 2000 = 4000 B in flight
    # achievable = min(1e12, 20 x 2000 / 1e-6 = 4e10) = 40 GB/s -> latency-bound
    e = est({"grid": 20, "n": 10, "bytes": 20 * 10 * 1000, "flops": 0})
    assert e.tiles_in_flight == 2 and e.inflight_per_sm == 4000 and e.needed_per_sm == pytest.approx(1e5)
    assert e.achievable_gbs == pytest.approx(40.0)
    assert e.bound == "latency"
    # wave: 20 CTAs x 10,000 B / 4e10 B/s = 5e-6 s (= n x L / k = 10 x 1 us / 2 per CTA)
    assert e.waves_s == pytest.approx(5e-6)


def test_more_tiles_ahead_helps_until_bandwidth_caps():
    p = {"grid": 20, "n": 10, "bytes": 200_000, "flops": 0}
    assert est(p, ahead=3).waves_s < est(p, ahead=2).waves_s < est(p, ahead=0).waves_s
    # unpipelined (ahead 0) still has one tile in flight: k = max(1, 0) = 1
    assert est(p, ahead=0).tiles_in_flight == 1
    # n = 2 iterations cap the tiles ahead: k = min(3, 2) = 2
    assert est({**p, "n": 2}, ahead=3).tiles_in_flight == 2


def test_wave_quantization_and_tail():
    # slots = 10 SMs x 2 = 20; grid 25 -> 2 waves, tail 5 CTAs
    # bandwidth-bound setup: latency 1 ns makes bw(c) = min(1e12, c x 2000 / 1e-9) = 1e12 for c >= 1
    cal = Calibration(**{**CAL.as_dict(), "latency_ns": 1.0})
    e = est({"grid": 25, "n": 10, "bytes": 25 * 1000, "flops": 0}, cal=cal)
    assert (e.slots, e.waves, e.tail_ctas) == (20, 2, 5)
    # full wave 20 x 1000 B / 1e12 = 2e-8 s; tail 5 x 1000 / 1e12 = 5e-9 s
    assert e.tail_s == pytest.approx(5e-9)
    assert e.waves_s == pytest.approx(2.5e-8)
    # latency-bound instead (1 us): every wave costs a CTA's n x L / k = 10 x 1e-6 / 2 = 5e-6 s, tail included
    e2 = est({"grid": 25, "n": 10, "bytes": 25 * 10_000, "flops": 0})
    assert e2.waves_s == pytest.approx(1e-5) and e2.tail_s == pytest.approx(5e-6)


def test_fill_spill_launch_and_total():
    e = est({"grid": 20, "n": 10, "bytes": 200_000, "flops": 0}, spills=3)
    # fill: 1 wave x (L 1e-6 + compute of one tile 0) = 1e-6 s; prologue share ahead/n = 2/10
    assert e.fill_s == pytest.approx(1e-6) and e.prologue_share == 0.2
    # spills: 3 x 4 B x 2 x 128 threads x 10 iterations x 20 CTAs = 614,400 B over L2 1e18 B/s
    assert e.spill_s == pytest.approx(614_400 / 1e18)
    assert e.launch_s == pytest.approx(2e-6)           # one kernel x 2 us
    assert e.total_s == pytest.approx(e.waves_s + e.fill_s + e.spill_s + e.launch_s)


def test_config_that_does_not_fit_is_infinite():
    e = est({"grid": 20, "n": 10, "bytes": 1, "flops": 0}, blocks=0)
    assert not e.fits and math.isinf(e.total_s) and e.bound == "does not fit"


def test_spearman_and_ties():
    assert R.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert R.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks with ties: [1, 2.5, 2.5, 4]
    assert R.ranks([5, 7, 7, 9]) == [1, 2.5, 2.5, 4]
    # a = ranks 1..4, b = [1,3,2,4]: d^2 = 0+1+1+0 = 2; rho = 1 - 6 x 2 / (4 x 15) = 0.8
    assert R.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert math.isnan(R.spearman([1], [2]))
    assert math.isnan(R.spearman([1, 2], [3, 3]))


def test_best_in_top3():
    measured = [5.0, 1.0, 3.0, 4.0, 2.0]        # best = index 1
    assert R.best_in_top(measured, [1, 3, 2, 4, 5], 3)        # its estimate 3 is the 3rd smallest
    assert not R.best_in_top(measured, [1, 4, 2, 3, 5], 3)    # its estimate 4 is 4th
    assert R.best_in_top(measured, [1, 2, 2, 2, 5], 2)        # tie at the cut counts inside


def test_aggregate_rank_geometric_mean():
    # config 0: 1x and 2x the best -> sqrt(2); config 1: 2x and 1x -> sqrt(2); config 2 inf somewhere
    s = R.aggregate_rank([[1.0, 4.0], [2.0, 2.0], [math.inf, 2.0]])
    assert s[0] == pytest.approx(math.sqrt(2)) and s[1] == pytest.approx(math.sqrt(2)) and math.isinf(s[2])


def test_builtin_cards_give_finite_estimates():
    from occmodel import calibrate
    from occmodel.card import load_card
    from occmodel.spec import load_spec
    spec = load_spec("sm_90")
    cal = calibrate.datasheet(spec, "H200")
    card = load_card("decode_attention")
    cfgs = [card.resolve(), card.resolve({"num_warps": 8}), card.resolve({"num_stages": 3})]
    est = R.estimate_many(card, spec, cal, cfgs, [card.resolve_point({"C": 64})], product="H200")
    # decode tile: BLOCK_T 16 x 576 x 2 B = 18,432 B; two kernels launched
    assert est[0][0].launch_s == pytest.approx(2 * cal.launch_us * 1e-6)
    assert all(math.isfinite(row[0].total_s) for row in est)
    assert R.loop_tile_bytes(card, cfgs[0], {}) == 18_432


def test_rank_cli_small_sweep():
    proc = subprocess.run([sys.executable, "-m", "occmodel", "rank", "--kernel", "decode_attention", "--spec",
                           "sm_90", "--points", "C=1,64", "-D", "ctx=8192", "--warps", "4,8", "--stages", "2,3",
                           "--top", "2", "--format", "json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["command"] == "rank"
    agg = doc["sections"][0]
    assert len(agg["rows"]) == 4 and [r["rank"] for r in agg["rows"]] == [1, 2, 3, 4]
    assert len(doc["sections"]) == 1 + 2 + 1            # aggregate, two points, top-K
    top = doc["sections"][-1]["rows"]
    assert top[0]["text"].count("--candidate ") == 2 and top[1]["text"].startswith("[{")
    assert any("datasheet" in a for a in doc["assumptions"])


def test_rank_cli_rejects_unknown_point():
    proc = subprocess.run([sys.executable, "-m", "occmodel", "rank", "--points", "Q=1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "not a workload parameter" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- rank_sweep's pure parts
def _sweep_module():
    spec = importlib.util.spec_from_file_location("rank_sweep", ROOT / "scripts" / "rank_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sweep_configs_are_valid_and_enough():
    from occmodel.card import load_card
    m = _sweep_module()
    dec = m.decode_configs(load_card("decode_attention"))
    mm = m.matmul_configs(load_card("matmul"))
    assert len(dec) >= 40 and len(mm) >= 40
    assert all(c["PAGE_SIZE"] % c["BLOCK_T"] == 0 for c in dec)
    for lever in m.SEED_LEVERS.values():                 # the seed's levers are in the sweep
        assert load_card("decode_attention").resolve(lever) in dec


def test_sweep_summarize_skips_failures():
    m = _sweep_module()
    # measured best is index 1 (1.0); its estimate 10 is the smallest -> rank 1, in top 3
    s = m.summarize([3.0, 1.0, 2.0, None], [30.0, 10.0, 20.0, 5.0])
    assert s == {"n": 3, "spearman": 1.0, "best_in_top3": True, "best": 1, "best_est_rank": 1}
    # a non-fitting config (inf estimate) is left out too
    assert m.summarize([1.0, 2.0], [math.inf, 1.0])["n"] == 1
    assert m.summarize([None], [1.0])["n"] == 0


def test_sweep_without_gpu_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_sweep.py"), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=300)
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is visible")
    except ImportError:
        pass
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
