"""examples/jsd_loss.py (the generalized Jensen-Shannon distillation loss over student / teacher
logits, per-row loss and the gradient w.r.t. the student logits in one launch: one CTA per row,
three walks over the vocabulary) against its fp64 autograd reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round16_d.py
jsd_loss``) that prints one JSON line; the tests assert per case. The subprocess checks both
outputs of a launch (``jsd_rows``): the per-row losses and the gradient, plus launch()'s output
(the gradient) and torch_baseline's. The reference is autograd through torch's log_softmax in
fp64, not the kernel's closed form, so the gradient formula itself is under test.

Shapes are small, odd and ragged: V not a multiple of BLOCK_V (a masked tail chunk), V a
multiple (no tail), V below BLOCK_V (one masked chunk), both GRAD_FIXUP paths, labels with some
rows ignored (zero-filled grad rows, loss 0), labels with none ignored, every row ignored (n = 0),
beta at 0.1 / 0.3 / 0.5 / 0.7 / 0.9 and the endpoint 1.0 (M = P: loss 0 and grad 0), all three
dtypes, and student / teacher as row-strided views of wider buffers.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same (bf16 / fp16 /
fp32) inputs. The kernel works in fp32: log-sum-exp in log2 units (errors ~2^-24 |log2 q|, |log2
q| < ~60 here: < 4e-6 relative), q, p, log2 m, the row sums (~sqrt(V) 2^-24), then one rounding of
each gradient element to the student's dtype: half an ulp on the GPU, up to one ulp with the
interpreter's truncating cast, an ulp at most 2^-7 (bf16) / 2^-10 (fp16) of an element <= max|ref|;
GRAD_FIXUP=1 rounds the partial h = coef q (log2 q - log2 m) to that dtype too before subtracting
coef KL q (|h| stays within a few x max|grad| at these spreads: another ulp or two of it). bf16
1e-2, fp16 2e-3 (the harness's defaults) bound that; fp32 gradients 1e-4 (exp2 / log2 rounding, ~1e-6).
The per-row losses are fp32 in every case: 1e-4 x max|ref| (at beta = 1 the reference is exactly 0
and the kernel's |loss| ~1e-8 is bounded by 1e-5 instead). Measured: gradient max error <= 0.55 %
(bf16) / 0.036 % (fp16) / 3e-7 (fp32) of max|ref| (torch_baseline's: 0.28 % / 0.036 % / 4e-7),
per-row losses <= 7e-7.
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
KERNEL = "jsd_loss"
TOL = {"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-4}
LOSS_TOL = 1e-4
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bv, fix, ls, w, st):
    return {"BLOCK_V": bv, "GRAD_FIXUP": fix, "LOOP_STAGES": ls, "num_warps": w, "num_stages": st}


def _pt(BT, V, dtype, beta, ignore=None):
    p = {"BT": BT, "V": V, "dtype": dtype, "beta": beta}
    if ignore is not None:
        p["ignore"] = ignore
    return p


# case name -> (point, cfg); comments: chunks a walk (tail), labels
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 5 chunks of 64, tail of 44; no labels; recompute walk 3
        "fp32_ragged_recompute": (_pt(5, 300, "fp32", 0.3), _cfg(64, 0, 1, 4, 1)),
        # 3 chunks of 128, tail of 1; labels, 2 of 7 rows ignored; fixup walk 3
        "fp32_ignored_fixup": (_pt(7, 257, "fp32", 0.7, 0.3), _cfg(128, 1, 2, 8, 2)),
        # 2 chunks of 256, tail 244; bf16, fixup (the partial rounded to bf16)
        "bf16_fixup": (_pt(4, 500, "bf16", 0.5), _cfg(256, 1, 3, 16, 1)),
        # 5 chunks of 32, tail 2; fp16, labels present but none ignored
        "fp16_labels_none_ignored": (_pt(6, 130, "fp16", 0.1, 0.0), _cfg(32, 0, 2, 4, 3)),
        # V < BLOCK_V: one masked chunk per walk; bf16, recompute, beta 0.9
        "bf16_one_chunk": (_pt(3, 100, "bf16", 0.9), _cfg(128, 0, 1, 8, 2)),
        # V a multiple of BLOCK_V (no tail); fp16 fixup; student / teacher row-strided views
        "fp16_even_strided_fixup": (_pt(5, 256, "fp16", 0.5), _cfg(64, 1, 1, 4, 1)),
        # bf16 with labels, a third ignored, 3 chunks of 128 (tail 40), recompute
        "bf16_ignored_recompute": (_pt(9, 296, "bf16", 0.3, 0.34), _cfg(128, 0, 3, 16, 3)),
        # every row ignored: n = 0, all-zero grad and loss
        "all_ignored": (_pt(3, 200, "fp32", 0.5, 1.0), _cfg(64, 1, 2, 8, 1)),
        # beta = 1: M = P, loss 0 and grad 0 (coef = 0)
        "beta_one": (_pt(3, 150, "fp32", 1.0), _cfg(64, 0, 2, 4, 2)),
    },
}
STRIDED = "fp16_even_strided_fixup"

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(4096, 0, 2, 8, 1), _cfg(8192, 1, 3, 16, 1), _cfg(2048, 1, 1, 4, 1), _cfg(4096, 0, 3, 16, 1)],
}
SM120_CFGS = [_cfg(4096, 0, 2, 8, 1), _cfg(8192, 1, 3, 16, 1), _cfg(2048, 0, 3, 4, 1)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: student and teacher as row-strided views of wider buffers."""
    import torch

    if name == STRIDED:
        for key, extra in (("student", 24), ("teacher", 8)):
            x = inputs[key]
            wide = torch.zeros((x.shape[0], x.shape[1] + extra), dtype=x.dtype)
            wide[:, :x.shape[1]] = x
            inputs[key] = wide[:, :x.shape[1]]
        assert inputs["student"].stride(0) == point["V"] + 24 and inputs["teacher"].stride(0) == point["V"] + 8


