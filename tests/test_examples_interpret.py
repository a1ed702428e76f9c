"""The example kernels under examples/ (bare @triton.jit kernels + launchers) against
their torch references on the CPU through Triton's interpreter, and compiled for
sm_120 and sm_90 from their own ``example_args``.

As in test_kernels_interpret.py, the interpreter must be chosen before triton is
imported, so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_interpret.py flash_attention``) that prints one JSON
line; the tests assert per case. bf16 dot operands are widened to fp32 inside the
interpreter only (its tl.dot multiplies bf16 bit patterns; see that file).

Shapes are small and odd: sequence / row / K lengths that are no multiple of any
block, a single row, blocks larger than the problem. Tolerances are per dtype,
relative to the largest reference magnitude (the kernels round a P tile or the
output to the input dtype, so a few ulps of that dtype, never more).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import TOL, load_example  # noqa: F401  (TOL: re-exported to scripts/check_examples_gpu.py)

HERE = Path(__file__).resolve()

# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "flash_attention": {
        "odd_seq_fp32": ({"B": 2, "H": 3, "S": 45, "D": 16, "causal": 0, "dtype": "fp32"},
                         {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}),
        "odd_seq_causal_fp16": ({"B": 1, "H": 2, "S": 77, "D": 32, "causal": 1, "dtype": "fp16"},
                                {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}),
        "causal_bn_gt_bm_bf16": ({"B": 2, "H": 1, "S": 50, "D": 64, "causal": 1, "dtype": "bf16"},
                                 {"BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 2, "num_stages": 3}),
        "one_token_block_bigger_fp16": ({"B": 1, "H": 2, "S": 1, "D": 16, "causal": 1, "dtype": "fp16"},
                                        {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 1}),
        "noncausal_bf16": ({"B": 1, "H": 2, "S": 100, "D": 32, "causal": 0, "dtype": "bf16"},
                           {"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2}),
    },
    "rmsnorm": {
        "ragged_chunks_fp32": ({"M": 7, "N": 1000, "dtype": "fp32"},
                               {"BLOCK_N": 256, "num_warps": 4, "num_stages": 2}),
        "one_row_many_chunks_fp16": ({"M": 1, "N": 333, "dtype": "fp16"},
                                     {"BLOCK_N": 16, "num_warps": 1, "num_stages": 3}),
        "block_wider_than_row_bf16": ({"M": 5, "N": 300, "dtype": "bf16"},
                                      {"BLOCK_N": 512, "num_warps": 8, "num_stages": 1}),
        "exact_chunks_bf16": ({"M": 3, "N": 512, "dtype": "bf16"},
                              {"BLOCK_N": 128, "num_warps": 2, "num_stages": 2}),
    },
    "splitk_gemm": {
        "ragged_all_dims_split3_fp32": ({"M": 37, "N": 45, "K": 300, "dtype": "fp32"},
                                        {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 3,
                                         "num_warps": 4, "num_stages": 2}),
        "no_split_fp16": ({"M": 40, "N": 70, "K": 100, "dtype": "fp16"},
                          {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 16, "SPLIT_K": 1,
                           "num_warps": 4, "num_stages": 3}),
        "empty_last_split_bf16": ({"M": 20, "N": 33, "K": 70, "dtype": "bf16"},
                                  {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "SPLIT_K": 4,
                                   "num_warps": 2, "num_stages": 2}),
        "m_equals_1_split8_fp16": ({"M": 1, "N": 50, "K": 513, "dtype": "fp16"},
                                   {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 8,
                                    "num_warps": 4, "num_stages": 1}),
    },
    "moe_gather": {
        "topk3_padded_fp32": ({"T": 13, "D": 100, "E": 5, "topk": 3, "dtype": "fp32"},
                              {"BLOCK_T": 4, "BLOCK_D": 32, "num_warps": 4, "num_stages": 2}),
        "one_token_topk1_fp16": ({"T": 1, "D": 48, "E": 4, "topk": 1, "dtype": "fp16"},
                                 {"BLOCK_T": 2, "BLOCK_D": 16, "num_warps": 1, "num_stages": 1}),
        "ragged_tokens_and_hidden_bf16": ({"T": 37, "D": 257, "E": 8, "topk": 2, "dtype": "bf16"},
                                          {"BLOCK_T": 8, "BLOCK_D": 64, "num_warps": 2, "num_stages": 3}),
        "block_wider_than_row_fp16": ({"T": 9, "D": 200, "E": 16, "topk": 6, "dtype": "fp16"},
                                      {"BLOCK_T": 1, "BLOCK_D": 512, "num_warps": 4, "num_stages": 2}),
    },
    "softmax_online": {
        "ragged_chunks_fp32": ({"M": 6, "N": 1000, "dtype": "fp32"},
                               {"BLOCK_N": 128, "num_warps": 4, "num_stages": 2}),
        "one_column_fp16": ({"M": 3, "N": 1, "dtype": "fp16"},
                            {"BLOCK_N": 16, "num_warps": 1, "num_stages": 1}),
        "tail_chunk_of_one_bf16": ({"M": 4, "N": 257, "dtype": "bf16"},
                                   {"BLOCK_N": 64, "num_warps": 2, "num_stages": 3}),
        "block_wider_than_row_fp16": ({"M": 5, "N": 300, "dtype": "fp16"},
                                      {"BLOCK_N": 1024, "num_warps": 8, "num_stages": 2}),
    },
    "layernorm_rows": {
        "ragged_rows_and_chunks_fp32": ({"M": 7, "N": 1000, "dtype": "fp32"},
                                        {"BLOCK_M": 4, "BLOCK_N": 256, "num_warps": 4, "num_stages": 2}),
        "one_row_tile_of_8_fp16": ({"M": 1, "N": 333, "dtype": "fp16"},
                                   {"BLOCK_M": 8, "BLOCK_N": 64, "num_warps": 1, "num_stages": 2}),
        "block_wider_than_row_bf16": ({"M": 9, "N": 300, "dtype": "bf16"},
                                      {"BLOCK_M": 2, "BLOCK_N": 512, "num_warps": 8, "num_stages": 1}),
        "one_row_per_cta_exact_chunks_bf16": ({"M": 3, "N": 512, "dtype": "bf16"},
                                              {"BLOCK_M": 1, "BLOCK_N": 128, "num_warps": 2, "num_stages": 2}),
    },
    "bmm": {
        "ragged_all_dims_fp32": ({"BATCH": 3, "M": 37, "N": 45, "K": 100, "dtype": "fp32"},
                                 {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}),
        "tiles_bigger_than_matrix_fp16": ({"BATCH": 2, "M": 20, "N": 33, "K": 70, "dtype": "fp16"},
                                          {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4,
                                           "num_stages": 3}),
        "batch_of_one_bf16": ({"BATCH": 1, "M": 64, "N": 48, "K": 129, "dtype": "bf16"},
                              {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 64, "num_warps": 2, "num_stages": 2}),
        "m_equals_1_bf16": ({"BATCH": 5, "M": 1, "N": 50, "K": 64, "dtype": "bf16"},
                            {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "num_warps": 1, "num_stages": 1}),
    },
    "swiglu": {
        "ragged_chunks_fp32": ({"M": 6, "N": 1000, "dtype": "fp32"},
                               {"BLOCK_N": 128, "num_warps": 4, "num_stages": 2}),
        "one_column_fp16": ({"M": 3, "N": 1, "dtype": "fp16"},
                            {"BLOCK_N": 16, "num_warps": 1, "num_stages": 2}),
        "tail_chunk_of_one_bf16": ({"M": 4, "N": 257, "dtype": "bf16"},
                                   {"BLOCK_N": 64, "num_warps": 2, "num_stages": 2}),
        "block_wider_than_row_fp16": ({"M": 5, "N": 300, "dtype": "fp16"},
                                      {"BLOCK_N": 1024, "num_warps": 8, "num_stages": 2}),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT
COMPILE_CFGS: dict[str, list[dict]] = {
    "flash_attention": [{"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
                        {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3}],
    "rmsnorm": [{"BLOCK_N": 1024, "num_warps": 4, "num_stages": 2},
                {"BLOCK_N": 4096, "num_warps": 16, "num_stages": 1}],
    "splitk_gemm": [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 4, "num_warps": 4, "num_stages": 3},
                    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "SPLIT_K": 1, "num_warps": 4, "num_stages": 4}],
    "moe_gather": [{"BLOCK_T": 4, "BLOCK_D": 256, "num_warps": 4, "num_stages": 2},
                   {"BLOCK_T": 16, "BLOCK_D": 128, "num_warps": 8, "num_stages": 3}],
    "softmax_online": [{"BLOCK_N": 2048, "num_warps": 8, "num_stages": 2},
                       {"BLOCK_N": 256, "num_warps": 1, "num_stages": 3}],
    "layernorm_rows": [{"BLOCK_M": 2, "BLOCK_N": 1024, "num_warps": 4, "num_stages": 2},
                       {"BLOCK_M": 8, "BLOCK_N": 2048, "num_warps": 16, "num_stages": 2}],
    "bmm": [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3},
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4}],
    "swiglu": [{"BLOCK_N": 1024, "num_warps": 4, "num_stages": 2},
               {"BLOCK_N": 8192, "num_warps": 16, "num_stages": 2}],
}


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    assert res["n_bad"] == 0, H.mismatch(res, f"{kernel}/{name}")


@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_contract(kernel):
    """The module imports without a GPU and carries the contract's functions, with
    sane numbers at every default point."""
    mod = load_example(kernel)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    assert mod.POINTS, f"{kernel} has no default POINTS"
    assert set(mod.BASELINE) == set(mod.TUNABLES), f"{kernel}: BASELINE {mod.BASELINE} vs TUNABLES {mod.TUNABLES}"
    cfg = COMPILE_CFGS[kernel][0]
    for point in mod.POINTS:
        # one launch moves more than the H200's 50 MB L2, several times over
        assert mod.bytes_moved(point) > 4 * 50e6, (kernel, point)
        g = mod.grid(cfg, point)                           # the CTA count, or the launch grid as a tuple
        assert mod.flops(point) > 0 and min(g if isinstance(g, tuple) else (g,)) >= 1
        assert mod.loop_iterations(cfg, point) >= 1


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0


if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]])
