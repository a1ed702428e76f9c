"""Noise band and verdict logic on synthetic timing samples with known answers.

Two generators: `rounds` (one block, the within-run method) and `blocks` (independent
blocks, each (block, instance) with its own multiplicative shift: what fresh allocations,
graphs and GPU state do to a run; the random-effects interval)."""

import numpy as np
import pytest

from occmodel.stats import (CONFIRMED, INCONCLUSIVE, MIXED, REFUTED, block_interval, block_schedule,
                            bootstrap_median_ci, compare, decide, overall, overall_detail, split_rounds, t975)


def rounds(effect=1.0, noise=0.01, n=15, drift=0.0, seed=0, t=100e-6):
    """Per-round times of A, A' and a candidate `effect` times slower (1.1 = 10 % slower)."""
    rng = np.random.default_rng(seed)
    common = 1 + drift * np.sin(np.arange(n))          # clock drift all runs of a round share
    jitter = lambda: rng.lognormal(0, noise, n)          # noqa: E731
    return t * common * jitter(), t * common * jitter(), t * effect * common * jitter()


def test_ten_percent_slower_is_refuted_with_its_numbers():
    out = compare(*rounds(effect=1.10))
    # throughput ratio = t_base / t_cand ~ 1 / 1.10 = 0.909
    assert out.verdict == REFUTED and out.ratio == pytest.approx(1 / 1.10, abs=0.01)
    assert out.ci_high < 1 - out.band
    assert "below" in out.why and "A/A band" in out.why


def test_ten_percent_faster_is_confirmed():
    out = compare(*rounds(effect=1 / 1.10))
    assert out.verdict == CONFIRMED and out.delta == pytest.approx(0.10, abs=0.015)


def test_effect_inside_the_noise_is_inconclusive():
    # 0.5 % effect under 4 % per-run noise with 15 rounds: cannot be told apart
    out = compare(*rounds(effect=1.005, noise=0.04))
    assert out.verdict == INCONCLUSIVE and out.band > 0.005


def test_a_over_a_is_inconclusive_at_least_95_percent_of_the_time():
    verdicts = [compare(*rounds(effect=1.0, noise=0.02, seed=s), seed=s).verdict for s in range(200)]
    assert verdicts.count(INCONCLUSIVE) / len(verdicts) >= 0.95


def test_shared_drift_cancels_in_the_paired_ratio():
    # 20 % clock drift across rounds, 0.5 % jitter: a 5 % loss is still seen clearly
    out = compare(*rounds(effect=1.05, noise=0.005, drift=0.2))
    assert out.verdict == REFUTED and out.ratio == pytest.approx(1 / 1.05, abs=0.01)
    assert out.base_spread > 0.2                       # the raw spread is large; the band is not
    assert out.band < 0.02


def test_bootstrap_interval_covers_the_true_median():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(200):
        lo, hi = bootstrap_median_ci(rng.normal(0.0, 1.0, 31), n_boot=1000, seed=int(rng.integers(1 << 30)))
        covered += lo <= 0.0 <= hi
    assert covered / 200 >= 0.9


def test_decide_edges():
    assert decide(1.031, 1.08, 0.03) == CONFIRMED
    assert decide(1.03, 1.08, 0.03) == INCONCLUSIVE       # touching the band is not beyond it
    assert decide(0.90, 0.969, 0.03) == REFUTED


@pytest.mark.parametrize("bad", [dict(n=3), dict(t=-1.0)])
def test_rejects_too_few_rounds_or_nonpositive_times(bad):
    with pytest.raises(ValueError):
        compare(*rounds(**bad))


# ------------------------------------------------------------------- blocks
def blocks(effect=1.0, within=0.005, between=0.0, n_blocks=5, per=6, seed=0, t=100e-6, shared_aa=False):
    """Per-block, per-round times of A, A' and a candidate `effect` times slower. Every
    (block, instance) draws its own shift exp(N(0, between)); every sample jitter exp(N(0, within)).
    shared_aa: A' is the same instance as A (shares its shift), as the old validate timed it."""
    rng = np.random.default_rng(seed)
    out = ([], [], [])
    for _ in range(n_blocks):
        sa, sa2, sc = rng.lognormal(0, between, 3)
        for k, (eff, sh) in enumerate(((1.0, sa), (1.0, sa if shared_aa else sa2), (effect, sc))):
            out[k].append(t * eff * sh * rng.lognormal(0, within, per))
    return out


