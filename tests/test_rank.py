"""The static throughput model (occmodel.rank), the rank CLI, and rank_study's pure parts.
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
# 10 SMs; DRAM 1e12 B/s (1e11 per SM); L2 1e18 (never binds unless a test says so); latency 1 us;
# L2 latency 0.5 us; shared memory 1e13 B/s (1e12 per SM); launch 2 us
CAL = Calibration(spec="x", gpu="toy", sms=10, bandwidth_gbs=1000.0, latency_ns=1000.0, launch_us=2.0,
                  l2_bandwidth_gbs=1e9, source="hand", l2_latency_ns=500.0, shared_bandwidth_gbs=1e4)
PEAK = 1e18                       # compute negligible unless a test says otherwise
CFG = {"num_warps": 4, "num_stages": 3}


def est(point, blocks=2, ahead=2, spills=0, peak=PEAK, cal=CAL, card=CARD, reads=0, dot_flops=0):
    res = R.Resources(blocks_per_sm=blocks, threads=128, tile_bytes=1000, ahead=ahead, n_spills=spills,
                      source="hand", shared_reads=reads, dot_flops=dot_flops)
    return R.estimate(card, cal, CFG, point, res, peak)


def test_roofline_terms_and_tensor_bound():
    # grid 20 = one wave of 2 CTAs on each of 10 SMs; f = 1e9 / (20 x 10) = 5e6 FLOP per iteration
    e = est({"grid": 20, "n": 10, "bytes": 10**6, "flops": 10**9}, peak=1e12)
    assert e.roofline_mem_s == pytest.approx(1e-6)      # 1e6 B / 1e12 B/s
    assert e.roofline_comp_s == pytest.approx(1e-3)     # 1e9 / 1e12
    # (e) 2 CTAs x 5e6 / (1e12 / 10 SMs) = 1e-4 s per iteration, far above latency 1e-6 / 2
    assert e.tensor_step_s == pytest.approx(1e-4) and e.bound == "tensor"
    # CTA: 10 x 1e-4 + L 1e-6; one wave
    assert e.waves_s == pytest.approx(10 * 1e-4 + 1e-6)


def test_latency_over_tiles_ahead_until_dram_caps():
    # d = 200,000 B / (20 CTAs x 10 iters) = 1000 B per iteration; (b) = 2 x 1000 / 1e11 = 2e-8 s
    # (a) = L / k = 1e-6 / 2 = 5e-7 s: latency-bound
    p = {"grid": 20, "n": 10, "bytes": 200_000, "flops": 0}
    e = est(p)
    assert e.tiles_in_flight == 2 and e.dram_per_iter == pytest.approx(1000)
    assert e.latency_step_s == pytest.approx(5e-7) and e.dram_step_s == pytest.approx(2e-8)
    # step = pmax(5e-7, 2e-8) = 5e-7 x (1 + 0.04^4)^(1/4): the small DRAM term adds 6e-7 relative
    assert e.bound == "latency" and e.waves_s == pytest.approx(10 * 5e-7 + 1e-6, rel=1e-5)
    assert est(p, ahead=3).waves_s < est(p, ahead=2).waves_s < est(p, ahead=1).waves_s
    # unpipelined (k = 0): wait L, then compute (nothing to compute here): 1e-6 per iteration
    assert est(p, ahead=0).latency_step_s == pytest.approx(1e-6)
    # n = 2 iterations cap the tiles ahead: k = min(3, 2) = 2
    assert est({**p, "n": 2}, ahead=3).tiles_in_flight == 2
    # 100x the bytes: (b) = 2 x 1e5 / 1e11 = 2e-6 > 5e-7: DRAM-bound
    big = est({**p, "bytes": 20_000_000})
    # step = pmax(2e-6, 5e-7) = 2e-6 x (1 + 0.25^4)^(1/4) = 2.00195e-6: the latency term shows a little
    assert big.bound == "dram" and big.step_s == pytest.approx(2e-6 * (1 + 0.25 ** 4) ** 0.25)


def test_shared_memory_operand_reads():
    # s = 50,000 B per iteration; (d) = 2 CTAs x 5e4 / 1e12 B/s per SM = 1e-7 s < latency 5e-7
    p = {"grid": 20, "n": 10, "bytes": 200_000, "flops": 0}
    assert est(p, reads=50_000).shared_step_s == pytest.approx(1e-7) and est(p, reads=50_000).bound == "latency"
    # 10x the reads: (d) = 1e-6 > 5e-7: shared-bound, each iteration pmax(1e-6, 5e-7, 2e-8) =
    # 1e-6 x (1 + 0.5^4 + 0.02^4)^(1/4) = 1.0153 us
    e = est(p, reads=500_000)
    assert e.bound == "shared" and e.step_s == pytest.approx(1e-6 * (1 + 0.5 ** 4 + 0.02 ** 4) ** 0.25)
    # unpipelined: L + own compute = 1e-6 + 5e5 / 1e12 = 1.5e-6 (> (d) 1e-6)
    assert est(p, reads=500_000, ahead=0).latency_step_s == pytest.approx(1.5e-6)


def test_wave_quantization_and_tail():
    # slots = 10 SMs x 2 = 20; grid 25 -> 2 waves, tail 5 CTAs (ceil(5 / 10) = 1 per SM)
    p = {"grid": 25, "n": 10, "bytes": 25 * 10 * 100_000, "flops": 0}       # d = 1e5 B per iteration
    e = est(p)
    assert (e.slots, e.waves, e.tail_ctas) == (20, 2, 5)
    # full wave: (b) 2 x 1e5 / 1e11 = 2e-6, (a) 5e-7 per iteration -> step pmax = 2e-6 x (1 + 0.25^4)^(1/4)
    #   = 2.00195e-6 -> 10 steps + 1e-6 = 2.10195e-5
    # tail wave: 1 CTA per SM: (b) 1e-6, (a) 5e-7 -> step 1e-6 x (1 + 0.5^4)^(1/4) = 1.01527e-6 -> 1.11527e-5
    full = 10 * 2e-6 * (1 + 0.25 ** 4) ** 0.25 + 1e-6
    tail = 10 * 1e-6 * (1 + 0.5 ** 4) ** 0.25 + 1e-6
    assert e.tail_s == pytest.approx(tail) and tail == pytest.approx(1.11527e-5, rel=1e-5)
    assert e.waves_s == pytest.approx(full + tail)


class WithCombine(Stream):
    """The toy card with a secondary kernel like decode's combine."""

    def secondary_kernels(self, cfg, point):
        return [R.Secondary("combine", grid=10, iterations=4, tile_bytes=2048)]


