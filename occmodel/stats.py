"""Statistics for A/B timing with a measured noise band that covers run-to-run
variation. Pure (numpy only; no torch).

Design of the measurement (validate's timing loop, occmodel.gpu.time_blocks):
the rounds of a workload point are split over B independent *blocks*. Each
block allocates fresh input sets (new seeds, a new place in memory), builds a
fresh CUDA graph per config, re-warms, and then runs its rounds; each round
times the baseline twice (A and A', two independent instances of the baseline
config) and every candidate once, in a random order. Per round r of block b:

    d_br = log(t_A / t_cand)      candidate speed-up (> 0: candidate faster)
    a_br = log(t_A / t_A')        the same quantity for two baseline instances (A/A)

Why blocks: rounds inside one run share their allocations, graphs and GPU
state, so the spread of d over rounds is only *within-run* noise. On an H200
five repeats of one validate gave ratios 1.816, 1.813, 1.842, 1.802, 1.793
while each run's round-based interval was +-0.2-0.4 %: the run-to-run
(between-block) component dominated and a round-bootstrap interval did not
cover it.

The interval (`compare`, B >= 2 blocks): a one-way random-effects model on the
block summaries. Each block gives m_b = median over its rounds of d_br; then

    m_b = mu + u_b + e_b,   u_b ~ (0, s_between^2)  block shift,
                            e_b ~ (0, s_within_med^2) rounds noise of a block median
    estimate  mu_hat = mean_b m_b,  ratio = exp(mu_hat)
    95 % CI   mu_hat +- t_{0.975, B-1} * s_m / sqrt(B),  s_m = sample SD of the m_b

s_m^2 estimates s_between^2 + s_within_med^2 at once, so the interval is
widened by the between-block variance without having to separate the two.
For balanced blocks this is the exact t interval for the fixed mean of the
one-way random-effects ANOVA (e.g. Searle, Casella & McCulloch, "Variance
Components", Wiley 1992, ch. 3: the variance of the grand mean is
(s_between^2 + s_within^2/n)/B, estimated by MS_between/(nB)); analysing the
cluster summaries is the standard way to respect the top level of nested data
(with few clusters a percentile hierarchical bootstrap -- resample blocks,
then rounds -- under-covers, because it uses normal-like quantiles on B values
and shrinks the variance by (B-1)/B; see Saravanan, Berman & Sober,
"Application of the hierarchical bootstrap to multi-level data in
neuroscience", NBDT 2020, and for benchmarking with several levels of
repetition Kalibera & Jones, "Rigorous benchmarking in reasonable time",
ISMM 2013, who estimate the variance at each level in the same random-effects
terms).

The components are reported separately (fractions, log-scale SDs):
    within_sd   round-to-round SD of d inside a block (pooled within-block SD)
    between_sd  SD of the block shift u_b, method of moments:
                sqrt(max(0, s_m^2 - (pi/2) within_sd^2 / n_bar)),
                pi/2 being the asymptotic variance factor of a median against a mean.

The noise band is measured, not assumed: the half-width of the same interval
computed on the A/A log-ratios a_br (A' is an independent instance, so the A/A
comparison has the same between-block structure as a candidate's).

Verdict on the outcome (see `decide`):
    CONFIRMED     the whole CI lies above +band (a gain beyond noise)
    REFUTED       the whole CI lies below -band (a loss beyond noise)
    INCONCLUSIVE  otherwise

With one block (flat per-round sequences) `compare` falls back to the
within-run method: percentile bootstrap of the median over rounds; the Outcome
says `blocks=1, between_sd=None` and its `why` that run-to-run variation is
not covered.

Over workload points (`overall_detail`): the decisive points (CONFIRMED or
REFUTED) decide. All decisive points agree (INCONCLUSIVE points do not break
agreement) -> that verdict; no decisive point -> INCONCLUSIVE; decisive points
disagree -> MIXED, said with the points, e.g.
"MIXED — CONFIRMED at C=8, C=64; REFUTED at C=1". A premise whose mechanism
failed statically stays REFUTED; the measured outcome is kept beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

CONFIRMED, REFUTED, INCONCLUSIVE, MIXED = "CONFIRMED", "REFUTED", "INCONCLUSIVE", "MIXED"
MIN_ROUNDS = 5                # one block (within-run method)
MIN_BLOCKS = 2                # the random-effects interval needs a between-block SD
MIN_ROUNDS_PER_BLOCK = 3      # a block median that one bad sample cannot move
DEFAULT_BLOCKS = 5

# Two-sided 95 % Student t quantiles t_{0.975, df}, df = 1..30 (standard tables).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """t_{0.975, df}: the table for df <= 30, else the Cornish-Fisher expansion
    z + (z^3 + z)/(4 df) + (5 z^5 + 16 z^3 + 3 z)/(96 df^2) (error < 1e-3 there)."""
    if df < 1:
        raise ValueError("t quantile needs df >= 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def bootstrap_median_ci(values, conf: float = 0.95, n_boot: int = 4000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median of `values`."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    medians = np.median(values[idx], axis=1)
    alpha = (1 - conf) / 2
    return float(np.quantile(medians, alpha)), float(np.quantile(medians, 1 - alpha))


@dataclass(frozen=True)
class Interval:
    """A location estimate in log space with its 95 % interval and noise components."""

    center: float                 # mean of block medians (or the median, one block)
    low: float
    high: float
    within_sd: float              # round-to-round SD inside a block (log scale)
    between_sd: float | None      # SD of the block shift (None: one block, not estimable)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def block_interval(blocks: Sequence[Sequence[float]]) -> Interval:
    """Random-effects 95 % interval of the mean of per-block medians (see the module docstring).

    Worked example: block medians 0.01, 0.03, 0.02 -> mean 0.02, s_m = 0.01,
    half-width t_{0.975,2} * 0.01 / sqrt(3) = 4.303 * 0.005774 = 0.02484.
    """
    blocks = [np.asarray(b, dtype=np.float64) for b in blocks]
    if len(blocks) < MIN_BLOCKS:
        raise ValueError(f"need at least {MIN_BLOCKS} blocks, got {len(blocks)}")
    if min(len(b) for b in blocks) < 2:
        raise ValueError("every block needs at least 2 rounds")
    m = np.array([np.median(b) for b in blocks])
    n_b = len(m)
    center, s_m = float(m.mean()), float(m.std(ddof=1))
    half = t975(n_b - 1) * s_m / math.sqrt(n_b)
    ss_within = sum(float(((b - b.mean()) ** 2).sum()) for b in blocks)
    df_within = sum(len(b) - 1 for b in blocks)
    within = math.sqrt(ss_within / df_within)
    n_bar = sum(len(b) for b in blocks) / n_b
    between = math.sqrt(max(0.0, s_m**2 - (math.pi / 2) * within**2 / n_bar))
    return Interval(center, center - half, center + half, within, between)


def _within_run_interval(values: Sequence[float], seed: int) -> Interval:
    """The one-block method: percentile bootstrap of the median over rounds."""
    v = np.asarray(values, dtype=np.float64)
    lo, hi = bootstrap_median_ci(v, seed=seed)
    return Interval(float(np.median(v)), lo, hi, float(v.std(ddof=1)), None)


@dataclass(frozen=True)
class Outcome:
    """A measured candidate/baseline comparison at one workload point."""

    ratio: float            # candidate throughput / baseline throughput: exp(mean of block median log-ratios)
    ci_low: float           # 95 % CI of that ratio
    ci_high: float
    band: float             # A/A noise band, as a fraction (0.02 = +-2 %)
    aa_ratio: float         # the A/A ratio itself (should be ~1)
    rounds: int             # rounds in all (summed over blocks)
    base_median_s: float    # median seconds per launch, baseline (A runs)
    cand_median_s: float
    base_spread: float      # (max - min) / median of the baseline's A and A' times: raw spread
    verdict: str
    why: str
    blocks: int = 1                     # independent blocks the rounds were split over
    within_sd: float = 0.0              # candidate log-ratio: round-to-round SD inside a block (~fraction)
    between_sd: float | None = None     # candidate log-ratio: SD of the block shift (None: one block)
    aa_within_sd: float = 0.0           # the same two components of the A/A log-ratio
    aa_between_sd: float | None = None
    method: str = "within-run bootstrap"

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


def _as_blocks(x) -> list[np.ndarray]:
    """A flat sequence of per-round seconds is one block; a sequence of sequences is blocks."""
    if len(x) and np.ndim(x[0]) == 1:
        return [np.asarray(b, dtype=np.float64) for b in x]
    return [np.asarray(x, dtype=np.float64)]


def compare(base_a, base_a2, cand, seed: int = 0) -> Outcome:
    """Outcome from per-round seconds of baseline A, baseline A' and the candidate.

    Each argument is either a list of blocks (each a list of per-round seconds;
    the random-effects interval, >= 2 blocks of >= 3 rounds) or one flat list of
    per-round seconds (one block: the within-run bootstrap, >= 5 rounds).
    """
    a_bl, a2_bl, c_bl = _as_blocks(base_a), _as_blocks(base_a2), _as_blocks(cand)
    if not (len(a_bl) == len(a2_bl) == len(c_bl)) or any(
            not (len(x) == len(y) == len(z)) for x, y, z in zip(a_bl, a2_bl, c_bl)):
        raise ValueError("base_a, base_a2 and cand need one sample per round each, in the same blocks")
    n_blocks, rounds = len(a_bl), sum(len(b) for b in a_bl)
    if n_blocks == 1 and rounds < MIN_ROUNDS:
        raise ValueError(f"need at least {MIN_ROUNDS} rounds, got {rounds}")
    if n_blocks > 1 and min(len(b) for b in a_bl) < MIN_ROUNDS_PER_BLOCK:
        raise ValueError(f"need at least {MIN_ROUNDS_PER_BLOCK} rounds per block, got {[len(b) for b in a_bl]}")
    a, a2, c = np.concatenate(a_bl), np.concatenate(a2_bl), np.concatenate(c_bl)
    if (a <= 0).any() or (a2 <= 0).any() or (c <= 0).any():
        raise ValueError("times must be positive")
    d = [np.log(x / z) for x, z in zip(a_bl, c_bl)]
    aa = [np.log(x / y) for x, y in zip(a_bl, a2_bl)]
    if n_blocks == 1:
        ci, aa_ci = _within_run_interval(d[0], seed), _within_run_interval(aa[0], seed + 1)
        method = "within-run bootstrap"
    else:
        ci, aa_ci = block_interval(d), block_interval(aa)
        method = "random-effects t on block medians"
    band = float(np.expm1(aa_ci.half_width))
    ratio, r_lo, r_hi = math.exp(ci.center), math.exp(ci.low), math.exp(ci.high)
    verdict = decide(r_lo, r_hi, band)
    both = np.concatenate([a, a2])
    spread = float((both.max() - both.min()) / np.median(both))
    sizes = sorted({len(b) for b in a_bl})
    per = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    how = f"{n_blocks} blocks x {per} rounds" if n_blocks > 1 else f"{rounds} rounds, one block"
    rel = f"{100 * (ratio - 1):+.1f}% (95% CI {100 * (r_lo - 1):+.1f}%..{100 * (r_hi - 1):+.1f}%, {how})"
    if verdict == CONFIRMED:
        why = f"throughput {rel}: the whole interval is above the +{100 * band:.1f}% A/A band"
    elif verdict == REFUTED:
        why = f"throughput {rel}: the whole interval is below the -{100 * band:.1f}% A/A band"
    else:
        why = f"throughput {rel} overlaps the +-{100 * band:.1f}% A/A band: not distinguishable from noise"
    if n_blocks == 1:
        why += " (one block: run-to-run variation is not covered)"
    return Outcome(ratio=ratio, ci_low=r_lo, ci_high=r_hi, band=band, aa_ratio=math.exp(aa_ci.center),
                   rounds=rounds, base_median_s=float(np.median(a)), cand_median_s=float(np.median(c)),
                   base_spread=spread, verdict=verdict, why=why, blocks=n_blocks, within_sd=ci.within_sd,
                   between_sd=ci.between_sd, aa_within_sd=aa_ci.within_sd, aa_between_sd=aa_ci.between_sd,
                   method=method)


def split_rounds(total: int, blocks: int) -> list[int]:
    """Rounds per block: `total` split as evenly as possible (16 over 5 -> 4, 3, 3, 3, 3)."""
    if blocks < 1 or total < blocks:
        raise ValueError(f"cannot split {total} rounds over {blocks} blocks")
    return [total // blocks + (1 if b < total % blocks else 0) for b in range(blocks)]


def block_schedule(names: Sequence[str], rounds_per_block: Sequence[int], seed: int = 0) -> list[list[list[str]]]:
    """The timing order: schedule[b][r] is round r of block b, every name once in a random
    order (a fresh permutation per round), so no config always runs first or after A."""
    rng = np.random.default_rng(seed)
    return [[[names[i] for i in rng.permutation(len(names))] for _ in range(n)] for n in rounds_per_block]


# ----------------------------------------------------------------- over points
@dataclass(frozen=True)
class Overall:
    """One premise's verdict over its workload points."""

    verdict: str                      # CONFIRMED / REFUTED / INCONCLUSIVE / MIXED
    measured: str                     # the same rule on the measurements alone
    refuted_statically: bool          # the mechanism failed (or did not fit) before any timing
    confirmed_at: tuple[str, ...] = ()
    refuted_at: tuple[str, ...] = ()
    inconclusive_at: tuple[str, ...] = ()
    text: str = ""                    # what overall[name] shows
    measured_text: str = ""           # the measured outcome in words (== text unless refuted statically)

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "measured": self.measured, "refuted_statically": self.refuted_statically,
                "confirmed_at": list(self.confirmed_at), "refuted_at": list(self.refuted_at),
                "inconclusive_at": list(self.inconclusive_at), "text": self.text,
                "measured_text": self.measured_text}