def shifted(speedups, aa_shifts, within=0.003, per=6, seed=0, t=100e-6):
    """Blocks whose candidate is faster by exactly `speedups[b]` in block b (a block shift, no
    effect common to all blocks beyond their mean) and whose A' is off by `aa_shifts[b]`."""
    rng = np.random.default_rng(seed)
    a, a2, c = [], [], []
    for s, s2 in zip(speedups, aa_shifts):
        a.append(t * rng.lognormal(0, within, per))
        a2.append(t / (1 + s2) * rng.lognormal(0, within, per))
        c.append(t / (1 + s) * rng.lognormal(0, within, per))
    return a, a2, c


def test_block_shift_that_the_within_run_band_confirms_is_inconclusive():
    # Candidate block shifts +3, +1, +2, -0.5, +1.5 %: log-ratio block medians ~ 0.0296, 0.0100, 0.0198,
    # -0.0050, 0.0149 -> mean 0.0138 (+1.4 %), s_m ~ 0.0128, half-width t_{.975,4} s_m / sqrt(5)
    # = 2.776 * 0.0128 / 2.236 = 0.0159: the interval ~ -0.2 %..+3.0 % (with this seed's 0.3 % jitter
    # -0.5 %..+3.2 %) holds 0 -> INCONCLUSIVE. Pooled as one run of 30 rounds, the median's bootstrap
    # interval is +1.1 %..+2.0 % and the A/A band (A' within +-0.2 %) 0.3 %: the within-run method CONFIRMS.
    a, a2, c = shifted([0.03, 0.01, 0.02, -0.005, 0.015], [0.0, 0.002, -0.002, 0.001, -0.001])
    new = compare(a, a2, c)
    old = compare(np.concatenate(a), np.concatenate(a2), np.concatenate(c))
    assert old.verdict == CONFIRMED and old.blocks == 1 and old.between_sd is None
    assert new.verdict == INCONCLUSIVE and new.blocks == 5 and new.rounds == 30
    assert new.ratio == pytest.approx(1.014, abs=0.002)
    assert new.ci_low == pytest.approx(0.9955, abs=0.002) and new.ci_high == pytest.approx(1.032, abs=0.002)
    assert new.between_sd > 3 * new.within_sd              # the components say where the width comes from
    assert "5 blocks x 6 rounds" in new.why and "run-to-run variation is not covered" in old.why


def test_the_h200_repeats_as_blocks_give_a_band_of_their_spread():
    # The five H200 repeats of one validate (issue 13): ratios 1.816, 1.813, 1.842, 1.802, 1.793.
    # As block medians (log): mean 0.59505 -> ratio 1.8131; SD 0.010181; half-width
    # 2.776 * 0.010181 / sqrt(5) = 0.012640 -> 1.8131 * exp(-+0.01264) = 1.7903..1.8362 (+-1.3 %,
    # against the +-0.2-0.4 % each run's round bootstrap gave).
    iv = block_interval([[np.log(r)] * 3 for r in (1.816, 1.813, 1.842, 1.802, 1.793)])
    assert np.exp(iv.center) == pytest.approx(1.8131, abs=1e-4)
    assert np.exp(iv.low) == pytest.approx(1.7903, abs=2e-4) and np.exp(iv.high) == pytest.approx(1.8362, abs=2e-4)
    assert iv.within_sd == 0.0 and iv.between_sd == pytest.approx(0.010181, abs=1e-5)


def test_block_interval_worked_example():
    # medians 0.01, 0.03, 0.02: mean 0.02, s_m 0.01, half = 4.303 * 0.01 / sqrt(3) = 0.024843
    iv = block_interval([[0.0, 0.01, 0.02], [0.02, 0.03, 0.04], [0.01, 0.02, 0.03]])
    assert iv.center == pytest.approx(0.02) and iv.half_width == pytest.approx(0.024843, abs=1e-6)
    # within: every block's rounds sit at -0.01, 0, +0.01 around its mean -> pooled SD
    # sqrt(3 * 2e-4 / (3 * 2)) = 0.01; between: sqrt(max(0, 1e-4 - (pi/2) 1e-4 / 3)) = 0.006902
    assert iv.within_sd == pytest.approx(0.01) and iv.between_sd == pytest.approx(0.006902, abs=1e-6)


def test_true_ten_percent_gain_with_small_block_noise_is_confirmed():
    # +10 % throughput, 1 % jitter, 0.5 % block shifts: the interval ~ +10 % +- ~1 %, the band ~1 %
    outs = [compare(*blocks(effect=1 / 1.10, within=0.01, between=0.005, seed=s)) for s in range(50)]
    assert all(o.verdict == CONFIRMED for o in outs)
    assert all(abs(o.delta - 0.10) < 0.02 for o in outs)
    loss = compare(*blocks(effect=1.10, within=0.01, between=0.005))
    assert loss.verdict == REFUTED and loss.ratio == pytest.approx(1 / 1.10, abs=0.01)