def test_secondary_kernel_waits_l2_latency_per_plain_iteration():
    card = WithCombine(name="toy2", summary="", params=(), baseline={})
    e = est({"grid": 20, "n": 10, "bytes": 200_000, "flops": 0}, card=card)
    # combine: 10 CTAs (one per SM), 4 unpipelined iterations of L2 latency 5e-7 (+ own compute 0);
    # unpipelined, each iteration already waits its tile (no separate first-tile wait): 4 x 5e-7 = 2e-6
    assert e.secondary_s == pytest.approx(2e-6)
    assert e.launch_s == pytest.approx(4e-6)


def test_spill_launch_and_total():
    e = est({"grid": 20, "n": 10, "bytes": 200_000, "flops": 0}, spills=3)
    # spills: 3 x 4 B x 2 x 128 threads x 10 iterations x 20 CTAs = 614,400 B over L2 1e18 B/s
    assert e.spill_s == pytest.approx(614_400 / 1e18)
    assert e.launch_s == pytest.approx(2e-6)           # one kernel x 2 us
    assert e.total_s == pytest.approx(e.waves_s + e.secondary_s + e.spill_s + e.launch_s)


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
    from occmodel import evidence as E
    est = R.estimate_many(card, spec, cal, cfgs, [card.resolve_point({"C": 64})], E.modelled(card, spec, cfgs),
                          product="H200")
    # decode tile: BLOCK_T 16 x 576 x 2 B = 18,432 B; two kernels launched (split + combine)
    assert est[0][0].launch_s == pytest.approx(2 * cal.launch_us * 1e-6)
    assert est[0][0].secondary_s > 0
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
    ranks = [r["rank"] for r in agg["rows"]]
    assert len(ranks) == 4 and ranks == sorted(ranks) and ranks[0] == 1
    # configs the estimate cannot order share a rank, and --top says so instead of listing them as "the best 2"
    tied = sum(r == 1 for r in ranks)
    assert (doc["ties"] == f"{tied}-way tie at #1 ({tied - 2} of them past the top 2)") if tied > 2 else True
    assert len(doc["sections"]) == 1 + 2 + 1            # aggregate, two points, top-K
    top = doc["sections"][-1]["rows"]
    assert top[0]["text"].count("--candidate ") == 2 and top[1]["text"].startswith("[{")
    assert any("datasheet" in a for a in doc["assumptions"])