def _smem_bound(cfg, dtype: str) -> int:
    """The loops' cp.async buffers: LOOP_STAGES - 1 chunks of two tensors (+ a little for reductions)."""
    e = 4 if dtype == "fp32" else 2
    return (cfg["LOOP_STAGES"] - 1) * 2 * cfg["BLOCK_V"] * e + 1024


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["grad"]["shape"] == [point["BT"], point["V"]] and res["loss"]["shape"] == [point["BT"]]
    for what in ("grad", "loss", "launch", "baseline"):
        if name == "beta_one" and what == "loss":
            continue                    # exact 0 in fp64; the kernel's ~1e-8 is checked below
        assert res[what]["n_bad"] == 0, H.mismatch(res[what], f"{name} {what}")
    assert res["ignored_rows_zero"], f"{name}: an ignored row has a nonzero loss or gradient"
    if name in ("all_ignored", "beta_one"):
        assert res["grad_absmax"] == 0.0 and res["loss_absmax"] < 1e-5, res


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; all dtypes, both GRAD_FIXUP paths, with / without
    labels, ignored rows, none ignored, all ignored, V ragged / a multiple / below BLOCK_V."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {c["GRAD_FIXUP"] for _, c in cases} == {0, 1}
    assert {p["V"] % c["BLOCK_V"] == 0 for p, c in cases} == {True, False}
    assert any(p["V"] < c["BLOCK_V"] for p, c in cases)
    assert {"ignore" in p for p, _ in cases} == {True, False}
    fracs = {p["ignore"] for p, _ in cases if "ignore" in p}
    assert 0.0 in fracs and 1.0 in fracs and any(0 < f < 1 for f in fracs)
    assert {c["GRAD_FIXUP"] for p, c in cases if p.get("ignore", 0) > 0} == {0, 1}


