"""examples/row_topk.py against its torch reference (a stable descending sort) on the CPU
through Triton's interpreter, its launcher hooks against the shapes, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round12_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round13_c.py row_topk``) that prints one JSON line; the tests
assert per case.

Shapes are small and odd, and together take every path: one chunk a CTA (CHUNKS_PER_CTA 1)
and the carried running top-k (CHUNKS_PER_CTA > 1, a last group of fewer chunks), a whole row
in one CTA (FINAL: stage 1 writes the outputs, no merge) and the merge from one register tile
and from several streamed tiles (NC > MERGE_MAX_BLOCK), int32 keys (bf16 / fp16) and int64 keys
(fp32, and a bf16 span over 65,536 columns), a span of exactly 65,504 columns (the largest
int32 column bits), V smaller than BLOCK_V, ragged V, k not a power of two, k = 1 and k = V,
strided rows, many equal values (ties across chunks and CTAs), and -inf logits inside the top-k
(rows with fewer finite values than k).

Tolerance: none. The selection compares exact integer keys and the values written are the
selected logits' own bits (decoded from the key), so values and indices must equal the
reference's exactly (values compared with tolerance 0, indices by equality); torch.topk's values
(the baseline) are the same multiset in the same descending order, so they match exactly too.
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
KERNEL = "row_topk"


def _cfg(bv, cpc, w, s=1):
    return {"BLOCK_V": bv, "CHUNKS_PER_CTA": cpc, "num_warps": w, "num_stages": s}


def _pt(B, V, k, dtype):
    return {"B": B, "V": V, "k": k, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_chunks_fp32": (_pt(3, 1000, 5, "fp32"), _cfg(128, 1, 4)),
        "carry_last_group_short_bf16": (_pt(3, 1003, 7, "bf16"), _cfg(64, 3, 2, 2)),
        "carry_fp16_k17": (_pt(2, 2500, 17, "fp16"), _cfg(256, 4, 4)),
        "carry_fp32_k21": (_pt(2, 1501, 21, "fp32"), _cfg(128, 2, 8, 2)),
        "one_cta_per_row_bf16": (_pt(4, 900, 6, "bf16"), _cfg(256, 4, 4)),
        "one_cta_per_row_fp32": (_pt(3, 700, 9, "fp32"), _cfg(1024, 1, 8)),
        "block_wider_than_row_fp16": (_pt(2, 37, 5, "fp16"), _cfg(512, 1, 2)),
        "k_equals_v_bf16": (_pt(2, 24, 24, "bf16"), _cfg(32, 1, 1)),
        "k_one_fp32": (_pt(5, 777, 1, "fp32"), _cfg(64, 2, 2)),
        "multi_tile_merge_bf16": (_pt(2, 1000, 9, "bf16"), _cfg(64, 1, 1)),
        "wide_keys_bf16_span": (_pt(2, 70001, 4, "bf16"), _cfg(16384, 5, 8)),
        "narrow_span_65504_bf16": (_pt(2, 70000, 8, "bf16"), _cfg(16384, 4, 8)),
        "strided_rows_fp32": (_pt(3, 513, 10, "fp32"), _cfg(64, 1, 4)),
        "ties_across_ctas_bf16": (_pt(2, 1500, 20, "bf16"), _cfg(128, 2, 4)),
        "ties_across_ctas_fp32": (_pt(2, 2049, 12, "fp32"), _cfg(256, 1, 4, 2)),
        "neg_inf_in_topk_fp16": (_pt(3, 300, 9, "fp16"), _cfg(32, 2, 2)),
        "neg_inf_in_topk_fp32": (_pt(2, 129, 6, "fp32"), _cfg(64, 1, 4)),
    },
}

# cases run with a smaller stage-2 tile limit (mod.MERGE_MAX_BLOCK, 2048 in use): the streamed merge
# (NC > MERGE_MAX_BLOCK, a ragged last tile) on a shape the interpreter runs in well under a second
# (at 2048 it needs > 2048 selection passes); the slow tests compile it at 2048
MERGE_LIMIT = {"multi_tile_merge_bf16": 64}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(4096, 1, 8), _cfg(2048, 2, 4), _cfg(8192, 8, 16), _cfg(1024, 4, 4)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided rows; many equal values; -inf logits."""
    import torch

    x = inputs["logits"]
    if name == "strided_rows_fp32":
        wide = torch.full((x.shape[0], x.shape[1] + 19), 1e30, dtype=x.dtype)   # huge: would win if read
        wide[:, :x.shape[1]] = x
        inputs["logits"] = wide[:, :x.shape[1]]
        assert inputs["logits"].stride() == (x.shape[1] + 19, 1)
    if name.startswith("ties_across_ctas"):
        # floor(N(0, 2.5^2)): ~15 distinct values over thousands of columns, no -0.0
        inputs["logits"] = torch.floor(x.float()).to(x.dtype)
    if name.startswith("neg_inf_in_topk"):
        x = x.clone()
        x[0, :] = -float("inf")
        x[0, [3, 50, 90]] = torch.tensor([1.0, -2.0, 1.0], dtype=x.dtype)   # 3 finite of k: then -inf by column
        x[1, ::3] = -float("inf")
        x[-1, 7:] = -float("inf")                                           # 7 finite, a mix of both
        inputs["logits"] = x


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["shape"] == [point["B"], point["k"]]
    for what, r in (("values", res), ("torch_baseline values", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    assert res["idx_bad"] == 0, f"{name}: {res['idx_bad']} of {res['numel']} indices differ from the stable sort's"
    assert res["idx_dtype"] == "torch.int64"


def test_cases_cover_every_tunable_value_and_path():
    """Each tunable takes at least two values; both stage-1 modes, the three finishes (FINAL, a
    one-tile merge, a streamed merge), both key widths for a 16-bit dtype, every dtype, ragged
    rows and short last groups are hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    plans = []
    for name, (p, c) in CASES[KERNEL].items():
        mod.MERGE_MAX_BLOCK = MERGE_LIMIT.get(name, 2048)
        plans.append((p, c, mod.plan(c, p)))
    assert {c["CHUNKS_PER_CTA"] > 1 for _, c, _ in plans} == {False, True}
    assert any(pl["n_groups"] == 1 and c["CHUNKS_PER_CTA"] > 1 for _, c, pl in plans)
    assert any(pl["n_groups"] == 1 and c["CHUNKS_PER_CTA"] == 1 for _, c, pl in plans)
    assert any(pl["n_groups"] > 1 and pl["ONE_TILE"] for _, _, pl in plans)
    assert any(pl["n_groups"] > 1 and not pl["ONE_TILE"] for _, _, pl in plans)
    assert {p["dtype"] for p, _, _ in plans} == set(mod.DTYPES)
    assert any(pl["WIDE"] and p["dtype"] != "fp32" for p, _, pl in plans)
    assert any(not pl["WIDE"] and c["CHUNKS_PER_CTA"] * pl["STEP"] > 65000 for _, c, pl in plans)
    assert any(p["V"] % pl["STEP"] for p, _, pl in plans) and any(p["V"] < c["BLOCK_V"] for p, c, _ in plans)
    # a last group of fewer chunks than CHUNKS_PER_CTA, with more than one group
    assert any(pl["n_groups"] > 1 and pl["n_chunks"] % c["CHUNKS_PER_CTA"] for _, c, pl in plans)
    assert any(p["k"] == p["V"] for p, _, _ in plans) and any(p["k"] == 1 for p, _, _ in plans)
    assert any(p["k"] & (p["k"] - 1) for p, _, _ in plans)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, 48 configs with BASELINE among them; at every POINT each
    config is valid, fills the 132 SMs at least once over with stage-1 CTAs, keeps its keys in
    registers (<= 64 int64 or 128 int32 keys a thread) and its merge tile <= 2048 keys; shared
    memory is only the reductions' scratch. (Every config was compiled for sm_90 with triton
    3.6.0 at every point: all 144 compile in <= 0.9 s each, none spills, 27-255 registers (255:
    BLOCK_V 8192 on 4 warps, fp32: 64 int64 keys a thread), 16-512 bytes of shared memory;
    BLOCK_V 16384, left out, spills 52-194 words on 4 warps at the fp32 point.)"""
    axes = H.study_sweeps([KERNEL], "held-out-13")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES) and all(len(v) >= 2 for k, v in axes.items() if k != "num_stages")
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            pl = mod.plan(c, p)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 132 and gy == p["B"], (p, c)
            key_bytes = 8 if pl["WIDE"] else 4
            assert c["BLOCK_V"] // (32 * c["num_warps"]) * key_bytes <= 512, (p, c)    # <= 128 registers of keys
            assert pl["MERGE_BLOCK"] <= mod.MERGE_MAX_BLOCK
            assert (c["num_warps"] + pl["K_PAD"]) * 8 <= 227 * 1024
    # the points differ in character: int64 keys, a merge on few rows, and rows one CTA can take
    base = [mod.plan(mod.BASELINE, p) for p in mod.POINTS]
    assert [pl["WIDE"] for pl in base] == [True, False, False]
    assert mod.POINTS[1]["B"] < 132 and mod.POINTS[2]["B"] >= 132 * 8
    assert any(mod.plan(c, mod.POINTS[2])["n_groups"] == 1 for c in cfgs)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are the bytes bytes_moved counts
    plus the stage-1 workspace, the grid is the row split, cta_iterations sums to the chunks,
    the merge is declared exactly when a row spans more than one CTA."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_indices", "bytes_moved", "flops", "grid",
               "loop_iterations", "cta_iterations", "example_args", "torch_baseline", "secondary_kernels",
               "row_topk", "plan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"fp32", "bf16"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, V, k = p["B"], p["V"], p["k"]
            e = 4 if p["dtype"] == "fp32" else 2
            pl = mod.plan(cfg, p)
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["LOGITS"].shape == (B, V) and args["LOGITS"].element_size() == e
            assert args["VALS"].shape == (B, k) and args["VALS"].dtype == args["LOGITS"].dtype
            assert args["IDX"].shape == (B, k) and args["IDX"].dtype == torch.int64
            assert (args["V"], args["K"], args["stride_row"], args["stride_out"]) == (V, k, V, k)
            assert mod.bytes_moved(p) == B * V * e + B * k * (e + 8) > 9 * 2**20
            final = pl["n_groups"] == 1
            assert args["FINAL"] == final and args["K_PAD"] == mod.k_pad(k) >= k
            if final:
                assert args["CAND"] is args["IDX"]
                assert H.meta_nbytes(args) - args["IDX"].numel() * 8 == mod.bytes_moved(p)
                assert mod.secondary_kernels(cfg, p) == []
            else:
                assert args["CAND"].shape == (B, pl["n_groups"] * k) and args["CAND"].dtype == torch.int64
                assert H.meta_nbytes(args) - args["CAND"].numel() * 8 == mod.bytes_moved(p)
                (sec,) = mod.secondary_kernels(cfg, p)
                assert sec["grid"] == B and sec["dram_bytes"] == 0
                if pl["ONE_TILE"]:
                    assert sec["iterations"] == k and sec["tile_bytes"] * k >= 8 * pl["NC"]
                else:
                    assert sec["iterations"] == k * triton.cdiv(pl["NC"], pl["MERGE_BLOCK"])
            step = cfg["BLOCK_V"] - (mod.k_pad(k) if cfg["CHUNKS_PER_CTA"] > 1 else 0)
            n_chunks = triton.cdiv(V, step)
            assert mod.grid(cfg, p) == (triton.cdiv(n_chunks, cfg["CHUNKS_PER_CTA"]), B)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == B * pl["n_groups"] and sum(its) == B * n_chunks and min(its) >= 1
            assert mod.loop_iterations(cfg, p) == max(its) == min(cfg["CHUNKS_PER_CTA"], n_chunks)
            assert mod.flops(p) == B * V * k


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p, c = _pt(3, 1003, 7, "bf16"), _cfg(64, 3, 2)
    pl = mod.plan(c, p)
    # K_PAD 8, carry row: 56 new columns a chunk, 18 chunks in 6 groups of 3
    assert (pl["K_PAD"], pl["STEP"], pl["n_chunks"], pl["n_groups"], pl["NC"]) == (8, 56, 18, 6, 42)
    assert not pl["WIDE"] and pl["ONE_TILE"] and pl["MERGE_BLOCK"] == 64
    assert mod.grid(c, p) == (6, 3) and mod.cta_iterations(c, p) == [3] * 18 and mod.loop_iterations(c, p) == 3
    p2 = _pt(2, 1010, 5, "fp32")
    assert mod.cta_iterations(_cfg(64, 3, 2), p2) == [3] * 6 + [1] + [3] * 6 + [1]        # 19 chunks of 56
    assert mod.plan(_cfg(64, 1, 2), p2)["STEP"] == 64 and mod.plan(_cfg(64, 1, 2), p2)["WIDE"]
    assert mod.plan(_cfg(16384, 5, 8), _pt(2, 70001, 4, "bf16"))["WIDE"]
    assert mod.bytes_moved(p) == 3 * 1003 * 2 + 3 * 7 * 10 and mod.flops(p) == 3 * 1003 * 7
    for dt, tdt in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16)):
        inputs = mod.make_inputs(_pt(4, 300, 6, dt), seed=3, device="cpu")
        x = inputs["logits"]
        assert x.dtype == tdt and x.shape == (4, 300) and inputs["k"] == 6 and torch.isfinite(x).all()
        assert 1.5 < float(x.float().std()) < 3.5
        assert torch.equal(x, mod.make_inputs(_pt(4, 300, 6, dt), seed=3, device="cpu")["logits"])
        assert not torch.equal(x, mod.make_inputs(_pt(4, 300, 6, dt), seed=4, device="cpu")["logits"])
        ref, ids = mod.reference(inputs), mod.reference_indices(inputs)
        assert ref.dtype == torch.float32 and ids.dtype == torch.int64 and ref.shape == ids.shape == (4, 6)
        assert torch.all(ref[:, :-1] >= ref[:, 1:])
        assert torch.equal(ref, torch.topk(x.float(), 6, dim=1)[0])
        assert torch.equal(mod.torch_baseline(inputs).float(), ref)
    # ties: the reference orders equal values by column
    inputs = {"logits": torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0]]), "k": 4}
    assert mod.reference_indices(inputs).tolist() == [[1, 2, 4, 3]]
    assert mod.k_pad(1) == 1 and mod.k_pad(8) == 8 and mod.k_pad(9) == 16 and mod.k_pad(50) == 64


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = mod.make_inputs(_pt(2, 100, 5, "fp32"), device="cpu")["logits"]
    with pytest.raises(ValueError, match="BLOCK_V=48"):
        mod.row_topk(x, 5, BLOCK_V=48)
    with pytest.raises(ValueError, match=r"BLOCK_V=8 must be a power of two >= 16"):
        mod.row_topk(x, 9, BLOCK_V=8, CHUNKS_PER_CTA=1)
    with pytest.raises(ValueError, match=r"BLOCK_V=16 must be a power of two >= 32"):
        mod.row_topk(x, 9, BLOCK_V=16, CHUNKS_PER_CTA=2)
    with pytest.raises(ValueError, match="CHUNKS_PER_CTA=0"):
        mod.row_topk(x, 5, CHUNKS_PER_CTA=0)
    with pytest.raises(ValueError, match="k=101"):
        mod.row_topk(x, 101)
    with pytest.raises(ValueError, match="k=0"):
        mod.row_topk(x, 0)
    with pytest.raises(ValueError, match=r"\[B, V\]"):
        mod.row_topk(x[0], 5)
    with pytest.raises(ValueError, match="fp32, bf16 or fp16"):
        mod.row_topk(x.double(), 5)
    with pytest.raises(ValueError, match="empty"):
        mod.row_topk(x[:0], 5)
    with pytest.raises(ValueError, match="k=2000"):
        mod.make_inputs(_pt(2, 4000, 2000, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="fp64"):
        mod.make_inputs(_pt(2, 100, 5, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="int8"):
        mod.bytes_moved(_pt(2, 100, 5, "int8"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_example_compiles(shared_cache, arch):
    mod = load_example(KERNEL)
    assert COMPILE_CFGS[KERNEL][0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS[KERNEL], arch):
        assert res.status == "ok", f"{cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0 and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_and_merge_compile(shared_cache, arch):
    """The bf16 points at BASELINE (int32 keys) and at a one-CTA-per-row config (FINAL), and the
    merge kernel at the first point (a streamed merge) and the second (one register tile)."""
    import torch
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg, p in ((mod.BASELINE, mod.POINTS[1]), (mod.BASELINE, mod.POINTS[2]), (_cfg(4096, 8, 8), mod.POINTS[2])):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} {cfg} on {arch}: {res.status}: {res.message}"
    for cfg, p, one in ((_cfg(1024, 1, 4), mod.POINTS[0], False), (mod.BASELINE, mod.POINTS[1], True)):
        pl = mod.plan(cfg, p)
        assert pl["ONE_TILE"] == one
        B, k = p["B"], p["k"]
        dt = mod._torch_dtype(p["dtype"])
        cand = torch.empty((B, pl["NC"]), dtype=torch.int64, device="meta")
        vals = torch.empty((B, k), dtype=dt, device="meta")
        idx = torch.empty((B, k), dtype=torch.int64, device="meta")
        res = compile_kernel(mod._merge_kernel, args=mod._merge_kernel_args(cand, vals, idx, k, pl), arch=arch,
                             num_warps=pl["merge_warps"], num_stages=1)
        assert res.status == "ok" and res.n_spills == 0, f"merge {p} on {arch}: {res.status}: {res.message}"


# ----------------------------------------------------------------- the subprocess side
def _exact(out, ref) -> dict:
    """Elements of `out` (as fp32) not equal to `ref` (-inf equals -inf; NaN equals nothing),
    in the fields H.mismatch reports."""
    import torch

    out = out.float()
    bad = out != ref
    diff = torch.where(bad, (out - ref).abs().nan_to_num(float("inf")), torch.zeros_like(out))
    finite = ref[torch.isfinite(ref)]
    return {"n_bad": int(bad.sum()), "numel": out.numel(), "max_err": float(diff.max()) if out.numel() else 0.0,
            "tol": 0.0, "scale": float(finite.abs().max()) if finite.numel() else 0.0, "shape": list(out.shape)}


def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: every case through row_topk; values against the reference and
    torch.topk's (tolerance 0), indices against the stable sort's; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        mod.MERGE_MAX_BLOCK = MERGE_LIMIT.get(name, 2048)
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            vals, idx = mod._run(inputs, cfg)
            ref = mod.reference(inputs)
            res = _exact(vals, ref)
            res["baseline"] = _exact(mod.torch_baseline(inputs), ref)
            res["idx_bad"] = int((idx != mod.reference_indices(inputs)).sum())
            res["idx_dtype"] = str(idx.dtype)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    assert sys.argv[1] == KERNEL, sys.argv
    _run_cases()
