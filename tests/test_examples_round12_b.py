"""examples/expert_histogram.py against torch.bincount on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round12_b.py expert_histogram``) that prints one JSON line; the
tests assert per case. A second subprocess (``... api``) checks what the case comparison does
not see: a caller's counts buffer holding garbage is zeroed before the kernel accumulates
into it (so two launches give the same counts), an empty topk_ids gives zeros, and a
non-contiguous topk_ids view counts the same as its contiguous copy.

Counts are integers and the atomics add integers, so the kernel's counts must EQUAL the
reference's (torch.bincount of the ids in [0, E)), whatever order the atomics land in; the
cases compare for equality (a tolerance of 0) and check the int32 dtype.

Shapes are small and odd: N = T x topk not a multiple of BLOCK x STEPS (the slot tail) and
smaller than one step, an exact single CTA, many CTAs (one step each) adding to the same
counters, E not a power of two (60: Qwen1.5-MoE, 160: DeepSeek-V2, 3) and E = 1, E below a
warp's 32 lanes (8), ids outside [0, E) that must not be counted: -1 (expert parallelism's
non-local experts), E itself, large positives and an int64 id above 2^32 (whose low 32 bits
are a valid expert: the range check must come before the narrowing), and both id dtypes.
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
KERNEL = "expert_histogram"
TOL = {"int32": 0.0, "int64": 0.0}          # counts are exact: equal the reference



def _cfg(b, s, w, st=1):
    return {"BLOCK": b, "STEPS": s, "num_warps": w, "num_stages": st}


def _pt(T, topk, E, dtype):
    return {"T": T, "topk": topk, "E": E, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "deepseek_ragged_tail_int32": (_pt(37, 8, 256, "int32"), _cfg(64, 3, 2)),
        "mixtral_many_ctas_int64": (_pt(1001, 2, 8, "int64"), _cfg(32, 1, 4)),
        "qwen3_blocks_wider_than_input_int32": (_pt(5, 8, 128, "int32"), _cfg(4096, 16, 16)),
        "qwen15_60_experts_int64": (_pt(77, 4, 60, "int64"), _cfg(128, 2, 8, 2)),
        "deepseek_v2_160_experts_int32": (_pt(123, 6, 160, "int32"), _cfg(512, 1, 4)),
        "exact_single_cta_int32": (_pt(64, 8, 64, "int32"), _cfg(128, 4, 4)),
        "expert_parallel_minus_one_int32": (_pt(200, 8, 256, "int32"), _cfg(256, 2, 8)),
        "out_of_range_ids_int64": (_pt(50, 2, 8, "int64"), _cfg(64, 16, 2)),
        "three_experts_strided_view_int64": (_pt(301, 2, 3, "int64"), _cfg(1024, 4, 16)),
        "one_expert_int32": (_pt(19, 1, 1, "int32"), _cfg(16, 2, 2)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(2048, 4, 4), _cfg(4096, 16, 2), _cfg(512, 1, 16), _cfg(1024, 4, 8)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: expert parallelism (rank 1 of 4 owns global experts 64-127: the
    ids mapped to local ids 0-63, the others to -1, num_experts 64); ids out of range; a
    non-contiguous topk_ids view."""
    import torch

    ids = inputs["topk_ids"]
    if name == "expert_parallel_minus_one_int32":
        local = ids - 64
        inputs["topk_ids"] = torch.where((local >= 0) & (local < 64), local, torch.full_like(local, -1))
        inputs["num_experts"] = 64
    if name == "out_of_range_ids_int64":
        E = point["E"]
        ids[0, 0], ids[3, 1], ids[7, 0], ids[8, 1] = -1, E, E + 100, -5
        ids[10, 0], ids[11, 1] = 2**32 + 3, -(2**32) + 2        # low 32 bits 3 and 2: still not counted
        ids[49, 1] = 2**62
    if name == "three_experts_strided_view_int64":
        wide = torch.full((ids.shape[0], ids.shape[1] + 3), 1, dtype=ids.dtype)
        wide[:, 1:1 + ids.shape[1]] = ids
        inputs["topk_ids"] = wide[:, 1:1 + ids.shape[1]]
        assert not inputs["topk_ids"].is_contiguous()


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    E = 64 if name == "expert_parallel_minus_one_int32" else point["E"]
    assert res["shape"] == [E] and res["dtype"] == "torch.int32", res
    assert res["n_bad"] == 0 and res["equal"], H.mismatch(res, f"{kernel}/{name}")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{kernel}/{name} torch_baseline")
    n_slots = point["T"] * point["topk"]
    if name in ("expert_parallel_minus_one_int32", "out_of_range_ids_int64"):
        assert 0 < res["total"] < n_slots, res            # some ids were not counted
    else:
        assert res["total"] == n_slots, res