def test_sweep_fits_the_points():
    """The study sweep: 40-72 configs over the TUNABLES with BASELINE among them; at every POINT
    each config is valid, launches BT >= 2048 CTAs (>= 15 a SM) and its cp.async buffers fit an
    H200's 227 KiB per block. (Every config was compiled for sm_90 with triton 3.6.0 at every
    point: all 162 compile in 0.2-4 s each (~2.2 min in all); 16 B - 64 KiB of shared memory (the
    cp.async stages: (LOOP_STAGES - 1) x 2 chunks); registers 30-217: BLOCK_V 1024 30-72, 2048
    32-123, 4096 on 16 warps 56-87, on 8 warps 64-162, on 4 warps 103-217 (the most at the fp32
    point, LOOP_STAGES 3). 4 of the 162 keep 2-4 words in local memory: the fp32 point at BLOCK_V
    4096 with LOOP_STAGES 2 (GRAD_FIXUP 0 on 8 warps; GRAD_FIXUP 1 on 4, 8, 16 warps); none other
    spills. BLOCK_V 8192, left out of the sweep, spills 4-52 words on 4 warps.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-16")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) >= len(SWEEP_AXES) - 1
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) == p["BT"] >= 15 * H200_SMS, (p, c)
            assert _smem_bound(c, p["dtype"]) <= H200_SMEM_PER_BLOCK, (p, c)
    # the points differ in character: dtypes, labels / ignored rows, vocabulary (row-pair bytes)
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp32"}
    assert sum("ignore" in p for p in mod.POINTS) == 1
    assert len({p["V"] for p in mod.POINTS}) == 3


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors,
    labels only with `ignore`), bytes_moved counts the rows once, grid / loop_iterations /
    cta_iterations are the row walks; inputs (and the grad) < 4 GB; each point's best launch
    stays within ~3 ms at 4.8 TB/s even if every walk re-read DRAM."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "jsd_rows", "jsd_loss"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")                 # one kernel a launch
    assert len(mod.POINTS) == 3
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            BT, V = p["BT"], p["V"]
            dt = {"bf16": torch.bfloat16, "fp32": torch.float32}[p["dtype"]]
            assert args["S"].shape == args["T"].shape == args["G"].shape == (BT, V)
            assert args["S"].dtype == args["T"].dtype == args["G"].dtype == dt
            assert args["LOSS"].shape == (BT,) and args["LOSS"].dtype == torch.float32
            assert args["HAS_LABELS"] == ("ignore" in p)
            if args["HAS_LABELS"]:
                assert args["LABELS"].dtype == torch.int64 and args["LABELS"].shape == (BT,)
            assert (args["stride_s"], args["stride_t"], args["stride_g"], args["n_cols"]) == (V, V, V, V)
            n = BT - round(p.get("ignore", 0) * BT)
            assert args["beta"] == p["beta"] and args["grad_scale"] == pytest.approx(1.0 / n)
            assert {k: args[k] for k in ("BLOCK_V", "GRAD_FIXUP", "LOOP_STAGES")} == \
                {k: cfg[k] for k in ("BLOCK_V", "GRAD_FIXUP", "LOOP_STAGES")}
            e = 4 if p["dtype"] == "fp32" else 2
            labels = 8 * BT if "ignore" in p else 0
            assert mod.bytes_moved(p) == 2 * n * V * e + BT * V * e + labels + 4 * BT
            assert mod.flops(p) == 40 * n * V
            assert H.meta_nbytes(args) < 4 * 2**30
            assert mod.bytes_moved(p) * 7 / 3 / 4.8e12 < 3e-3        # all walks from DRAM, 4.8 TB/s
            chunks = -(-V // cfg["BLOCK_V"])
            assert mod.grid(cfg, p) == BT and mod.loop_iterations(cfg, p) == 3 * chunks
            its = mod.cta_iterations(cfg, p)
            assert len(its) == BT and its.count(chunks) == BT - n and its.count(3 * chunks) == n


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (shapes, dtypes, spreads, the seed's), its ignored rows = the ones
    cta_iterations gives one walk (seed 0), the reference's and the baseline's shapes, the
    wrapper's mean loss."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(40, 300, "bf16", 0.5, 0.25)
    inputs = mod.make_inputs(p, seed=0, device="cpu")
    s, t, lab = inputs["student"], inputs["teacher"], inputs["labels"]
    assert s.shape == t.shape == (40, 300) and s.dtype == t.dtype == torch.bfloat16
    assert lab.dtype == torch.int64 and int((lab == mod.IGNORE_INDEX).sum()) == 10 and inputs["n"] == 30
    assert 2.5 < float(t.float().std()) < 3.5 and 0.8 < float(torch.corrcoef(torch.stack(
        [s.float().flatten(), t.float().flatten()]))[0, 1]) < 0.95
    its = mod.cta_iterations(mod.BASELINE, p)
    assert [i for i, v in enumerate(its) if v == 1] == sorted((lab == mod.IGNORE_INDEX).nonzero().flatten().tolist())
    assert mod.make_inputs(_pt(4, 50, "fp32", 0.5), device="cpu")["labels"] is None
    rows, grad = mod.reference_rows(inputs)
    assert rows.shape == (40,) and grad.shape == (40, 300) and rows.dtype == grad.dtype == torch.float32
    assert float(rows.min()) >= 0 and 0.05 < float(rows.max()) < 0.7
    assert float(grad[lab == mod.IGNORE_INDEX].abs().max()) == 0.0
    assert abs(float(grad.sum(-1).abs().max())) < 1e-6                 # softmax gradient rows sum to 0
    base = mod.torch_baseline(inputs)
    assert base.shape == (40, 300) and base.dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["student"],
                       mod.make_inputs(p, seed=1, device="cpu")["student"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["student"], s)
    # empty rows: no launch
    loss_rows, g = mod.jsd_rows(torch.ones(0, 8), torch.ones(0, 8))
    assert loss_rows.shape == (0,) and g.shape == (0, 8)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    s = torch.ones(4, 16)
    with pytest.raises(ValueError, match="BLOCK_V=48"):
        mod.jsd_rows(s, s, BLOCK_V=48)
    with pytest.raises(ValueError, match="GRAD_FIXUP=2"):
        mod.jsd_rows(s, s, GRAD_FIXUP=2)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.jsd_rows(s, s, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="beta=1.5"):
        mod.jsd_rows(s, s, beta=1.5)
    with pytest.raises(ValueError, match="share one of"):
        mod.jsd_rows(s, s.half())
    with pytest.raises(ValueError, match="share one of"):
        mod.jsd_rows(s.double(), s.double())
    with pytest.raises(ValueError, match="expected student"):
        mod.jsd_rows(s, s[:3])
    with pytest.raises(ValueError, match="labels must be int64"):
        mod.jsd_rows(s, s, torch.zeros(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(4, 4, "fp8", 0.5), device="cpu")
    with pytest.raises(ValueError, match="ignore=1.5"):
        mod.bytes_moved(_pt(4, 4, "bf16", 0.5, 1.5))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch([KERNEL])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (2048-8192 chunks, 4-16 warps, both GRAD_FIXUP, 1-3
    loop stages) compile without spills inside 227 KiB; the loops' loads go through cp.async at
    LOOP_STAGES >= 2 and the exponentials are ex2.approx (the special-function unit; log2 is an
    FMA polynomial)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[KERNEL][0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS[KERNEL], "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res.n_spills)
        assert res.shared <= _smem_bound(cfg, mod.POINTS[0]["dtype"]), (cfg, res.shared)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=1, keep_ir=True)
    assert res.status == "ok", res.message
    assert "cp.async" in res.ptx and "ex2.approx" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the same kernel compiles and fits."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (labels: HAS_LABELS, the zero-fill walk) and the third (fp32 logits) at
    two configs fitting both archs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg in (_cfg(4096, 1, 2, 8, 1), _cfg(2048, 0, 3, 16, 1)):
        for p in mod.POINTS[1:]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
            assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: each case through jsd_rows (loss rows and grad), launch and
    torch_baseline against reference_rows; one JSON line."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            loss_rows, grad = mod.jsd_rows(inputs["student"], inputs["teacher"], inputs["labels"], inputs["beta"],
                                           n=inputs["n"], **cfg)
            ref_rows, ref_grad = mod.reference_rows(inputs)
            dt = point["dtype"]
            r = {"grad": H.compare(grad, ref_grad, dt, TOL), "loss": H.compare(loss_rows, ref_rows, "fp32",
                                                                                 {"fp32": LOSS_TOL}),
                 "launch": H.compare(mod.launch(inputs, cfg), ref_grad, dt, TOL),
                 "baseline": H.compare(mod.torch_baseline(inputs), ref_grad, dt, TOL),
                 "grad_absmax": float(grad.float().abs().max()), "loss_absmax": float(loss_rows.abs().max())}
            r["grad"]["max_rel"] = r["grad"]["max_err"] / max(r["grad"]["scale"], 1e-30)
            ok = True
            if inputs["labels"] is not None:
                ign = inputs["labels"] == mod.IGNORE_INDEX
                ok = bool((grad[ign] == 0).all()) and bool((loss_rows[ign] == 0).all())
            r["ignored_rows_zero"] = ok
            results[name] = r
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    sys.path.insert(0, str(H.TESTS))
    _run_cases()