def test_a_over_a_with_block_shifts_is_inconclusive_and_the_old_design_was_not():
    # 1 % block shifts, 0.5 % jitter. The new design: 5 blocks x 6 rounds, A' an independent instance.
    new = [compare(*blocks(within=0.005, between=0.01, seed=s)).verdict for s in range(200)]
    assert new.count(INCONCLUSIVE) / len(new) >= 0.95
    # The old design: one block of 15 rounds, A' the same instance as A (no shift between them):
    # the candidate instance's shift (SD ~1.4 % on the log-ratio) is read as an effect in ~half of the runs.
    old = [compare(*(x[0] for x in blocks(within=0.005, between=0.01, n_blocks=1, per=15, seed=s,
                                           shared_aa=True)), seed=s).verdict for s in range(200)]
    assert 1 - old.count(INCONCLUSIVE) / len(old) > 0.3


def test_components_recover_the_simulated_noise():
    # 40 blocks x 10 rounds; d = log A - log C carries sqrt(2) x each instance's SD:
    # within sqrt(2) * 0.01 = 0.01414, between sqrt(2) * 0.02 = 0.02828
    o = compare(*blocks(within=0.01, between=0.02, n_blocks=40, per=10, seed=7))
    assert o.within_sd == pytest.approx(0.01414, rel=0.15) and o.between_sd == pytest.approx(0.02828, rel=0.3)
    assert o.method == "random-effects t on block medians"


@pytest.mark.parametrize("bad", [dict(per=2), dict(t=-1.0)])
def test_blocks_reject_short_blocks_or_nonpositive_times(bad):
    with pytest.raises(ValueError):
        compare(*blocks(**bad))


def test_blocks_must_line_up():
    a, a2, c = blocks()
    with pytest.raises(ValueError):
        compare(a, a2, c[:-1])


def test_t_quantiles():
    assert t975(4) == 2.776 and t975(1) == 12.706
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 4, 9, 30, 31, 60, 200):
        assert t975(df) == pytest.approx(scipy_stats.t.ppf(0.975, df), abs=1e-3)


def test_split_and_schedule():
    assert split_rounds(30, 5) == [6] * 5 and split_rounds(16, 5) == [4, 3, 3, 3, 3]
    with pytest.raises(ValueError):
        split_rounds(4, 5)
    names = ["baseline", "baseline'", "num_stages 2->3", "num_warps 4->8"]
    sched = block_schedule(names, [6] * 5, seed=3)
    assert [len(b) for b in sched] == [6] * 5
    assert all(sorted(r) == sorted(names) for b in sched for r in b)     # each config once per round
    assert len({tuple(r) for b in sched for r in b}) > 10               # the order varies (24 possible)
    assert sched == block_schedule(names, [6] * 5, seed=3)               # and is reproducible
    assert {b[0][0] for b in [block_schedule(names, [1], seed=s) for s in range(40)] for b in b} == set(names)


# ------------------------------------------------------------- over points
def test_points_that_agree():
    assert overall([INCONCLUSIVE, CONFIRMED]) == CONFIRMED               # INCONCLUSIVE does not break agreement
    assert overall({"C=1": REFUTED, "C=8": INCONCLUSIVE}) == REFUTED
    assert overall([INCONCLUSIVE, INCONCLUSIVE]) == INCONCLUSIVE
    assert overall([]) == INCONCLUSIVE


def test_mixed_names_the_points():
    # the decode num_stages premise on the H200: -4.3 %, +15.7 %, +38.5 % at C=1, 8, 64
    pv = {"C=1": REFUTED, "C=8": CONFIRMED, "C=64": CONFIRMED, "C=96": INCONCLUSIVE}
    assert overall(pv) == "MIXED — CONFIRMED at C=8, C=64; REFUTED at C=1; INCONCLUSIVE at C=96"
    d = overall_detail(pv)
    assert d.verdict == MIXED and d.as_dict()["confirmed_at"] == ["C=8", "C=64"]
    assert d.refuted_at == ("C=1",) and d.inconclusive_at == ("C=96",) and not d.refuted_statically
    assert overall([REFUTED, CONFIRMED]) == "MIXED — CONFIRMED at point 2; REFUTED at point 1"


def test_static_refutation_keeps_refuted_and_the_measured_outcome_beside_it():
    d = overall_detail([("C=1", REFUTED), ("C=8", CONFIRMED)], mechanism_holds=False)
    assert d.text == d.verdict == REFUTED and d.refuted_statically
    assert d.measured == MIXED and d.measured_text == "MIXED — CONFIRMED at C=8; REFUTED at C=1"
    assert overall([CONFIRMED], mechanism_holds=False) == REFUTED