def test_rank_cli_rejects_unknown_point():
    proc = subprocess.run([sys.executable, "-m", "occmodel", "rank", "--points", "Q=1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "not a workload parameter" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- rank_study's pure parts
def _study_module():
    spec = importlib.util.spec_from_file_location("rank_study", ROOT / "scripts" / "rank_study.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_study_sweeps_are_the_declared_ones():
    m = _study_module()
    sizes = {}
    for name in m.SWEEPS:
        kernel, points = m.load_kernel(name)
        sizes[name] = (len(m.valid_configs(kernel, m.sweep_configs(m.SWEEPS[name]["axes"]))), len(points))
    # reports/kernels_dev_heldout.md: >= 40 configs x >= 3 points per held-out kernel
    assert {n: s for n, s in sizes.items() if m.SWEEPS[n]["role"] == "held-out"} == {
        "flash_attention": (48, 3), "splitk_gemm": (64, 3), "moe_gather": (64, 3), "softmax_online": (40, 3)}
    # round 2 (declared after round 1's held-out kernels were spent): >= 40 configs x 3 points each
    assert {n: s for n, s in sizes.items() if m.SWEEPS[n]["role"] == "held-out-2"} == {
        "layernorm_rows": (60, 3), "bmm": (48, 3), "swiglu": (40, 3)}
    assert sizes["rmsnorm"] == (60, 4) and sizes["decode_attention"][0] >= 40 and sizes["matmul"][0] >= 40
    dec, _ = m.load_kernel("decode_attention")           # the seed's levers are in the decode sweep
    cfgs = [dec.resolve(c) for c in m.valid_configs(dec, m.sweep_configs(m.SWEEPS["decode_attention"]["axes"]))]
    for lever in ({}, {"num_warps": 8}, {"num_stages": 3}):
        assert dec.resolve(lever) in cfgs


def test_study_metrics_on_hand_worked_numbers():
    m = _study_module()
    # measured best is index 1 (1.0 s); its estimate 10 is the smallest -> rank 1, in the top 3; the estimate's
    # #1 is that config: 1.0 / 1.0; |est/meas - 1| = 9, 9, 9 -> median 9; the None and the inf are left out
    s = m.metrics([3.0, 1.0, 2.0, None, 5.0], [30.0, 10.0, 20.0, 5.0, math.inf])
    assert s == {"n": 3, "spearman": 1.0, "best_in_top3": True, "best_or_tie_in_top3": True, "top1_vs_best": 1.0,
                 "top1_within": True, "ties_at_1": 1, "best_est_rank": 1, "median_abs_err": 9.0}
    # a 2-way tie at #1 on the estimate counts by its slower member: 1.5 / 1.0 -> not within 3 %
    t = m.metrics([1.0, 1.5, 2.0], [1.0, 1.0, 3.0])
    assert t["ties_at_1"] == 2 and t["top1_vs_best"] == 1.5 and t["top1_within"] is False
    assert m.metrics([None], [1.0]) == {"n": 0}


def test_study_counts_a_top_3_config_the_run_cannot_tell_from_the_measured_best():
    """The measured best (config 0, 1.00 us) is the estimate's #4: a strict miss. Config 1 (1.02 us) is in
    the estimate's top 3; whether it counts beside the strict figure depends on the samples: ranges that
    overlap (1.01 <= 1.05) cannot be told apart, ranges that do not (1.01 > 1.005) can."""
    m = _study_module()
    meas, est = [1.0, 1.02, 2.0, 3.0], [4.0, 1.0, 2.0, 3.0]
    others = [[1.01, 1.02, 1.03], [1.9, 2.0, 2.1], [2.9, 3.0, 3.1]]
    tied = m.metrics(meas, est, samples=[[0.99, 1.0, 1.05]] + others)
    apart = m.metrics(meas, est, samples=[[0.99, 1.0, 1.005]] + others)
    assert tied["best_in_top3"] is False and tied["best_or_tie_in_top3"] is True
    assert apart["best_in_top3"] is False and apart["best_or_tie_in_top3"] is False
    assert m.metrics(meas, est)["best_or_tie_in_top3"] is False          # no samples: the strict figure
    assert not m.noise_tied([1.0], [1.0, 2.0])                          # one sample says nothing about noise


def test_study_warm_up_retries_machine_faults_not_config_faults():
    """A warm-up error that is the machine's (the workers' inputs outgrew GPU memory, a worker died) is
    retried in one process before the config is called failed; a config's own error is kept."""
    m = _study_module()
    assert m._environmental("OutOfMemoryError: CUDA out of memory. Tried to allocate 3.25 GiB.")
    assert m._environmental("inputs: AcceleratorError: CUDA error: out of memory")
    assert m._environmental("warm-up worker: BrokenProcessPool")
    assert not m._environmental("")
    assert not m._environmental("CompilationError: at 12:4: out of resource: shared memory, Required: 262144")
    assert not m._environmental("AcceleratorError: CUDA error: an illegal memory access was encountered")


def test_study_measure_without_gpu_exits_2(tmp_path):
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is visible")
    except ImportError:
        pass
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_study.py"), "measure", "--out",
                           str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_study.py"), "measure", "--out",
                          str(tmp_path / "r.json"), "--kernels", "nope"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unknown kernel 'nope'" in bad.stderr


def test_ties_are_shown_as_ties():
    # three configs with one estimate share #1, the next is #4 (competition ranking)
    assert R.standing([2.0, 1.0, 1.0, 1.0, math.inf]) == [4, 1, 1, 1, 5]
    assert R.tie_note([2.0, 1.0, 1.0, 1.0], 3) == "3-way tie at #1"
    # a tie that crosses the cut is said, with how many are left out
    assert R.tie_note([1.0, 2.0, 2.0, 2.0], 2) == "3-way tie at #2 (2 of them past the top 2)"
    assert R.tie_note([1.0, 2.0, 3.0], 3) == ""


def test_study_bad_files_are_one_line_exit_2(tmp_path):
    script = str(ROOT / "scripts" / "rank_study.py")
    (tmp_path / "list.json").write_text("[1]")
    for argv in (["evaluate", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")],
                 ["rerun", str(tmp_path / "list.json"), str(tmp_path / "list.json"), "--out", str(tmp_path / "o.md")]):
        proc = subprocess.run([sys.executable, script, *argv], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "json" in proc.stderr.lower()


def test_study_figure_draws_a_panel_per_case_and_names_a_missing_calibration(tmp_path, capsys):
    m = _study_module()
    cal = {"n": 3, "spearman": 0.5, "top1_vs_best": 1.5}
    doc = {"title": "t", "kernels": [{"kernel": "k", "per_point": [{"point": {"M": 1}, "by_calibration": {"measured 1": cal}},
                                                                   {"point": {"M": 2}, "by_calibration": {"measured 1": cal}}],
                                      "configs": [{"measured_us": [1.0, 2.0], "estimates_us": {"measured 1": [2.0, 1.0]}},
                                                  {"measured_us": [1.5, 1.0], "estimates_us": {"measured 1": [1.0, 3.0]}},
                                                  {"measured_us": [3.0, None], "estimates_us": {"measured 1": [4.0, 2.0]}}]}]}
    src = tmp_path / "eval.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "fig.png"
    assert m.main(["figure", str(src), "--out", str(out)]) == 0
    assert "(2 panels)" in capsys.readouterr().out        # point 2 keeps its 2 timed configs of 3
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_study.py"), "figure", str(src), "--out",
                           str(out), "--calibration", "datasheet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "calibration 'datasheet'" in proc.stderr and "measured 1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


class Ragged(Stream):
    """The toy card with one iteration count per CTA (point["iters"])."""

    def cta_iterations(self, cfg, point):
        return point["iters"]


def test_ragged_ctas_are_list_scheduled():
    card = Ragged(name="ragged", summary="", params=(), baseline={})
    # 10 SMs x 1 slot; 20 CTAs: two of 10 iterations, eight that return at once, ten of 1 iteration.
    # unpipelined (ahead 0): a CTA costs iterations x step; step = L (1 us) + nothing else worth a
    # digit (1,000 B / 1e11 B/s per SM = 1e-8 s of DRAM, smoothed in); an empty CTA costs L
    iters = [10, 10] + [0] * 8 + [1] * 10
    p = {"grid": 20, "n": 1, "bytes": 30 * 1000, "flops": 0, "iters": iters}
    e = est(p, blocks=1, ahead=0, card=card)
    # bytes per iteration: 30,000 B over the launch's 30 iterations -> d = 1,000 B
    assert e.dram_per_iter == pytest.approx(1000)
    step = e.step_s
    assert step == pytest.approx(1e-6, rel=1e-3)
    # slots 0-1 take the long CTAs (10 steps); slots 2-9 the empty ones (L each), then the ten short
    # CTAs (1 step each) go to the free slots: 8 at L + step, the last 2 at 2 L + 2 step -> the makespan
    # is the long CTAs' 10 steps
    assert e.waves_s == pytest.approx(10 * step)
    # the same work without the hook: 20 CTAs of loop_iterations = 1 -> 2 waves of 1 step each
    flat = est({**p, "n": 1}, blocks=1, ahead=0)
    assert flat.waves_s == pytest.approx(2 * flat.step_s)


def test_development_cases_are_every_timed_kernel_once():
    """`rank_study.py development` takes each kernel from its latest study timing (embedding_bag,
    ssd_chunk_state and deform_attn from their re-timings), every kernel of SWEEPS (each round judged; the next held-out round stays out until it is); and it refuses, in one line, to
    compile with another triton than the GPU ran unless told."""
    m = _study_module()
    seen = []
    for path, take, legacy in m.MEASURED:
        doc = json.loads((ROOT / path).read_text())
        seen += [k["kernel"] for k in doc["kernels"] if "error" not in k and (take is None or k["kernel"] in take)]
        if legacy:
            seen += [k["kernel"] for k in json.loads((ROOT / legacy).read_text())["kernels"]]
    assert len(seen) == len(set(seen))
    untimed = "held-out-36"               # declared, not yet timed: it stays out until it is
    assert set(seen) == {k for k, e in m.SWEEPS.items() if e["role"] != untimed}
    import triton
    if triton.__version__ != "3.6.0":
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_study.py"), "development", "--out",
                               "/dev/null/x"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--any-triton" in proc.stderr


def test_a_faulting_config_is_recorded_and_the_point_measured_again_without_it():
    """measure's fault isolation: the run names the config it is on in the progress file; when it dies
    (a CUDA context lost to an illegal address), that config alone is marked 'fault: ...' and the
    point is run again without it. A failure before any config (nothing to blame) is raised."""
    m = _study_module()
    calls, logged = [], []

    def run(skip, progress):
        calls.append(list(skip))
        for i in range(4):
            if skip[i]:
                continue
            progress.write_text(str(i))
            if i in (1, 3):
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return "times", skip

    out = m.without_faults(run, ["", "", "compile error", ""], str, logged.append)
    assert out == ("times", ["", "fault: RuntimeError: CUDA error: an illegal memory access was encountered",
                             "compile error", "fault: RuntimeError: CUDA error: an illegal memory access was encountered"])
    assert len(calls) == 3 and len(logged) == 2

    def dies_early(skip, progress):
        raise MemoryError("reference")

    with pytest.raises(MemoryError):
        m.without_faults(dies_early, ["", ""], str, logged.append)
    with pytest.raises(RuntimeError, match="more than 1 configs faulted"):
        m.without_faults(run, ["", "", "", ""], str, logged.append, retries=1)


def test_probe_refuses_a_bad_point_or_config_in_one_line():
    """`rank_study.py probe` (one launch for compute-sanitizer) names the bad value and what is allowed."""
    script = str(ROOT / "scripts" / "rank_study.py")
    for extra, said in ((["--point", "7", "--config", "{}"], "points 0..2"),
                        (["--config", "{BLOCK"], "is not JSON"),
                        (["--config", '{"BLOCK_M": 64}'], "BLOCK_M, BLOCK_P, BLOCK_K, num_warps, num_stages")):
        proc = subprocess.run([sys.executable, script, "probe", "ssd_chunk_scan", *extra],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and said in proc.stderr


def test_faults_names_each_failed_config_and_replays_the_first_fault(tmp_path):
    """`rank_study.py faults FILE`: per point, what ran and what failed; the first config recorded as a
    fault comes back as the probe and compute-sanitizer commands (only the swept values)."""
    import json as _json
    m = _study_module()
    doc = {"kernels": [
        {"kernel": "ssd_chunk_scan", "axes": {"BLOCK_M": [64], "num_warps": [4, 8]},
         "configs": [{"BLOCK_M": 64, "num_warps": 4, "X": 1}, {"BLOCK_M": 64, "num_warps": 8, "X": 1}],
         "samples": [[[1e-5], None]], "errors": [["", "fault: RuntimeError: an illegal memory access"]],
         "checks": [[{"ok": False, "rel": 0.5}, None]]},
        {"kernel": "qk_norm_rope", "error": "RuntimeError: CUDA error"}]}
    lines, commands = m.fault_report(doc)
    assert lines[0] == "ssd_chunk_scan point 0: 1 of 2 timed, 1 failed, 1 wrong"
    assert "config 1" in lines[1] and "illegal memory access" in lines[1]
    assert "wrong" in lines[2] and lines[3] == "qk_norm_rope: did not run: RuntimeError: CUDA error"
    swept = _json.dumps({"BLOCK_M": 64, "num_warps": 8})
    assert commands[0].endswith(f"probe ssd_chunk_scan --point 0 --config '{swept}'")
    assert commands[1].startswith("compute-sanitizer --tool memcheck")
    # a failure that did not kill the context is listed, not replayed
    doc["kernels"][0]["errors"] = [["", "RuntimeError: out of resource: shared memory"]]
    assert m.fault_report(doc)[1] == []
    # an `evaluate` file is not a `measure` output: one line, exit 2
    bad = tmp_path / "eval.json"
    bad.write_text(_json.dumps({"kernels": [{"kernel": "ssd_chunk_scan", "points": []}]}))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_study.py"), "faults", str(bad)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "not a `measure` output" in proc.stderr


def test_development_in_worker_processes_gives_the_same_report(tmp_path):
    """`development --jobs N` evaluates kernels in N worker processes: the same cases, in the same order,
    with the same figures as one process; a --jobs below 1 is refused in one line."""
    script = str(ROOT / "scripts" / "rank_study.py")
    run = lambda *a: subprocess.run([sys.executable, script, "development", "--any-triton", *a],
                                    capture_output=True, text=True, timeout=900)
    one = run("--kernels", "swiglu", "--out", str(tmp_path / "one"))
    two = run("--kernels", "swiglu", "--jobs", "2", "--out", str(tmp_path / "two"))
    assert one.returncode == 0 and two.returncode == 0, one.stderr[-2000:] + two.stderr[-2000:]
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert [k["kernel"] for k in a["kernels"]] == [k["kernel"] for k in b["kernels"]] == ["swiglu"]
    assert a["summary"] == b["summary"] and a["kernels"] == b["kernels"]
    bad = run("--jobs", "0", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--jobs 0" in bad.stderr


def test_study_names_an_unknown_product_in_one_line(tmp_path):
    """`rank_study.py evaluate --product H100` (the spec's products are 'H100 SXM' and 'H200'): one line
    naming the value and the known ones, exit status 2 -- not a traceback."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rank_study.py"), "evaluate",
                           str(ROOT / "reports" / "h200" / "rank_study_round26_h100.json"), "--role", "held-out-26",
                           "--product", "H100", "--any-triton", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "'H100'" in proc.stderr and "H100 SXM" in proc.stderr
