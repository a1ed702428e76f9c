"""scripts/seed_sm120_compare.py: its pure comparison logic (direction agreement, the seed's
+-5-7 % noise band) on hand-worked numbers. The model run itself is the script's (minutes of
compiles for sm_120 the first time; reports/seed_sm120_compare.md is its output)."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("seed_sm120_compare", ROOT / "scripts" / "seed_sm120_compare.py")
S = importlib.util.module_from_spec(_spec)
sys.modules["seed_sm120_compare"] = S          # dataclasses look their module up by name
_spec.loader.exec_module(S)


def test_change_is_throughput_base_over_lever():
    # the seed's C=64 num_stages=3 cell: 731.5 vs 811.7 tok/s = -9.9 %; in time, 1/731.5 vs 1/811.7
    assert S.change_pct(1 / 811.7, 1 / 731.5) == pytest.approx(-9.88, abs=0.01)
    assert S.change_pct(100.0, 80.0) == pytest.approx(25.0)          # 20 % less time = 25 % more throughput


def test_direction_and_noise_classes():
    assert [S.direction(p) for p in (-0.8, -0.4, 0.0, 0.49, 0.5)] == ["slower", "same", "same", "same", "faster"]
    assert [S.noise_class(p) for p in (-2.6, 5.0, -5.5, 7.0, -7.01, -9.9)] == \
        ["within noise", "within noise", "edge of noise", "edge of noise", "beyond noise", "beyond noise"]
    assert S.seed_noise_class(S.SEED["num_warps=8"][1]) == "beyond noise"       # -14..-18
    assert S.seed_noise_class(S.SEED["num_stages=3"][1]) == "edge of noise"     # -5..-7
    assert S.seed_noise_class(S.SEED["num_stages=3"][48]) == "within noise"     # flat
    assert S.seed_noise_class(S.SEED["num_stages=3"][96]) == "within noise"     # -2.6
    assert S.seed_noise_class(S.SEED["num_warps=8"][64]) is None                 # 'worse', no number


def test_compare_hand_worked_cells():
    w8_c1 = S.SEED["num_warps=8"][1]                                   # measured -14..-18 %
    hit = S.compare(-16.0, w8_c1)
    assert hit["direction_agrees"] and hit["noise_agrees"] and hit["in_range"]
    weak = S.compare(-3.0, w8_c1)                                      # right sign, but inside the band
    assert weak["direction_agrees"] and weak["noise_agrees"] is False and weak["in_range"] is False
    none = S.compare(0.0, w8_c1)                                       # the model sees nothing
    assert none["estimated_direction"] == "same" and not none["direction_agrees"]
    assert not S.compare(+4.0, w8_c1)["direction_agrees"]
    flat = S.SEED["num_stages=3"][48]
    assert S.compare(-4.9, flat)["direction_agrees"] and S.compare(+3.0, flat)["direction_agrees"]
    assert not S.compare(-5.1, flat)["direction_agrees"]               # beyond +-5 %: not flat
    c64 = S.SEED["num_stages=3"][64]                                   # -9.9 %, beyond the band
    assert S.compare(-0.2, c64)["noise_agrees"] is False and not S.compare(-0.2, c64)["direction_agrees"]
    low = S.SEED["num_stages=3"][8]                                    # -5..-7: the edge agrees with either side
    assert S.compare(-0.8, low)["noise_agrees"] and S.compare(-12.0, low)["noise_agrees"]
    no_number = S.compare(-1.0, S.SEED["num_warps=8"][96])
    assert no_number["direction_agrees"] and no_number["noise_agrees"] is None and no_number["in_range"] is None
