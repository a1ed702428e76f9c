"""examples/embedding_bwd.py against its fp64-summed torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep, and a compile for
sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round9_d.py embedding_bwd``) that prints one JSON line; the
tests assert per case. A second subprocess (``... parts``) checks what one launch on fresh
inputs does not: two launches add the batch twice, rows no token hits (and the padding row)
keep their prior gradient bit for bit, a negative padding_idx counts from V, ids of any
shape with grad_out (*ids.shape, D), and int32 ids give what int64 ids give.

Shapes are small and odd: T not a multiple of BLOCK_T, a BLOCK_T wider than T, D not a
multiple of BLOCK_D (masked D tail), a BLOCK_D wider than D, exact tiles, a vocabulary of 3
(every tile adds several tokens to one row: colliding atomics inside a tile and across CTAs),
padding tokens right-padding short sequences (a whole CTA of them), all tokens padding,
grad_out as strided row views of a wider buffer, int32 and int64 ids, every grad_out dtype.
The comparison covers the whole [V, D] gradient, untouched rows included.

torch_baseline adds into the same buffer as the kernel, so run_cases does not compare it after
launch (it would add the batch a second time); test_torch_baseline_matches_reference runs it
on fresh inputs instead (plain torch, no interpreter).

Tolerance (x max|ref|, absolute, per element): grad_out's conversion to fp32 is exact, so
only the order of the fp32 adds differs from the fp64-summed reference: 1e-5 for every dtype.
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
KERNEL = "embedding_bwd"
TOL = {"fp32": 1e-5, "bf16": 1e-5, "fp16": 1e-5}

# the GPU study's sweep (moved into the study's registry when merged): 4 x 4 x 3 = 48 configs;
# num_stages one value (no dot, the loads are not pipelined: it changes nothing in the cubin)


def _cfg(bt, bd, w, s=1):
    return {"BLOCK_T": bt, "BLOCK_D": bd, "num_warps": w, "num_stages": s}


def _pt(T, D, V, dtype, ids="int64", padding_idx=None, pad=0, seq=2048):
    p = {"T": T, "D": D, "V": V, "dtype": dtype, "ids": ids}
    if padding_idx is not None:
        p.update(padding_idx=padding_idx, pad=pad, seq=seq)
    return p


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_t_and_d_bf16": (_pt(37, 100, 50, "bf16", "int32"), _cfg(4, 32, 4)),
        "block_d_wider_than_d_padding_fp16": (_pt(40, 70, 9, "fp16", "int64", 3, 13, 16), _cfg(8, 128, 2)),
        "one_token_per_cta_fp32": (_pt(13, 96, 7, "fp32", "int32"), _cfg(1, 64, 1, 2)),
        "three_row_vocab_collisions_bf16": (_pt(64, 48, 3, "bf16"), _cfg(16, 16, 4)),
        "block_t_wider_than_t_fp32": (_pt(5, 40, 20, "fp32"), _cfg(8, 64, 8, 2)),
        "exact_tiles_fp16": (_pt(32, 64, 40, "fp16", "int32"), _cfg(4, 64, 2)),
        "all_padding_bf16": (_pt(9, 33, 6, "bf16", "int64", 0, 9, 4), _cfg(2, 32, 4)),
        "padded_cta_and_pad_row_0_fp32": (_pt(48, 52, 30, "fp32", "int64", 0, 20, 24), _cfg(4, 16, 1)),
        "strided_rows_bf16": (_pt(29, 80, 17, "bf16", "int32"), _cfg(2, 32, 2, 2)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(2, 1024, 4), _cfg(8, 2048, 4), _cfg(1, 256, 8), _cfg(8, 1024, 2)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: grad_out as a row view of a wider buffer."""
    import torch

    if name == "strided_rows_bf16":
        g = inputs["grad_out"]
        wide = torch.zeros((g.shape[0], g.shape[1] + 24), dtype=g.dtype)
        wide[:, :g.shape[1]] = g
        inputs["grad_out"] = wide[:, :g.shape[1]]
        assert not inputs["grad_out"].is_contiguous() and inputs["grad_out"].stride(0) == g.shape[1] + 24


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["V"], point["D"]]
    assert res["n_bad"] == 0, H.mismatch(res, f"{kernel}/{name} kernel")


@pytest.mark.parametrize("name", ["accumulates_twice", "untouched_rows_exact", "negative_padding_idx",
                                  "batched_ids", "int32_equals_int64"])
