"""Premises: one per lever, a rule for every kind of lever, what else changed, and the verdict
said with its cause. Facts are hand-built stand-ins for occmodel.evidence.Evidence."""

from types import SimpleNamespace

from occmodel.premise import (DOES_NOT_FIT, MECHANISM_FAILS, MECHANISM_HOLDS, MECHANISM_UNCHECKED, judge,
                              lever_configs, verdict_line)


def facts(cfg, *, shared=0, regs=64, spills=0, warps=None, blocks=1, fits=True, source="compiled", pipeline=None):
    """The fields a rule reads, for one config (warps/SM default: blocks x num_warps)."""
    warps = blocks * cfg.get("num_warps", 4) if warps is None else warps
    return SimpleNamespace(config=dict(cfg), status="ok", message="", occupancy=object(), fits=fits,
                           reason="" if fits else "shared memory exceeds the limit", source=source, shared=shared,
                           regs=regs, spills=spills, warps_per_sm=warps, blocks_per_sm=blocks, pipeline=pipeline)


BASE = {"BLOCK_M": 128, "num_warps": 4, "num_stages": 2}


def test_a_two_lever_candidate_is_two_premises_and_their_combination():
    cand = {**BASE, "num_warps": 8, "num_stages": 3}
    names = [n for n, _ in lever_configs(BASE, cand)]
    assert names == ["num_warps 4->8", "num_stages 2->3", "num_warps 4->8 + num_stages 2->3"]
    # each lever alone: the baseline with that parameter changed, nothing else
    assert lever_configs(BASE, cand)[0][1] == {**BASE, "num_warps": 8}
    assert lever_configs(BASE, {**BASE, "num_warps": 8}) == [("num_warps 4->8", {**BASE, "num_warps": 8})]


def test_the_combination_says_which_lever_still_works():
    base = facts(BASE, shared=37376, warps=8, blocks=2)
    both = facts({**BASE, "num_warps": 8, "num_stages": 3}, shared=55808, warps=8, blocks=1)
    prem = judge(base, both)
    assert prem.levers == ("num_warps", "num_stages") and prem.mechanism == MECHANISM_HOLDS
    assert "num_warps: fails" in prem.evidence and "num_stages: holds" in prem.evidence


def test_a_gain_from_spills_vanishing_is_not_credited_to_occupancy():
    # the H200 GEMM 128x256x64: num_warps 4 -> 8 ran 6.3x faster; blocks/SM stayed 1 and spills went 198 -> 0
    base = facts(BASE, regs=255, spills=198, blocks=1)
    cand = facts({**BASE, "num_warps": 8}, regs=216, spills=0, blocks=1)
    prem = judge(base, cand)
    assert prem.mechanism == MECHANISM_HOLDS                     # warps/SM 4 -> 8 does happen
    assert "spills 198 -> 0" in prem.major and "registers 255 -> 216" in prem.also_changed
    line = verdict_line(prem, "CONFIRMED", 5.3)
    assert line.startswith("CONFIRMED +530.0%") and "spills 198 -> 0" in line and "cannot be credited" in line


def test_refuted_statically_but_the_measurement_moves_names_the_likely_cause():
    prem = SimpleNamespace(mechanism=MECHANISM_FAILS, major=("load page plain -> cp.async x1",), also_changed=())
    line = verdict_line(prem, "REFUTED", -0.061)
    assert line.startswith("REFUTED (the mechanism does not happen)") and "-6.1%" in line
    assert "likely cause: load page plain -> cp.async x1" in line


def test_a_rule_for_every_kind_of_lever():
    b = facts(BASE, shared=65536, blocks=1)
    # num_stages down frees shared memory: holds iff a block is added
    down = judge(facts({**BASE, "num_stages": 3}, shared=98304, blocks=1), facts(BASE, shared=65536, blocks=2))
    assert down.mechanism == MECHANISM_HOLDS and "blocks/SM 1 -> 2" in down.evidence
    # a larger tile: more bytes per iteration (a model: shared memory grows)
    up = judge(b, facts({**BASE, "BLOCK_M": 256}, shared=98304, source="card model"))
    assert up.mechanism == MECHANISM_HOLDS and "moves more bytes per loop iteration" in up.claim
    # a smaller tile that adds no block: the mechanism does not happen
    small = judge(b, facts({**BASE, "BLOCK_M": 64}, shared=32768, blocks=1))
    assert small.mechanism == MECHANISM_FAILS and "no block is added" in small.evidence
    # a tile that no longer fits
    huge = judge(b, facts({**BASE, "BLOCK_M": 512}, shared=300000, blocks=0, fits=False))
    assert huge.mechanism == DOES_NOT_FIT
    # a parameter without a rule says so plainly
    other = judge(facts({**BASE, "GROUP_M": 8}), facts({**BASE, "GROUP_M": 16}))
    assert other.mechanism == MECHANISM_UNCHECKED and "no rule for GROUP_M" in other.evidence


def test_num_stages_on_a_model_decided_by_shared_memory():
    flat = judge(facts(BASE, shared=37376, warps=16), facts({**BASE, "num_stages": 3}, shared=37376, warps=16))
    assert flat.mechanism == MECHANISM_FAILS and "no-op" in flat.evidence
    grows = judge(facts(BASE, shared=37376, warps=16, blocks=2),
                  facts({**BASE, "num_stages": 3}, shared=55808, warps=8, blocks=1))
    assert grows.mechanism == MECHANISM_HOLDS and "fall 16 -> 8" in grows.note
    assert "blocks/SM 2 -> 1" in grows.also_changed