def _labelled(point_verdicts) -> list[tuple[str, str]]:
    if isinstance(point_verdicts, Mapping):
        return list(point_verdicts.items())
    out = []
    for i, pv in enumerate(point_verdicts):
        out.append(tuple(pv) if isinstance(pv, (tuple, list)) else (f"point {i + 1}", pv))
    return out


def overall_detail(point_verdicts, mechanism_holds: bool = True) -> Overall:
    """The verdict over points: a mapping label -> verdict (or (label, verdict) pairs, or bare
    verdicts, labelled "point 1", ...). Decisive points (CONFIRMED/REFUTED) decide: all agree ->
    that verdict (INCONCLUSIVE points do not break agreement), none -> INCONCLUSIVE, both ->
    MIXED, with the points named. A mechanism that failed statically keeps REFUTED."""
    pv = _labelled(point_verdicts)
    at = {v: tuple(label for label, x in pv if x == v) for v in (CONFIRMED, REFUTED, INCONCLUSIVE)}
    if at[CONFIRMED] and at[REFUTED]:
        measured = MIXED
        parts = [f"{v} at {', '.join(at[v])}" for v in (CONFIRMED, REFUTED, INCONCLUSIVE) if at[v]]
        measured_text = f"{MIXED} — " + "; ".join(parts)
    else:
        measured = CONFIRMED if at[CONFIRMED] else REFUTED if at[REFUTED] else INCONCLUSIVE
        measured_text = measured
    verdict, text = (measured, measured_text) if mechanism_holds else (REFUTED, REFUTED)
    return Overall(verdict, measured, not mechanism_holds, at[CONFIRMED], at[REFUTED], at[INCONCLUSIVE], text,
                   measured_text)


def overall(point_verdicts, mechanism_holds: bool = True) -> str:
    """`overall_detail(...).text`: "CONFIRMED", "REFUTED", "INCONCLUSIVE" or "MIXED — ... at ..."."""
    return overall_detail(point_verdicts, mechanism_holds).text

