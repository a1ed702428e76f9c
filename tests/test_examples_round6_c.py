"""examples/kv_quant.py and examples/transpose.py against their torch references on the CPU
through Triton's interpreter, their launcher hooks against the shapes, and a compile for
sm_90 and sm_120 from their own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_round6_c.py kv_quant``) that prints one JSON line; the tests
assert per case. ``kv_quant_scales`` is a second pass over kv_quant's cases that checks the
wrapper's other output, the scales, and the dequantization error.

Shapes are small and odd: kv_quant's T not a multiple of BLOCK_T, H not a multiple of
BLOCK_H, BLOCK_H and BLOCK_T wider than H and T, D not a power of two, all-zero rows (scale
1, q 0), x a strided view of a fused kv buffer; transpose's M and N not multiples of the
tile, a strip of TILES_PER_CTA tiles running past M, a tile wider than the whole matrix, a
view with a row stride other than N. kv_quant's q may differ from round(x / s) by one step
(x is multiplied by the reciprocal scale, so a value at a .5 tie may round the other way):
its tolerance is one step; the dequantized values must be within half a step. transpose is
a copy: exact.
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
# x max|ref|, absolute, per element. kv_quant: max|ref| is 127, so one int8 step; transpose exact.
TOLS = {"kv_quant": {"fp16": 1.01 / 127, "bf16": 1.01 / 127},
        "transpose": {"fp32": 0.0, "bf16": 0.0, "fp16": 0.0}}


def _kq(bt, bh, w, s):
    return {"BLOCK_T": bt, "BLOCK_H": bh, "num_warps": w, "num_stages": s}


def _tr(bm, bn, tiles, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "TILES_PER_CTA": tiles, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "kv_quant": {
        "ragged_t_and_h_bf16": ({"T": 13, "H": 5, "D": 64, "dtype": "bf16"}, _kq(4, 2, 4, 1)),
        "d40_block_h_wider_than_h_fp16": ({"T": 9, "H": 3, "D": 40, "dtype": "fp16"}, _kq(2, 4, 2, 2)),
        "block_t_wider_than_t_bf16": ({"T": 3, "H": 8, "D": 128, "dtype": "bf16"}, _kq(16, 8, 8, 1)),
        "zero_rows_fp16": ({"T": 10, "H": 4, "D": 32, "dtype": "fp16"}, _kq(1, 1, 1, 1)),
        "fused_kv_view_bf16": ({"T": 11, "H": 2, "D": 16, "dtype": "bf16"}, _kq(8, 2, 4, 2)),
        "d256_one_token_per_cta_fp16": ({"T": 6, "H": 16, "D": 256, "dtype": "fp16"}, _kq(1, 8, 2, 1)),
    },
    "transpose": {
        "ragged_m_n_fp16": ({"B": 2, "M": 37, "N": 19, "dtype": "fp16"}, _tr(8, 16, 3, 2, 1)),
        "square_exact_fp32": ({"B": 1, "M": 64, "N": 64, "dtype": "fp32"}, _tr(32, 32, 1, 4, 1)),
        "strip_past_m_bf16": ({"B": 3, "M": 20, "N": 33, "dtype": "bf16"}, _tr(16, 8, 4, 1, 2)),
        "tile_wider_than_matrix_fp32": ({"B": 2, "M": 5, "N": 7, "dtype": "fp32"}, _tr(64, 32, 2, 8, 1)),
        "strided_rows_view_bf16": ({"B": 2, "M": 24, "N": 40, "dtype": "bf16"}, _tr(16, 16, 2, 4, 3)),
        "tall_thin_fp16": ({"B": 1, "M": 130, "N": 3, "dtype": "fp16"}, _tr(32, 4, 2, 2, 1)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    "kv_quant": [_kq(4, 2, 4, 1), _kq(16, 8, 8, 1), _kq(1, 1, 2, 1)],
    "transpose": [_tr(64, 64, 1, 4, 1), _tr(128, 128, 4, 8, 1), _tr(32, 32, 1, 2, 2)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: all-zero rows and a huge row; x as strided views."""
    import torch

    if name == "zero_rows_fp16":
        x = inputs["x"]
        x[0, 0] = 0
        x[3, 1:3] = 0
        x[9, 3] = 0
        x[5, 2] *= 1000
        x[6, 0] = 0
        x[6, 0, 7] = -1e-4                # one non-zero element: it maps to -127, the rest to 0
    if name == "fused_kv_view_bf16":
        x = inputs["x"]
        T, Hk, D = x.shape
        kv = torch.randn((T, 3 * Hk, D), dtype=x.dtype)
        kv[:, Hk:2 * Hk] = x
        inputs["x"] = kv[:, Hk:2 * Hk]
        assert not inputs["x"].is_contiguous() and inputs["x"].stride(2) == 1
    if name == "strided_rows_view_bf16":
        x = inputs["x"]
        B, M, N = x.shape
        big = torch.randn((B, M, N + 8), dtype=x.dtype)
        big[..., :N] = x
        inputs["x"] = big[..., :N]
        assert inputs["x"].stride(1) == N + 8


