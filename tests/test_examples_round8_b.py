"""examples/layernorm_bwd.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, and a compile for sm_90 and sm_120 from
its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round8_b.py layernorm_bwd``) that prints one JSON line; the
tests assert per case. launch returns dx only, so a second subprocess (``... grads``) checks
the wrapper's other two outputs, dw and db, against reference_grads with their own scale
(they are sums over M rows), and that a second launch gives them bit for bit again (the
partials are reduced in a fixed order).

Shapes are small and odd: both paths of the kernel (the row in one chunk, BLOCK_N >= N, and
the chunked row, BLOCK_N < N, whose workspace row is stored by the first row tile and then
loaded-added-stored by the later ones), M not a multiple of ROWS_PER_CTA (a short last CTA,
and a partial last row tile), ROWS_PER_CTA wider than M (one CTA) and of 1 (one row per
CTA), N not a multiple of BLOCK_N, a block wider than the row, exact tiles, x and dy as
strided row views, an fp32 weight, and a 16384-wide row (walked in 4096-wide chunks).
Tolerances relative to the largest reference magnitude, per dtype.
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
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element
GRAD_TOL = {"fp16": 1e-4, "bf16": 1e-4}                # dw, db (fp32 sums) x their own max|ref|
KERNEL = "layernorm_bwd"


def _cfg(r, bm, bn, w, s):
    return {"ROWS_PER_CTA": r, "BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "chunked_ragged_m_and_n_bf16": ({"M": 7, "N": 300, "dtype": "bf16"}, _cfg(4, 2, 128, 4, 1)),
        "one_chunk_block_wider_than_row_fp16": ({"M": 9, "N": 300, "dtype": "fp16"}, _cfg(3, 1, 512, 2, 2)),
        "chunked_exact_tiles_bf16": ({"M": 16, "N": 256, "dtype": "bf16"}, _cfg(8, 2, 64, 8, 1)),
        "one_chunk_exact_row_fp16": ({"M": 16, "N": 128, "dtype": "fp16"}, _cfg(8, 2, 128, 4, 1)),
        "strided_rows_bf16": ({"M": 11, "N": 96, "dtype": "bf16"}, _cfg(4, 2, 32, 4, 2)),
        "fp32_weight_one_cta_fp16": ({"M": 5, "N": 200, "dtype": "fp16"}, _cfg(8, 4, 256, 4, 1)),
        "one_row_per_cta_fp16": ({"M": 3, "N": 1000, "dtype": "fp16"}, _cfg(1, 1, 256, 2, 1)),
        "one_cta_many_tiles_bf16": ({"M": 37, "N": 70, "dtype": "bf16"}, _cfg(64, 4, 32, 2, 1)),
        "hidden_16384_chunked_bf16": ({"M": 3, "N": 16384, "dtype": "bf16"}, _cfg(2, 1, 4096, 8, 1)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first): the one-chunk
# path, the chunked path, and the widest one-chunk tile
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(32, 1, 4096, 8, 1), _cfg(16, 2, 1024, 4, 1), _cfg(64, 2, 8192, 16, 1)],
}



def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided row views of x and dy; an fp32 weight."""
    import torch

    if name == "strided_rows_bf16":
        for key, pad in (("x", 8), ("dy", 24)):
            t = inputs[key]
            wide = torch.zeros((t.shape[0], t.shape[1] + pad), dtype=t.dtype)
            wide[:, :t.shape[1]] = t
            inputs[key] = wide[:, :t.shape[1]]
            assert not inputs[key].is_contiguous() and inputs[key].stride(1) == 1
    if name == "fp32_weight_one_cta_fp16":
        inputs["weight"] = inputs["weight"].float() + 0.01


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_weight_and_bias_grads(name):
    """dw and db: fp32 [N], within tolerance of reference_grads at their own scale, and bit for
    bit the same on a second launch."""
    res = _results("grads")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["dtypes"] == ["torch.float32", "torch.float32"] and res["shapes"] == [[res["N"]]] * 2
    assert res["dw"]["n_bad"] == 0, H.mismatch(res["dw"], f"{name} dw")
    assert res["db"]["n_bad"] == 0, H.mismatch(res["db"], f"{name} db")
    assert res["repeat_identical"]


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; both paths, the tails, exact tiles."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    one_chunk = [p["N"] <= c["BLOCK_N"] for p, c in cases]
    assert any(one_chunk) and not all(one_chunk)
    assert any(p["N"] < c["BLOCK_N"] for p, c in cases)                          # block wider than row
    assert any(p["N"] % c["BLOCK_N"] and p["N"] > c["BLOCK_N"] for p, c in cases)  # chunked N tail
    assert any(p["M"] % c["ROWS_PER_CTA"] for p, c in cases)                      # short last CTA
    assert any(p["M"] % c["ROWS_PER_CTA"] % c["BLOCK_M"] for p, c in cases)       # partial last row tile
    assert any(c["ROWS_PER_CTA"] > p["M"] for p, c in cases)                      # one CTA
    assert any(c["ROWS_PER_CTA"] >= 2 * c["BLOCK_M"] and p["N"] > c["BLOCK_N"] for p, c in cases)  # RMW
    assert any(p["N"] % c["BLOCK_N"] == 0 and p["M"] % c["ROWS_PER_CTA"] == 0 for p, c in cases)
    assert any(p["N"] >= 16384 for p, _ in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once; the workspace halves are stand-ins sized to
    dw and db), grid and loop_iterations are the tiling of those shapes."""
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "reference_grads"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, p
            M, N = p["M"], p["N"]
            assert args["X"].shape == args["DY"].shape == args["DX"].shape == (M, N)
            assert args["W"].shape == (N,) and args["X"].element_size() == 2
            assert args["MEAN"].shape == args["RSTD"].shape == (M,)
            assert args["DWP"].shape == args["DBP"].shape == (N,) and args["DWP"].element_size() == 4
            assert (args["M"], args["N"], args["stride_xm"], args["stride_dym"], args["stride_dxm"]) == (M, N, N, N, N)
            assert args["stride_p"] == N and args["ONE_CHUNK"] == (cfg["BLOCK_N"] >= N)
            assert all(args[k] == cfg[k] for k in ("ROWS_PER_CTA", "BLOCK_M", "BLOCK_N"))
            assert mod.bytes_moved(p) == 3 * M * N * 2 + 2 * N + 8 * M + 8 * N
            assert mod.grid(cfg, p) == triton.cdiv(M, cfg["ROWS_PER_CTA"])
            tiles = cfg["ROWS_PER_CTA"] // cfg["BLOCK_M"]
            chunks = 1 if cfg["BLOCK_N"] >= N else 2 * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == tiles * chunks
            assert mod.flops(p) == 13 * M * N


def test_study_sweep():
    """STUDY_AXES: >= 40 valid configs (num_stages one value: no dot, it changes no cubin), the
    BASELINE among them; the points big enough (> 50 MiB, 384-960 MiB)."""
    STUDY_AXES = H.study_sweeps([KERNEL], "held-out-8")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    keys = list(STUDY_AXES)
    cfgs = [dict(zip(keys, v)) for v in itertools.product(*STUDY_AXES.values())]
    assert 48 <= len(cfgs) <= 72 and set(keys) == set(mod.TUNABLES) and mod.BASELINE in cfgs
    for cfg in cfgs:
        mod._check_cfg(cfg)
    assert all(mod.bytes_moved(p) > 50 * 2**20 for p in mod.POINTS)


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = {"M": 7, "N": 300, "dtype": "bf16"}
    assert mod.grid(_cfg(4, 2, 128, 4, 1), p) == 2 and mod.grid(_cfg(1, 1, 128, 4, 1), p) == 7
    assert mod.loop_iterations(_cfg(4, 2, 128, 4, 1), p) == 2 * 2 * 3
    assert mod.loop_iterations(_cfg(4, 2, 512, 4, 1), p) == 2
    assert mod.bytes_moved(p) == 2 * (3 * 7 * 300 + 300) + 8 * 7 + 8 * 300 and mod.flops(p) == 13 * 7 * 300
    args = mod.example_args(_cfg(4, 2, 128, 4, 1), p)
    assert args["BLOCK_N"] == 128 and not args["ONE_CHUNK"] and args["X"].dtype == torch.bfloat16
    assert mod.example_args(_cfg(4, 2, 512, 4, 1), p)["ONE_CHUNK"]
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["x"].shape == inputs["dy"].shape == (7, 300) and inputs["weight"].shape == (300,)
    assert inputs["mean"].dtype == inputs["rstd"].dtype == torch.float32 and inputs["mean"].shape == (7,)
    ref = mod.reference(inputs)
    assert ref.shape == (7, 300) and ref.dtype == torch.float32
    # against autograd through torch's LayerNorm in fp32
    x = inputs["x"].float().requires_grad_()
    w = inputs["weight"].float().requires_grad_()
    b = torch.zeros(300, requires_grad=True)
    torch.nn.functional.layer_norm(x, (300,), w, b, mod.EPS).backward(inputs["dy"].float())
    dw, db = mod.reference_grads(inputs)
    assert torch.allclose(ref, x.grad, atol=1e-4) and torch.allclose(dw, w.grad, atol=1e-4)
    assert torch.allclose(db, b.grad, atol=1e-4)
    # dx sums to zero along each row (a mean was subtracted)
    assert ref.sum(-1).abs().max() < 1e-3


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs({"M": 4, "N": 16, "dtype": "fp16"}, device="cpu")
    x, dy, w, mean, rstd = inputs["x"], inputs["dy"], inputs["weight"], inputs["mean"], inputs["rstd"]
    with pytest.raises(ValueError, match="BLOCK_N=100"):
        mod.layer_norm_backward(dy, x, w, mean, rstd, BLOCK_N=100)
    with pytest.raises(ValueError, match="BLOCK_M=3"):
        mod.layer_norm_backward(dy, x, w, mean, rstd, BLOCK_M=3, ROWS_PER_CTA=6)
    with pytest.raises(ValueError, match="ROWS_PER_CTA=6"):
        mod.layer_norm_backward(dy, x, w, mean, rstd, BLOCK_M=4, ROWS_PER_CTA=6)
    with pytest.raises(ValueError, match="share one fp16 / bf16"):
        mod.layer_norm_backward(dy.bfloat16(), x, w, mean, rstd)
    with pytest.raises(ValueError, match="share one fp16 / bf16"):
        mod.layer_norm_backward(dy.float(), x.float(), w, mean, rstd)
    with pytest.raises(ValueError, match=r"\(4, 16\), \(4, 15\), \(16,\)"):
        mod.layer_norm_backward(dy, x[:, :15], w, mean, rstd)
    with pytest.raises(ValueError, match=r"fp32 \[4\]"):
        mod.layer_norm_backward(dy, x, w, mean.half(), rstd)
    with pytest.raises(ValueError, match=r"fp32 \[4\]"):
        mod.layer_norm_backward(dy, x, w, mean, rstd[:3])
    with pytest.raises(ValueError, match="weight dtype"):
        mod.layer_norm_backward(dy, x, w.double(), mean, rstd)
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs({"M": 1, "N": 8, "dtype": "fp32"}, device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved({"M": 1, "N": 8, "dtype": "fp8"})


def test_empty_inputs():
    """M = 0: dx is empty, dw and db are zeros, no kernel runs."""
    import torch

    mod = load_example(KERNEL)
    x = torch.empty((0, 8), dtype=torch.float16)
    dx, dw, db = mod.layer_norm_backward(x, x, torch.ones(8, dtype=torch.float16), torch.empty(0), torch.empty(0))
    assert dx.shape == (0, 8) and dw.shape == db.shape == (8,) and not dw.any() and not db.any()


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


# ----------------------------------------------------------------- the subprocess side
def _run_grads() -> None:
    """Under TRITON_INTERPRET=1: each case's dw and db against reference_grads (their own
    scale), and a second launch's dw and db against the first's; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            tun = {k: v for k, v in cfg.items()}
            args = (inputs["dy"], inputs["x"], inputs["weight"], inputs["mean"], inputs["rstd"])
            _, dw, db = mod.layer_norm_backward(*args, **tun)
            _, dw2, db2 = mod.layer_norm_backward(*args, **tun)
            ref_dw, ref_db = mod.reference_grads(inputs)
            results[name] = {
                "N": point["N"], "dtypes": [str(dw.dtype), str(db.dtype)], "shapes": [list(dw.shape), list(db.shape)],
                "dw": H.compare(dw, ref_dw, point["dtype"], GRAD_TOL),
                "db": H.compare(db, ref_db, point["dtype"], GRAD_TOL),
                "repeat_identical": bool(torch.equal(dw, dw2) and torch.equal(db, db2)),
            }
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "grads":
        _run_grads()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
