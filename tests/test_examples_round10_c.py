"""examples/moe_topk_router.py against its torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round10_c.py moe_topk_router``) that prints one JSON line; the
tests assert per case. launch returns topk_weights only; a second subprocess (``... ids``)
runs every case again through the user-facing function and checks topk_ids, the other
output, exactly: int32, contiguous [T, topk], distinct experts in range, and equal to the
reference's stable descending sort of the key (ties to the lowest expert id), so a tie broken
the wrong way, a wrong tail expert or a duplicate shows.

Shapes are small and odd: T not a multiple of BLOCK_T and smaller than it (the token mask), E
a power of two (8, 16, 64, 256) and not (6, 60, 160: the expert mask), topk 1, 2, 3, 4, 6, 8
and topk = E (every expert), topk not a power of two (BLOCK_K > topk: the output column
mask), both scorings, with and without the correction bias and the renormalization, a
routed scale, every logits dtype, logits as a column slice of a wider buffer (row stride !=
E), and logits full of exact ties (+0.0 and -0.0 among them), for both PACKED methods.

Tolerance (x max|ref|, absolute, per element): the weights are fp32 computed in fp32 from the
same (rounded) logits; the reference computes them in fp64, so only fp32 rounding differs
(a few ulp of exp / sigmoid and the divide): 1e-5 for every logits dtype.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "moe_topk_router"
TOL = {"fp32": 1e-5, "bf16": 1e-5, "fp16": 1e-5}

# the GPU study's sweep: 7 x 2 x 4 x 1 = 56 configs; the integrator moves it into the study's
# registry. num_stages has one value: there is no runtime loop, so nothing is pipelined (1, 2
# and 3 give the same cubin, checked below).


def _cfg(bt, packed, w, s=1):
    return {"BLOCK_T": bt, "PACKED": packed, "num_warps": w, "num_stages": s}


def _pt(T, E, topk, scoring, renorm, dtype, bias=0, scale=1.0):
    return {"T": T, "E": E, "topk": topk, "scoring": scoring, "renorm": renorm, "bias": bias, "scale": scale,
            "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "mixtral_e8_top2_renorm_fp16": (_pt(37, 8, 2, "softmax", 1, "fp16"), _cfg(16, 0, 2)),
        "mixtral_e8_top2_packed_bf16": (_pt(45, 8, 2, "softmax", 1, "bf16"), _cfg(64, 1, 1)),
        "qwen2_e60_top4_no_renorm_bf16": (_pt(50, 60, 4, "softmax", 0, "bf16"), _cfg(8, 1, 4, 2)),
        "qwen2_e60_top4_no_renorm_fp32": (_pt(23, 60, 4, "softmax", 0, "fp32"), _cfg(4, 0, 2)),
        "dsv3_e256_top8_sigmoid_bias_fp32": (_pt(19, 256, 8, "sigmoid", 1, "fp32", 1, 2.5), _cfg(4, 0, 8)),
        "dsv3_e256_top8_sigmoid_bias_packed_bf16": (_pt(21, 256, 8, "sigmoid", 1, "bf16", 1, 2.5), _cfg(16, 1, 4)),
        "dsv2_e160_top6_scaled_fp16": (_pt(13, 160, 6, "softmax", 0, "fp16", 0, 16.0), _cfg(32, 1, 1)),
        "olmoe_e64_top8_exact_tiles_fp32": (_pt(64, 64, 8, "softmax", 0, "fp32"), _cfg(32, 0, 2)),
        "llama4_e16_top1_sigmoid_bf16": (_pt(29, 16, 1, "sigmoid", 0, "bf16"), _cfg(2, 1, 4)),
        "sigmoid_no_bias_top3_renorm_fp16": (_pt(30, 16, 3, "sigmoid", 1, "fp16"), _cfg(8, 0, 8)),
        "sigmoid_bias_e60_top3_no_renorm_fp16": (_pt(17, 60, 3, "sigmoid", 0, "fp16", 1), _cfg(1, 1, 2)),
        "all_experts_e6_top6_bf16": (_pt(11, 6, 6, "softmax", 1, "bf16"), _cfg(4, 1, 1, 3)),
        "ties_e60_top4_fp32": (_pt(40, 60, 4, "softmax", 1, "fp32"), _cfg(8, 0, 4)),
        "ties_e60_top4_packed_fp32": (_pt(40, 60, 4, "softmax", 1, "fp32"), _cfg(8, 1, 4)),
        "ties_sigmoid_e64_top8_packed_bf16": (_pt(25, 64, 8, "sigmoid", 1, "bf16"), _cfg(16, 1, 2)),
        "strided_logits_e8_top2_bf16": (_pt(40, 8, 2, "softmax", 1, "bf16"), _cfg(8, 1, 1)),
        "strided_logits_e60_top4_fp16": (_pt(27, 60, 4, "softmax", 0, "fp16"), _cfg(16, 0, 4)),
    },
}
TIES = ("ties_e60_top4_fp32", "ties_e60_top4_packed_fp32", "ties_sigmoid_e64_top8_packed_bf16")
STRIDED = ("strided_logits_e8_top2_bf16", "strided_logits_e60_top4_fp16")

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(16, 0, 4), _cfg(64, 1, 4), _cfg(1, 0, 1), _cfg(32, 1, 8)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: logits with many exact ties (4 values, the largest +0.0 and -0.0 mixed,
    which must tie: PACKED orders their bit patterns, so it must make -0.0 +0.0 first); or
    logits as a column slice of a wider buffer."""
    import torch

    x = inputs["logits"]
    if name in TIES:
        g = torch.Generator().manual_seed(len(name))
        q = torch.randint(-3, 1, tuple(x.shape), generator=g).float() * 0.5     # -1.5 .. 0: the top ones +-0
        neg = torch.rand(tuple(x.shape), generator=g) < 0.5
        q = torch.where((q == 0) & neg, torch.full_like(q, -0.0), q)
        assert bool(torch.signbit(q[q == 0]).any()) and not bool(torch.signbit(q[q == 0]).all())
        inputs["logits"] = q.to(x.dtype)
    if name in STRIDED:
        T, E = x.shape
        wide = torch.randn((T, E + 24)).to(x.dtype) * 100.0      # the other columns must not be read
        wide[:, 10:10 + E] = x
        inputs["logits"] = wide[:, 10:10 + E]
        assert inputs["logits"].stride() == (E + 24, 1)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["T"], point["topk"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_ids_match_reference(name):
    """topk_ids: int32 [T, topk] contiguous, in range, distinct per token, the reference's."""
    res = _results("ids")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["dtype"] == "torch.int32" and res["contiguous"] and res["shape"] == [CASES[KERNEL][name][0]["T"],
                                                                                    CASES[KERNEL][name][0]["topk"]]
    assert res["in_range"] and res["distinct"], res
    assert res["n_wrong"] == 0, f"{name}: {res['n_wrong']} ids differ from the reference (first at {res['first']})"
    if name in TIES:
        assert res["tied_rows"] >= 5, res          # ties inside the top-k or across its boundary did happen


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (every sweep value of BLOCK_T,
    PACKED and num_warps); the token, expert and output-column masks, both scorings, bias and
    renormalization settings and every dtype are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-10")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    for ax in ("BLOCK_T", "PACKED", "num_warps"):
        assert {c[ax] for _, c in cases} >= set(SWEEP_AXES[ax]), ax
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases) and any(p["T"] < c["BLOCK_T"] for p, c in cases)
    assert any(p["T"] % c["BLOCK_T"] == 0 for p, c in cases)
    assert any(p["E"] & (p["E"] - 1) for p, _ in cases) and any(not p["E"] & (p["E"] - 1) for p, _ in cases)
    assert any(p["topk"] & (p["topk"] - 1) for p, _ in cases) and any(p["topk"] == p["E"] for p, _ in cases)
    assert {p["topk"] for p, _ in cases} >= {1, 2, 3, 4, 6, 8}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["scoring"] for p, _ in cases} == set(mod.SCORINGS)
    combos = {(p["scoring"], p["bias"], p["renorm"], c["PACKED"]) for p, c in cases}
    for sc, b in (("softmax", 0), ("sigmoid", 0), ("sigmoid", 1)):
        for r in (0, 1):
            assert any((sc, b, r, pk) in combos for pk in (0, 1)), (sc, b, r)
        for pk in (0, 1):
            assert any((sc, b, r, pk) in combos for r in (0, 1)), (sc, b, pk)
    assert {c["PACKED"] for (p, c) in (CASES[KERNEL][n] for n in TIES)} == {0, 1}