def test_api_zeroes_counts_and_takes_views():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    import subprocess
    proc = subprocess.run([sys.executable, str(HERE), "api"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=HERE.parent.parent)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    res = json.loads(lines[-1])
    assert "error" not in res, res["error"]
    assert all(res.values()), res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases and the cases bracket each swept
    value; the slot tail, a single exact CTA, many CTAs, E not a power of two and below 32,
    and both id dtypes are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    per = [(p["T"] * p["topk"], c["BLOCK"] * c["STEPS"], c) for p, c in cases]
    assert any(n % b for n, b, _ in per) and any(n < c["BLOCK"] for n, _, c in per)
    assert any(n == b for n, b, _ in per) and any(n // b >= 32 for n, b, _ in per)
    Es = {p["E"] for p, _ in cases}
    assert any(e & (e - 1) for e in Es) and any(e < 32 for e in Es) and 1 in Es
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    for k, vals in SWEEP_AXES.items():
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(vals) and max(tested) >= max(vals), (k, tested)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each but num_stages over >= 2 values, 48 configs with
    BASELINE among them; at every POINT each config is valid, its example_args are the point's
    bytes, it fills the 132 SMs (>= 512 CTAs) and its step tile covers the CTA's threads (no
    replicated layout: BLOCK >= 32 num_warps) with at most 64 ids a thread. (Every config was
    compiled for sm_90 with triton 3.6.0 at every point: all 144 compile, each in < 3 s, 12-71
    registers, no spills, 128-1024 B of shared memory: the warps' partial histograms, E_P bins
    padded to >= 32.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            assert mod.grid(c, p) >= 512, (p, c)
            assert (p["T"] * p["topk"]) % (c["BLOCK"] * c["STEPS"]) == 0          # no tail CTA
            assert mod.loop_iterations(c, p) == c["STEPS"]
            assert 32 * c["num_warps"] <= c["BLOCK"] <= 64 * 32 * c["num_warps"]


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (the ids read once, the E int32 counters); grid and loop_iterations are
    the tiling; the points are real models' routing shapes, the ids bigger than the L2."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "expert_histogram", "make_topk_ids"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {(p["E"], p["topk"]) for p in mod.POINTS} == {(256, 8), (8, 2), (128, 8)}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            T, k, E = p["T"], p["topk"], p["E"]
            e = 4 if p["dtype"] == "int32" else 8
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == T * k * e + 4 * E
            assert T * k * e > 2 * 50 * 10**6                     # the ids > 2x the 50 MB L2
            assert args["IDS"].shape == (T * k,) and args["IDS"].dtype == mod._id_dtype(p["dtype"])
            assert args["COUNTS"].shape == (E,) and args["COUNTS"].dtype == torch.int32
            assert (args["N"], args["E"], args["E_P"]) == (T * k, E, triton.next_power_of_2(E))
            assert (args["BLOCK"], args["STEPS"]) == (cfg["BLOCK"], cfg["STEPS"])
            assert mod.grid(cfg, p) == triton.cdiv(T * k, cfg["BLOCK"] * cfg["STEPS"])
            assert mod.loop_iterations(cfg, p) == cfg["STEPS"]
            assert mod.flops(p) == T * k
    assert mod.example_args(mod.BASELINE, mod.POINTS[1])["IDS"].dtype == torch.int64


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 8, 256, "int32")
    c = _cfg(64, 3, 2)
    assert mod.grid(c, p) == 2 and mod.loop_iterations(c, p) == 3
    assert mod.bytes_moved(p) == 37 * 8 * 4 + 256 * 4
    assert mod.bytes_moved(_pt(10, 2, 8, "int64")) == 10 * 2 * 8 + 32
    assert mod.example_args(c, _pt(77, 4, 60, "int64"))["E_P"] == 64
    inputs = mod.make_inputs(p, device="cpu")
    ids = inputs["topk_ids"]
    assert ids.shape == (37, 8) and ids.dtype == torch.int32 and inputs["num_experts"] == 256
    assert int(ids.min()) >= 0 and int(ids.max()) < 256
    assert all(len(set(row.tolist())) == 8 for row in ids)             # distinct experts per token
    assert mod.make_inputs(_pt(4, 2, 8, "int64"), device="cpu")["topk_ids"].dtype == torch.int64
    # the skewed popularity: over many tokens the hottest expert gets well above the mean load
    gen = torch.Generator().manual_seed(3)
    big = mod.make_topk_ids(20000, 8, 64, gen, "cpu", chunk=4096)
    cnt = torch.bincount(big.flatten(), minlength=64).float()
    assert float(cnt.max()) > 1.5 * float(cnt.mean()) and float(cnt.min()) > 0
    assert all(len(set(row.tolist())) == 8 for row in big[:500])
    ref = mod.reference(inputs)
    assert ref.dtype == torch.int32 and ref.shape == (256,) and int(ref.sum()) == 37 * 8
    assert torch.equal(mod.torch_baseline(inputs), ref)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    ids = mod.make_inputs(_pt(6, 2, 8, "int32"), device="cpu")["topk_ids"]
    with pytest.raises(ValueError, match="BLOCK=48"):
        mod.expert_histogram(ids, 8, BLOCK=48)
    with pytest.raises(ValueError, match="STEPS=0"):
        mod.expert_histogram(ids, 8, STEPS=0)
    with pytest.raises(ValueError, match=r"expected topk_ids \[T, topk\]"):
        mod.expert_histogram(ids[0], 8)
    with pytest.raises(ValueError, match="int32 or int64"):
        mod.expert_histogram(ids.float(), 8)
    with pytest.raises(ValueError, match="num_experts=0"):
        mod.expert_histogram(ids, 0)
    with pytest.raises(ValueError, match=r"contiguous \[8\] int32"):
        mod.expert_histogram(ids, 8, counts=torch.zeros(8, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"contiguous \[8\] int32"):
        mod.expert_histogram(ids, 8, counts=torch.zeros(9, dtype=torch.int32))
    with pytest.raises(ValueError, match="topk=9"):
        mod.make_topk_ids(4, 9, 8, torch.Generator(), "cpu")
    with pytest.raises(ValueError, match="int16"):
        mod.make_inputs(_pt(4, 2, 8, "int16"), device="cpu")
    with pytest.raises(ValueError, match="int16"):
        mod.bytes_moved(_pt(4, 2, 8, "int16"))


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
def test_other_points_compile(shared_cache, arch):
    """BASELINE at the second point (int64 ids, E = 8 < 32 bins) and the third (E = 128), and
    an odd shape (E = 60, N not 16-divisible)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:] + [_pt(1001, 3, 60, "int32")]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No dot and no pipelined load: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why
    SWEEP_AXES holds num_stages at 1)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    for cfg in (mod.BASELINE, _cfg(4096, 16, 2)):
        cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                                 num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
        assert len(cubins) == 1 and None not in cubins, cfg


# ----------------------------------------------------------------- the subprocess side
def _run_cases(kernel: str) -> None:
    """Under TRITON_INTERPRET=1: every case through launch against reference (as the GPU study's
    gate), exact equality and the dtype, and torch_baseline; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(kernel)
    results = {}
    for name, (point, cfg) in CASES[kernel].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            res = H.compare(out, ref.float(), point["dtype"], TOL)
            res["dtype"] = str(out.dtype)
            res["equal"] = bool(torch.equal(out, ref))
            res["total"] = int(out.sum())
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref.float(), point["dtype"], TOL)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def _run_api() -> None:
    """Under TRITON_INTERPRET=1: a garbage counts buffer is zeroed (two launches agree), an empty
    topk_ids gives zeros, a transposed view counts as its copy. One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    try:
        inputs = mod.make_inputs(_pt(90, 4, 24, "int32"), seed=11, device="cpu")
        ids = inputs["topk_ids"]
        ref = mod.reference(inputs)
        kw = dict(BLOCK=64, STEPS=2, num_warps=4)
        counts = torch.full((24,), 12345, dtype=torch.int32)
        first = mod.expert_histogram(ids, 24, counts=counts, **kw).clone()
        second = mod.expert_histogram(ids, 24, counts=counts, **kw)
        empty = mod.expert_histogram(ids[:0], 24, counts=torch.full((24,), 7, dtype=torch.int32), **kw)
        view = ids.t().contiguous().t()                    # [T, topk] with unit token stride
        res = {"garbage_zeroed": torch.equal(first, ref), "in_place": second.data_ptr() == counts.data_ptr(),
               "repeat_same": torch.equal(second, ref), "empty_zeros": torch.equal(empty, torch.zeros(24, dtype=torch.int32)),
               "view_same": torch.equal(mod.expert_histogram(view, 24, **kw), ref),
               "fresh_counts": torch.equal(mod.expert_histogram(ids.long(), 24, **kw), ref)}
    except Exception as exc:          # reported by the test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "api":
        _run_api()
    else:
        _run_cases(sys.argv[1])
