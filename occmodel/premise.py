"""Premises: *lever -> mechanism -> outcome*, e.g. "num_warps 4->8 raises resident
warps per SM, so throughput rises". This module states a premise from a
baseline/candidate pair and checks its mechanism statically (did occupancy
rise?). The measured outcome and the final verdict live in verdict.py. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

MECHANISM_HOLDS = "holds"
MECHANISM_FAILS = "fails"
DOES_NOT_FIT = "does not fit"


@dataclass(frozen=True)
class StaticPremise:
    lever: str                 # "num_warps 4->8, num_stages 2->3"
    claim: str                 # the premise in words
    baseline_warps_per_sm: int
    candidate_warps_per_sm: int
    mechanism: str             # MECHANISM_HOLDS | MECHANISM_FAILS | DOES_NOT_FIT
    why: str                   # the numbers that decided it


def lever(base: Mapping[str, Any], cand: Mapping[str, Any]) -> str:
    changed = [f"{k} {base[k]}->{cand[k]}" for k in cand if base.get(k) != cand[k]]
    return ", ".join(changed) if changed else "no change"


def static_premise(base: Mapping[str, Any], cand: Mapping[str, Any], base_warps: int, cand_warps: int,
                   cand_fits: bool, source: str = "predicted") -> StaticPremise:
    """The occupancy premise for a config change, with its mechanism checked from
    resident warps per SM (`source` says whether they were predicted or compiled)."""
    what = lever(base, cand)
    claim = f"{what} raises resident warps per SM, so throughput rises"
    if not cand_fits:
        return StaticPremise(what, claim, base_warps, cand_warps, DOES_NOT_FIT,
                             f"the candidate does not fit on the SM ({source}); nothing to measure")
    if cand_warps > base_warps:
        return StaticPremise(what, claim, base_warps, cand_warps, MECHANISM_HOLDS,
                             f"{source} resident warps/SM {base_warps} -> {cand_warps}: the mechanism happens; "
                             "only a measurement can say whether throughput follows")
    verb = "stay" if cand_warps == base_warps else "fall"
    return StaticPremise(what, claim, base_warps, cand_warps, MECHANISM_FAILS,
                         f"{source} resident warps/SM {verb} {base_warps} -> {cand_warps}: the mechanism does "
                         "not happen, so the premise is refuted before any timing")
