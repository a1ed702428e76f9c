"""examples/crf_viterbi.py (batched Viterbi decoding of a linear-chain CRF / HMM, as pytorch-crf / AllenNLP taggers
and HMM aligners run it: BLOCK_B = BLOCK // S_PAD sequences a program, the forward max-plus recurrence over t with
the score vectors in registers and the source states in chunks of BLOCK_I, int16 backpointers, the backtrace in
the same program after a barrier) against its float64 torch reference on the CPU through Triton's interpreter,
its launcher hooks against the shapes, its sweep against the points, and a compile for sm_90 and sm_120 from its
own ``example_args``.

As in test_examples_round35_b.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round36_b.py crf_viterbi``) that prints one JSON line. The subprocess installs the
harness's interpreter fixes.

Shapes are small, odd and ragged: every dtype (fp16 / bf16 / fp32); S of 1 (one state), 9 and 16 (one chunk or
two of BLOCK_I 8 in S_PAD 16), 17 (padded to 32), 45 (padded to 64: eight chunks of 8 / four of 16) and 128 (one
sequence a program at BLOCK 128); lengths of 1 (no step) up to T, ragged inside a program; programs whose longest
sequence ends more than PAD_T before T (the -1 fill loop runs, twice where T - tmax > 64); B not a multiple of
BLOCK_B; emissions as a strided view (the [T, B, S] layout of a time-major encoder, transposed); every sweep value
of every tunable.

Per case: the score within 1e-5 x max|ref| of the float64 reference (fp32 accumulation of the same rounded
emissions: no rounding beyond fp32's), the tags equal to the reference's Viterbi path exactly (-1 past each length),
every live backpointer consistent with the path (bp[b, t, tag[t]] = tag[t - 1]); score fp32 [B], tags int32
[B, T] contiguous, bp int16 [B, T, S]; the inputs unchanged; torch_baseline's score within the same tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "crf_viterbi"
ROLE = "held-out-36"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = {"fp16": 1e-5, "bf16": 1e-5, "fp32": 1e-5}     # x max|ref|: fp32 sums of the same rounded inputs

SWEEP_AXES = {"BLOCK": [64, 128, 256], "BLOCK_I": [8, 16, 32], "num_warps": [4], "num_stages": [1, 2, 3, 4, 5]}


def _cfg(blk=128, bi=16, w=4, st=2):
    return {"BLOCK": blk, "BLOCK_I": bi, "num_warps": w, "num_stages": st}


def _pt(B, T, S, min_len=1, dtype="fp16"):
    return {"B": B, "T": T, "S": S, "min_len": min_len, "dtype": dtype}


# case -> (point, cfg); a name ending in "_strided" gets its emissions as a [T, B, S] tensor's transpose
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the NER point scaled down: BIO tags (9 -> 16) in one chunk, 37 sentences (BLOCK_B 4: the last program
        # ragged), 2 warps
        "ner_fp16": (_pt(37, 23, 9, 1, "fp16"), _cfg(64, 16, 2, 2)),
        # two chunks of 8 source states in S_PAD 16, no pipelining
        "ner_chunks_bf16": (_pt(19, 17, 9, 2, "bf16"), _cfg(128, 8, 4, 1)),
        # the POS point scaled down: 45 tags (-> 64), chunks of 8 (eight chunks), BLOCK_B 8 (BLOCK 512), 3 stages
        "pos_bf16": (_pt(13, 15, 45, 3, "bf16"), _cfg(512, 8, 4, 3)),
        # 45 tags in chunks of 4 (sixteen chunks), BLOCK_B 2, 2 warps, 4 stages, time-major emissions (strided)
        "pos_fp32_strided": (_pt(5, 12, 45, 1, "fp32"), _cfg(128, 4, 2, 4)),
        # the aligner point scaled down: 128 states, one sequence a program (BLOCK 128), 16 chunks of 8
        "align_fp32": (_pt(3, 9, 128, 4, "fp32"), _cfg(128, 8, 4, 2)),
        # 128 states in chunks of 32, 2 sequences a program (BLOCK 256), 8 warps, fp16
        "align_fp16": (_pt(5, 8, 128, 2, "fp16"), _cfg(256, 32, 8, 3)),
        # BIOES over 4 types (17 -> 32) in one chunk of 32, BLOCK_B 8 (BLOCK 256): 2 programs, 4 stages
        "bioes_fp32": (_pt(11, 14, 17, 1, "fp32"), _cfg(256, 32, 4, 4)),
        # one state: every path the same, the score a sum
        "one_state": (_pt(6, 7, 1, 1, "fp32"), _cfg(64, 4, 2, 1)),
        # S = S_PAD = 16, one sequence a program (BLOCK 16); T 140 > 2 PAD_T: the -1 fill past a short sequence
        # runs once or twice (three times below 12)
        "long_pad_fp16": (_pt(12, 140, 16, 1, "fp16"), _cfg(16, 16, 4, 2)),
        # lengths all 1 but the first (min_len 1 of T 2): single-step sequences
        "len_one_bf16": (_pt(9, 2, 9, 1, "bf16"), _cfg(64, 8, 4, 5)),
    },
}


def _smem_bound(cfg, point) -> int:
    """An upper bound of a config's shared memory: num_stages - 1 buffers of the emission rows and of the whole
    transition table (the chunked loads of a step, pipelined), plus two [BLOCK_B, S_PAD] fp32 buffers (the score
    vectors' layout conversions) and 16 KiB (the reductions' scratch)."""
    mod = load_example(KERNEL)
    sp = mod._s_pad(point["S"])
    bb = mod._block_b(cfg, point["S"])
    return (cfg["num_stages"] - 1) * (4 * sp * sp + 4 * bb * sp) + 8 * bb * sp + 16 * 1024


# configs compiled on sm_90 at each point (the full sweep was compiled by hand, see the module doc): BASELINE,
# the biggest chunk (BLOCK 256 x BLOCK_I 32) and the deepest pipeline with the most chunks
COMPILE_CFGS = {0: [_cfg(128, 16, 4, 2), _cfg(256, 32, 4, 3), _cfg(64, 8, 4, 5)],
                1: [_cfg(128, 16, 4, 2), _cfg(256, 32, 4, 2), _cfg(256, 8, 4, 5)],
                2: [_cfg(128, 16, 4, 2), _cfg(256, 32, 4, 4), _cfg(64, 8, 4, 5)]}
SM120_CFGS = [_cfg(128, 16, 4, 2), _cfg(256, 32, 4, 3), _cfg(64, 8, 4, 1)]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["B"]] and res["dtype"] == "float32", res
    assert res["tags_equal"] is True, res
    assert res["tags_shape"] == [p["B"], p["T"]] and res["tags_dtype"] == "int32" and res["tags_contig"], res
    assert res["bp_shape"] == [p["B"], p["T"], p["S"]] and res["bp_dtype"] == "int16", res
    assert res["bp_consistent"] is True, res
    assert res["pad_ok"] is True, res
    assert res["inputs_unchanged"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if p["S"] > 1:
        assert res["n_distinct_tags"] > 1, res


def test_cases_cover_every_code_path():
    """Every dtype; one chunk and several (BLOCK_I < S_PAD); S of 1, a power of two, padded; BLOCK_B of 1 and
    more, B ragged against it; lengths of 1; the -1 fill past a program's longest sequence; a strided view;
    every sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert any(mod._block_i(c, p["S"]) == mod._s_pad(p["S"]) for p, c in cases.values())
    assert any(mod._s_pad(p["S"]) // mod._block_i(c, p["S"]) >= 8 for p, c in cases.values())
    assert {1, 16} <= {p["S"] for p, _ in cases.values()}
    assert any(p["S"] > 16 and p["S"] & (p["S"] - 1) for p, _ in cases.values())
    assert any(mod._block_b(c, p["S"]) == 1 for p, c in cases.values())
    assert any(p["B"] % mod._block_b(c, p["S"]) for p, c in cases.values())
    assert any(p["T"] > 2 * mod.PAD_T and mod._block_b(c, p["S"]) == 1 for p, c in cases.values())
    assert any(n.endswith("_strided") for n in cases)
    assert any(p["min_len"] == 1 for p, _ in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args -- lengths with data (CPU, make_inputs' seed-0 lengths),
    the other tensors on meta, contiguous -- with the launch's shapes, dtypes and constants; the 1-D grid, each
    program's loop steps; bytes_moved / flops."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "crf_viterbi"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    es = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, T, S = p["B"], p["T"], p["S"]
        ln = mod._point_lengths(p)                # make_inputs' seed-0 lengths (test_hooks_on_small_points...)
        assert ln.dtype == torch.int32 and int(ln.min()) >= p["min_len"] and int(ln.max()) == T
        sp = max(16, 1 << (S - 1).bit_length())
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            for k, shape, dt in (("EMIT", (B, T, S), dts[p["dtype"]]), ("TRANS", (S, S), torch.float32),
                                 ("START", (S,), torch.float32), ("END", (S,), torch.float32),
                                 ("BP", (B, T, S), torch.int16), ("TAGS", (B, T), torch.int32),
                                 ("SCORE", (B,), torch.float32)):
                t = a[k]
                assert t.device.type == "meta" and tuple(t.shape) == shape and t.dtype == dt, k
                assert t.is_contiguous(), k
            assert a["LENS"].device.type == "cpu" and torch.equal(a["LENS"], ln)
            bb = max(1, cfg["BLOCK"] // sp)
            assert (a["B"], a["T"], a["S"], a["S_PAD"]) == (B, T, S, sp)
            assert (a["BLOCK_B"], a["BLOCK_I"], a["NUM_STAGES"]) == (bb, min(cfg["BLOCK_I"], sp), cfg["num_stages"])
            assert (a["stride_eb"], a["stride_et"], a["stride_bb"], a["stride_bt"], a["stride_tb"]) == (
                T * S, S, T * S, S, T)
            n = -(-B // bb)
            assert mod.grid(cfg, p) == (n,)
            it = mod.cta_iterations(cfg, p)
            assert len(it) == n and max(it) == 2 * T - 1 and min(it) >= 2 * p["min_len"] - 1
            assert mod.loop_iterations(cfg, p) == -(-sum(it) // n)
        tot = int(ln.long().sum())
        assert mod.bytes_moved(p) == tot * S * es[p["dtype"]] + 4 * (tot - B) * S + 4 * B * T + 8 * B + \
            4 * (S * S + 2 * S)
        assert mod.flops(p) == (tot - B) * (2 * S * S + S)
    assert [(p["B"], p["T"], p["S"], p["min_len"], p["dtype"]) for p in mod.POINTS] == [
        (32768, 128, 9, 4, "fp16"), (8192, 96, 45, 8, "bf16"), (1024, 1024, 64, 512, "fp32")]


def test_hooks_on_small_points_and_inputs():
    """reference by hand (a 2-state chain); make_inputs' seed, dtypes and spread; grid / iterations on a small
    point; the wrapper's empty batch."""
    import torch

    mod = load_example(KERNEL)
    # by hand: 2 states, T 3; emissions favour state 1 at t = 0, 2 and state 0 at t = 1; staying is rewarded
    em = torch.tensor([[[0.0, 2.0], [1.5, 0.0], [0.0, 1.0]]])
    tr = torch.tensor([[1.0, -1.0], [-1.0, 1.0]])
    z = torch.zeros(2)
    inp = {"emissions": em, "transitions": tr, "start": z, "end": z, "lengths": torch.tensor([3], dtype=torch.int32)}
    # paths: 1 1 1 = 2 + 0 + 1 + 1 + 1 = 5; 1 0 1 = 2 + 1.5 + 1 - 2 = 2.5; 0 0 0 = 1.5 + 2 = 3.5 -> [1, 1, 1]
    s, tags = mod.reference_decode(inp)
    assert s.dtype == torch.float64 and float(s[0]) == 5.0 and tags.tolist() == [[1, 1, 1]]
    assert float(mod.torch_baseline(inp)[0]) == 5.0
    inp["lengths"] = torch.tensor([2], dtype=torch.int32)      # stop after t = 1: 0 0 = 1.5 + 1 = 2.5 vs 1 1 = 3
    s, tags = mod.reference_decode(inp)
    assert float(s[0]) == 3.0 and tags.tolist() == [[1, 1, -1]]
    # make_inputs: seeded, dtypes, not constant, lengths in range
    for dt, tdt in (("fp16", torch.float16), ("bf16", torch.bfloat16), ("fp32", torch.float32)):
        p = _pt(50, 30, 12, 5, dt)
        a = mod.make_inputs(p, seed=1, device="cpu")
        assert a["emissions"].dtype == tdt and a["emissions"].shape == (50, 30, 12)
        assert a["transitions"].dtype == torch.float32 and a["transitions"].shape == (12, 12)
        assert a["start"].shape == (12,) and a["end"].shape == (12,)
        ln = a["lengths"]
        assert ln.dtype == torch.int32 and int(ln.min()) >= 5 and int(ln[0]) == 30 and ln.unique().numel() > 5
        assert 1.5 < float(a["emissions"].float().std()) < 2.5 and a["transitions"].unique().numel() == 144
        b = mod.make_inputs(p, seed=1, device="cpu")
        assert all(torch.equal(a[k], b[k]) for k in a)
        assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["emissions"], a["emissions"])
        assert torch.equal(ln, mod._point_lengths(p, 1)) and torch.equal(mod.make_inputs(p, device="cpu")[
            "lengths"], mod._point_lengths(p))
    assert mod.make_inputs({"B": 2, "T": 3, "S": 4}, device="cpu")["emissions"].dtype == torch.float16
    # grid / iterations: B 5, S 9 (-> 16), BLOCK 32 -> 2 sequences a program
    p = _pt(5, 6, 9, 1, "fp32")
    cfg = _cfg(32, 8, 4, 1)
    ln = mod._point_lengths(p).tolist()
    assert mod.grid(cfg, p) == (3,)
    assert mod.cta_iterations(cfg, p) == [2 * max(ln[0:2]) - 1, 2 * max(ln[2:4]) - 1, 2 * ln[4] - 1]
    assert mod.grid(_cfg(16, 8, 4, 1), _pt(5, 6, 200)) == (5,)           # S_PAD 256 > BLOCK: one a program
    # nothing to decode
    e = mod.crf_viterbi(torch.zeros((0, 4, 3)), torch.zeros((3, 3)), torch.zeros(3), torch.zeros(3),
                        torch.zeros(0, dtype=torch.int32))
    assert e[0].shape == (0,) and e[1].shape == (0, 4) and e[2].shape == (0, 4, 3)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    a = mod.make_inputs(_pt(3, 5, 7, 1, "fp32"), device="cpu")
    em, tr, st, en, ln = a["emissions"], a["transitions"], a["start"], a["end"], a["lengths"]
    with pytest.raises(ValueError, match="BLOCK=100"):
        mod.crf_viterbi(em, tr, st, en, ln, BLOCK=100)
    with pytest.raises(ValueError, match="BLOCK_I=3"):
        mod.crf_viterbi(em, tr, st, en, ln, BLOCK_I=3)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.crf_viterbi(em, tr, st, en, ln, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.crf_viterbi(em, tr, st, en, ln, num_stages=0)
    with pytest.raises(ValueError, match="emissions must be a 3-d"):
        mod.crf_viterbi(em[0], tr, st, en, ln)
    with pytest.raises(ValueError, match="emissions must be a 3-d"):
        mod.crf_viterbi(em.double(), tr, st, en, ln)
    with pytest.raises(ValueError, match="unit stride along S"):
        mod.crf_viterbi(em.transpose(1, 2).contiguous().transpose(1, 2), tr, st, en, ln)
    with pytest.raises(ValueError, match="S=300"):
        mod.crf_viterbi(torch.zeros((1, 2, 300)), torch.zeros((300, 300)), torch.zeros(300), torch.zeros(300),
                        torch.ones(1, dtype=torch.int32))
    with pytest.raises(ValueError, match="transitions must be"):
        mod.crf_viterbi(em, tr.half(), st, en, ln)
    with pytest.raises(ValueError, match="transitions must be"):
        mod.crf_viterbi(em, tr[:, :6], st, en, ln)
    with pytest.raises(ValueError, match="end must be"):
        mod.crf_viterbi(em, tr, st, en[:5], ln)
    with pytest.raises(ValueError, match="lengths must be"):
        mod.crf_viterbi(em, tr, st, en, ln.long())
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 2, 3, 1, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="min_len=0"):
        mod.bytes_moved(_pt(2, 4, 3, 0))
    with pytest.raises(ValueError, match="min_len=9"):
        mod.flops(_pt(2, 4, 3, 9))
    with pytest.raises(ValueError, match="B=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 3))
    with pytest.raises(ValueError, match="T=2.5"):
        mod.example_args(mod.BASELINE, _pt(2, 2.5, 3))
    with pytest.raises(ValueError, match="S=512"):
        mod.cta_iterations(mod.BASELINE, _pt(2, 4, 512))
    with pytest.raises(ValueError, match="elements: at most"):
        mod.grid(mod.BASELINE, _pt(2**16, 2**10, 64))
    with pytest.raises(ValueError, match="BLOCK='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK="abc"), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_stages=9"):
        mod.loop_iterations(dict(mod.BASELINE, num_stages=9), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The sweep: 45 configs (BLOCK 64 / 128 / 256 score elements a program, BLOCK_I 8 / 16 / 32, 4 warps, 1-5
    stages) with BASELINE among them; at every point each config is valid and fits the shared-memory bound; a
    program holds at most 64 elements of a chunk's [BLOCK_B, BLOCK_I, S_PAD] cube a thread (the register budget:
    module doc) and every point has at least 256 programs (the 64-state read point at BLOCK 256: 4 a program).
    (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9.0: the figures are in the module
    doc.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_warps") and axes["num_warps"] == [4]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (g,) = mod.grid(c, p)
            assert g >= 2 * 128, (p, c, g)
            assert _smem_bound(c, p) <= SM90_SMEM_PER_BLOCK, (p, c)
            sp = mod._s_pad(p["S"])
            assert mod._block_b(c, p["S"]) * mod._block_i(c, p["S"]) * sp <= 64 * 32 * c["num_warps"], (p, c)
            assert mod.loop_iterations(c, p) <= 2 * p["T"] - 1


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
    """On sm_90 at each point: BASELINE, the biggest chunk and the deepest pipeline compile without
    spills within the shared bound."""
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
            assert 0 <= res.shared <= min(_smem_bound(cfg, p), SM90_SMEM_PER_BLOCK), (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, BLOCK 256 x 32 at 3 stages and 64 x 8 at 1 stage compile
    at the first point (NER, 9 tags) without spills within its shared memory."""
    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(_smem_bound(cfg, p), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through crf_viterbi (launch's call, its three outputs kept) against reference_decode; the
    backpointers against the path; torch_baseline's score; the inputs unchanged; one JSON line."""
    import json
    import os
    import sys

    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            if name.endswith("_strided"):
                em = inputs["emissions"]
                tm = torch.empty((em.shape[1], em.shape[0], em.shape[2]), dtype=em.dtype)
                tm.copy_(em.transpose(0, 1))
                inputs["emissions"] = tm.transpose(0, 1)
                assert not inputs["emissions"].is_contiguous()
            saved = {k: v.clone() for k, v in inputs.items()}
            score, tags, bp = mod.crf_viterbi(inputs["emissions"], inputs["transitions"], inputs["start"],
                                              inputs["end"], inputs["lengths"], **{k: cfg[k] for k in cfg})
            ref_s, ref_t = mod.reference_decode(inputs)
            res = H.compare(score, ref_s, point["dtype"], TOL)
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref_s, point["dtype"], TOL)
            ln = inputs["lengths"].long()
            B, T, S = inputs["emissions"].shape
            tt = torch.arange(T)
            live = tt[None, :] < ln[:, None]
            ok = True
            for b in range(B):
                for t in range(1, int(ln[b])):
                    ok &= int(bp[b, t, int(tags[b, t])]) == int(tags[b, t - 1])
            res.update({"dtype": str(score.dtype).replace("torch.", ""),
                        "tags_equal": bool(torch.equal(tags.long(), ref_t)), "tags_shape": list(tags.shape),
                        "tags_dtype": str(tags.dtype).replace("torch.", ""), "tags_contig": tags.is_contiguous(),
                        "bp_shape": list(bp.shape), "bp_dtype": str(bp.dtype).replace("torch.", ""),
                        "bp_consistent": bool(ok),
                        "pad_ok": bool((tags[~live] == -1).all() and (tags[live] >= 0).all()
                                       and (tags[live] < S).all()),
                        "inputs_unchanged": all(torch.equal(inputs[k], saved[k]) for k in saved),
                        "n_distinct_tags": int(tags[live].unique().numel())})
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
