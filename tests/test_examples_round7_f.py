"""examples/reshape_and_cache.py against its torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, and a compile for sm_90 and sm_120 from
its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round7_f.py reshape_and_cache``) that prints one JSON line; the
tests assert per case.

Shapes are small and odd: T not a multiple of BLOCK_T, a BLOCK_T wider than T, H not a
multiple of BLOCK_H (and smaller than it), D not a power of two (80, 40), pages of 16, 8 and
a non-power-of-two 5, -1 padding slots (at the end and in the middle; the reference keeps
their cache rows at FILL, so a stray write is a mismatch), all tokens padding, k and v views
of a fused qkv buffer (strided tokens), and caches that are the two halves of one buffer with
block stride != PAGE * H * D. The comparison covers the whole cache, untouched slots included.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "reshape_and_cache"
TOL = {"bf16": 0.0, "fp16": 0.0}     # a copy: exact


def _rc(bt, bh, w, s):
    return {"BLOCK_T": bt, "BLOCK_H": bh, "num_warps": w, "num_stages": s}


def _pt(T, Hh, D, page, pad, dtype):
    return {"T": T, "H": Hh, "D": D, "PAGE": page, "pad": pad, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_t_and_h_bf16": (_pt(37, 3, 80, 16, 5, "bf16"), _rc(4, 2, 4, 1)),
        "gqa_8_heads_fp16": (_pt(50, 8, 64, 16, 3, "fp16"), _rc(8, 4, 2, 2)),
        "block_t_wider_than_t_fp16": (_pt(6, 5, 32, 8, 1, "fp16"), _rc(16, 8, 8, 1)),
        "one_token_one_head_per_step_bf16": (_pt(13, 2, 128, 16, 2, "bf16"), _rc(1, 1, 2, 1)),
        "page_5_d_40_bf16": (_pt(41, 4, 40, 5, 4, "bf16"), _rc(2, 4, 4, 3)),
        "no_padding_fp16": (_pt(64, 4, 16, 16, 0, "fp16"), _rc(16, 2, 4, 1)),
        "all_padding_bf16": (_pt(9, 2, 16, 16, 9, "bf16"), _rc(4, 2, 2, 1)),
        "fused_qkv_views_fp16": (_pt(23, 4, 32, 16, 3, "fp16"), _rc(4, 4, 4, 1)),
        "interleaved_kv_cache_bf16": (_pt(30, 3, 48, 8, 2, "bf16"), _rc(8, 2, 8, 1)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_rc(4, 4, 4, 1), _rc(16, 8, 8, 1), _rc(1, 1, 2, 1), _rc(16, 8, 2, 1)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: k and v as views of one fused qkv buffer; the caches as the two
    halves of a [num_blocks, 2, PAGE, H, D] buffer (block stride 2 * PAGE * H * D)."""
    import torch

    mod = load_example(KERNEL)
    if name == "fused_qkv_views_fp16":
        k, v = inputs["k"], inputs["v"]
        T, Hh, D = k.shape
        qkv = torch.randn((T, 3 * Hh, D), dtype=k.dtype)
        qkv[:, Hh:2 * Hh], qkv[:, 2 * Hh:] = k, v
        inputs["k"], inputs["v"] = qkv[:, Hh:2 * Hh], qkv[:, 2 * Hh:]
        assert not inputs["k"].is_contiguous() and inputs["k"].stride(2) == 1
    if name == "interleaved_kv_cache_bf16":
        kv = inputs["kv_cache"]
        inter = torch.full((kv.shape[1], 2) + tuple(kv.shape[2:]), mod.FILL, dtype=kv.dtype)
        inputs["kv_cache"] = inter.transpose(0, 1)     # [2, num_blocks, PAGE, H, D], a view
        assert inputs["kv_cache"][0].stride(0) == 2 * kv[0].stride(0)


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
    """Each tunable takes at least two values over the cases; masked tails and padding are hit."""
    mod = load_example(KERNEL)
    cases = CASES[KERNEL].values()
    assert set(mod.BASELINE) == set(mod.TUNABLES)
    for name in mod.TUNABLES:
        assert len({cfg[name] for _, cfg in cases}) >= 2, name
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases) and any(p["T"] < c["BLOCK_T"] for p, c in cases)
    assert any(p["H"] % c["BLOCK_H"] for p, c in cases) and any(p["H"] < c["BLOCK_H"] for p, c in cases)
    assert any(p["D"] & (p["D"] - 1) for p, _ in cases) and any(p["PAGE"] & (p["PAGE"] - 1) for p, _ in cases)
    assert any(p["pad"] == 0 for p, _ in cases) and any(p["pad"] == p["T"] for p, _ in cases)
    assert sum(1 for p, _ in cases if 0 < p["pad"] < p["T"]) >= 5


