"""Premises: *lever -> mechanism -> outcome*. This module states the premise a
config change would test and checks its mechanism statically, from predicted or
compiled numbers. The measured outcome and verdicts live in stats.py. Pure.

Levers and their mechanisms:
* num_warps up (or any change that is not num_stages alone): "raises resident
  warps per SM (occupancy), so throughput rises" -- holds iff warps/SM rise;
* num_stages up alone: "deepens the software pipeline (more loads in flight),
  so throughput rises" -- holds iff shared memory grows, i.e. Triton really
  pipelines a load (a num_stages change that leaves shared memory flat is a
  no-op and the premise is refuted before any timing). Where the compiled TTGIR
  is at hand (occmodel.pipeline), `prefetch` decides instead: shared memory can
  grow while the loads that matter stay as deep (a pipelined page-id vector, a
  second staging copy), and flat shared memory says nothing about why.
* num_warps down alone: "cuts the dot operands' shared-memory reads per loop
  iteration, so throughput rises" -- every warp loads the operand rows/columns
  of its slice of the accumulator, so a warp layout that splits a small tile
  across many warps re-reads the same operand (occmodel.pipeline.LoopDot);
  holds iff the compiled main loop's operand reads fall (`operands`). For
  num_warps up the same figure is a side note: more warps can raise occupancy
  and multiply those reads at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

MECHANISM_HOLDS = "holds"
MECHANISM_FAILS = "fails"
MECHANISM_UNCHECKED = "unchecked"      # the evidence needs a compile that was not made
DOES_NOT_FIT = "does not fit"


@dataclass(frozen=True)
class StaticPremise:
    lever: str                 # "num_warps 4->8"
    claim: str                 # the premise in words
    mechanism: str             # MECHANISM_HOLDS | MECHANISM_FAILS | DOES_NOT_FIT
    why: str                   # the numbers that decided it
    note: str = ""             # a side effect worth knowing (e.g. occupancy falls)


@dataclass(frozen=True)
class Prefetch:
    """Pipelining evidence for a num_stages premise (from occmodel.pipeline.prefetch_change)."""

    deeper: bool               # a load that matters is kept further ahead at the candidate
    why: str                   # per-load ring depths, baseline -> candidate


@dataclass(frozen=True)
class OperandReads:
    """Shared-memory reads of the main loop's dot operands per iteration, compiled
    (occmodel.pipeline.LoopInfo.shared_read_bytes), and the bytes the loop loads per
    iteration, baseline and candidate."""

    base: int
    cand: int
    loaded: int

    def describe(self) -> str:
        per = f" ({self.base / self.loaded:.1f} -> {self.cand / self.loaded:.1f} B per loaded byte)" if self.loaded else ""
        return f"compiled dot-operand reads from shared memory {self.base:,} -> {self.cand:,} B per iteration{per}"


def lever(base: Mapping[str, Any], cand: Mapping[str, Any]) -> str:
    changed = [f"{k} {base[k]}->{cand[k]}" for k in cand if base.get(k) != cand[k]]
    return ", ".join(changed) if changed else "no change"


def static_premise(base: Mapping[str, Any], cand: Mapping[str, Any], *, base_warps: int, cand_warps: int,
                   base_shared: int, cand_shared: int, cand_fits: bool,
                   source: str = "predicted", prefetch: Prefetch | None = None,
                   operands: OperandReads | None = None) -> StaticPremise:
    """The premise of a config change, its mechanism checked from resident warps per
    SM and shared memory (`source` says whether those were predicted or compiled),
    for num_stages alone from the pipelining evidence `prefetch` when given, and for
    num_warps down alone from the compiled operand reads `operands`."""
    what = lever(base, cand)
    changed = {k for k in cand if base.get(k) != cand[k]}
    deeper = changed == {"num_stages"} and cand["num_stages"] > base["num_stages"]
    fewer_warps = changed == {"num_warps"} and cand["num_warps"] < base["num_warps"]
    if fewer_warps:
        claim = (f"{what} cuts the dot operands' shared-memory reads per loop iteration (fewer warps "
                 "re-read the same tiles), so throughput rises")
        if not cand_fits:
            return StaticPremise(what, claim, DOES_NOT_FIT,
                                 f"the candidate does not fit on the SM ({source}); nothing to measure")
        occ = f"resident warps/SM {base_warps} -> {cand_warps} ({source})"
        if operands is None:
            return StaticPremise(what, claim, MECHANISM_UNCHECKED,
                                 "needs the compiled TTGIR's dot layouts (compile for the spec's arch)", occ)
        return _decided(what, claim, operands.cand < operands.base, operands.describe(),
                        "the mechanism happens", "the reads do not fall", occ)
    if deeper:
        claim = f"{what} deepens the software pipeline (more loads in flight), so throughput rises"
    else:
        claim = f"{what} raises resident warps per SM, so throughput rises"
    occ_note = ""
    if cand_warps < base_warps:
        occ_note = f"resident warps/SM fall {base_warps} -> {cand_warps} ({source})"
    if not cand_fits:
        return StaticPremise(what, claim, DOES_NOT_FIT,
                             f"the candidate does not fit on the SM ({source}); nothing to measure")
    if deeper and prefetch is not None:
        shared = f"{source} shared memory {base_shared:,} -> {cand_shared:,} B"
        return _decided(what, claim, prefetch.deeper, f"{prefetch.why}; {shared}", "the loads are prefetched deeper",
                        "num_stages does not deepen the prefetch", occ_note)
    if deeper:
        if cand_shared > base_shared:
            return StaticPremise(what, claim, MECHANISM_HOLDS,
                                 f"{source} shared memory {base_shared:,} -> {cand_shared:,} B: Triton adds "
                                 "pipeline buffers; only a measurement can say whether throughput follows",
                                 occ_note)
        return StaticPremise(what, claim, MECHANISM_FAILS,
                             f"{source} shared memory stays {base_shared:,} -> {cand_shared:,} B: no load is "
                             "pipelined deeper, so num_stages is a no-op and the premise is refuted before "
                             "any timing", occ_note)
    side = operands.describe() if operands is not None and operands.cand > operands.base else ""
    if cand_warps > base_warps:
        return StaticPremise(what, claim, MECHANISM_HOLDS,
                             f"{source} resident warps/SM {base_warps} -> {cand_warps}: the mechanism happens; "
                             "only a measurement can say whether throughput follows", side)
    verb = "stay" if cand_warps == base_warps else "fall"
    return StaticPremise(what, claim, MECHANISM_FAILS,
                         f"{source} resident warps/SM {verb} {base_warps} -> {cand_warps}: the mechanism does "
                         "not happen, so the premise is refuted before any timing", side)


def _decided(what: str, claim: str, happens: bool, evidence: str, yes: str, no: str, note: str) -> StaticPremise:
    """The premise with its mechanism decided by `happens`, the evidence and what it means."""
    if happens:
        return StaticPremise(what, claim, MECHANISM_HOLDS,
                             f"{evidence}: {yes}; only a measurement can say whether throughput follows", note)
    return StaticPremise(what, claim, MECHANISM_FAILS, f"{evidence}: {no}, so the premise is refuted before any timing",
                         note)
