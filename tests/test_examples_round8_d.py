"""examples/vocab_sample_stats.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, and a compile for sm_90 and sm_120 from
its own ``example_args`` (and ``merge_example_args`` for the merge kernel).

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round8_d.py vocab_sample_stats``) that prints one JSON line; the
tests assert per case. A second subprocess (``... parts``) checks what launch's stats do not
hold: the argmax, exactly, against torch's (the first index on ties), the public function's
four outputs against the buffers, and a row of -inf only (row_max = lse = -inf, argmax 0),
which the whole-buffer comparison cannot take (it counts a non-finite value as a mismatch).

Shapes are small and odd: V not a multiple of BLOCK_V, a block wider than the row, one CTA
per row (no merge), splits that get no chunk (SPLIT_V above the chunk count, or the rounding
of chunks over splits), a SPLIT_V that is not a power of two, ties of the row max inside one
chunk, across chunks and across splits, banned tokens (-inf columns, whole chunks and a whole
split of them), greedy rows (temperature 0, taken as 1), padding targets (negative: log-prob
0), no targets, and logits as strided row views of a wider buffer. The outputs are fp32 from
fp32 math on the same inputs in every dtype, so one tight tolerance serves all three.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "vocab_sample_stats"
TOL = {"fp32": 2e-5, "bf16": 2e-5, "fp16": 2e-5}     # x max|ref|, absolute, per element


def _cfg(bv, sv, w, s):
    return {"BLOCK_V": bv, "SPLIT_V": sv, "num_warps": w, "num_stages": s}


def _pt(M, V, target, dtype):
    return {"M": M, "V": V, "target": target, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_v_split_3_bf16": (_pt(5, 1000, True, "bf16"), _cfg(128, 3, 4, 1)),
        "one_cta_per_row_fp32": (_pt(4, 777, True, "fp32"), _cfg(256, 1, 8, 1)),
        "block_wider_than_row_fp16": (_pt(3, 300, False, "fp16"), _cfg(512, 2, 2, 2)),
        "more_splits_than_chunks_bf16": (_pt(6, 250, True, "bf16"), _cfg(64, 8, 4, 1)),
        "ties_across_splits_fp16": (_pt(4, 640, True, "fp16"), _cfg(64, 4, 4, 1)),
        "ties_one_cta_bf16": (_pt(4, 640, False, "bf16"), _cfg(64, 1, 2, 1)),
        "banned_tokens_split_5_fp32": (_pt(5, 480, True, "fp32"), _cfg(32, 5, 4, 2)),
        "greedy_and_padding_bf16": (_pt(7, 515, True, "bf16"), _cfg(128, 4, 8, 1)),
        "strided_rows_fp16": (_pt(3, 200, True, "fp16"), _cfg(64, 1, 4, 1)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(4096, 1, 8, 1), _cfg(8192, 2, 4, 1), _cfg(1024, 16, 16, 1), _cfg(2048, 4, 4, 1)],
}

SWEEP_SIZES = {KERNEL: (60, 3)}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: ties of the row max, banned (-inf) tokens, greedy rows and padding
    targets, strided rows."""
    import torch

    x = inputs["logits"]
    M, V = x.shape
    if name.startswith("ties_"):
        top = float(x.float().max()) + 1.0
        # row 0: in one chunk; row 1: across chunks; row 2: across splits (chunks 2 and 9 of 10,
        # splits 0 and 3 at SPLIT_V = 4); row 3: three-way, the first at column 0
        for r, cols in ((0, (70, 75)), (1, (100, 200)), (2, (130, 600)), (3, (0, 64, 639))):
            x[r, list(cols)] = top
    if name == "banned_tokens_split_5_fp32":
        # 15 chunks of 32 over 5 splits: row 0 loses its first 3 chunks (split 0 entirely),
        # row 1 its last 40 columns, row 2 every other token, row 3 all but 5 columns; row 4 none
        ninf = float("-inf")
        x[0, :96] = ninf
        x[1, V - 40:] = ninf
        x[2, ::2] = ninf
        keep = x[3, [3, 111, 250, 251, 479]].clone()
        x[3] = ninf
        x[3, [3, 111, 250, 251, 479]] = keep
        inputs["targets"] = torch.tensor([200, 10, 7, 250, -1], dtype=torch.int64)
    if name == "greedy_and_padding_bf16":
        inputs["temperature"][[1, 4]] = 0.0
        inputs["temperature"][5] = -1.0
        inputs["targets"][[0, 4, 6]] = -100
    if name == "strided_rows_fp16":
        wide = torch.zeros((M, V + 24), dtype=x.dtype)
        wide[:, :V] = x
        inputs["logits"] = wide[:, :V]
        assert not inputs["logits"].is_contiguous() and inputs["logits"].stride(0) == V + 24
        return
    inputs["logits"] = x


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [3 if point["target"] else 2, point["M"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", list(CASES[KERNEL]) + ["all_banned_row"])
def test_argmax_and_outputs(name):
    """The argmax equals torch's (the first index on ties) in every case, the public function's
    outputs are the buffers' rows, and a row of -inf only gives -inf, -inf, argmax 0."""
    res = _results("parts")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["argmax_bad_rows"] == [], res
    assert res["outputs_agree"], res
    if name == "all_banned_row":
        assert res["banned_row"] == [float("-inf"), float("-inf"), 0], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; tails, empty splits, ties and
    every dtype are hit."""
    import triton

    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL].values()
    assert any(p["V"] % c["BLOCK_V"] for p, c in cases) and any(p["V"] < c["BLOCK_V"] for p, c in cases)
    assert any(p["V"] % c["BLOCK_V"] == 0 for p, c in cases)
    chunks = [(triton.cdiv(p["V"], c["BLOCK_V"]), c["SPLIT_V"]) for p, c in cases]
    assert any(s > n for n, s in chunks)                                    # SPLIT_V > chunks
    assert any(s <= n and triton.cdiv(n, s) * (s - 1) >= n for n, s in chunks)   # rounding empties one
    assert any(c["SPLIT_V"] & (c["SPLIT_V"] - 1) for _, c in cases) and any(c["SPLIT_V"] == 1 for _, c in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["target"] for p, _ in cases} == {True, False}


def test_launcher_hooks_agree_with_shapes():
    """At every default point: with SPLIT_V == 1 the meta tensors of example_args are exactly
    the bytes bytes_moved counts (logits, temperature and targets read once, stats and argmax
    written once); with SPLIT_V > 1 the outputs give way to the workspace. grid and
    loop_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "vocab_sample_stats"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            M, V, tg = p["M"], p["V"], p["target"]
            e = 4 if p["dtype"] == "fp32" else 2
            P, S = (3 if tg else 2), cfg["SPLIT_V"]
            assert mod.bytes_moved(p) == M * V * e + M * 4 + (M * 8 if tg else 0) + M * (4 * P + 8)
            assert M * V * e > 250 * 2**20 * 0.99
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            if S == 1:
                assert H.meta_nbytes(args) == mod.bytes_moved(p)
                assert args["PF"].shape == (P, M) and args["PI"].shape == (M,)
            else:
                assert H.meta_nbytes(args) == mod.bytes_moved(p) - M * (4 * P + 8) + M * S * 16
                assert args["PF"].shape == (2, M, S) and args["PI"].shape == (M, S)
            assert args["PF"].dtype == torch.float32 and args["PI"].dtype == torch.int64
            assert args["stride_plane"] == args["PF"].stride(0) and args["stride_row"] == V and args["V"] == V
            assert args["LOGITS"].shape == (M, V) and args["LOGITS"].element_size() == e
            assert args["HAS_TARGET"] is tg and (args["TARGETS"] is None) is (not tg)
            assert (args["BLOCK_V"], args["SPLIT_V"]) == (cfg["BLOCK_V"], S)
            assert mod.grid(cfg, p) == M * S
            assert mod.loop_iterations(cfg, p) == triton.cdiv(triton.cdiv(V, cfg["BLOCK_V"]), S)
            assert mod.flops(p) == 5 * M * V
            if S > 1:
                margs = mod.merge_example_args(cfg, p)
                assert margs["OUT"].shape == (P, M) and margs["SPLIT_P"] >= S and margs["PF"].shape == (2, M, S)


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(5, 1000, True, "bf16")
    assert mod.grid(_cfg(128, 3, 4, 1), p) == 15 and mod.loop_iterations(_cfg(128, 3, 4, 1), p) == 3
    assert mod.loop_iterations(_cfg(128, 1, 4, 1), p) == 8 and mod.loop_iterations(_cfg(2048, 2, 4, 1), p) == 1
    assert mod.bytes_moved(p) == 5 * 1000 * 2 + 5 * (4 + 8 + 12 + 8)
    assert mod.bytes_moved(_pt(5, 1000, False, "fp32")) == 5 * 1000 * 4 + 5 * (4 + 8 + 8)
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["logits"].shape == (5, 1000) and inputs["logits"].dtype == torch.bfloat16
    assert inputs["temperature"].dtype == torch.float32 and (inputs["temperature"] >= 0.5).all()
    assert inputs["targets"].dtype == torch.int64 and inputs["targets"].shape == (5,)
    assert mod.make_inputs(_pt(2, 10, False, "fp16"), device="cpu")["targets"] is None
    ref = mod.reference(inputs)
    assert ref.shape == (3, 5) and ref.dtype == torch.float32
    y = inputs["logits"].float() / inputs["temperature"][:, None]
    assert torch.allclose(ref[0], y.max(1).values) and torch.allclose(ref[1], torch.logsumexp(y, 1))
    assert torch.allclose(ref[2], torch.log_softmax(y, 1).gather(1, inputs["targets"][:, None])[:, 0], atol=1e-5)
    assert torch.equal(mod.reference_argmax(inputs), y.argmax(1))
    base = mod.torch_baseline(inputs)
    assert base.shape == (3, 5) and base.dtype == torch.float32
    with pytest.raises(ValueError, match="SPLIT_V == 1"):
        mod.merge_example_args(_cfg(128, 1, 4, 1), p)


def test_bad_inputs_are_value_errors():
    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(4, 64, True, "fp16"), device="cpu")
    x, t, tg = inputs["logits"], inputs["temperature"], inputs["targets"]
    with pytest.raises(ValueError, match="BLOCK_V=100"):
        mod.vocab_sample_stats(x, t, tg, BLOCK_V=100)
    with pytest.raises(ValueError, match="SPLIT_V=0"):
        mod.vocab_sample_stats(x, t, tg, SPLIT_V=0)
    with pytest.raises(ValueError, match=r"logits \[M, V\]"):
        mod.vocab_sample_stats(x[0], t, tg)
    with pytest.raises(ValueError, match="not fp32, bf16 or fp16"):
        mod.vocab_sample_stats(x.double(), t, tg)
    with pytest.raises(ValueError, match=r"temperature must be fp32 \[4\]"):
        mod.vocab_sample_stats(x, t.half(), tg)
    with pytest.raises(ValueError, match=r"targets must be int64 \[4\]"):
        mod.vocab_sample_stats(x, t, tg.int())
    with pytest.raises(ValueError, match="V = 0"):
        mod.vocab_sample_stats(x[:, :0], t, tg)
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(1, 8, False, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(1, 8, False, "fp8"))


def test_study_sweeps_declare_round8_d():
    """scripts/rank_study.py's SWEEPS: held-out-8, >= 40 configs x the 3 POINTS (every config
    checked to compile and fit for sm_90 at every point with triton 3.6.0). Skipped until the
    study declares the kernel."""
    try:
        sweeps = H.study_sweeps(CASES, "held-out-8")
    except KeyError:
        pytest.skip("scripts/rank_study.py's SWEEPS does not declare vocab_sample_stats yet")
    sizes = {}
    for name, (cfgs, points, _) in sweeps.items():
        sizes[name] = (len(cfgs), len(points))
        assert load_example(name).BASELINE in cfgs
        assert points == load_example(name).POINTS
    assert sizes == SWEEP_SIZES and all(n >= 40 for n, _ in sizes.values())


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_target_path_and_merge_compile(shared_cache, arch):
    """The second point (targets given) through `_kernel`, and `_merge_kernel` at two splits."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[1]
    for cfg in (_cfg(4096, 1, 8, 1), _cfg(2048, 8, 4, 1)):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"_kernel {cfg} on {arch}: {res.status}: {res.message}"
        res = compile_kernel(mod._merge_kernel, args=mod.merge_example_args(cfg, p) if cfg["SPLIT_V"] > 1
                             else mod.merge_example_args(_cfg(2048, 5, 4, 1), p), arch=arch, num_warps=4,
                             num_stages=1)
        assert res.status == "ok", f"_merge_kernel {cfg} on {arch}: {res.status}: {res.message}"


# ----------------------------------------------------------------- the subprocess side
def _run_parts() -> None:
    """Under TRITON_INTERPRET=1: each case's argmax against torch's, the public function's outputs
    against the buffers; and an extra case with a row of -inf only. One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    cases = dict(CASES[KERNEL])
    cases["all_banned_row"] = (_pt(3, 100, True, "bf16"), _cfg(32, 2, 4, 1))
    results = {}
    for name, (point, cfg) in cases.items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            if name == "all_banned_row":
                inputs["logits"][1] = float("-inf")
                inputs["targets"][1] = -1          # its log-prob would be -inf - -inf
            kw = {k: cfg[k] for k in ("BLOCK_V", "SPLIT_V", "num_warps", "num_stages")}
            x, t, tg = inputs["logits"], inputs["temperature"], inputs["targets"]
            stats, arg = mod.vocab_sample_stats_buffers(x, t, tg, **kw)
            mx, arg2, lse, lp = mod.vocab_sample_stats(x, t, tg, **kw)
            ref_arg = mod.reference_argmax(inputs)
            agree = (torch.equal(mx, stats[0]) and torch.equal(lse, stats[1]) and torch.equal(arg2, arg)
                     and arg.dtype == torch.int64 and (lp is None if tg is None else torch.equal(lp, stats[2])))
            results[name] = {"argmax_bad_rows": (arg != ref_arg).nonzero().flatten().tolist(),
                             "outputs_agree": bool(agree)}
            if name == "all_banned_row":
                results[name]["banned_row"] = [float(stats[0, 1]), float(stats[1, 1]), int(arg[1])]
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "parts":
        _run_parts()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