def _scale_cases() -> None:
    """Under the interpreter: kv_quant's scales vs reference_scales, and |q * s - x| <= s / 2."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"

    mod = load_example("kv_quant")
    results = {}
    for name, (point, cfg) in CASES["kv_quant"].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            q, s = mod.kv_quant(inputs["x"], **cfg)
            ref_s = mod.reference_scales(inputs)
            x = inputs["x"].float()
            deq_err = ((q.float() * s[..., None] - x).abs() / s[..., None]).max()
            results[name] = {"q_dtype": str(q.dtype), "s_dtype": str(s.dtype), "s_shape": list(s.shape),
                             "s_rel_err": float(((s - ref_s).abs() / ref_s).max()),
                             "deq_err_steps": float(deq_err),
                             "zero_rows": int((x.abs().amax(-1) == 0).sum()),
                             "zero_rows_ok": bool(((s == 1) | (x.abs().amax(-1) > 0)).all()),
                             "q_max": int(q.abs().max()),
                             "off_by_one": int((q.float() != mod.reference(inputs)).sum())}
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")
    if kernel == "kv_quant":
        assert res["scale"] == 127.0 and res["baseline"]["max_err"] == 0.0


@pytest.mark.parametrize("name", list(CASES["kv_quant"]))
def test_kv_quant_scales_and_dequantization(name):
    res = _results("kv_quant_scales")[name]
    assert "error" not in res, f"kv_quant/{name}: {res.get('error')}"
    assert res["q_dtype"] == "torch.int8" and res["s_dtype"] == "torch.float32"
    assert res["s_shape"] == [CASES["kv_quant"][name][0][k] for k in ("T", "H")]
    assert res["s_rel_err"] <= 1e-6, res
    assert res["deq_err_steps"] <= 0.5 + 1e-3, res        # within half a step of x (ties either way)
    assert res["zero_rows_ok"] and res["q_max"] == 127
    n = CASES["kv_quant"][name][0]
    assert res["off_by_one"] <= 0.01 * n["T"] * n["H"] * n["D"], res
    if name == "zero_rows_fp16":
        assert res["zero_rows"] == 4


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over a kernel's cases; masked tails are hit."""
    H.assert_tunables_covered(CASES)
    kq = CASES["kv_quant"].values()
    assert any(p["T"] % c["BLOCK_T"] for p, c in kq) and any(p["T"] < c["BLOCK_T"] for p, c in kq)
    assert any(p["H"] % c["BLOCK_H"] for p, c in kq) and any(p["H"] < c["BLOCK_H"] for p, c in kq)
    assert any(p["D"] & (p["D"] - 1) for p, _ in kq)
    assert {p["dtype"] for p, _ in kq} == {"fp16", "bf16"}
    tr = CASES["transpose"].values()
    assert any(p["M"] % c["BLOCK_M"] for p, c in tr) and any(p["N"] % c["BLOCK_N"] for p, c in tr)
    assert any(p["M"] < c["BLOCK_M"] and p["N"] < c["BLOCK_N"] for p, c in tr)
    assert any(-(-p["M"] // c["BLOCK_M"]) % c["TILES_PER_CTA"] for p, c in tr)   # last strip runs past M
    assert any(-(-p["M"] // c["BLOCK_M"]) < c["TILES_PER_CTA"] for p, c in tr)
    assert {p["dtype"] for p, _ in tr} == {"fp16", "bf16", "fp32"}



@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_hooks_agree_with_shapes(kernel):
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes."""
    import torch
    import triton

    mod = load_example(kernel)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert len({tuple(sorted(p.items())) for p in mod.POINTS}) == 3
    for cfg in [mod.BASELINE] + COMPILE_CFGS[kernel]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, (kernel, p)
            e = 4 if p["dtype"] == "fp32" else 2
            if kernel == "kv_quant":
                T, Hh, D = p["T"], p["H"], p["D"]
                assert args["X"].shape == args["Q"].shape == (T, Hh, D) and args["S"].shape == (T, Hh)
                assert args["Q"].dtype == torch.int8 and args["S"].dtype == torch.float32
                assert (args["T"], args["H"], args["D"], args["BLOCK_D"]) == (T, Hh, D, triton.next_power_of_2(D))
                assert args["stride_xt"] == args["stride_qt"] == Hh * D and args["stride_st"] == Hh
                assert mod.bytes_moved(p) == T * Hh * D * (e + 1) + T * Hh * 4
                assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(Hh, cfg["BLOCK_H"])
                assert mod.flops(p) == 7 * T * Hh * D + 2 * T * Hh
            else:
                B, M, N = p["B"], p["M"], p["N"]
                assert args["X"].shape == (B, M, N) and args["OUT"].shape == (B, N, M)
                assert (args["M"], args["N"], args["stride_xm"], args["stride_on"]) == (M, N, N, M)
                assert args["stride_xb"] == args["stride_ob"] == M * N
                assert mod.bytes_moved(p) == 2 * B * M * N * e
                span = cfg["BLOCK_M"] * cfg["TILES_PER_CTA"]
                assert mod.grid(cfg, p) == B * triton.cdiv(M, span) * triton.cdiv(N, cfg["BLOCK_N"])
                assert mod.loop_iterations(cfg, p) == min(cfg["TILES_PER_CTA"], triton.cdiv(M, cfg["BLOCK_M"]))
                assert mod.flops(p) == 0


def test_hooks_on_small_points_and_inputs():
    import torch

    kq, tr = load_example("kv_quant"), load_example("transpose")
    p = {"T": 13, "H": 5, "D": 40, "dtype": "fp16"}
    assert kq.grid(_kq(4, 2, 4, 1), p) == 4 and kq.loop_iterations(_kq(4, 2, 4, 1), p) == 3
    assert kq.loop_iterations(_kq(4, 8, 4, 1), p) == 1 and kq.grid(_kq(16, 1, 4, 1), p) == 1
    assert kq.bytes_moved(p) == 13 * 5 * 40 * 3 + 13 * 5 * 4
    args = kq.example_args(_kq(4, 2, 4, 1), p)
    assert args["BLOCK_D"] == 64 and args["stride_qh"] == 40 and args["X"].dtype == torch.float16
    inputs = kq.make_inputs(p, device="cpu")
    amax = inputs["x"].float().abs().amax(-1)
    assert float(amax.max() / amax.min()) > 5               # rows of different magnitude
    ref = kq.reference(inputs)
    assert ref.shape == (13, 5, 40) and float(ref.abs().amax(-1).min()) == 127.0
    p = {"B": 2, "M": 37, "N": 19, "dtype": "bf16"}
    c = _tr(8, 16, 3, 2, 1)
    assert tr.grid(c, p) == 2 * 2 * 2 and tr.loop_iterations(c, p) == 3
    assert tr.loop_iterations(_tr(64, 16, 4, 2, 1), p) == 1 and tr.grid(_tr(64, 16, 4, 2, 1), p) == 4
    assert tr.bytes_moved(p) == 2 * 2 * 37 * 19 * 2
    inputs = tr.make_inputs(p, device="cpu")
    assert tr.reference(inputs).shape == (2, 19, 37)


def test_bad_inputs_are_value_errors():
    import torch

    kq, tr = load_example("kv_quant"), load_example("transpose")
    x = torch.randn(4, 2, 16).half()
    with pytest.raises(ValueError, match="BLOCK_T=3"):
        kq.kv_quant(x, BLOCK_T=3)
    with pytest.raises(ValueError, match="BLOCK_H=0"):
        kq.kv_quant(x, BLOCK_H=0)
    with pytest.raises(ValueError, match="fp16 or bf16"):
        kq.kv_quant(x.float())
    with pytest.raises(ValueError, match=r"\[T, H, D\]"):
        kq.kv_quant(x[0])
    with pytest.raises(ValueError, match="fp32"):
        kq.make_inputs({"T": 1, "H": 1, "D": 8, "dtype": "fp32"}, device="cpu")
    with pytest.raises(ValueError, match="fp32"):
        kq.bytes_moved({"T": 1, "H": 1, "D": 8, "dtype": "fp32"})
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        tr.transpose(x, BLOCK_N=48)
    with pytest.raises(ValueError, match="TILES_PER_CTA=0"):
        tr.transpose(x, TILES_PER_CTA=0)
    with pytest.raises(ValueError, match="fp16, bf16 or fp32"):
        tr.transpose(x.double())
    with pytest.raises(ValueError, match=r"\[B, M, N\]"):
        tr.transpose(torch.randn(2, 2, 2, 2))
    with pytest.raises(ValueError, match="fp8"):
        tr.make_inputs({"B": 1, "M": 4, "N": 4, "dtype": "fp8"}, device="cpu")


def test_study_sweeps_declare_round6_c():
    """scripts/rank_study.py's SWEEPS: both kernels held-out-6, >= 40 configs x the 3 POINTS each
    (every config checked to compile and fit for sm_90 at every point with triton 3.6.0)."""
    sizes = {}
    for name, (cfgs, points, axes) in H.study_sweeps(CASES, "held-out-6").items():
        assert list(axes) == list(load_example(name).TUNABLES)
        sizes[name] = (len(cfgs), len(points))
        assert load_example(name).BASELINE in cfgs
    assert sizes == {"kv_quant": (60, 3), "transpose": (54, 3)}


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
    if sys.argv[1] == "kv_quant_scales":
        _scale_cases()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOLS[sys.argv[1]], prepare=_prepare, baseline=True)