def test_parts(name):
    res = _results("parts")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["ok"], res


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_torch_baseline_matches_reference(name):
    """torch_baseline on fresh inputs (it adds into grad_weight in place, as the kernel does)."""
    mod = load_example(KERNEL)
    point, _ = CASES[KERNEL][name]
    inputs = mod.make_inputs(point, seed=len(name), device="cpu")
    _prepare(name, point, inputs)
    ref = mod.reference(inputs)
    gw = inputs["grad_weight"]
    out = mod.torch_baseline(inputs)
    assert out.data_ptr() == gw.data_ptr()
    res = H.compare(out, ref, point["dtype"], TOL)
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} torch_baseline")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the T and D tails, blocks wider
    than the problem, exact tiles, padding and every dtype are hit."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL].values()
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases) and any(p["T"] < c["BLOCK_T"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] for p, c in cases) and any(p["D"] < c["BLOCK_D"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] == 0 and p["T"] % c["BLOCK_T"] == 0 for p, c in cases)
    assert any(p.get("pad", 0) == p["T"] for p, _ in cases) and any(0 < p.get("pad", 0) < p["T"] for p, _ in cases)
    assert any(p.get("padding_idx") == 0 for p, _ in cases)
    # a CTA whose tokens are all padding: one sequence padded over at least a whole BLOCK_T
    assert any(0 < p.get("pad", 0) and p["seq"] >= 2 * c["BLOCK_T"] and p["pad"] >= p["seq"] for p, c in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["ids"] for p, _ in cases} == set(mod.ID_DTYPES)
    assert any(p["V"] < c["BLOCK_T"] for p, c in cases)        # a tile holds the same row several times


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (in 40-72), BASELINE and the compile configs among them,
    every tunable but num_stages over >= 2 values (num_stages one: no dot, no pipelined load);
    every config valid at every POINT, with >= 1 element a thread (no replicated atomics: a
    tile of at least 32 * num_warps elements) and >= 132 CTAs (a full H200)."""
    mod = load_example(KERNEL)
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-9")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    assert list(SWEEP_AXES) == list(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs and all(c in cfgs for c in COMPILE_CFGS[KERNEL])
    for c in cfgs:
        mod._check_cfg(c)
        assert c["BLOCK_T"] * c["BLOCK_D"] >= 32 * c["num_warps"]
        for p in mod.POINTS:
            args = mod.example_args(c, p)
            assert (args["BLOCK_T"], args["BLOCK_D"]) == (c["BLOCK_T"], c["BLOCK_D"])
            assert mod.grid(c, p) >= 132 and mod.loop_iterations(c, p) >= 2


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (ids, the non-padding grad_out rows, one fp32 per non-padding token
    element added), > 50 MiB of L2; grid and loop_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "embedding_backward"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p.get("ids", "int64") for p in mod.POINTS} == set(mod.ID_DTYPES)
    assert any(p.get("padding_idx") is not None and p["pad"] > 0 for p in mod.POINTS)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            T, D = p["T"], p["D"]
            n = T - (p.get("pad", 0) if p.get("padding_idx") is not None else 0)
            e = 4 if p["dtype"] == "fp32" else 2
            ib = 4 if p.get("ids", "int64") == "int32" else 8
            args = mod.example_args(cfg, p)
            # the ids with data (rank reads the atomics' rows from them: in [0, V), padding tokens at
            # padding_idx), the rest on meta
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in args.items()
                       if k != "IDS")
            ids = args["IDS"]
            assert ids.device.type == "cpu" and 0 <= int(ids.min()) and int(ids.max()) < p["V"]
            if p.get("padding_idx") is not None:
                assert int((ids == p["padding_idx"]).sum()) == p["pad"]
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == T * ib + n * D * (e + 4) > 50 * 2**20, p
            assert args["IDS"].shape == (T,) and args["IDS"].element_size() == ib
            assert args["GRAD"].shape == (n, D) and args["GRAD"].element_size() == e
            assert args["GW"].shape == (n, D) and args["GW"].dtype == torch.float32
            assert (args["T"], args["D"], args["stride_gt"], args["stride_wv"]) == (T, D, D, D)
            assert args["padding_idx"] == (-1 if p.get("padding_idx") is None else p["padding_idx"])
            assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
            assert mod.loop_iterations(cfg, p) == triton.cdiv(D, cfg["BLOCK_D"])
            assert mod.flops(p) == n * D
            assert p["V"] * D * 4 > 20 * 50 * 10**6          # the fp32 gradient: >= 20x the L2


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(40, 70, 9, "fp16", "int64", 3, 13, 16)
    c = _cfg(8, 32, 2)
    assert mod.grid(c, p) == 5 and mod.loop_iterations(c, p) == 3
    assert mod.bytes_moved(p) == 40 * 8 + 27 * 70 * 6 and mod.flops(p) == 27 * 70
    assert mod.bytes_moved(_pt(40, 70, 9, "fp32", "int32")) == 40 * 4 + 40 * 70 * 8
    args = mod.example_args(c, p)
    assert args["padding_idx"] == 3 and args["GRAD"].dtype == torch.float16 and args["IDS"].dtype == torch.int64
    inputs = mod.make_inputs(p, device="cpu")
    ids, g, gw = inputs["ids"], inputs["grad_out"], inputs["grad_weight"]
    assert ids.dtype == torch.int64 and ids.shape == (40,) and g.shape == (40, 70) and g.dtype == torch.float16
    assert gw.shape == (9, 70) and gw.dtype == torch.float32 and inputs["padding_idx"] == 3
    # right padding: 13 padding tokens at the ends of the 16-token sequences, none elsewhere
    is_pad = ids == 3
    assert int(is_pad.sum()) == 13
    for s in range(0, 40, 16):
        seg = is_pad[s:s + 16]
        if seg.any():
            assert bool(seg[int(seg.nonzero().min()):].all())
    assert torch.equal(gw, mod.prior_grad(9, 70, "cpu")) and float((gw == 0).float().mean()) < 0.1
    ref = mod.reference(inputs)
    assert ref.shape == (9, 70) and ref.dtype == torch.float32
    assert torch.equal(ref[3], gw[3])                          # the padding row keeps its prior
    # against autograd through nn.Embedding(padding_idx=3), added to the prior
    w = torch.zeros(9, 70, requires_grad=True)
    torch.nn.functional.embedding(ids, w, padding_idx=3).backward(g.float())
    assert torch.allclose(ref, gw + w.grad, atol=1e-5)
    # the Zipf ids at a real point's vocabulary: hot rows repeat
    big = mod.make_inputs(_pt(4096, 2, 50272, "bf16"), device="cpu")["ids"]
    assert big.unique().numel() < 0.6 * 4096 and big.bincount().max() > 100
    assert mod.make_inputs(_pt(8, 4, 5, "bf16", "int32"), device="cpu")["ids"].dtype == torch.int32


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 16, 5, "bf16"), device="cpu")
    ids, g, gw = inputs["ids"], inputs["grad_out"], inputs["grad_weight"]
    with pytest.raises(ValueError, match="BLOCK_T=3"):
        mod.embedding_backward(g, ids, gw, BLOCK_T=3)
    with pytest.raises(ValueError, match="BLOCK_D=100"):
        mod.embedding_backward(g, ids, gw, BLOCK_D=100)
    with pytest.raises(ValueError, match="fp32"):
        mod.embedding_backward(g, ids, gw.half())
    with pytest.raises(ValueError, match="contiguous"):
        mod.embedding_backward(g, ids, torch.zeros(16, 5).T)
    with pytest.raises(ValueError, match="int32 or int64"):
        mod.embedding_backward(g, ids.to(torch.int16), gw)
    with pytest.raises(ValueError, match="ids.shape"):
        mod.embedding_backward(g[:7], ids, gw)
    with pytest.raises(ValueError, match="fp16/bf16/fp32"):
        mod.embedding_backward(g.double(), ids, gw)
    with pytest.raises(ValueError, match="padding_idx=5"):
        mod.embedding_backward(g, ids, gw, padding_idx=5)
    with pytest.raises(ValueError, match="padding_idx=-6"):
        mod.embedding_backward(g, ids, gw, padding_idx=-6)
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(8, 16, 5, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="int16"):
        mod.make_inputs(_pt(8, 16, 5, "bf16", "int16"), device="cpu")
    with pytest.raises(ValueError, match="pad=9"):
        mod.make_inputs(_pt(8, 16, 5, "bf16", "int64", 1, 9), device="cpu")
    with pytest.raises(ValueError, match="padding_idx=5"):
        mod.make_inputs(_pt(8, 16, 5, "bf16", "int64", 5, 1), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(8, 16, 5, "fp8"))


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
def test_every_point_compiles_to_vector_atomics(shared_cache):
    """BASELINE at each POINT (bf16 / int64, fp32 / int32, fp16 / padding_idx 1) on sm_90: the adds
    are relaxed 4-wide fp32 vector atomics (PTX atom or red by the Triton version), reductions
    without a return in SASS (REDG); only the 16-bit grad_out goes through shared memory."""
    import re

    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for p in mod.POINTS:
        res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, p), arch="sm_90",
                             num_warps=mod.BASELINE["num_warps"], num_stages=mod.BASELINE["num_stages"], keep_ir=True)
        assert res.status == "ok", f"{p}: {res.message}"
        assert re.search(r"\b(atom|red)\.global\.gpu\.relaxed\.add\.v4\.f32\b", res.ptx), p
        assert "REDG.E.ADD.F32" in res.sass and "ATOMG" not in res.sass, p
        assert (res.shared > 0) == (p["dtype"] != "fp32"), (p, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run_parts() -> None:
    """Under TRITON_INTERPRET=1: what one launch on fresh inputs does not show. One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    cfg = {"BLOCK_T": 4, "BLOCK_D": 32, "num_warps": 4, "num_stages": 1}
    kw = {k: cfg[k] for k in ("BLOCK_T", "BLOCK_D", "num_warps", "num_stages")}
    checks = {}

    def accumulates_twice():
        p = _pt(30, 50, 40, "bf16", "int64", 2, 6, 10)
        inputs = mod.make_inputs(p, seed=1, device="cpu")
        ref = mod.reference(inputs)
        mod.launch(inputs, cfg)
        out = mod.launch(inputs, cfg)
        twice = 2 * ref.double() - mod.prior_grad(40, 50, "cpu").double()
        return H.compare(out, twice.float(), "bf16", TOL)["n_bad"] == 0

    def untouched_rows_exact():
        p = _pt(30, 50, 400, "fp16", "int32", 7, 5, 10)
        inputs = mod.make_inputs(p, seed=2, device="cpu")
        ids = inputs["ids"].long()
        hit = torch.zeros(400, dtype=torch.bool)
        hit[ids[ids != 7]] = True
        out = mod.launch(inputs, cfg)
        prior = mod.prior_grad(400, 50, "cpu")
        return bool((~hit).sum() > 300 and not hit[7] and torch.equal(out[~hit], prior[~hit]))

    def negative_padding_idx():
        p = _pt(25, 40, 12, "fp32", "int64", 11, 4, 5)          # padding id 11 == V - 1
        inputs = mod.make_inputs(p, seed=3, device="cpu")
        a = mod.embedding_backward(inputs["grad_out"], inputs["ids"], mod.prior_grad(12, 40, "cpu"), -1, **kw)
        b = mod.embedding_backward(inputs["grad_out"], inputs["ids"], mod.prior_grad(12, 40, "cpu"), 11, **kw)
        return bool(torch.equal(a, b) and H.compare(a, mod.reference(inputs), "fp32", TOL)["n_bad"] == 0)

    def batched_ids():
        p = _pt(24, 36, 10, "bf16")
        inputs = mod.make_inputs(p, seed=4, device="cpu")
        ref = mod.reference(inputs)
        out = mod.embedding_backward(inputs["grad_out"].view(4, 6, 36), inputs["ids"].view(4, 6),
                                     inputs["grad_weight"], None, **kw)
        return H.compare(out, ref, "bf16", TOL)["n_bad"] == 0

    def int32_equals_int64():
        p = _pt(33, 20, 8, "fp16", "int64", 0, 3, 11)
        inputs = mod.make_inputs(p, seed=5, device="cpu")
        a = mod.embedding_backward(inputs["grad_out"], inputs["ids"], mod.prior_grad(8, 20, "cpu"), 0, **kw)
        b = mod.embedding_backward(inputs["grad_out"], inputs["ids"].int(), mod.prior_grad(8, 20, "cpu"), 0, **kw)
        return bool(torch.equal(a, b))

    for fn in (accumulates_twice, untouched_rows_exact, negative_padding_idx, batched_ids, int32_equals_int64):
        try:
            checks[fn.__name__] = {"ok": bool(fn())}
        except Exception as exc:          # reported per check by the test
            checks[fn.__name__] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(checks))


if __name__ == "__main__":
    if sys.argv[1] == "parts":
        _run_parts()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=False)
