"""examples/grouped_gemm.py and examples/cross_entropy.py against their torch references
on the CPU through Triton's interpreter, their launcher hooks against the shapes, and
a real compile for sm_90 and sm_120.

The same pattern as test_examples_interpret.py: the interpreter must be chosen before
triton is imported, so each kernel's cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round3_b.py grouped_gemm``) that prints one JSON
line; the tests assert per case. bf16 dot operands are widened to fp32 inside the
interpreter only (see test_kernels_interpret.py).

Cases cover every tunable value's path: K not a multiple of BLOCK_K, N not a multiple
of BLOCK_N, experts with no rows, one hot expert, GROUP_M larger than the row tiles;
V not a multiple of BLOCK_V, a block wider than the row, ignored targets (all of them
in one case).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()


def _gg(bm, bn, bk, gm, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm, "num_warps": w, "num_stages": s}


def _ce(bv, w, s):
    return {"BLOCK_V": bv, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "grouped_gemm": {
        "ragged_k_and_n_fp16": ({"T": 100, "E": 4, "K": 70, "N": 45, "dtype": "fp16"}, _gg(16, 32, 32, 1, 4, 2)),
        "idle_experts_bf16": ({"T": 90, "E": 6, "K": 48, "N": 40, "idle": 2, "dtype": "bf16"},
                              _gg(32, 16, 16, 8, 2, 3)),
        "hot_expert_group2_fp16": ({"T": 150, "E": 5, "K": 64, "N": 64, "hot": 0.6, "dtype": "fp16"},
                                   _gg(32, 64, 64, 2, 4, 4)),
        "tiles_bigger_than_experts_bf16": ({"T": 40, "E": 3, "K": 100, "N": 33, "dtype": "bf16"},
                                           _gg(64, 64, 128, 4, 8, 1)),
        "one_row_experts_fp16": ({"T": 7, "E": 8, "K": 32, "N": 128, "idle": 1, "dtype": "fp16"},
                                 _gg(16, 128, 16, 1, 1, 2)),
    },
    "cross_entropy": {
        "ragged_chunks_fp32": ({"M": 9, "V": 1000, "ignore": 0.3, "dtype": "fp32"}, _ce(128, 4, 2)),
        "block_wider_than_row_bf16": ({"M": 5, "V": 300, "dtype": "bf16"}, _ce(512, 8, 1)),
        "tail_chunk_of_one_fp16": ({"M": 6, "V": 257, "ignore": 0.5, "dtype": "fp16"}, _ce(64, 2, 3)),
        "all_ignored_bf16": ({"M": 4, "V": 100, "ignore": 1.0, "dtype": "bf16"}, _ce(32, 1, 2)),
        "exact_chunks_fp32": ({"M": 3, "V": 2048, "dtype": "fp32"}, _ce(1024, 16, 2)),
        "tiny_block_fp16": ({"M": 2, "V": 131, "dtype": "fp16"}, _ce(16, 1, 1)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    "grouped_gemm": [_gg(64, 128, 64, 8, 4, 3), _gg(128, 128, 32, 8, 8, 3), _gg(32, 64, 128, 1, 4, 2)],
    "cross_entropy": [_ce(4096, 8, 2), _ce(16384, 16, 2), _ce(1024, 4, 1)],
}


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    assert res["n_bad"] == 0, H.mismatch(res, f"{kernel}/{name}")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over a kernel's cases; masked tails are hit."""
    H.assert_tunables_covered(CASES, baseline=False)
    gg = CASES["grouped_gemm"].values()
    assert any(p["K"] % c["BLOCK_K"] for p, c in gg) and any(p["N"] % c["BLOCK_N"] for p, c in gg)
    assert any(p.get("idle") for p, _ in gg)
    ce = CASES["cross_entropy"].values()
    assert any(p["V"] % c["BLOCK_V"] for p, c in ce) and any(p.get("ignore") for p, _ in ce)


