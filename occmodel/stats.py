"""Statistics for A/B timing with a measured noise band. Pure (numpy only).

Samples come in rounds. Each round times, back to back and interleaved, the
baseline twice (A and A') and every candidate once (A B A' C ...), so slow
drift of clocks and temperature hits all of them alike. Per round r:

    d_r = log(t_A,r / t_cand,r)     candidate speed-up (> 0: candidate faster)
    a_r = log(t_A,r / t_A',r)       the same quantity for two baseline runs (A/A)

The effect is the median of d over rounds, reported as a throughput ratio
exp(median d); its 95 % confidence interval comes from a percentile bootstrap
of that median over rounds (rounds are the independent unit: the paired
difference removes the drift both runs of a round share). The noise band is
measured, not assumed: the half-width of the same bootstrap interval computed
on the A/A differences a_r, i.e. how far the median moves when nothing changed.

Verdict on the outcome (see `decide`):
    CONFIRMED     the whole CI lies above +band (a gain beyond noise)
    REFUTED       the whole CI lies below -band (a loss beyond noise)
    INCONCLUSIVE  otherwise
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONFIRMED, REFUTED, INCONCLUSIVE = "CONFIRMED", "REFUTED", "INCONCLUSIVE"
MIN_ROUNDS = 5


def bootstrap_median_ci(values, conf: float = 0.95, n_boot: int = 4000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median of `values`."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    medians = np.median(values[idx], axis=1)
    alpha = (1 - conf) / 2
    return float(np.quantile(medians, alpha)), float(np.quantile(medians, 1 - alpha))


@dataclass(frozen=True)
class Outcome:
    """A measured candidate/baseline comparison at one workload point."""

    ratio: float            # candidate throughput / baseline throughput (median over rounds)
    ci_low: float           # 95 % CI of that ratio
    ci_high: float
    band: float             # A/A noise band, as a fraction (0.02 = +-2 %)
    aa_ratio: float         # the A/A ratio itself (should be ~1)
    rounds: int
    base_median_s: float    # median seconds per launch, baseline (A runs)
    cand_median_s: float
    base_spread: float      # (max - min) / median of the baseline's A and A' times: run-to-run spread
    verdict: str
    why: str

    @property
    def delta(self) -> float:
        """Throughput change as a fraction (+0.05 = 5 % faster)."""
        return self.ratio - 1.0


def decide(ci_low: float, ci_high: float, band: float) -> str:
    """Verdict from the ratio's CI (as ratios) and the band (a fraction)."""
    if ci_low > 1 + band:
        return CONFIRMED
    if ci_high < 1 - band:
        return REFUTED
    return INCONCLUSIVE


def compare(base_a, base_a2, cand, seed: int = 0) -> Outcome:
    """Outcome from per-round seconds of baseline A, baseline A' and the candidate."""
    a, a2, c = (np.asarray(x, dtype=np.float64) for x in (base_a, base_a2, cand))
    if not (len(a) == len(a2) == len(c)):
        raise ValueError("base_a, base_a2 and cand need one sample per round each")
    if len(a) < MIN_ROUNDS:
        raise ValueError(f"need at least {MIN_ROUNDS} rounds, got {len(a)}")
    if (a <= 0).any() or (a2 <= 0).any() or (c <= 0).any():
        raise ValueError("times must be positive")
    d = np.log(a / c)
    aa = np.log(a / a2)
    lo, hi = bootstrap_median_ci(d, seed=seed)
    aa_lo, aa_hi = bootstrap_median_ci(aa, seed=seed + 1)
    band = float(np.expm1((aa_hi - aa_lo) / 2))
    ratio, r_lo, r_hi = float(np.exp(np.median(d))), float(np.exp(lo)), float(np.exp(hi))
    verdict = decide(r_lo, r_hi, band)
    both = np.concatenate([a, a2])
    spread = float((both.max() - both.min()) / np.median(both))
    rel = f"{100 * (ratio - 1):+.1f}% (95% CI {100 * (r_lo - 1):+.1f}%..{100 * (r_hi - 1):+.1f}%)"
    if verdict == CONFIRMED:
        why = f"throughput {rel}: the whole interval is above the +{100 * band:.1f}% A/A band"
    elif verdict == REFUTED:
        why = f"throughput {rel}: the whole interval is below the -{100 * band:.1f}% A/A band"
    else:
        why = f"throughput {rel} overlaps the +-{100 * band:.1f}% A/A band: not distinguishable from noise"
    return Outcome(ratio=ratio, ci_low=r_lo, ci_high=r_hi, band=band, aa_ratio=float(np.exp(np.median(aa))),
                   rounds=len(a), base_median_s=float(np.median(a)), cand_median_s=float(np.median(c)),
                   base_spread=spread, verdict=verdict, why=why)


def overall(point_verdicts: list[str], mechanism_holds: bool = True) -> str:
    """One verdict over workload points: REFUTED if the mechanism failed or any
    point lost beyond noise; CONFIRMED if some point gained and none lost;
    INCONCLUSIVE otherwise."""
    if not mechanism_holds or REFUTED in point_verdicts:
        return REFUTED
    if CONFIRMED in point_verdicts:
        return CONFIRMED
    return INCONCLUSIVE
