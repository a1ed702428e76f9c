"""examples/gated_mlp.py and examples/embedding_gather.py against their torch references
on the CPU through Triton's interpreter, their launcher hooks against the shapes, and
a compile for sm_90 and sm_120 from their own ``example_args``.

As in test_examples_round4.py, the interpreter must be chosen before triton is
imported, so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_round5_b.py gated_mlp``) that prints one JSON line; the
tests assert per case. bf16 dot operands are widened to fp32 inside the interpreter only.

Shapes are small and odd: M, N, K not multiples of their blocks (one K tile wider than
K, N tails where the up half starts mid-tile of the gate half's last tile, M smaller
than one row tile, several GROUP_M groups with a short last group); T and D not
multiples of their blocks, BLOCK_D wider than D, repeated ids (the Zipf draw over a
small vocabulary), the last vocabulary row and id 0 forced in, int32 and int64 ids.
Tolerances relative to the largest reference magnitude, per dtype.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element


def _mlp(bm, bn, bk, g, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": s}


def _emb(bt, bd, w, s):
    return {"BLOCK_T": bt, "BLOCK_D": bd, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "gated_mlp": {
        "ragged_mnk_bf16": ({"M": 20, "N": 70, "K": 100, "dtype": "bf16"}, _mlp(16, 32, 32, 8, 4, 2)),
        "decode_rows_fp16": ({"M": 5, "N": 96, "K": 160, "dtype": "fp16"}, _mlp(16, 64, 64, 8, 2, 3)),
        "k_tile_wider_than_k_fp16": ({"M": 33, "N": 40, "K": 24, "dtype": "fp16"}, _mlp(32, 16, 64, 1, 8, 1)),
        "exact_tiles_bf16": ({"M": 64, "N": 128, "K": 128, "dtype": "bf16"}, _mlp(32, 64, 32, 2, 4, 4)),
        "short_last_group_fp16": ({"M": 150, "N": 50, "K": 72, "dtype": "fp16"}, _mlp(16, 16, 16, 4, 1, 2)),
    },
    "embedding_gather": {
        "ragged_t_and_d_bf16": ({"T": 37, "D": 100, "V": 50, "dtype": "bf16", "ids": "int32"}, _emb(4, 32, 4, 1)),
        "block_d_wider_than_d_fp32": ({"T": 19, "D": 48, "V": 1000, "dtype": "fp32"}, _emb(8, 64, 2, 3)),
        "one_token_per_cta_fp16": ({"T": 9, "D": 70, "V": 7, "dtype": "fp16", "ids": "int64"}, _emb(1, 16, 1, 2)),
        "exact_tiles_fp32": ({"T": 64, "D": 128, "V": 300, "dtype": "fp32", "ids": "int32"}, _emb(16, 64, 8, 1)),
        "wide_rows_bf16": ({"T": 21, "D": 300, "V": 40000, "dtype": "bf16"}, _emb(2, 128, 4, 4)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    "gated_mlp": [_mlp(64, 64, 64, 8, 4, 3), _mlp(128, 128, 64, 8, 8, 3), _mlp(16, 128, 64, 8, 4, 4)],
    "embedding_gather": [_emb(4, 512, 4, 2), _emb(16, 1024, 8, 1), _emb(1, 256, 2, 2)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Every gather case reads the last vocabulary row and row 0 (both ends of the table)."""
    if "ids" in inputs:
        ids = inputs["ids"]
        ids[-1] = point["V"] - 1
        ids[len(ids) // 2] = 0


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
    """Each tunable takes at least two values over a kernel's cases; masked tails are hit."""
    H.assert_tunables_covered(CASES)
    gm = CASES["gated_mlp"].values()
    for dim, blk in (("M", "BLOCK_M"), ("N", "BLOCK_N"), ("K", "BLOCK_K")):
        assert any(p[dim] % c[blk] for p, c in gm), dim
    assert any(p["K"] < c["BLOCK_K"] for p, c in gm)
    # a grid of several GROUP_M groups whose last one is short
    assert any(-(-p["M"] // c["BLOCK_M"]) % c["GROUP_M"] and -(-p["M"] // c["BLOCK_M"]) > c["GROUP_M"] for p, c in gm)
    eg = CASES["embedding_gather"].values()
    assert any(p["T"] % c["BLOCK_T"] for p, c in eg) and any(p["D"] % c["BLOCK_D"] for p, c in eg)
    assert any(p["D"] < c["BLOCK_D"] for p, c in eg)
    assert any(p["V"] < p["T"] for p, _ in eg)                   # repeats certain
    assert {p.get("ids", "int64") for p, _ in eg} == {"int32", "int64"}
    assert {p["dtype"] for p, _ in eg} == {"fp16", "bf16", "fp32"}



@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_hooks_agree_with_shapes(kernel):
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes."""
    import triton

    mod = load_example(kernel)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} <= set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[kernel]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, (kernel, p)
            if kernel == "gated_mlp":
                M, N, K = p["M"], p["N"], p["K"]
                assert args["X"].shape == (M, K) and args["W"].shape == (K, 2 * N) and args["OUT"].shape == (M, N)
                assert (args["M"], args["N"], args["K"]) == (M, N, K) and args["stride_wk"] == 2 * N
                assert args["stride_xm"] == K and args["stride_om"] == N and args["GROUP_M"] == cfg["GROUP_M"]
                assert mod.bytes_moved(p) == 2 * (M * K + 2 * K * N + M * N)
                assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(K, cfg["BLOCK_K"])
                assert mod.flops(p) == 4 * M * N * K
                assert mod.bytes_moved(p) - 2 * 2 * K * N > 0 and 2 * 2 * K * N >= 100 * 2**20
            else:
                T, D, V = p["T"], p["D"], p["V"]
                e = 4 if p["dtype"] == "fp32" else 2
                ib = 4 if p.get("ids", "int64") == "int32" else 8
                assert args["IDS"].shape == (T,) and args["IDS"].element_size() == ib
                assert args["TABLE"].shape == args["OUT"].shape == (T, D) and args["stride_tv"] == D
                assert (args["T"], args["D"]) == (T, D) and args["stride_ot"] == D
                assert args["scale"] == pytest.approx(D ** 0.5, rel=1e-2)
                assert mod.bytes_moved(p) == T * ib + 2 * T * D * e
                assert 4096 <= T <= 65536 and 2048 <= D <= 8192 and 32000 <= V <= 256000
                assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(D, cfg["BLOCK_D"])
                assert mod.flops(p) == T * D


def test_hooks_on_small_points_and_inputs():
    import torch

    gm, eg = load_example("gated_mlp"), load_example("embedding_gather")
    p = {"M": 20, "N": 70, "K": 100, "dtype": "bf16"}
    cfg = _mlp(16, 32, 32, 8, 4, 2)
    assert gm.grid(cfg, p) == 2 * 3 and gm.loop_iterations(cfg, p) == 4
    assert gm.bytes_moved(p) == 2 * (20 * 100 + 2 * 100 * 70 + 20 * 70) and gm.flops(p) == 4 * 20 * 70 * 100
    inputs = gm.make_inputs(p, device="cpu")
    assert inputs["w"].shape == (100, 140) and inputs["w"].dtype == torch.bfloat16
    ref = gm.reference(inputs)
    assert ref.shape == (20, 70) and 0.2 < float(ref.std()) < 3
    p = {"T": 4000, "D": 16, "V": 5000, "dtype": "fp16", "ids": "int32"}
    assert eg.grid(_emb(4, 32, 4, 1), p) == 1000 and eg.loop_iterations(_emb(4, 8, 4, 1), p) == 2
    assert eg.bytes_moved(p) == 4000 * 4 + 2 * 4000 * 16 * 2 and eg.flops(p) == 4000 * 16
    inputs = eg.make_inputs(p, device="cpu")
    ids = inputs["ids"]
    assert ids.dtype == torch.int32 and int(ids.min()) >= 0 and int(ids.max()) < 5000
    counts = torch.bincount(ids.long(), minlength=5000)
    assert int(counts.max()) > 200                   # a hot row: Zipf's top rank is ~11% at V=5000
    assert int((counts > 0).sum()) < 0.6 * 4000      # many repeats
    assert inputs["scale"] == 4.0 and inputs["table"].shape == (5000, 16)
    assert eg.make_inputs({**p, "ids": "int64"}, device="cpu")["ids"].dtype == torch.int64
    assert eg.gemma_scale(3072, "bf16") == 55.5 and eg.gemma_scale(2048, "fp32") == pytest.approx(45.254834)


def test_bad_inputs_are_value_errors():
    gm, eg = load_example("gated_mlp"), load_example("embedding_gather")
    inputs = gm.make_inputs({"M": 4, "N": 16, "K": 32, "dtype": "fp16"}, device="cpu")
    x, w = inputs["x"], inputs["w"]
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        gm.gated_mlp(x, w, BLOCK_K=8)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        gm.gated_mlp(x, w, BLOCK_N=48)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        gm.gated_mlp(x, w, GROUP_M=0)
    with pytest.raises(ValueError, match=r"\(4, 32\), \(32, 31\)"):
        gm.gated_mlp(x, w[:, :31])
    with pytest.raises(ValueError, match=r"\(4, 32\), \(31, 32\)"):
        gm.gated_mlp(x, w[:31])
    with pytest.raises(ValueError, match="torch.float32"):
        gm.gated_mlp(x, w.float())
    with pytest.raises(ValueError, match="fp32"):
        gm.make_inputs({"M": 4, "N": 16, "K": 32, "dtype": "fp32"}, device="cpu")
    inputs = eg.make_inputs({"T": 8, "D": 4, "V": 10, "dtype": "fp32"}, device="cpu")
    ids, table = inputs["ids"], inputs["table"]
    with pytest.raises(ValueError, match="BLOCK_D=100"):
        eg.embedding_gather(ids, table, 1.0, BLOCK_D=100)
    with pytest.raises(ValueError, match="BLOCK_T=3"):
        eg.embedding_gather(ids, table, 1.0, BLOCK_T=3)
    with pytest.raises(ValueError, match="torch.int16"):
        eg.embedding_gather(ids.short(), table, 1.0)
    with pytest.raises(ValueError, match="torch.float64"):
        eg.embedding_gather(ids, table.double(), 1.0)
    with pytest.raises(ValueError, match=r"\(2, 4\), \(10, 4\)"):
        eg.embedding_gather(ids.view(2, 4), table, 1.0)
    with pytest.raises(ValueError, match="fp8"):
        eg.make_inputs({"T": 8, "D": 4, "V": 10, "dtype": "fp8"}, device="cpu")
    with pytest.raises(ValueError, match="int16"):
        eg.make_inputs({"T": 8, "D": 4, "V": 10, "dtype": "fp32", "ids": "int16"}, device="cpu")


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
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
