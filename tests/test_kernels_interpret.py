"""The built-in kernels against their torch references, on the CPU, through Triton's
interpreter (TRITON_INTERPRET=1).

The interpreter has to be chosen before triton is imported, and the rest of the suite
imports triton compiled, so the checks run in a subprocess: this file run as a script
(``python tests/test_kernels_interpret.py decode``) executes one group of cases and
prints one JSON line; the tests below start it once per group and assert per case.

Shapes are small and odd on purpose: contexts that are not a multiple of the page or
the tile, a single partly filled page, C=1, splits that start mid-page or are empty,
head groups with masked heads, tiles that straddle pages (the nopipe kernel), GEMMs
with M=1 and sizes that are not multiples of any block.

Tolerances are per dtype, relative to the largest reference magnitude: the kernels
round P (decode) or C (matmul) to the input dtype, so an element may be off by a few
units in the last place of bf16 (2^-8) or fp16 (2^-11), never more. A failure reports
how many elements are outside the tolerance.

Triton's interpreter multiplies bf16 *bit patterns* in tl.dot (it stores bf16 as
uint16 and only converts fp8 operands; triton-lang/triton#11584, not supported
upstream), so the subprocess converts bf16 dot operands to fp32 first. Only the
interpreter is patched; the kernels are exactly what the GPU runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
TOL = {"bf16": 1e-2, "fp16": 1e-3}          # x max|ref|, absolute, per element
GROUP_TIMEOUT_S = 300

# name -> (kernel module, batch lens, launcher options, input options)
DECODE_CASES = {
    "c1_one_partial_page_bf16": dict(lens=[5], page=16, dtype="bf16", BLOCK_T=16, target=4),
    "odd_lens_mid_page_splits_fp16": dict(lens=[37, 200, 1], page=32, dtype="fp16", BLOCK_T=16, target=12),
    "odd_lens_mid_page_splits_bf16": dict(lens=[37, 200, 1], page=32, dtype="bf16", BLOCK_T=16, target=12),
    "exact_pages_tile_eq_page_fp16": dict(lens=[128, 64], page=64, dtype="fp16", BLOCK_T=64, target=2),
    "masked_heads_block_h32_bf16": dict(lens=[130], page=64, dtype="bf16", BLOCK_T=32, BLOCK_H=32, heads=48,
                                        target=4),
    "small_dims_many_splits_bf16": dict(lens=[77, 3], page=16, dtype="bf16", BLOCK_T=16, target=64,
                                        d_latent=64, d_rope=16),
    "nopipe_tile_straddles_pages_bf16": dict(kernel="nopipe", lens=[45, 70], page=16, dtype="bf16",
                                             BLOCK_T=32, target=4),
    "nopipe_c1_single_token_fp16": dict(kernel="nopipe", lens=[1], page=64, dtype="fp16", BLOCK_T=16, target=4),
}

MATMUL_CASES = {
    "ragged_all_dims_fp16": dict(M=37, N=45, K=70, dtype="fp16", BLOCK_M=32, BLOCK_N=32, BLOCK_K=32),
    "n_below_block_bf16": dict(M=64, N=16, K=128, dtype="bf16", BLOCK_M=64, BLOCK_N=32, BLOCK_K=64),
    "m_equals_1_fp16": dict(M=1, N=50, K=33, dtype="fp16", BLOCK_M=16, BLOCK_N=32, BLOCK_K=16),
    "grouped_order_bf16": dict(M=130, N=70, K=200, dtype="bf16", BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2),
}


# ----------------------------------------------------------------- the subprocess side
def _patch_interpreter_bf16_dot() -> None:
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, *args):
        def up(h):
            if h.dtype == tl.bfloat16:      # uint16 storage -> the fp32 values (exact)
                return interpreter.TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)
            return h
        return original(self, up(a), up(b), d, *args)

    interpreter.InterpreterBuilder.create_dot = create_dot


def _compare(out, ref, dtype: str) -> dict:
    import torch

    out = out.float()
    scale = float(ref.abs().max())
    tol = TOL[dtype] * max(scale, 1e-6)
    diff = (out - ref).abs()
    bad = (diff > tol) | ~torch.isfinite(out)
    return {"n_bad": int(bad.sum()), "numel": out.numel(), "max_err": float(diff.max()), "tol": tol,
            "scale": scale, "shape": list(out.shape)}


def _decode_case(spec: dict) -> dict:
    from occmodel.kernels import decode_attention as dec
    from occmodel.kernels import decode_attention_nopipe as nopipe

    inp = dec.make_decode_inputs(len(spec["lens"]), spec["lens"], num_heads=spec.get("heads", 16),
                                 d_latent=spec.get("d_latent", 512), d_rope=spec.get("d_rope", 64),
                                 page_size=spec["page"], dtype=spec["dtype"], seed=len(spec["lens"]))
    launcher = nopipe.decode_attention_nopipe if spec.get("kernel") == "nopipe" else dec.decode_attention
    out = launcher(inp["q"], inp["kv_cache"], inp["block_table"], inp["seq_lens"], inp["sm_scale"],
                   BLOCK_T=spec["BLOCK_T"], BLOCK_H=spec.get("BLOCK_H", 16), target_ctas=spec["target"],
                   d_rope=inp["d_rope"], max_seq_len=inp["max_seq_len"])
    ref = dec.reference(inp["q"], inp["kv_cache"], inp["block_table"], inp["seq_lens"], inp["sm_scale"],
                        d_rope=inp["d_rope"])
    res = _compare(out, ref, spec["dtype"])
    res["splits"] = dec.num_splits(len(spec["lens"]), spec.get("heads", 16), max(spec["lens"]), spec["BLOCK_T"],
                                   spec.get("BLOCK_H", 16), spec["target"])
    return res


def _matmul_case(spec: dict) -> dict:
    from occmodel.kernels import matmul as mm

    cfg = {"dtype": spec["dtype"]}
    point = {k: spec[k] for k in ("M", "N", "K")}
    inputs = mm.CARD.make_inputs(mm.CARD.resolve(cfg), point, seed=spec["M"])
    out = mm.matmul(inputs["a"], inputs["b"], BLOCK_M=spec["BLOCK_M"], BLOCK_N=spec["BLOCK_N"],
                    BLOCK_K=spec["BLOCK_K"], GROUP_M=spec.get("GROUP_M", 8))
    return _compare(out, mm.reference(inputs["a"], inputs["b"]), spec["dtype"])


def _main(group: str) -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    _patch_interpreter_bf16_dot()
    cases, fn = {"decode": (DECODE_CASES, _decode_case), "matmul": (MATMUL_CASES, _matmul_case)}[group]
    results = {}
    for name, spec in cases.items():
        try:
            results[name] = fn(spec)
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


# ----------------------------------------------------------------- the pytest side
def _run_group(group: str) -> dict:
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION=os.environ.get(
        "TRITON_DEFAULT_FP_FUSION", "1"), PYTHONWARNINGS="ignore")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, str(HERE), group], env=env, capture_output=True, text=True,
                          timeout=GROUP_TIMEOUT_S, cwd=HERE.parent.parent)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"interpreter subprocess for {group!r} failed (rc {proc.returncode}):\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def decode_results() -> dict:
    return _run_group("decode")


@pytest.fixture(scope="module")
def matmul_results() -> dict:
    return _run_group("matmul")


def _check(res: dict, name: str) -> None:
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["n_bad"] == 0, (f"{name}: {res['n_bad']} of {res['numel']} elements differ from the reference by "
                               f"more than {res['tol']:.3g} (max error {res['max_err']:.3g}, "
                               f"max |ref| {res['scale']:.3g})")


@pytest.mark.parametrize("name", list(DECODE_CASES))
def test_decode_attention_matches_reference(decode_results, name):
    _check(decode_results[name], name)


@pytest.mark.parametrize("name", list(MATMUL_CASES))
def test_matmul_matches_reference(matmul_results, name):
    _check(matmul_results[name], name)


def test_decode_cases_cover_split_shapes(decode_results):
    # the odd-length case really runs several splits, one starting mid-page:
    # 3 sequences, 16 heads, longest 200 tokens = 13 tiles of 16, TARGET_CTAS 12
    # -> min(12 // 3, 13 // 4 tiles per split) = 3 splits of ceil(13 / 3) = 5 tiles = 80 tokens
    # (page 32: split 1 starts mid-page, at token 80)
    assert decode_results["odd_lens_mid_page_splits_fp16"]["splits"] == [3, 80]


if __name__ == "__main__":
    _main(sys.argv[1])
