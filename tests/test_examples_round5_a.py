"""examples/group_norm.py and examples/rope.py against their torch references on the CPU
through Triton's interpreter, their launcher hooks against the shapes, and a compile for
sm_90 and sm_120 from their own ``example_args``.

As in test_examples_round4.py, the interpreter must be chosen before triton is imported,
so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_round5_a.py group_norm``) that prints one JSON line; the tests
assert per case.

Shapes are small and odd: group_norm's HW and group size (C/G x HW) not multiples of
BLOCK_SIZE, a block wider than the whole group, one channel per group, one group, a large
per-channel mean (the shifted sums); rope's T not a multiple of BLOCK_T, GQA (Hq != Hk,
Hk smaller than BLOCK_H), MQA, MHA, D/2 not a power of two (D = 96, 20), q and k views of
a fused qkv buffer (strided tokens). Tolerances relative to the largest reference
magnitude, per dtype.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element


def _gn(bs, w, s):
    return {"BLOCK_SIZE": bs, "num_warps": w, "num_stages": s}


def _rp(bt, bh, w, s):
    return {"BLOCK_T": bt, "BLOCK_H": bh, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "group_norm": {
        "ragged_hw_and_group_bf16": ({"N": 2, "C": 12, "HW": 37, "G": 4, "dtype": "bf16"}, _gn(32, 4, 1)),
        "cpg10_fp16": ({"N": 3, "C": 20, "HW": 50, "G": 2, "dtype": "fp16"}, _gn(64, 2, 2)),
        "block_wider_than_group_fp32": ({"N": 2, "C": 6, "HW": 9, "G": 3, "dtype": "fp32"}, _gn(256, 8, 1)),
        "one_channel_per_group_fp32": ({"N": 1, "C": 5, "HW": 130, "G": 5, "dtype": "fp32"}, _gn(64, 1, 3)),
        "one_group_exact_bf16": ({"N": 2, "C": 4, "HW": 64, "G": 1, "dtype": "bf16"}, _gn(128, 4, 2)),
        "large_mean_fp32": ({"N": 2, "C": 8, "HW": 100, "G": 2, "dtype": "fp32"}, _gn(128, 2, 1)),
    },
    "rope": {
        "gqa_ragged_t_bf16": ({"T": 13, "Hq": 6, "Hk": 2, "D": 64, "dtype": "bf16"}, _rp(4, 4, 4, 1)),
        "mha_fp32": ({"T": 9, "Hq": 4, "Hk": 4, "D": 32, "dtype": "fp32"}, _rp(8, 2, 2, 2)),
        "half_d_48_fp16": ({"T": 11, "Hq": 8, "Hk": 4, "D": 96, "dtype": "fp16"}, _rp(2, 8, 1, 1)),
        "mqa_one_token_per_cta_bf16": ({"T": 5, "Hq": 3, "Hk": 1, "D": 20, "dtype": "bf16"}, _rp(1, 1, 1, 3)),
        "block_t_wider_than_t_fp16": ({"T": 3, "Hq": 8, "Hk": 2, "D": 128, "dtype": "fp16"}, _rp(16, 4, 8, 1)),
        "fused_qkv_views_fp32": ({"T": 10, "Hq": 4, "Hk": 2, "D": 16, "dtype": "fp32"}, _rp(4, 2, 4, 2)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    "group_norm": [_gn(1024, 4, 1), _gn(8192, 16, 2), _gn(256, 2, 1)],
    "rope": [_rp(4, 4, 4, 1), _rp(8, 8, 8, 1), _rp(1, 1, 1, 1)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: a large per-channel mean; q and k as views of one fused qkv buffer."""
    import torch

    if name == "large_mean_fp32":
        inputs["x"] += 300.0
    if name == "fused_qkv_views_fp32":
        q, k = inputs["q"], inputs["k"]
        T, Hq, Hk, D = q.shape[0], q.shape[1], k.shape[1], q.shape[2]
        qkv = torch.randn((T, Hq + 2 * Hk, D), dtype=q.dtype)
        qkv[:, :Hq], qkv[:, Hq:Hq + Hk] = q, k
        inputs["q"], inputs["k"] = qkv[:, :Hq], qkv[:, Hq:Hq + Hk]
        assert not inputs["q"].is_contiguous() and inputs["q"].stride(2) == 1


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over a kernel's cases; masked tails are hit."""
    H.assert_tunables_covered(CASES)
    gn = CASES["group_norm"].values()
    assert any(p["HW"] % c["BLOCK_SIZE"] for p, c in gn)
    assert any((p["C"] // p["G"] * p["HW"]) % c["BLOCK_SIZE"] for p, c in gn)
    assert any(p["C"] // p["G"] * p["HW"] < c["BLOCK_SIZE"] for p, c in gn)
    assert any(p["C"] // p["G"] == 1 for p, _ in gn) and any(p["G"] == 1 for p, _ in gn)
    rp = CASES["rope"].values()
    assert any(p["T"] % c["BLOCK_T"] for p, c in rp) and any(p["T"] < c["BLOCK_T"] for p, c in rp)
    assert any(p["Hq"] != p["Hk"] for p, _ in rp) and any(p["Hq"] == p["Hk"] for p, _ in rp)
    assert any(p["Hk"] % c["BLOCK_H"] for p, c in rp) and any(p["Hq"] % c["BLOCK_H"] for p, c in rp)
    assert any((p["D"] // 2) & (p["D"] // 2 - 1) for p, _ in rp)



@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_hooks_agree_with_shapes(kernel):
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes."""
    import triton

    mod = load_example(kernel)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[kernel]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, (kernel, p)
            if kernel == "group_norm":
                N, C, HW, G = p["N"], p["C"], p["HW"], p["G"]
                e = 4 if p["dtype"] == "fp32" else 2
                assert args["X"].shape == args["Y"].shape == (N, C, HW) and args["Wt"].shape == (C,)
                assert (args["C"], args["HW"], args["CPG"]) == (C, HW, C // G) and args["eps"] == 1e-5
                assert mod.bytes_moved(p) == (2 * N * C * HW + 2 * C) * e
                assert mod.grid(cfg, p) == N * G
                bs = cfg["BLOCK_SIZE"]
                assert mod.loop_iterations(cfg, p) == (triton.cdiv(C // G * HW, bs)
                                                       + C // G * triton.cdiv(HW, bs))
                assert mod.flops(p) == 6 * N * C * HW
            else:
                T, Hq, Hk, D = p["T"], p["Hq"], p["Hk"], p["D"]
                e = 4 if p["dtype"] == "fp32" else 2
                assert args["Q"].shape == args["QO"].shape == (T, Hq, D)
                assert args["K"].shape == args["KO"].shape == (T, Hk, D)
                assert args["COS"].shape == args["SIN"].shape == (T, D // 2)
                assert args["COS"].element_size() == 4 and Hq % Hk == 0
                assert args["stride_qot"] == args["stride_kot"] == (Hq + Hk) * D and args["stride_qt"] == Hq * D
                assert (args["T"], args["HQ"], args["HK"], args["HALF"], args["BLOCK_D2"]) == (T, Hq, Hk, D // 2,
                                                                                                D // 2)
                assert mod.bytes_moved(p) == 2 * T * (Hq + Hk) * D * e + 2 * T * D // 2 * 4
                assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
                assert mod.loop_iterations(cfg, p) == (triton.cdiv(Hq, cfg["BLOCK_H"])
                                                       + triton.cdiv(Hk, cfg["BLOCK_H"]))
                assert mod.flops(p) == 3 * T * (Hq + Hk) * D


def test_hooks_on_small_points_and_inputs():
    import torch

    gn, rp = load_example("group_norm"), load_example("rope")
    p = {"N": 3, "C": 20, "HW": 50, "G": 2, "dtype": "fp16"}
    assert gn.grid(_gn(64, 2, 2), p) == 6 and gn.loop_iterations(_gn(64, 2, 2), p) == 8 + 10 * 1
    assert gn.bytes_moved(p) == 2 * (2 * 3 * 20 * 50 + 2 * 20) and gn.flops(p) == 6 * 3000
    args = gn.example_args(_gn(64, 2, 2), p)
    assert args["CPG"] == 10 and args["BLOCK_SIZE"] == 64 and args["X"].dtype == torch.float16
    inputs = gn.make_inputs(p, device="cpu")
    assert inputs["G"] == 2 and float(inputs["x"].float().std()) > 1.0
    y = gn.reference(inputs).reshape(3, 2, -1)
    assert 0.5 < float(y.std()) < 2
    p = {"T": 11, "Hq": 8, "Hk": 4, "D": 96, "dtype": "fp16"}
    assert rp.grid(_rp(2, 8, 1, 1), p) == 6 and rp.loop_iterations(_rp(2, 8, 1, 1), p) == 2
    assert rp.loop_iterations(_rp(2, 4, 1, 1), p) == 3 and rp.loop_iterations(_rp(2, 1, 1, 1), p) == 12
    assert rp.bytes_moved(p) == 2 * 11 * 12 * 96 * 2 + 2 * 11 * 48 * 4
    args = rp.example_args(_rp(2, 8, 1, 1), p)
    assert args["HALF"] == 48 and args["BLOCK_D2"] == 64 and args["stride_kot"] == 12 * 96
    inputs = rp.make_inputs(p, device="cpu")
    assert inputs["cos"].dtype == torch.float32 and inputs["cos"].shape == (11, 48)
    assert torch.allclose(inputs["cos"] ** 2 + inputs["sin"] ** 2, torch.ones(11, 48))
    ref = rp.reference(inputs)
    assert ref.shape == (11, 12, 96)
    # a rotation keeps each pair's norm
    x = torch.cat((inputs["q"], inputs["k"]), dim=1).float()
    pair = lambda t: t[..., :48] ** 2 + t[..., 48:] ** 2     # noqa: E731
    assert torch.allclose(pair(ref), pair(x), rtol=1e-4, atol=1e-4)


def test_bad_inputs_are_value_errors():
    import torch

    gn, rp = load_example("group_norm"), load_example("rope")
    inputs = gn.make_inputs({"N": 1, "C": 8, "HW": 16, "G": 4, "dtype": "fp32"}, device="cpu")
    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    with pytest.raises(ValueError, match="BLOCK_SIZE=100"):
        gn.group_norm(x, 4, w, b, BLOCK_SIZE=100)
    with pytest.raises(ValueError, match="G=3"):
        gn.group_norm(x, 3, w, b)
    with pytest.raises(ValueError, match="torch.float16"):
        gn.group_norm(x, 4, w.half(), b)
    with pytest.raises(ValueError, match=r"\(1, 8, 16\), \(8,\), \(7,\)"):
        gn.group_norm(x, 4, w, b[:7])
    with pytest.raises(ValueError, match="fp8"):
        gn.make_inputs({"N": 1, "C": 8, "HW": 16, "dtype": "fp8"}, device="cpu")
    inputs = rp.make_inputs({"T": 4, "Hq": 4, "Hk": 2, "D": 16, "dtype": "fp16"}, device="cpu")
    q, k, cos, sin = inputs["q"], inputs["k"], inputs["cos"], inputs["sin"]
    with pytest.raises(ValueError, match="BLOCK_H=3"):
        rp.rope(q, k, cos, sin, BLOCK_H=3)
    with pytest.raises(ValueError, match="Hq=4 must be a multiple of Hk=3"):
        rp.rope(q, torch.randn(4, 3, 16).half(), cos, sin)
    with pytest.raises(ValueError, match="D even"):
        rp.rope(q[..., :15], k[..., :15], cos, sin)
    with pytest.raises(ValueError, match="fp32 cos"):
        rp.rope(q, k, cos.half(), sin.half())
    with pytest.raises(ValueError, match=r"\[4, 8\]"):
        rp.rope(q, k, cos[:3], sin[:3])
    with pytest.raises(ValueError, match=r"\[4, 6, 16\]"):
        rp.rope(q, k, cos, sin, out=torch.empty(4, 5, 16, dtype=torch.float16))


def test_study_sweeps_declare_round5_a():
    """scripts/rank_study.py's SWEEPS: both kernels held-out-5, >= 40 configs x the 3 POINTS each
    (every config checked to compile and fit for sm_90 at every point with triton 3.6.0)."""
    sizes = {}
    for name, (cfgs, points, _) in H.study_sweeps(CASES, "held-out-5").items():
        sizes[name] = (len(cfgs), len(points))
        assert load_example(name).BASELINE in cfgs
    assert sizes == {"group_norm": (48, 3), "rope": (64, 3)}


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
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


if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
