"""Noise band and verdict logic on synthetic timing samples with known answers."""

import numpy as np
import pytest

from occmodel.stats import CONFIRMED, INCONCLUSIVE, REFUTED, bootstrap_median_ci, compare, decide, overall


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


def test_overall_verdict_over_points():
    assert overall([REFUTED, INCONCLUSIVE, CONFIRMED]) == REFUTED
    assert overall([INCONCLUSIVE, CONFIRMED]) == CONFIRMED
    assert overall([INCONCLUSIVE, INCONCLUSIVE]) == INCONCLUSIVE
    assert overall([CONFIRMED], mechanism_holds=False) == REFUTED


@pytest.mark.parametrize("bad", [dict(n=3), dict(t=-1.0)])
def test_rejects_too_few_rounds_or_nonpositive_times(bad):
    with pytest.raises(ValueError):
        compare(*rounds(**bad))