@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_contract(kernel):
    """The module imports without a GPU and carries the contract's functions, with sane
    numbers at every default point."""
    mod = load_example(kernel)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    assert len(mod.POINTS) == 3 and set(mod.BASELINE) == set(mod.TUNABLES)
    assert {p["dtype"] for p in mod.POINTS} <= set(mod.DTYPES)
    for point in mod.POINTS:
        assert mod.bytes_moved(point) > 4 * 50e6, (kernel, point)
        for cfg in COMPILE_CFGS[kernel]:
            assert mod.flops(point) > 0 and mod.grid(cfg, point) >= 1 and mod.loop_iterations(cfg, point) >= 1


def test_grouped_gemm_hooks_agree_with_shapes():
    import torch

    mod = load_example("grouped_gemm")
    assert mod.expert_counts({"T": 4096, "E": 16, "hot": 0.4}) == [1638] + [164] * 13 + [163] * 2
    assert mod.expert_counts({"T": 10, "E": 4, "idle": 2}) == [5, 0, 0, 5]
    point = {"T": 100, "E": 4, "K": 70, "N": 45, "idle": 1, "dtype": "bf16"}      # rows 34, 0, 33, 33
    cfg = _gg(16, 32, 32, 8, 4, 3)
    tiles = mod.tile_map(mod.expert_counts(point), 16)
    assert tiles.tolist() == [[0, 0, 34], [0, 16, 34], [0, 32, 34], [2, 34, 67], [2, 50, 67], [2, 66, 67],
                              [3, 67, 100], [3, 83, 100], [3, 99, 100]]
    assert mod.grid(cfg, point) == 9 * 2 and mod.loop_iterations(cfg, point) == 3
    args = mod.example_args(cfg, point)
    assert args["TILES"].shape == (9, 3) and args["n_tiles_m"] == 9 and (args["N"], args["K"]) == (45, 70)
    assert args["X"].shape == (100, 70) and args["W"].shape == (4, 70, 45) and args["OUT"].shape == (100, 45)
    assert all(t.device.type == "meta" for t in (args["X"], args["W"], args["OUT"], args["TILES"]))
    inputs = mod.make_inputs(point, device="cpu")
    assert inputs["x"].dtype == torch.bfloat16 and inputs["offs"].tolist() == [0, 34, 34, 67, 100]
    assert float(inputs["x"].float().std()) > 0.1 and float(inputs["w"].float().std()) > 0.1
    # x, the weights of 3 experts with rows and out, 2 bytes each; 2 T K N
    assert mod.bytes_moved(point) == 2 * (100 * 70 + 3 * 70 * 45 + 100 * 45)
    assert mod.flops(point) == 2 * 100 * 70 * 45
    with pytest.raises(ValueError, match="BLOCK_K=48"):
        mod.grouped_gemm(inputs["x"], inputs["w"], tiles, BLOCK_K=48)
    with pytest.raises(ValueError, match="hot=1.5"):
        mod.expert_counts({"T": 8, "E": 2, "hot": 1.5})
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(dict(point, dtype="fp8"), device="cpu")


def test_cross_entropy_hooks_agree_with_shapes():
    import torch

    mod = load_example("cross_entropy")
    point = {"M": 10, "V": 1000, "ignore": 0.3, "dtype": "fp16"}
    cfg = _ce(256, 4, 2)
    assert mod.grid(cfg, point) == 10 and mod.loop_iterations(cfg, point) == 4
    args = mod.example_args(cfg, point)
    assert args["LOGITS"].shape == (10, 1000) and args["n_cols"] == 1000 and args["stride_row"] == 1000
    assert args["TARGETS"].dtype == torch.int64 and args["LOSS"].dtype == torch.float32
    inputs = mod.make_inputs(point, device="cpu")
    assert int((inputs["targets"] == -100).sum()) == 3 and float(inputs["logits"].float().std()) > 1
    assert mod.bytes_moved(point) == 7 * 1000 * 2 + 10 * 12 and mod.flops(point) == 5 * 7 * 1000
    with pytest.raises(ValueError, match="BLOCK_V=100"):
        mod.cross_entropy(inputs["logits"], inputs["targets"], BLOCK_V=100)
    with pytest.raises(ValueError, match="int32"):
        mod.cross_entropy(inputs["logits"], inputs["targets"].int())
    with pytest.raises(ValueError, match="ignore=2"):
        mod.bytes_moved(dict(point, ignore=2))


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
    H.run_cases(sys.argv[1], CASES[sys.argv[1]])
