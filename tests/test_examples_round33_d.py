"""examples/stream_compact.py (stream compaction by predicate with atomic tickets: records [n, W] -> the kept
rows out[:count], their indices idx[:count] and count, kept where a score column passes a threshold or x, y, z
lie inside a range box; one atomic_add a CTA for its output range, the kept rows of a chunk in input order,
the chunks in ticket order) against its torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90 and sm_120
from its own ``example_args``.

As in test_examples_round32_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round33_d.py stream_compact``) that prints one JSON line; the subprocess installs
the harness's interpreter fixes (bf16 rounding; the loop bounds).

Shapes are small, odd and ragged: n 1-3001 records (n 1; n below one step; a last chunk and a last step past
n), W 1 / 3 / 4 / 5 / 6 / 8 / 14 / 16 (EVEN_W both ways; W 1 a scalar stream), fp32 / fp16 / bf16; both
predicates; keep ratios 1 % - 60 %, one record kept of 600, everything kept; a
records view that is a column slice of a NaN-padded buffer, one that is a channel-first [W, n] buffer
transposed (YOLO's raw head layout: column stride n), and a count buffer holding garbage before the launch
(launch must zero it); every sweep value of every tunable.

Per case: launch's output (eager: the kept rows put back in input order) against the module's reference (the
harness's check) and bit for bit; the order the launch wrote legal (exactly the kept records, each once; each
chunk's records one run in input order) and the kept set computed independently here (numpy float32
compares); the rows equal to the kept records' rows; the count; the inputs unchanged (their whole buffers); the flags the launch used; the grid;
torch_baseline against masked_select's order.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "stream_compact"
ROLE = "held-out-33"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["stream_compact"] once the lead adds it)
SWEEP_AXES = {"TILE": [512, 1024, 2048, 4096], "STEPS": [1, 2, 4, 8], "num_warps": [2, 4, 8], "num_stages": [1]}
FLAG_KEYS = ("MODE", "SCORE_COL", "W", "WP", "EVEN_W", "BLOCK", "STEPS", "n", "stride_r", "stride_c")
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _cfg(t, s=1, w=4, st=1):
    return {"TILE": t, "STEPS": s, "num_warps": w, "num_stages": st}


def _pt(n, W, dtype="fp32", mode="score", keep=0.3, score_col=None, pad=0):
    p = {"n": n, "W": W, "dtype": dtype, "mode": mode, "keep": keep, "pad": pad}
    if score_col is not None:
        p["score_col"] = score_col
    return p


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


# case -> (point, cfg); comments: (MODE, EVEN_W, STEPS > 1), BLOCK = TILE / WP, grid
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (0, 0, no): BASELINE; W 6 (a YOLO row) in 8 columns, score in column 4, fp32: BLOCK 256, 8 programs
        "baseline_fp32": (_pt(1999, 6, "fp32", "score", 0.3, 4), _cfg(2048, 1, 4)),
        # (1, 1, yes): a LiDAR point cloud, x y z intensity fp32, 60 % in the box; BLOCK 128 x 4 steps, 2 warps
        "box_lidar_fp32": (_pt(3001, 4, "fp32", "box", 0.6), _cfg(512, 4, 2)),
        # (1, 0, yes): W 14 Gaussians in 16 columns, bf16, 30 % in the box: BLOCK 64 x 8 steps on 8 warps
        "box_splat_bf16": (_pt(1500, 14, "bf16", "box", 0.3), _cfg(1024, 8, 8)),
        # (0, 1, yes): W 1 (a scalar stream, masked_select's case), fp16, 1 % kept, BLOCK 4096 x 2 steps: one
        # program, its second step half past n
        "scalars_sparse_fp16": (_pt(2500, 1, "fp16", "score", 0.01, 0), _cfg(4096, 2, 2)),
        # (0, 0, no): the NaN-padded column slice (module doc), W 5 fp16, score in column 0; num_stages 2
        "strided_nan_fp16": (_pt(777, 5, "fp16", "score", 0.5, 0), _cfg(1024, 1, 8, 2)),
        # (0, 0, yes): the channel-first [W, n] buffer transposed (column stride n), W 6 bf16, score column 4
        "channel_first_bf16": (_pt(1200, 6, "bf16", "score", 0.05, 4), _cfg(512, 2, 4)),
        # (1, 1, no): one record kept (the threshold set to the second-largest score: every other program
        # counts 0, takes a ticket of 0 and writes nothing); W 16 fp32, BLOCK 256
        "one_kept_fp32": (_pt(600, 16, "fp32", "score", 0.01), _cfg(4096, 1, 8)),
        # (1, 0, no): every record kept (the box widened past the draw), W 3 fp16, BLOCK 128, 8 programs
        "all_kept_fp16": (_pt(1000, 3, "fp16", "box", 1.0), _cfg(512, 1, 4)),
        # (0, 1, no): n 1 (one record, kept: score column uniform in [0,1) > 0 at keep 1), W 8 fp32
        "one_record_fp32": (_pt(1, 8, "fp32", "score", 1.0, 2), _cfg(2048, 1, 2)),
        # (1, 1, no): n 37 below one step of BLOCK 128 (W 4 bf16), 50 % in the box, one program
        "short_box_bf16": (_pt(37, 4, "bf16", "box", 0.5), _cfg(512, 1, 8)),
    },
}
STRIDED, CHANNEL_FIRST, ONE_KEPT, ALL, ONE = ("strided_nan_fp16", "channel_first_bf16", "one_kept_fp32",
                                          "all_kept_fp16", "one_record_fp32")
PAD_V, GARBAGE = 3, 12345

# configs compiled on sm_90 at each point: BASELINE, the largest tile on 2 warps (the most registers), a
# two-pass chunk of 8 small tiles on 8 warps
COMPILE_CFGS = {0: [_cfg(2048, 1, 4), _cfg(4096, 8, 2), _cfg(512, 8, 8)],
                1: [_cfg(4096, 1, 2), _cfg(1024, 4, 4)],
                2: [_cfg(4096, 2, 2), _cfg(512, 1, 8)]}
SM120_CFGS = [_cfg(2048, 1, 4), _cfg(4096, 8, 2), _cfg(512, 8, 8)]


def _plan(p, c):
    """(WP, BLOCK, EVEN_W) of a case."""
    wp = _pow2(p["W"])
    return wp, c["TILE"] // wp, int(wp == p["W"])


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The NaN-padded / channel-first views, a garbage count, then copies of the inputs' buffers."""
    import torch

    rec = inputs["records"]
    n, W = rec.shape
    if name == STRIDED:
        buf = torch.full((n, W + PAD_V), float("nan"), dtype=rec.dtype)
        buf[:, 1:1 + W] = rec
        inputs["records"] = buf[:, 1:1 + W]
    if name == CHANNEL_FIRST:
        inputs["records"] = rec.t().contiguous().t()
    if name == ONE_KEPT:
        inputs["threshold"] = float(rec[:, W - 1].float().sort().values[-2])
    if name == ALL:
        inputs["box"] = ((-100.0,) * 3, (100.0,) * 3)
    inputs["count"].fill_(GARBAGE)
    inputs["records_root0"] = _root(inputs["records"]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    n, W = p["n"], p["W"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [res["n_kept"], W] and res["dtype"] == p["dtype"], res
    assert res["count"] == res["n_kept"] == res["n_kept_indep"], res
    assert res["legal"] is True and res["ref_finite"] is True, res
    assert res["n_diff"] == 0 and res["n_rows_diff"] == 0, res                 # a copy: bit for bit
    assert res["inputs_unchanged"] is True and res["baseline_ok"] is True, res
    wp, bl, even = _plan(p, cfg)
    fl = res["flags"]
    assert (fl["WP"], fl["BLOCK"], fl["EVEN_W"], fl["STEPS"], fl["W"], fl["n"]) == (wp, bl, even, cfg["STEPS"], W, n)
    assert fl["MODE"] == (0 if p["mode"] == "score" else 1), fl
    if p["mode"] == "score":
        assert fl["SCORE_COL"] == p.get("score_col", W - 1), fl
    assert res["grid"] == [-(-n // (bl * cfg["STEPS"]))], res
    if name == STRIDED:
        assert (fl["stride_r"], fl["stride_c"]) == (W + PAD_V, 1), fl
    elif name == CHANNEL_FIRST:
        assert (fl["stride_r"], fl["stride_c"]) == (1, n), fl
    else:
        assert (fl["stride_r"], fl["stride_c"]) == (W, 1), fl
    if name == ONE_KEPT:
        assert res["n_kept"] == 1 and res["grid"] == [3], res
    elif name in (ALL, ONE):
        assert res["n_kept"] == n, res
    else:
        assert 0 < res["n_kept"] < n, res
        assert abs(res["n_kept"] / n - p["keep"]) < 0.1, res                     # the draw's keep ratio
    assert res["runs"] == res["chunks_with_kept"], res


def test_cases_cover_every_code_path():
    """Both predicates; EVEN_W both ways; one pass (STEPS 1) and two (count, ticket, write), each
    with both predicates and both EVEN_W; programs that keep nothing (one record kept of 600), everything
    kept; a last chunk past n, a whole step past n; every dtype; the strided and channel-first views; every
    sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    fl = [r["flags"] for r in res.values()]
    assert {(f["MODE"], f["EVEN_W"], f["STEPS"] > 1) for f in fl} == set(itertools.product((0, 1), (0, 1),
                                                                                             (False, True)))
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["mode"] for p, _ in cases.values()} == set(mod.MODES)
    assert any(r["n_kept"] == 1 < r["flags"]["n"] for r in res.values()) and any(r["n_kept"] == r["flags"]["n"] > 1
                                                                                for r in res.values())
    assert any(p["n"] % (c["TILE"] // _pow2(p["W"]) * c["STEPS"]) for p, c in cases.values())     # a ragged chunk
    assert any(p["n"] <= c["TILE"] // _pow2(p["W"]) * (c["STEPS"] - 1) for p, c in cases.values())  # a step past n
    assert any(p["W"] == 1 for p, _ in cases.values()) and any(p["W"] == 16 for p, _ in cases.values())
    assert sum(r["chunks_with_kept"] for r in res.values()) >= 20
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (every tensor on meta: no address comes from a loaded
    value) with the launch's shapes, dtypes, strides and flags; the grid; the loop length; bytes_moved
    (records once, the expected kept rows and their int64 indices written, the counter) and flops;
    0.2-0.6 GB a point (70-170 us at an H100's ~3 TB/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "stream_compact", "kept_mask", "legal_order", "in_input_order",
               "box_of", "threshold_of", "expected_kept", "chunk"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        n, W = p["n"], p["W"]
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(v.device.type == "meta" for v in a.values() if isinstance(v, torch.Tensor))
            assert a["REC"].shape == (n, W) and a["REC"].dtype == dts[p["dtype"]]
            assert a["OUT"].shape == (n, W) and a["OUT"].dtype == dts[p["dtype"]]
            assert a["IDX"].shape == (n,) and a["IDX"].dtype == torch.int64
            assert a["COUNT"].shape == (1,) and a["COUNT"].dtype == torch.int32
            assert (a["n"], a["stride_r"], a["stride_c"], a["W"]) == (n, W, 1, W)
            wp, bl, even = _plan(p, cfg)
            assert (a["WP"], a["BLOCK"], a["EVEN_W"], a["STEPS"]) == (wp, bl, even, cfg["STEPS"])
            if p["mode"] == "score":
                assert (a["MODE"], a["SCORE_COL"], a["thr"]) == (0, p["score_col"], 1.0 - p["keep"])
            else:
                lo, hi = mod.box_of(p["keep"])
                assert a["MODE"] == 1 and (a["lo0"], a["hi0"], a["lo2"], a["hi2"]) == (lo[0], hi[0], lo[2], hi[2])
            assert mod.grid(cfg, p) == (-(-n // (bl * cfg["STEPS"])),)
            assert mod.loop_iterations(cfg, p) == (1 if cfg["STEPS"] == 1 else 2 * cfg["STEPS"])
        e = ESIZE[p["dtype"]]
        k = round(n * p["keep"])
        assert mod.expected_kept(p) == k
        assert mod.bytes_moved(p) == n * W * e + k * (W * e + 8) + 4
        assert mod.flops(p) == n * (1 if p["mode"] == "score" else 6)
        assert 0.2e9 <= mod.bytes_moved(p) <= 0.6e9, p
        assert 50e-6 <= mod.bytes_moved(p) / 3.0e12 <= 20e-3
        assert 1_000_000 <= n <= 100_000_000
    P = mod.POINTS
    assert sorted(p["keep"] for p in P) == [0.01, 0.3, 0.6] and sorted(p["W"] for p in P) == [4, 6, 14]
    assert {p["mode"] for p in P} == set(mod.MODES) and {p["dtype"] for p in P} == {"fp32", "fp16"}


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the keep ratio of the draw; reference by hand (input order,
    a legal permuted order, an illegal one -> NaN); legal_order; torch_baseline; the plan; grid / loop;
    bytes / flops; nothing launched for n 0."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(20000, 6, "fp16", "score", 0.25, 4, pad=2)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    r = inp["records"]
    assert r.shape == (20000, 6) and r.dtype == torch.float16 and r.stride() == (8, 1)
    assert inp["threshold"] == 0.75 and inp["score_col"] == 4 and inp["mode"] == "score"
    assert inp["count"].dtype == torch.int32 and inp["count"].shape == (1,)
    assert abs(float(mod.kept_mask(inp).float().mean()) - 0.25) < 0.015
    s = r[:, 4].float()
    assert float(s.min()) >= 0.0 and float(s.max()) <= 1.0
    assert 0.9 < float(r[:, 0].float().std()) < 1.1
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["records"], r)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["records"], r)
    b = mod.make_inputs(_pt(30000, 4, "fp32", "box", 0.6), seed=0, device="cpu")
    assert abs(float(mod.kept_mask(b).float().mean()) - 0.6) < 0.015
    lo, hi = mod.box_of(0.6)
    assert b["box"] == (lo, hi) and abs(math.prod(h - l for l, h in zip(lo, hi)) / math.prod(mod.BOX_SPAN) - 0.6) < 1e-9
    assert float(b["records"][:, 0].abs().max()) <= 80.0 and float(b["records"][:, 2].abs().max()) <= 5.0
    # reference by hand: scores [0.9, 0.1, 0.8, 0.7, 0.2, 0.95] > 0.5 -> records 0, 2, 3, 5
    rec = torch.tensor([[0.9, 0.0], [0.1, 1.0], [0.8, 2.0], [0.7, 3.0], [0.2, 4.0], [0.95, 5.0]])
    hand = {"records": rec, "mode": "score", "threshold": 0.5, "score_col": 0}
    assert torch.equal(mod.reference(hand)[:, 1], torch.tensor([0.0, 2.0, 3.0, 5.0]))
    assert torch.equal(mod.torch_baseline(hand)[:, 1], torch.tensor([0.0, 2.0, 3.0, 5.0]))
    kept = torch.tensor([0, 2, 3, 5])
    # chunks of 2 records: {0}, {2, 3}, {5} -- any order of the runs, each run ascending
    assert mod.legal_order(torch.tensor([5, 2, 3, 0]), kept, 2) and mod.legal_order(torch.tensor([2, 3, 0, 5]), kept, 2)
    assert not mod.legal_order(torch.tensor([3, 2, 0, 5]), kept, 2)                    # a run out of order
    assert not mod.legal_order(torch.tensor([2, 0, 3, 5]), kept, 2)                    # a chunk split in two
    assert not mod.legal_order(torch.tensor([0, 2, 3]), kept, 2)                       # one missing
    assert not mod.legal_order(torch.tensor([0, 2, 2, 5]), kept, 2)                    # one twice
    assert mod.legal_order(torch.tensor([5, 3, 2, 0]), kept, 1)                        # one record a chunk
    # an eager launch's view: rows written in a legal order come back in input order; an illegal order -> NaN
    written = rec[torch.tensor([5, 2, 3, 0])]
    assert torch.equal(mod.in_input_order(written, torch.tensor([5, 2, 3, 0]), kept, 2), mod.reference(hand))
    bad = mod.in_input_order(rec[torch.tensor([3, 2, 0, 5])], torch.tensor([3, 2, 0, 5]), kept, 2)
    assert bad.shape == (4, 2) and bool(bad.isnan().all())
    # box by hand: open on both sides
    pts = torch.tensor([[0.0, 0.0, 0.0, 9.0], [1.0, 0.0, 0.0, 9.0], [-0.5, 0.5, -0.5, 9.0], [0.0, 0.0, 2.0, 9.0]])
    hb = {"records": pts, "mode": "box", "box": ((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0))}
    assert mod.kept_mask(hb).tolist() == [True, False, True, False]
    # NaN never kept
    assert mod.kept_mask(dict(hand, records=torch.tensor([[float("nan"), 0.0]]))).tolist() == [False]
    # the plan, grid / loop, bytes / flops
    assert mod._plan(6, _cfg(2048)) == (8, 256) and mod._plan(14, _cfg(512)) == (16, 32)
    assert mod._plan(1, _cfg(512)) == (1, 512) and mod.chunk(4, _cfg(1024, 8)) == 2048
    q = _pt(100_000, 5, "bf16", "box", 0.3)
    assert mod.grid(_cfg(1024, 1), q) == (782,) and mod.grid(_cfg(1024, 4), q) == (196,)
    assert mod.loop_iterations(_cfg(1024, 1), q) == 1 and mod.loop_iterations(_cfg(1024, 4), q) == 8
    assert mod.flops(q) == 600_000 and mod.bytes_moved(q) == 100_000 * 10 + 30_000 * 18 + 4
    # nothing to do: no launch (CPU tensors are fine then)
    o, i, c = mod.stream_compact(torch.empty(0, 4), threshold=0.5)
    assert o.shape == (0, 4) and i.shape == (0,) and int(c[0]) == 0
    cnt = torch.full((1,), 7, dtype=torch.int32)
    mod.stream_compact(torch.empty(0, 4).half(), box=((0, 0, 0), (1, 1, 1)), count=cnt)
    assert int(cnt[0]) == 0


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    r = torch.zeros(10, 6)
    f = mod.stream_compact
    with pytest.raises(ValueError, match="TILE=3"):
        f(r, threshold=0.5, TILE=3)
    with pytest.raises(ValueError, match="TILE=32768"):
        f(r, threshold=0.5, TILE=32768)
    with pytest.raises(ValueError, match="STEPS=0"):
        f(r, threshold=0.5, STEPS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(r, threshold=0.5, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(r, threshold=0.5, num_stages=0)
    with pytest.raises(ValueError, match="exactly one of threshold"):
        f(r)
    with pytest.raises(ValueError, match="exactly one of threshold"):
        f(r, threshold=0.5, box=((0, 0, 0), (1, 1, 1)))
    with pytest.raises(ValueError, match="threshold=nan"):
        f(r, threshold=float("nan"))
    with pytest.raises(ValueError, match="threshold='x'"):
        f(r, threshold="x")
    with pytest.raises(ValueError, match="score_col=6"):
        f(r, threshold=0.5, score_col=6)
    with pytest.raises(ValueError, match="box="):
        f(r, box=((0, 0), (1, 1)))
    with pytest.raises(ValueError, match="box="):
        f(r, box=((0, 0, float("nan")), (1, 1, 1)))
    with pytest.raises(ValueError, match="W=2: box= needs"):
        f(torch.zeros(10, 2), box=((0, 0, 0), (1, 1, 1)))
    with pytest.raises(ValueError, match=r"records must be a 2-d fp32 / fp16 / bf16 tensor \[n, W\]"):
        f(r[0], threshold=0.5)
    with pytest.raises(ValueError, match="records must be a 2-d"):
        f(r.double(), threshold=0.5)
    with pytest.raises(ValueError, match="W=17 fields"):
        f(torch.zeros(3, 17), threshold=0.5)
    with pytest.raises(ValueError, match="out must be a contiguous"):
        f(r, threshold=0.5, out=torch.empty(10, 5))
    with pytest.raises(ValueError, match="idx must be a contiguous int64"):
        f(r, threshold=0.5, idx=torch.empty(10, dtype=torch.int32))
    with pytest.raises(ValueError, match="count must be an int32"):
        f(r, threshold=0.5, count=torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="TILE=8 must be a power of two from 16"):
        f(torch.zeros(10, 16), threshold=0.5, TILE=8)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(3, 4, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="mode 'knn'"):
        mod.bytes_moved(_pt(3, 4, mode="knn"))
    with pytest.raises(ValueError, match="keep=1.5"):
        mod.flops(_pt(3, 4, keep=1.5))
    with pytest.raises(ValueError, match="n=0"):
        mod.grid(mod.BASELINE, _pt(0, 4))
    with pytest.raises(ValueError, match="W=17"):
        mod.grid(mod.BASELINE, _pt(5, 17))
    with pytest.raises(ValueError, match="W=2: mode 'box'"):
        mod.example_args(mod.BASELINE, _pt(5, 2, mode="box"))
    with pytest.raises(ValueError, match="score_col=4"):
        mod.example_args(mod.BASELINE, _pt(5, 4, score_col=4))
    with pytest.raises(ValueError, match="pad=-1"):
        mod.example_args(mod.BASELINE, _pt(5, 4, pad=-1))
    with pytest.raises(ValueError, match="output elements exceed"):
        mod.grid(mod.BASELINE, _pt(2**28, 16))
    with pytest.raises(ValueError, match="STEPS=1.5"):
        mod.loop_iterations(dict(mod.BASELINE, STEPS=1.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="TILE=100"):
        mod.grid(_cfg(100), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (TILE 512 / 1024 / 2048 / 4096 elements a row tile, STEPS 1 / 2 / 4 / 8 tiles
    a ticket, 2 / 4 / 8 warps, num_stages 1: the count loop's loads feed only a sum, nothing to pipeline) with
    BASELINE among them; at every point each config is valid and launches >= 4 waves of programs on an H200
    (2048 at the fewest: 8192 records a program over the LiDAR point's 16.8 M; 2930 at the splat point's 6 M).
    (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9.0: all 144 compile, none
    spills; registers 21-229 under 3.6 and 21-174 under 3.9 -- the most for TILE 4096 on 2 warps, 64 elements
    a thread and their 64-bit addresses (3.6: 229 at the splat point's W 14 fp32 rows, STEPS 4; 3.9: 174 at
    the YOLO point's W 6 fp16 rows, not 16-byte aligned, STEPS 2) --; shared memory 16-2048 bytes under 3.6
    and 4-2048 under 3.9 (the slots' move from the scan's 1-d layout to the row tile's, the reductions'
    scratch). At TILE 8192 on 2 warps (128 elements a thread) both Tritons spilled at 254-255 registers,
    hence the sweep's 4096 at most.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and "num_warps" in axes
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    progs = [math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs]
    assert min(progs) == 2048
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert math.prod(mod.grid(c, p)) >= 4 * H200_SMS, (p, c)
            wp, bl = mod._plan(p["W"], c)
            assert bl * wp == c["TILE"] and bl >= 32


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90 at each point: BASELINE, the largest tiles on 2 warps (the most registers) and two-pass
    corners compile without spills, within a few KiB of shared memory."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0][0] == mod.BASELINE
    for pi, cfgs in COMPILE_CFGS.items():
        p = mod.POINTS[pi]
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
            assert res.shared <= 4096 <= SM90_SMEM_PER_BLOCK, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest and a two-pass config at the first point
    (LiDAR, fp32 W 4) compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(4096, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance and bit for bit), an independent
    kept set (numpy float32 compares), the order's legality, the inputs' buffers, torch_baseline; one JSON
    line."""
    import numpy as np
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        rec = inputs["records"]
        n, W = rec.shape
        x = rec.float().numpy()
        if inputs["mode"] == "score":
            keep = x[:, inputs["score_col"]] > np.float32(inputs["threshold"])
        else:
            lo, hi = inputs["box"]
            keep = np.ones(n, dtype=bool)
            for a in range(3):
                keep &= (x[:, a] > np.float32(lo[a])) & (x[:, a] < np.float32(hi[a]))
        kept = torch.from_numpy(np.nonzero(keep)[0].astype(np.int64))
        order, ch = inputs["_order"]
        assert ch == mod.chunk(W, cfg)
        runs = 0 if order.numel() == 0 else 1 + int((order[1:] // ch != order[:-1] // ch).sum())
        rows = rec[kept] if kept.numel() else rec[:0]             # launch returns them in input order
        a = mod._kernel_args(rec, torch.empty(n, W, dtype=rec.dtype), torch.empty(n, dtype=torch.int64),
                             inputs["count"], inputs["mode"], inputs.get("threshold"), inputs.get("box"),
                             inputs.get("score_col", 0), cfg)
        base = mod.torch_baseline(inputs)
        return {"dtype": names.get(out.dtype), "n_kept": int(out.shape[0]), "count": int(inputs["count"][0]),
                "n_kept_indep": int(keep.sum()), "legal": mod.legal_order(order, kept, ch),
                "ref_finite": bool(torch.isfinite(ref).all()) if ref.numel() else True,
                "n_diff": int((out.float() != ref).sum()),
                "n_rows_diff": int((~((out == rows) | (out.isnan() & rows.isnan()))).sum()),
                "inputs_unchanged": same(_root(inputs["records"]), inputs["records_root0"]),
                "baseline_ok": torch.equal(base, rec[kept]) or (base.numel() == 0 and kept.numel() == 0),
                "runs": runs, "chunks_with_kept": int(torch.unique(kept // ch).numel()),
                "flags": {k: a[k] for k in FLAG_KEYS}, "grid": list(mod._grid(n, W, cfg))}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
