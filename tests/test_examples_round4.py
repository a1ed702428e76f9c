"""examples/w8a16_gemm.py and examples/causal_conv1d.py against their torch references
on the CPU through Triton's interpreter, their launcher hooks against the shapes, and
a compile for sm_90 and sm_120 from their own ``example_args``.

As in test_examples_round3_a.py, the interpreter must be chosen before triton is
imported, so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_round4.py w8a16_gemm``) that prints one JSON line; the
tests assert per case. bf16 dot operands are widened to fp32 inside the interpreter only.

Shapes are small and odd: M, N, K not multiples of their blocks (K tails inside a scale
group, several groups per K, one K tile wider than K); D and L not multiples of their
blocks, L shorter than the conv width, widths 2 and 3 besides 4. Tolerances relative to
the largest reference magnitude, per dtype.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element


def _gm(bm, bn, bk, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s}


def _cv(bd, bl, w, s):
    return {"BLOCK_D": bd, "BLOCK_L": bl, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "w8a16_gemm": {
        "ragged_mnk_bf16": ({"M": 20, "N": 70, "K": 300, "dtype": "bf16"}, _gm(16, 32, 64, 4, 2)),
        "decode_rows_fp16": ({"M": 5, "N": 96, "K": 384, "dtype": "fp16"}, _gm(16, 64, 128, 2, 3)),
        "k_tile_wider_than_k_fp16": ({"M": 33, "N": 40, "K": 100, "dtype": "fp16"}, _gm(32, 16, 128, 8, 1)),
        "exact_tiles_bf16": ({"M": 64, "N": 128, "K": 256, "dtype": "bf16"}, _gm(64, 128, 64, 4, 4)),
        "k_tail_in_group_fp16": ({"M": 17, "N": 33, "K": 200, "dtype": "fp16"}, _gm(16, 256, 64, 1, 2)),
    },
    "causal_conv1d": {
        "ragged_d_and_l_bf16": ({"B": 2, "D": 10, "L": 100, "dtype": "bf16"}, _cv(4, 32, 4, 1)),
        "l_shorter_than_w_fp32": ({"B": 3, "D": 5, "L": 2, "dtype": "fp32"}, _cv(8, 16, 2, 3)),
        "width3_fp16": ({"B": 1, "D": 6, "L": 50, "W": 3, "dtype": "fp16"}, _cv(2, 16, 1, 2)),
        "width2_l1_bf16": ({"B": 2, "D": 3, "L": 1, "W": 2, "dtype": "bf16"}, _cv(1, 8, 1, 1)),
        "exact_tiles_fp32": ({"B": 2, "D": 16, "L": 256, "dtype": "fp32"}, _cv(16, 64, 8, 2)),
        "block_l_wider_than_l_fp16": ({"B": 2, "D": 33, "L": 70, "dtype": "fp16"}, _cv(32, 128, 4, 4)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    "w8a16_gemm": [_gm(16, 128, 128, 4, 3), _gm(64, 128, 64, 8, 4), _gm(16, 256, 64, 8, 2)],
    "causal_conv1d": [_cv(16, 256, 4, 1), _cv(64, 128, 8, 3), _cv(8, 512, 2, 1)],
}


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
    """Each tunable takes at least two values over a kernel's cases (BLOCK_K both of its
    two); masked tails are hit."""
    H.assert_tunables_covered(CASES)
    gm = CASES["w8a16_gemm"].values()
    assert {c["BLOCK_K"] for _, c in gm} == {64, 128}
    for dim, blk in (("M", "BLOCK_M"), ("N", "BLOCK_N"), ("K", "BLOCK_K")):
        assert any(p[dim] % c[blk] for p, c in gm), dim
    cv = CASES["causal_conv1d"].values()
    assert any(p["D"] % c["BLOCK_D"] for p, c in cv) and any(p["L"] % c["BLOCK_L"] for p, c in cv)
    assert any(p["L"] < p.get("W", 4) for p, _ in cv)



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
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} <= set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[kernel]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, (kernel, p)
            if kernel == "w8a16_gemm":
                M, N, K = p["M"], p["N"], p["K"]
                assert args["X"].shape == (M, K) and args["WQ"].shape == (K, N) and args["OUT"].shape == (M, N)
                assert args["S"].shape == (triton.cdiv(K, 128), N) and args["GROUP"] == 128
                assert (args["M"], args["N"], args["K"]) == (M, N, K) and args["stride_wk"] == N
                assert mod.bytes_moved(p) == K * N + 2 * (M * K + K // 128 * N + M * N)
                assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(K, cfg["BLOCK_K"])
                assert mod.flops(p) == 2 * M * N * K
            else:
                B, D, L = p["B"], p["D"], p["L"]
                assert args["X"].shape == args["OUT"].shape == (B, D, L) and args["Wt"].shape == (D, 4)
                assert args["KW"] == 4 and (args["D"], args["L"]) == (D, L) and args["stride_xd"] == L
                assert 128 * 2**20 <= args["X"].numel() * args["X"].element_size() <= 2**29
                assert mod.grid(cfg, p) == B * triton.cdiv(D, cfg["BLOCK_D"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(L, cfg["BLOCK_L"])
                assert mod.flops(p) == 13 * B * D * L


def test_hooks_on_small_points_and_inputs():
    import torch

    gm, cv = load_example("w8a16_gemm"), load_example("causal_conv1d")
    p = {"M": 20, "N": 70, "K": 300, "dtype": "bf16"}
    assert gm.grid(_gm(16, 32, 64, 4, 2), p) == 2 * 3 and gm.loop_iterations(_gm(16, 32, 64, 4, 2), p) == 5
    assert gm.bytes_moved(p) == 300 * 70 + 2 * (20 * 300 + 3 * 70 + 20 * 70)
    inputs = gm.make_inputs(p, device="cpu")
    assert inputs["wq"].dtype == torch.int8 and inputs["scales"].shape == (3, 70)
    assert int(inputs["wq"].min()) >= -127 and int(inputs["wq"].abs().max()) > 100
    assert float(inputs["x"].float().std()) > 0.5 and float(inputs["scales"].float().min()) > 0
    assert 0.3 < float(gm.reference(inputs).std()) < 3
    p = {"B": 3, "D": 10, "L": 100, "W": 3, "dtype": "fp16"}
    assert cv.grid(_cv(4, 32, 4, 1), p) == 3 * 3 and cv.loop_iterations(_cv(4, 32, 4, 1), p) == 4
    assert cv.bytes_moved(p) == 2 * (2 * 3 * 10 * 100 + 10 * 3 + 10) and cv.flops(p) == 11 * 3000
    args = cv.example_args(_cv(4, 32, 4, 1), p)
    assert args["KW"] == 3 and args["Wt"].shape == (10, 3) and args["stride_xb"] == 1000
    inputs = cv.make_inputs(p, device="cpu")
    assert float(inputs["x"].float().std()) > 0.5 and float(inputs["weight"].float().std()) > 0.2


def test_bad_inputs_are_value_errors():
    import torch

    gm, cv = load_example("w8a16_gemm"), load_example("causal_conv1d")
    inputs = gm.make_inputs({"M": 4, "N": 16, "K": 256, "dtype": "fp16"}, device="cpu")
    x, wq, s = inputs["x"], inputs["wq"], inputs["scales"]
    with pytest.raises(ValueError, match="BLOCK_K=32"):
        gm.w8a16_gemm(x, wq, s, BLOCK_K=32)
    with pytest.raises(ValueError, match="BLOCK_K=256"):
        gm.w8a16_gemm(x, wq, s, BLOCK_K=256)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        gm.w8a16_gemm(x, wq, s, BLOCK_N=48)
    with pytest.raises(ValueError, match=r"\(4, 256\), \(255, 16\)"):
        gm.w8a16_gemm(x, wq[:255], s)
    with pytest.raises(ValueError, match="torch.int16"):
        gm.w8a16_gemm(x, wq.short(), s)
    with pytest.raises(ValueError, match=r"\(1, 16\)"):
        gm.w8a16_gemm(x, wq, s[:1])
    with pytest.raises(ValueError, match="fp32"):
        gm.make_inputs({"M": 4, "N": 16, "K": 128, "dtype": "fp32"}, device="cpu")
    inputs = cv.make_inputs({"B": 1, "D": 4, "L": 8, "dtype": "fp32"}, device="cpu")
    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    with pytest.raises(ValueError, match="BLOCK_L=100"):
        cv.causal_conv1d(x, w, b, BLOCK_L=100)
    with pytest.raises(ValueError, match="W=5"):
        cv.causal_conv1d(x, torch.randn(4, 5), b)
    with pytest.raises(ValueError, match="torch.float16"):
        cv.causal_conv1d(x, w.half(), b)
    with pytest.raises(ValueError, match=r"\(1, 4, 8\), \(4, 4\), \(3,\)"):
        cv.causal_conv1d(x, w, b[:3])
    with pytest.raises(ValueError, match="fp8"):
        cv.make_inputs({"B": 1, "D": 4, "L": 8, "dtype": "fp8"}, device="cpu")


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
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, baseline=True)
