"""examples/gemv.py and examples/paged_decode.py against their torch references on the
CPU through Triton's interpreter, their launcher hooks against the shapes, and a compile
for sm_120 and sm_90 from their own ``example_args``.

As in test_examples_interpret.py, the interpreter must be chosen before triton is
imported, so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_round3_a.py gemv``) that prints one JSON line; the tests
assert per case. bf16 dot operands are widened to fp32 inside the interpreter only.

Shapes are small and odd: K no multiple of BLOCK_K, N no multiple of BLOCK_N, contexts
no multiple of BLOCK_N or PAGE, chunks that span several pages or part of one, ragged
seq_lens, GQA groups of 1 to 16 heads. Tolerances relative to the largest reference
magnitude, per dtype.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()


def _cfg(**kw):
    return {"num_warps": 4, "num_stages": 2, **kw}


# kernel module -> case name -> (point, cfg); a point's "ragged" key (test-only) draws
# each seq_len at random in 1..ctx after make_inputs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "gemv": {
        "ragged_k_and_n_fp32": ({"N": 37, "K": 300, "dtype": "fp32"}, _cfg(BLOCK_N=16, BLOCK_K=64)),
        "one_row_per_cta_fp16": ({"N": 9, "K": 257, "dtype": "fp16"},
                                 _cfg(BLOCK_N=1, BLOCK_K=32, num_warps=1, num_stages=1)),
        "block_k_wider_than_k_bf16": ({"N": 70, "K": 100, "dtype": "bf16"},
                                      _cfg(BLOCK_N=8, BLOCK_K=512, num_warps=8, num_stages=3)),
        "block_n_wider_than_n_fp16": ({"N": 20, "K": 512, "dtype": "fp16"},
                                      _cfg(BLOCK_N=64, BLOCK_K=128, num_warps=2, num_stages=4)),
        "exact_tiles_bf16": ({"N": 64, "K": 1024, "dtype": "bf16"}, _cfg(BLOCK_N=32, BLOCK_K=256)),
    },
    "paged_decode": {
        "chunk_spans_pages_g4_bf16": ({"B": 2, "H": 8, "Hkv": 2, "D": 32, "ctx": 77, "PAGE": 16, "dtype": "bf16"},
                                      _cfg(BLOCK_N=32)),
        "chunk_inside_page_g8_fp16": ({"B": 2, "H": 8, "Hkv": 1, "D": 16, "ctx": 45, "PAGE": 32, "dtype": "fp16"},
                                      _cfg(BLOCK_N=16, num_warps=1, num_stages=1)),
        "ragged_lens_mha_fp16": ({"B": 4, "H": 3, "Hkv": 3, "D": 16, "ctx": 100, "PAGE": 8, "dtype": "fp16",
                                  "ragged": 1}, _cfg(BLOCK_N=64, num_warps=2, num_stages=3)),
        "g16_one_token_bf16": ({"B": 3, "H": 16, "Hkv": 1, "D": 64, "ctx": 1, "PAGE": 16, "dtype": "bf16"},
                               _cfg(BLOCK_N=128, num_warps=8, num_stages=4)),
        "ragged_lens_odd_page_bf16": ({"B": 3, "H": 12, "Hkv": 4, "D": 32, "ctx": 130, "PAGE": 5, "dtype": "bf16",
                                       "ragged": 1}, _cfg(BLOCK_N=16, num_warps=4, num_stages=2)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT
COMPILE_CFGS: dict[str, list[dict]] = {
    "gemv": [{"BLOCK_N": 16, "BLOCK_K": 256, "num_warps": 4, "num_stages": 2},
             {"BLOCK_N": 64, "BLOCK_K": 128, "num_warps": 8, "num_stages": 3}],
    "paged_decode": [{"BLOCK_N": 64, "num_warps": 4, "num_stages": 2},
                     {"BLOCK_N": 128, "num_warps": 8, "num_stages": 3}],
}


def _ragged_lens(name: str, point: dict, inputs: dict) -> None:
    """A point's "ragged" key: each seq_len drawn at random in 1..ctx (the first one ctx)."""
    import torch

    if point.get("ragged"):
        gen = torch.Generator().manual_seed(len(name))
        inputs["seq_lens"] = torch.randint(1, point["ctx"] + 1, (point["B"],), generator=gen, dtype=torch.int32)
        inputs["seq_lens"][0] = point["ctx"]


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")



@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_hooks_agree_with_shapes(kernel):
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes, and the baseline covers the tunables."""
    import triton

    mod = load_example(kernel)
    assert set(mod.BASELINE) == set(mod.TUNABLES)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    for cfg in [mod.BASELINE] + COMPILE_CFGS[kernel]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 2 * 50 * 2**20, (kernel, p)
            if kernel == "gemv":
                assert args["W"].shape == (p["N"], p["K"]) and args["N"] == p["N"] and args["K"] == p["K"]
                assert mod.grid(cfg, p) == triton.cdiv(p["N"], cfg["BLOCK_N"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(p["K"], cfg["BLOCK_K"])
                assert mod.flops(p) == 2 * args["W"].numel()
            else:
                kc = args["K_cache"]
                assert kc.shape[1:] == (p["PAGE"], p["Hkv"], p["D"]) and args["Q"].shape == (p["B"], p["H"], p["D"])
                assert kc.shape[0] * p["PAGE"] == p["B"] * p["ctx"]          # the POINTS' ctx fill whole pages
                assert args["G"] * p["Hkv"] == p["H"] and args["G_P2"] >= max(16, args["G"])
                assert args["block_table"].shape == (p["B"], triton.cdiv(p["ctx"], p["PAGE"]))
                assert mod.grid(cfg, p) == (p["Hkv"], p["B"])         # the launch grid
                assert mod.loop_iterations(cfg, p) == triton.cdiv(p["ctx"], cfg["BLOCK_N"])
                assert mod.flops(p) == 4 * p["B"] * p["H"] * p["ctx"] * p["D"]


def test_bad_inputs_are_value_errors():
    import torch

    gemv, pd = load_example("gemv"), load_example("paged_decode")
    w, x = torch.randn(8, 32), torch.randn(32)
    with pytest.raises(ValueError, match="BLOCK_K=48"):
        gemv.gemv(w, x, BLOCK_K=48)
    with pytest.raises(ValueError, match=r"\(8, 32\), \(31,\)"):
        gemv.gemv(w, x[:31])
    with pytest.raises(ValueError, match="fp8"):
        gemv.make_inputs({"N": 4, "K": 4, "dtype": "fp8"}, device="cpu")
    inputs = pd.make_inputs({"B": 2, "H": 4, "Hkv": 2, "D": 16, "ctx": 20, "PAGE": 8, "dtype": "fp16"}, device="cpu")
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        pd.launch(inputs, {"BLOCK_N": 8, "num_warps": 4, "num_stages": 2})
    with pytest.raises(ValueError, match="block_table must be int32"):
        pd.paged_decode(inputs["q"], inputs["k_cache"], inputs["v_cache"], inputs["block_table"].long(),
                        inputs["seq_lens"])
    with pytest.raises(ValueError, match="H=3 is not a multiple of Hkv=2"):
        pd.paged_decode(inputs["q"][:, :3], inputs["k_cache"], inputs["v_cache"], inputs["block_table"],
                        inputs["seq_lens"])
    with pytest.raises(ValueError, match="fp32"):
        pd.make_inputs({"B": 1, "H": 1, "Hkv": 1, "D": 16, "ctx": 4, "PAGE": 4, "dtype": "fp32"}, device="cpu")


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
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], prepare=_ragged_lens, baseline=True)
