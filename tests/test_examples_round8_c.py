"""examples/moe_combine.py against its fp32 torch reference on the CPU through Triton's
interpreter, its routing and launcher hooks against the shapes, and a compile for sm_90 and
sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round8_c.py moe_combine``) that prints one JSON line; the tests
assert per case. A second subprocess (``... out_views``) writes into caller-given ``out``
views with a wider row stride and checks the bytes around them are untouched.

Shapes are small and odd: T not a multiple of BLOCK_T (a partial last token block), a
BLOCK_T wider than T, D not a multiple of BLOCK_D (a masked column tail) and smaller than it,
exact tiles, topk 1, 2, odd 3 and 6, 8, and an expert buffer with padding rows and a wider
row stride, padding filled with NaN (a read of a row or column the kernel must not touch
poisons the output). Tolerances relative to the largest reference magnitude, per dtype.
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
KERNEL = "moe_combine"
TOL = {"bf16": 1e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element


def _cfg(bt, bd, w, s):
    return {"BLOCK_T": bt, "BLOCK_D": bd, "num_warps": w, "num_stages": s}


def _pt(T, D, E, topk, dtype):
    return {"T": T, "D": D, "E": E, "topk": topk, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_t_and_d_top2_bf16": (_pt(37, 300, 8, 2, "bf16"), _cfg(4, 128, 4, 1)),
        "top8_of_16_fp16": (_pt(29, 96, 16, 8, "fp16"), _cfg(2, 64, 2, 2)),
        "block_t_wider_than_t_top3_bf16": (_pt(3, 80, 6, 3, "bf16"), _cfg(8, 32, 1, 1)),
        "block_d_wider_than_d_top1_fp16": (_pt(13, 40, 4, 1, "fp16"), _cfg(1, 64, 4, 1)),
        "exact_tiles_top4_bf16": (_pt(16, 256, 8, 4, "bf16"), _cfg(4, 256, 8, 2)),
        "top6_of_64_fp16": (_pt(50, 112, 64, 6, "fp16"), _cfg(2, 32, 4, 1)),
        "padded_expert_buffer_bf16": (_pt(21, 72, 8, 2, "bf16"), _cfg(8, 64, 2, 1)),
        "one_token_per_cta_top8_bf16": (_pt(11, 200, 32, 8, "bf16"), _cfg(1, 128, 1, 2)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(1, 1024, 4, 1), _cfg(8, 2048, 2, 1), _cfg(1, 128, 8, 1), _cfg(4, 512, 4, 1)],
}


PAD_EVERY, PAD_ROWS, PAD_COLS = 5, 3, 8      # padded_expert_buffer: 3 NaN rows after every 5, 8 NaN columns


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: the expert buffer with NaN padding rows between the real ones (as
    a dispatch padding each expert to a GEMM tile leaves) and NaN columns past D (a wider row
    stride); inv_perm renumbered to the padded rows."""
    import torch

    if name == "padded_expert_buffer_bf16":
        y, inv = inputs["y"], inputs["inv_perm"]
        R, D = y.shape
        new_row = torch.arange(R) + (torch.arange(R) // PAD_EVERY) * PAD_ROWS
        wide = torch.full((int(new_row[-1]) + 1 + PAD_ROWS, D + PAD_COLS), float("nan"), dtype=y.dtype)
        wide[new_row, :D] = y
        inputs["y"] = wide[:, :D]
        inputs["inv_perm"] = new_row[inv.long()].to(torch.int32)
        assert inputs["y"].stride(0) == D + PAD_COLS and inputs["y"].shape[0] > R


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    p = CASES[kernel][name][0]
    assert res["shape"] == [p["T"], p["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_writes_into_out_views():
    """moe_combine(..., out=view) with a row stride wider than D: the view gets the result,
    the columns between its rows keep their sentinel."""
    res = _results("out_views")
    for name, r in res.items():
        assert "error" not in r, f"{name}: {r.get('error')}"
        assert r["same_object"] and r["outside_touched"] == 0, (name, r)
        assert r["cmp"]["n_bad"] == 0, H.mismatch(r["cmp"], name)


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the tails are hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases) and any(p["T"] < c["BLOCK_T"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] for p, c in cases) and any(p["D"] < c["BLOCK_D"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] == 0 and p["T"] % c["BLOCK_T"] == 0 for p, c in cases)
    assert {p["topk"] for p, _ in cases} >= {1, 2, 3, 6, 8}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)


def test_routing_is_realistic():
    """topk distinct experts per token; inv_perm a permutation of the T * topk rows; the rows
    sorted by expert (each expert's rows contiguous, in token order within an expert); a
    token's rows scattered over the buffer; weights positive, summing to 1 per token."""
    import torch

    mod = load_example(KERNEL)
    for T, E, topk in ((512, 8, 2), (300, 64, 6), (7, 3, 3)):
        gen = torch.Generator().manual_seed(5)
        inv, w, experts = mod.make_routing(T, E, topk, gen, device="cpu")
        assert inv.dtype == torch.int32 and inv.shape == (T * topk,)
        assert w.dtype == torch.float32 and w.shape == (T, topk) and w.is_contiguous()
        assert all(len(set(r)) == topk for r in experts.tolist())
        assert torch.equal(inv.long().sort().values, torch.arange(T * topk))
        slot_of_row = torch.empty(T * topk, dtype=torch.long)
        slot_of_row[inv.long()] = torch.arange(T * topk)
        e_row = experts.reshape(-1)[slot_of_row]
        assert (e_row[1:] >= e_row[:-1]).all()
        same = e_row[1:] == e_row[:-1]
        assert (slot_of_row[1:][same] > slot_of_row[:-1][same]).all()       # stable: token order
        assert (w > 0).all() and torch.allclose(w.sum(1), torch.ones(T))
        if T >= 300:
            spread = inv.view(T, topk).long()
            assert float((spread.max(1).values - spread.min(1).values).float().mean()) > T * topk / 8
            counts = torch.bincount(experts.reshape(-1), minlength=E)
            assert counts.max() > counts.min()       # uneven load


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (y's T * topk rows, out, inv_perm, weights, each once), grid and
    loop_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "moe_combine"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, p
            T, D, topk = p["T"], p["D"], p["topk"]
            assert args["Y"].shape == (T * topk, D) and args["OUT"].shape == (T, D)
            assert args["INV"].shape == (T * topk,) and args["INV"].dtype == torch.int32
            assert args["W"].shape == (T, topk) and args["W"].dtype == torch.float32
            assert (args["T"], args["D"], args["stride_y"], args["stride_o"], args["TOPK"]) == (T, D, D, D, topk)
            assert (args["BLOCK_T"], args["BLOCK_D"]) == (cfg["BLOCK_T"], cfg["BLOCK_D"])
            assert mod.bytes_moved(p) == (T * topk * D + T * D) * 2 + 8 * T * topk
            assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"]) * triton.cdiv(D, cfg["BLOCK_D"])
            assert mod.loop_iterations(cfg, p) == topk
            assert mod.flops(p) == 2 * T * topk * D


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 300, 8, 2, "bf16")
    assert mod.grid(_cfg(4, 128, 4, 1), p) == 10 * 3 and mod.grid(_cfg(1, 512, 4, 1), p) == 37
    assert mod.loop_iterations(_cfg(4, 128, 4, 1), p) == 2
    assert mod.bytes_moved(p) == (74 * 300 + 37 * 300) * 2 + 8 * 74 and mod.flops(p) == 2 * 74 * 300
    args = mod.example_args(_cfg(4, 128, 4, 1), p)
    assert args["TOPK"] == 2 and args["Y"].dtype == torch.bfloat16
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["y"].shape == (74, 300) and inputs["inv_perm"].shape == (74,)
    ref = mod.reference(inputs)
    assert ref.shape == (37, 300) and ref.dtype == torch.float32
    t = 5
    rows = inputs["inv_perm"][2 * t:2 * t + 2].long()
    want = (inputs["y"][rows].float() * inputs["weights"][t][:, None]).sum(0)
    assert torch.allclose(ref[t], want)
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 300) and base.dtype == torch.bfloat16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 16, 4, 2, "fp16"), device="cpu")
    y, inv, w = inputs["y"], inputs["inv_perm"], inputs["weights"]
    with pytest.raises(ValueError, match="BLOCK_D=100"):
        mod.moe_combine(y, inv, w, BLOCK_D=100)
    with pytest.raises(ValueError, match="BLOCK_T=3"):
        mod.moe_combine(y, inv, w, BLOCK_T=3)
    with pytest.raises(ValueError, match=r"inv_perm must be \[16\]"):
        mod.moe_combine(y, inv[:15], w)
    with pytest.raises(ValueError, match="int32"):
        mod.moe_combine(y, inv.long(), w)
    with pytest.raises(ValueError, match="fp32"):
        mod.moe_combine(y, inv, w.half())
    with pytest.raises(ValueError, match="not fp16 or bf16"):
        mod.moe_combine(y.float(), inv, w)
    with pytest.raises(ValueError, match=r"y \[R, D\]"):
        mod.moe_combine(y[0], inv, w)
    with pytest.raises(ValueError, match=r"out must be \[8, 16\]"):
        mod.moe_combine(y, inv, w, out=torch.empty(8, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(8, 16, 4, 2, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="topk=5"):
        mod.make_inputs(_pt(8, 16, 4, 5, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(8, 16, 4, 2, "fp8"))


def test_sweep_is_a_real_study():
    """The GPU study's sweep: >= 40 configs, BASELINE and the compile configs among them,
    every tunable swept (num_stages held at one value: it changes nothing in the cubin)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-8")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert list(SWEEP_AXES) == list(mod.TUNABLES)
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 60
    assert mod.BASELINE in cfgs and all(c in cfgs for c in COMPILE_CFGS[KERNEL])


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
def _run_out_views() -> None:
    """Under TRITON_INTERPRET=1: moe_combine into a view of a wider sentinel-filled buffer;
    one JSON line per case name: the comparison, whether the view itself came back, and how
    many sentinel elements outside the view changed."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in (("out_view_fp16", (_pt(19, 72, 8, 2, "fp16"), _cfg(4, 32, 2, 1))),
                               ("out_view_top6_bf16", (_pt(10, 48, 16, 6, "bf16"), _cfg(2, 64, 4, 1)))):
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            dt = inputs["y"].dtype
            T, D = point["T"], point["D"]
            big = torch.full((T, D + 24), -7.0, dtype=dt)
            view = big[:, 8:8 + D]
            got = mod.moe_combine(inputs["y"], inputs["inv_perm"], inputs["weights"], out=view,
                                  BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"])
            outside = torch.cat([big[:, :8], big[:, 8 + D:]], dim=1)
            results[name] = {"cmp": H.compare(view, mod.reference(inputs), point["dtype"], TOL),
                             "same_object": got is view, "outside_touched": int((outside != -7.0).sum())}
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "out_views":
        _run_out_views()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