def test_sweep_fits_the_points():
    """The study sweep: 56 configs (>= 40), BASELINE among them, every tunable but num_stages
    swept over >= 2 values; at every POINT each config is valid, its example_args are the
    point's bytes and it fills the GPU with >= 132 CTAs. (Every config was compiled for sm_90
    with triton 3.6.0 at every point: all 168 compile, 16-255 registers, 0-4 KiB of shared
    memory (the cross-warp reduction scratch). Those with many logits a thread spill: none at
    E = 8; at E = 60 8 configs (BLOCK_T 64 at 1-4 warps, BLOCK_T 32 PACKED at 1-2 warps),
    60-618 words a thread; at E = 256 15 configs (BLOCK_T >= 16 at 1 warp, >= 32 at 2, 64 at
    4, 64 PACKED at 8), 28-2320 words; ptxas takes up to ~2 minutes on the worst.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-10")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 42 and mod.BASELINE in cfgs        # 7 x 2 x 3 (num_warps=1 left out of the study)
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            assert mod.grid(c, p) >= 132 and mod.loop_iterations(c, p) == p["topk"]
            assert args["BLOCK_T"] == c["BLOCK_T"] and args["PACKED"] == c["PACKED"]


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (logits and bias read once, weights and ids written once), more than the
    50 MB L2 and >= 0.05 ms at 4.8 TB/s; grid and loop_iterations are the tiling."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_ids", "bytes_moved", "flops", "grid",
               "loop_iterations", "example_args", "torch_baseline", "moe_topk_router"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["scoring"] for p in mod.POINTS} == set(mod.SCORINGS)
    assert {(p["E"], p["topk"]) for p in mod.POINTS} == {(8, 2), (60, 4), (256, 8)}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            T, E, k = p["T"], p["E"], p["topk"]
            e = 4 if p["dtype"] == "fp32" else 2
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == T * E * e + (4 * E if p["bias"] else 0) + 8 * T * k
            assert T * E * e > 50 * 10**6 and mod.bytes_moved(p) / 4.8e12 >= 0.05e-3
            assert args["LOGITS"].shape == (T, E) and args["LOGITS"].dtype == mod._torch_dtype(p["dtype"])
            assert args["W_OUT"].shape == (T, k) and args["W_OUT"].dtype == torch.float32
            assert args["ID_OUT"].shape == (T, k) and args["ID_OUT"].dtype == torch.int32
            assert (args["BIAS"] is not None) == bool(p["bias"]) == args["HAS_BIAS"]
            assert (args["T"], args["stride_lt"], args["E"], args["TOPK"]) == (T, E, E, k)
            assert args["BLOCK_E"] == triton.next_power_of_2(E) and args["BLOCK_K"] == triton.next_power_of_2(k)
            assert args["SIGMOID"] == (p["scoring"] == "sigmoid") and args["RENORM"] == bool(p["renorm"])
            assert args["scale"] == p["scale"]
            assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"]) and mod.loop_iterations(cfg, p) == k
    f = [mod.flops(p) for p in mod.POINTS]
    assert f == [8388608 * 8 * 2, 2097152 * 60 * (4 + 3), 262144 * 256 * (8 + 5)]


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 60, 4, "softmax", 0, "bf16")
    c = _cfg(16, 1, 4)
    assert mod.grid(c, p) == 3 and mod.loop_iterations(c, p) == 4
    assert mod.bytes_moved(p) == 37 * 60 * 2 + 37 * 4 * 8
    assert mod.bytes_moved(_pt(37, 60, 4, "sigmoid", 1, "fp32", 1)) == 37 * 60 * 4 + 240 + 37 * 4 * 8
    assert mod.flops(p) == 37 * 60 * 7 and mod.flops(_pt(37, 60, 4, "softmax", 1, "bf16")) == 37 * 60 * 4
    args = mod.example_args(c, p)
    assert args["BIAS"] is None and not args["HAS_BIAS"] and args["BLOCK_E"] == 64 and args["BLOCK_K"] == 4
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["logits"].shape == (37, 60) and inputs["logits"].dtype == torch.bfloat16
    assert inputs["bias"] is None and inputs["topk"] == 4 and not inputs["renorm"]
    ref, ids = mod.reference(inputs), mod.reference_ids(inputs)
    assert ref.shape == (37, 4) and ref.dtype == torch.float32 and ids.shape == (37, 4)
    prob = torch.softmax(inputs["logits"].double(), dim=1)
    assert torch.allclose(ref.double(), prob.gather(1, ids), atol=1e-7)
    assert torch.equal(prob.topk(4, dim=1)[0], prob.gather(1, ids))               # the largest, in order
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 4) and base.dtype == torch.float32
    # sigmoid with a bias: chosen by score + bias, weighted by the score, renormalized, scaled
    q = _pt(9, 256, 8, "sigmoid", 1, "fp32", 1, 2.5)
    inputs = mod.make_inputs(q, device="cpu")
    b = inputs["bias"]
    assert b.shape == (256,) and b.dtype == torch.float32 and 0.01 < float(b.std()) < 0.2
    ids = mod.reference_ids(inputs)
    s = torch.sigmoid(inputs["logits"].double())
    assert torch.equal(ids, (torch.sigmoid(inputs["logits"]) + b).topk(8, dim=1)[1])
    assert not torch.equal(ids, s.topk(8, dim=1)[1])                  # the bias changes the choice
    w = s.gather(1, ids)
    assert torch.allclose(mod.reference(inputs).double(), 2.5 * w / w.sum(1, keepdim=True), atol=1e-6)
    assert torch.allclose(mod.reference(inputs).sum(1), torch.full((9,), 2.5))
    assert torch.equal(mod.make_inputs(q, seed=3, device="cpu")["logits"], mod.make_inputs(q, seed=3, device="cpu")[
        "logits"])


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(6, 16, 2, "sigmoid", 1, "fp16", 1), device="cpu")
    x, b = inputs["logits"], inputs["bias"]
    with pytest.raises(ValueError, match="BLOCK_T=12"):
        mod.moe_topk_router(x, 2, BLOCK_T=12)
    with pytest.raises(ValueError, match="PACKED=2"):
        mod.moe_topk_router(x, 2, PACKED=2)
    with pytest.raises(ValueError, match="topk=17"):
        mod.moe_topk_router(x, 17)
    with pytest.raises(ValueError, match="topk=0"):
        mod.moe_topk_router(x, 0)
    with pytest.raises(ValueError, match="scoring 'relu'"):
        mod.moe_topk_router(x, 2, scoring="relu")
    with pytest.raises(ValueError, match="sigmoid scoring only"):
        mod.moe_topk_router(x, 2, correction_bias=b)
    with pytest.raises(ValueError, match=r"fp32 \[16\]"):
        mod.moe_topk_router(x, 2, scoring="sigmoid", correction_bias=b.half())
    with pytest.raises(ValueError, match=r"fp32 \[16\]"):
        mod.moe_topk_router(x, 2, scoring="sigmoid", correction_bias=b[:8])
    with pytest.raises(ValueError, match=r"logits \[T, E\]"):
        mod.moe_topk_router(x[0], 2)
    with pytest.raises(ValueError, match="not fp32, bf16 or fp16"):
        mod.moe_topk_router(x.double(), 2)
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(4, 8, 2, "softmax", 1, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 8, 2, "softmax", 1, "fp8"))
    with pytest.raises(ValueError, match="sigmoid scoring only"):
        mod.example_args(mod.BASELINE, _pt(4, 8, 2, "softmax", 1, "bf16", 1))
    with pytest.raises(ValueError, match="topk=9"):
        mod.flops(_pt(4, 8, 9, "softmax", 1, "bf16"))
    w, ids = mod.moe_topk_router(x[:0], 2)                            # no tokens: empty outputs, no launch
    assert w.shape == (0, 2) and ids.shape == (0, 2) and ids.dtype == torch.int32


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
def test_every_point_compiles(shared_cache, arch):
    """BASELINE and its PACKED twin at the other two points (E 60: the expert mask, no
    renormalization; E 256: sigmoid with a bias), and sigmoid without a bias (topk 3: the
    output column mask)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    extra = _pt(4096, 16, 3, "sigmoid", 1, "fp16")
    for p in mod.POINTS[1:] + [extra]:
        for cfg in (mod.BASELINE, dict(mod.BASELINE, PACKED=1)):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=4, num_stages=1)
            assert res.status == "ok", f"{p} {cfg} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No runtime loop: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why SWEEP_AXES
    holds num_stages at 1)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[1]
    for cfg in (mod.BASELINE, _cfg(8, 1, 2)):
        cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
        assert len(cubins) == 1 and None not in cubins, cfg


# ----------------------------------------------------------------- the subprocess side
def _run_ids() -> None:
    """Under TRITON_INTERPRET=1: every case through moe_topk_router; its ids against
    reference_ids. One JSON line."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            _, ids = mod._run(inputs, cfg)
            ref = mod.reference_ids(inputs)
            k, E = point["topk"], point["E"]
            srt = ids.long().sort(dim=1)[0]
            wrong = (ids.long() != ref).any(dim=1).nonzero()
            key = mod._keys(inputs)[0].sort(dim=1, descending=True)[0]
            ties = (key[:, 1:min(k + 1, E)] == key[:, :min(k + 1, E) - 1]).any(dim=1)
            results[name] = {"dtype": str(ids.dtype), "contiguous": ids.is_contiguous(), "shape": list(ids.shape),
                             "in_range": bool(((ids >= 0) & (ids < E)).all()),
                             "distinct": bool((srt[:, 1:] != srt[:, :-1]).all()), "n_wrong": int(wrong.numel()),
                             "first": int(wrong[0, 0]) if wrong.numel() else -1, "tied_rows": int(ties.sum())}
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "ids":
        _run_ids()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
