"""validate.run's timing in independent blocks, on the CPU: occmodel.gpu's device calls are
replaced by fakes whose timings have a known answer (only the GPU calls are faked; the
schedule, the blocks, the statistics and the verdicts are the real ones)."""

import json

import numpy as np
import pytest

from occmodel import load_spec
from occmodel.card import load_card

# candidate (num_stages 2->3) throughput per point, as the H200 measured the decode premise:
# -4.3 % at C=1, +15.7 % at C=8, +38.5 % at C=64
GAIN = {1: 0.957, 8: 1.157, 64: 1.385}


@pytest.fixture
def faked(monkeypatch):
    pytest.importorskip("torch")
    from occmodel import gpu
    from occmodel.gpu import Correctness
    rng = np.random.default_rng(0)
    seen = {"input_seeds": [], "benches": 0, "blocks": 0}

    class FakeBench:
        def __init__(self, fn, sets, flush_bytes):
            self.fn, self.sets = fn, sets
            self.shift = rng.lognormal(0, 0.003)          # this instance's own shift (allocation, graph)
            seen["benches"] += 1

        def sample(self):
            return self.fn(self.sets[0]) * self.shift * rng.lognormal(0, 0.003)

    def input_sets(card, cfg, point, l2, seed):
        seen["input_seeds"].append((point["C"], seed))
        return [{"C": point["C"]}]

    def new_block(_rng):
        seen["blocks"] += 1

    real_time_blocks = gpu.time_blocks
    monkeypatch.setattr(gpu, "require_gpu", lambda: None)
    monkeypatch.setattr(gpu, "wall_clock", lambda: 0.0)
    monkeypatch.setattr(gpu, "device_info", lambda: {"gpu": "fake", "l2_bytes": 2**20})
    monkeypatch.setattr(gpu, "copy_bandwidth", lambda: 4e12)
    monkeypatch.setattr(gpu, "check_correct", lambda *a, **k: Correctness(True, 0.0, 1e-2, 0, 1))
    monkeypatch.setattr(gpu, "input_sets", input_sets)
    monkeypatch.setattr(gpu, "Bench", FakeBench)
    monkeypatch.setattr(gpu, "time_blocks", lambda *a, **k: real_time_blocks(*a, new_block=new_block, **k))
    card = load_card("decode_attention")
    monkeypatch.setattr(card, "launch", lambda s, cfg: 1e-4 / (GAIN[s["C"]] if cfg["num_stages"] == 3 else 1.0))
    monkeypatch.setattr(card, "has_torch_baseline", lambda: False)
    return card, seen


def test_run_times_blocks_and_says_mixed_with_the_points(faked):
    from occmodel import validate as V
    from occmodel.commands.validate import result_report
    from occmodel.report import render
    card, seen = faked
    base = card.resolve({"BLOCK_T": 16, "num_warps": 4, "num_stages": 2})
    cand = card.resolve({"num_stages": 3}, base=base)
    points = [card.resolve_point({"C": c, "ctx": 8192}) for c in (1, 8, 64)]
    p = V.plan(card, load_spec("sm_90"), base, [cand], points, rounds=30, compiled=False, blocks=5)
    res = V.run(p, seed=0, progress=lambda m: None)
    name = V.name_of(base, cand)
    assert res.overall[name] == "MIXED — CONFIRMED at C=8, C=64; REFUTED at C=1"
    assert res.overall_detail[name]["refuted_at"] == ["C=1"]
    # 3 points x 5 blocks; each block its own input seeds (100, 1100, ..., 4100: one problem, shared
    # by both configs) and three fresh instances (A, A', the candidate)
    assert seen["blocks"] == 15 and seen["benches"] == 45
    assert [s for c, s in seen["input_seeds"] if c == 8] == [100, 1100, 2100, 3100, 4100]
    for pr in res.points:
        o = pr.outcomes[name]
        assert o.blocks == 5 and o.rounds == 30 and o.between_sd is not None
        assert o.ratio == pytest.approx(GAIN[pr.point["C"]], rel=0.01)
    doc = json.loads(render(result_report(res, None), "json"))
    assert doc["overall"][name].startswith("MIXED") and doc["blocks"] == 5 and doc["rounds"] == 30
    assert doc["overall_detail"][name]["confirmed_at"] == ["C=8", "C=64"]
    row = next(s for s in doc["sections"] if s["title"].startswith(name))["rows"][0]
    assert " / " in row["noise"] and "5 blocks x 6 rounds" in row["why"]
    # a premise refuted statically keeps REFUTED, with the measured outcome beside it
    from occmodel.stats import overall_detail
    d = overall_detail({"C=1": "REFUTED", "C=8": "CONFIRMED"}, mechanism_holds=False)
    res.overall[name], res.overall_detail[name] = d.text, d.as_dict()
    doc = json.loads(render(result_report(res, None), "json"))
    assert doc["overall"][name] == "REFUTED"
    title = next(s["title"] for s in doc["sections"] if s["title"].startswith(name))
    assert title.endswith("overall REFUTED (statically: the mechanism did not happen); measured: "
                          "MIXED — CONFIRMED at C=8; REFUTED at C=1")