def test_slot_mapping_is_realistic():
    """Distinct in-range slots, exactly `pad` of them -1 (some mid-stream), tokens of a sequence
    contiguous within a page, pages drawn from a permutation (not in order), free pages left."""
    import torch

    mod = load_example(KERNEL)
    for p in [_pt(4096, 2, 16, 16, 24, "bf16"), _pt(41, 4, 40, 5, 4, "bf16")]:
        inputs = mod.make_inputs(p, seed=3, device="cpu")
        s, kv = inputs["slot_mapping"], inputs["kv_cache"]
        assert s.dtype == torch.int64 and s.shape == (p["T"],)
        nb, page = kv.shape[1], kv.shape[2]
        assert page == p["PAGE"] and kv.shape == (2, nb, page, p["H"], p["D"])
        valid = s[s >= 0]
        assert int((s == -1).sum()) == p["pad"] and (s >= -1).all()
        assert valid.unique().numel() == valid.numel() and int(valid.max()) < nb * page
        assert (s[-(p["pad"] // 2):] == -1).all() and (s[:p["T"] - p["pad"] // 2] == -1).any()
        pages_used = (valid // page).unique()
        assert pages_used.numel() < nb
        d = valid[1:] - valid[:-1]
        assert (d == 1).float().mean() > 0.5      # mostly contiguous runs
        assert not torch.equal(valid // page, (valid // page).sort().values)      # pages permuted
        assert (kv == mod.FILL).all()



def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (k, v, slot_mapping read once; the real tokens' cache rows written once),
    grid and loop_iterations are the tiling of those shapes."""
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, p
            T, Hh, D, page, pad = p["T"], p["H"], p["D"], p["PAGE"], p["pad"]
            assert 0 < pad < 64 and page == 16
            assert args["K"].shape == args["V"].shape == (T, Hh, D) and args["SLOT"].shape == (T,)
            assert args["KC"].shape == args["VC"].shape == (T - pad, Hh, D)
            assert args["SLOT"].element_size() == 8 and args["K"].element_size() == 2
            assert (args["stride_kcb"], args["stride_kcs"], args["stride_kch"]) == (page * Hh * D, Hh * D, D)
            assert (args["T"], args["H"], args["D"], args["BLOCK_D"], args["PAGE"]) == (T, Hh, D, D, page)
            assert mod.bytes_moved(p) == 2 * T * Hh * D * 2 + 8 * T + 2 * (T - pad) * Hh * D * 2
            assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
            assert mod.loop_iterations(cfg, p) == triton.cdiv(Hh, cfg["BLOCK_H"])
            assert mod.flops(p) == 0


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 3, 80, 16, 5, "bf16")
    assert mod.grid(_rc(4, 2, 4, 1), p) == 10 and mod.loop_iterations(_rc(4, 2, 4, 1), p) == 2
    assert mod.loop_iterations(_rc(4, 1, 4, 1), p) == 3 and mod.loop_iterations(_rc(4, 8, 4, 1), p) == 1
    assert mod.bytes_moved(p) == 2 * 37 * 3 * 80 * 2 + 8 * 37 + 2 * 32 * 3 * 80 * 2
    args = mod.example_args(_rc(4, 2, 4, 1), p)
    assert args["D"] == 80 and args["BLOCK_D"] == 128 and args["K"].dtype == torch.bfloat16
    inputs = mod.make_inputs(p, device="cpu")
    ref = mod.reference(inputs)
    assert ref.shape == inputs["kv_cache"].shape and ref.dtype == torch.float32
    flat = ref.view(2, -1, 3, 80)
    s = inputs["slot_mapping"]
    t = int((s >= 0).nonzero()[0])
    assert torch.equal(flat[0, s[t]], inputs["k"][t].float()) and torch.equal(flat[1, s[t]], inputs["v"][t].float())
    assert int((ref != mod.FILL).any(-1).any(-1).sum()) == 2 * 32


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 2, 16, 4, 1, "fp16"), device="cpu")
    k, v, s, kv = inputs["k"], inputs["v"], inputs["slot_mapping"], inputs["kv_cache"]
    with pytest.raises(ValueError, match="BLOCK_H=3"):
        mod.reshape_and_cache(k, v, kv[0], kv[1], s, BLOCK_H=3)
    with pytest.raises(ValueError, match=r"key, value \[T, H, D\]"):
        mod.reshape_and_cache(k, v[:7], kv[0], kv[1], s)
    with pytest.raises(ValueError, match=r"\[num_blocks, PAGE, 2, 16\]"):
        mod.reshape_and_cache(k, v, kv[0][..., :8], kv[1][..., :8], s)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.reshape_and_cache(k, v, kv[0].bfloat16(), kv[1].bfloat16(), s)
    with pytest.raises(ValueError, match="int64"):
        mod.reshape_and_cache(k, v, kv[0], kv[1], s.int())
    with pytest.raises(ValueError, match="contiguous"):
        bad = torch.empty(kv.shape[1:][::-1], dtype=kv.dtype).permute(3, 2, 1, 0)
        mod.reshape_and_cache(k, v, bad, bad, s)
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(8, 2, 16, 4, 1, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="pad=9"):
        mod.make_inputs(_pt(8, 2, 16, 4, 9, "fp16"), device="cpu")


def test_study_sweeps_declare_round7_f():
    """scripts/rank_study.py's SWEEPS: held-out-7, >= 40 configs x the 3 POINTS (every config
    checked to compile and fit for sm_90 at every point with triton 3.6.0)."""
    cfgs, points, _ = H.study_sweeps([KERNEL], "held-out-7")[KERNEL]
    assert load_example(KERNEL).BASELINE in cfgs
    assert (len(cfgs), len(points)) == (60, 3)


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


if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
