"""examples/nf4_dequant.py (bitsandbytes-style NF4 dequantization to a [rows, cols] fp16 / bf16
weight: packed 4-bit codes, the NF4 code book, per-block absmax, plain fp32 or double-quantized)
against its fp64 torch reference on the CPU through Triton's interpreter, its launcher hooks
against the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from
its own ``example_args``.

As in test_examples_round21_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round22_d.py nf4_dequant``) that prints one JSON line. The
interpreter's fp32 -> bf16 conversion truncates; the subprocess replaces it with torch's
round-to-nearest-even one (the GPU's cvt.rn), so the kernel's output can be compared bit for bit
with torch_baseline's (the same fp32 product code[c] * absmax, rounded once; the nested absmax
code2[q] * absmax2 + offset in the same order -- on the GPU ptxas may contract that to one fma,
which moves an absmax by at most an fp32 ulp).

Shapes are small, odd and ragged: both blocksizes, with and without double quantization (more
than one group of 256 blocks, a partial last group), numel a multiple of the blocksize (the FULL
path: per-block masks, vector loads / stores) and not (element masks: a partial last block, an
odd numel whose last byte's low nibble is dropped), a last CTA with steps wholly past the end;
VEC 4-32 packed bytes a thread (BLOCK 128-4096 bytes a step: 2-64 quantization blocks), ITEMS
1-8, 1-8 warps, num_stages 1 / 2; fp16 and bf16.

Per case: (1) launch's output against reference as the GPU study's gate sees it (the harness's
tolerance x max|ref|: one rounding of a 16-bit output, 2^-9 fp16 / 2^-8 bf16 relative, is well
inside); (2) the output [rows, cols], contiguous, in the point's dtype; (3) bit-equal to
torch_baseline (see above); (4) torch_baseline against the reference too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "nf4_dequant"
ROLE = "held-out-22"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["nf4_dequant"] once the lead adds it)
SWEEP_AXES = {"VEC": [4, 8, 16, 32], "ITEMS": [1, 2, 4, 8], "num_warps": [2, 4, 8], "num_stages": [1]}


def _cfg(vec, items, w=4, st=1):
    return {"VEC": vec, "ITEMS": items, "num_warps": w, "num_stages": st}


def _pt(rows, cols, blocksize=64, dq=False, dtype="bf16"):
    return {"rows": rows, "cols": cols, "blocksize": blocksize, "double_quant": dq, "dtype": dtype}


# case -> (point, cfg); comments: quantization blocks, groups of 256, blocks a step (BLOCK = VEC x 32 x
# num_warps packed bytes, BLOCKSIZE / 2 a block), CTAs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 520 blocks of 64 (FULL), 3 groups (the last of 8); 16 a step x 4: 9 CTAs, the last with
        # 8 blocks (steps 2-4 wholly past the end)
        "dq_bs64_full_bf16": (_pt(130, 256, 64, True, "bf16"), _cfg(8, 4, 2)),
        # 72 blocks of 128 (FULL), plain absmax; 4 a step, ITEMS 1: 18 CTAs
        "plain_bs128_full_fp16": (_pt(24, 384, 128, False, "fp16"), _cfg(4, 1, 2, 2)),
        # numel 259 (odd: the last byte's low nibble dropped), 3 blocks of 128, the last of 3
        # elements; 2 a step (one warp) x 2: one CTA, its second step half past the end
        "dq_bs128_odd_fp16": (_pt(7, 37, 128, True, "fp16"), _cfg(4, 2, 1)),
        # numel 1650: 26 blocks of 64, the last of 50; 32 a step x 8: one CTA (steps 2-8 past the end)
        "plain_bs64_ragged_bf16": (_pt(33, 50, 64, False, "bf16"), _cfg(4, 8, 8)),
        # numel 17990: 282 blocks of 64 (the last of 6), 2 groups (the last of 26); 32 a step x 2
        "dq_bs64_ragged_groups_bf16": (_pt(257, 70, 64, True, "bf16"), _cfg(4, 2, 8, 2)),
        # 256 blocks of 128 (FULL), one whole group; 64 a step (BLOCK 4096), ITEMS 1: 4 CTAs
        "dq_bs128_wide_step_fp16": (_pt(128, 256, 128, True, "fp16"), _cfg(32, 1, 4)),
        # 96 blocks of 128 (FULL), plain; 32 a step x 2: 2 CTAs, the second's second step past the end
        "plain_bs128_items_bf16": (_pt(48, 256, 128, False, "bf16"), _cfg(16, 2, 4, 2)),
    },
}

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(8, 2, 4), _cfg(32, 8, 2), _cfg(4, 1, 8), _cfg(16, 4, 4)]
SM120_CFGS = [_cfg(8, 2, 4), _cfg(32, 4, 8)]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _full(p) -> bool:
    return p["rows"] * p["cols"] % p["blocksize"] == 0


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["rows"], p["cols"]] and res["contiguous"] is True and res["dtype"] == p["dtype"]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    assert res["n_differ_baseline"] == 0, res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (BLOCK and ITEMS over the sweep's range and below); both
    blocksizes x both double_quant settings; both dtypes; FULL and ragged (an odd numel too);
    more than one group of 256 blocks with a partial last; a CTA with steps past the end."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {(p["blocksize"], p["double_quant"]) for p, _ in cases} == {(64, True), (64, False), (128, True),
                                                                          (128, False)}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {(_full(p), p["double_quant"]) for p, _ in cases} == {(True, True), (True, False), (False, True),
                                                                   (False, False)}
    assert any(p["rows"] * p["cols"] % 2 for p, _ in cases)
    assert any(mod._sizes(p)[3] > 1 and mod._sizes(p)[2] % mod.DQ_GROUP for p, _ in cases if p["double_quant"])
    # a CTA with at least one step wholly past the last block
    assert any(mod.grid(c, p)[0] * mod.blocks_per_cta(c, p) - mod._sizes(p)[2]
               >= mod.block_bytes(c) // (p["blocksize"] // 2) for p, c in cases)
    for k in ("VEC", "ITEMS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes and dtypes
    (CODE2 / ABSMAX2 / OFFSET stand in as absmax without double quantization), FULL, the grid and
    ITEMS; bytes_moved / flops; inputs < 4 GB; roughly 20 us - 5 ms at 3.35-4.8 TB/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "dequantize_nf4", "create_dynamic_map", "quantize_absmax"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        rows, cols, bs, dq = p["rows"], p["cols"], p["blocksize"], p["double_quant"]
        numel = rows * cols
        nb = -(-numel // bs)
        groups = -(-nb // 256)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["Q"].shape == (numel // 2,) and a["Q"].dtype == torch.uint8
            assert a["CODE"].shape == (16,) and a["CODE"].dtype == torch.float32
            assert a["OUT"].shape == (rows, cols) and a["OUT"].dtype == dts[p["dtype"]] and a["OUT"].is_contiguous()
            assert a["ABSMAX"].shape == (nb,) and a["ABSMAX"].dtype == (torch.uint8 if dq else torch.float32)
            if dq:
                assert a["CODE2"].shape == (256,) and a["CODE2"].dtype == torch.float32
                assert a["ABSMAX2"].shape == (groups,) and a["ABSMAX2"].dtype == torch.float32
                assert a["OFFSET"].shape == (1,) and a["OFFSET"].dtype == torch.float32
            else:
                assert a["CODE2"] is a["ABSMAX"] and a["ABSMAX2"] is a["ABSMAX"] and a["OFFSET"] is a["ABSMAX"]
            assert (a["numel"], a["BLOCKSIZE"], a["DOUBLE_QUANT"], a["DQ_GROUP"], a["FULL"]) == (numel, bs, int(dq),
                                                                                                 256, 1)
            assert (a["BLOCK"], a["ITEMS"]) == (cfg["VEC"] * 32 * cfg["num_warps"], cfg["ITEMS"])
            per = a["BLOCK"] // (bs // 2) * cfg["ITEMS"]
            assert mod.grid(cfg, p) == (-(-nb // per),)
            assert mod.loop_iterations(cfg, p) == cfg["ITEMS"]
        amax = nb + 4 * groups + 1024 + 4 if dq else 4 * nb
        assert mod.bytes_moved(p) == numel // 2 + amax + 64 + 2 * numel
        assert mod.flops(p) == numel + (2 * nb if dq else 0)
        assert numel // 2 + 4 * nb + 2 * numel < 4 * 2**30
        assert 20e-6 < mod.bytes_moved(p) / 4.8e12 and mod.bytes_moved(p) / 3.35e12 < 5e-3


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the nested quantization's round trip; reference's
    and the baseline's shapes and dtypes; the dynamic map; a hand-packed byte."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(5, 300, 64, True, "fp16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["packed"].shape == (750,) and inp["packed"].dtype == torch.uint8
    assert inp["absmax"].shape == (24,) and inp["absmax"].dtype == torch.uint8
    assert inp["absmax2"].shape == (1,) and inp["offset"].shape == (1,) and inp["code2"].shape == (256,)
    plain = mod.make_inputs(_pt(5, 300, 64, False), seed=1, device="cpu")
    assert plain["absmax"].dtype == torch.float32 and plain["code2"] is None
    a = plain["absmax"]
    assert 0.02 <= float(a.min()) and float(a.max()) <= 0.12
    # nested quantization: within half a map step (<= ~3 % of the group's range here) of the fp32 absmax
    assert float((mod.block_absmax(inp).float() - a).abs().max()) <= 0.03 * float((a - a.mean()).abs().max())
    code2 = mod.create_dynamic_map()
    assert code2.shape == (256,) and -1.0 < float(code2.min()) < -0.9
    assert float(code2.max()) == 1.0 and bool((code2[1:] >= code2[:-1]).all())
    ref = mod.reference(inp)
    assert ref.shape == (5, 300) and ref.dtype == torch.float32
    assert mod.torch_baseline(inp).dtype == torch.float16 and mod.torch_baseline(inp).shape == (5, 300)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["packed"], inp["packed"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["packed"], inp["packed"])
    # byte 0x F0: element 0 code 15 (1.0), element 1 code 0 (-1.0): high nibble first
    hand = {"packed": torch.tensor([0xF0], dtype=torch.uint8), "code": torch.tensor(mod.NF4), "shape": (1, 2),
            "blocksize": 64, "dtype": torch.bfloat16, "absmax": torch.tensor([0.5]), "code2": None,
            "absmax2": None, "offset": None}
    assert mod.reference(hand).tolist() == [[0.5, -0.5]]


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.zeros(64, dtype=torch.uint8)
    a = torch.ones(2)
    with pytest.raises(ValueError, match="VEC=6"):
        mod.dequantize_nf4(q, a, (2, 64), blocksize=64, VEC=6)
    with pytest.raises(ValueError, match="VEC=2"):
        mod.dequantize_nf4(q, torch.ones(1), (1, 128), blocksize=128, VEC=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.dequantize_nf4(q, a, (2, 64), num_warps=3)
    with pytest.raises(ValueError, match="ITEMS=0"):
        mod.dequantize_nf4(q, a, (2, 64), ITEMS=0)
    with pytest.raises(ValueError, match="packed must be uint8"):
        mod.dequantize_nf4(q, a, (2, 65))
    with pytest.raises(ValueError, match="absmax must be"):
        mod.dequantize_nf4(q, torch.ones(3), (2, 64))
    with pytest.raises(ValueError, match="together"):
        mod.dequantize_nf4(q, a.to(torch.uint8), (2, 64), code2=torch.ones(256))
    with pytest.raises(ValueError, match="blocksize=32"):
        mod.dequantize_nf4(q, a, (2, 64), blocksize=32)
    with pytest.raises(ValueError, match="dtype must be"):
        mod.dequantize_nf4(q, a, (2, 64), dtype=torch.float32)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(2, 8, dtype="fp8"), device="cpu")
    with pytest.raises(ValueError, match="rows=0"):
        mod.grid(mod.BASELINE, _pt(0, 8))


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (VEC 4-32 packed bytes a thread x ITEMS 1-8 x 2 / 4 / 8 warps,
    num_stages 1; BLOCK = VEC x 32 x num_warps = 256-8192 bytes a step) with BASELINE among them,
    the same as scripts/rank_study.py's entry once it is there; at every point each config is
    valid and launches >= 3 CTAs an SM. (Every config was compiled for sm_90 with triton 3.6.0 and
    3.9.0 at every point, 144 compiles each: all compile, none spills. 3.9: 26-116 registers (the
    most at VEC 32), shared memory 0 but at VEC 32 (256 B-1 KiB: the step's absmax vector moved
    from its coalesced 1-D load to the tile's row layout); the join / reshape interleave stays in
    the load's layout (4 bytes a thread -> one 16-byte store). 3.6: 29-128 registers and 1-16 KiB
    of shared memory: its coalescing lays the code-book gathers out column-major, so the bytes and
    the interleaved output each go through a layout conversion. num_stages 1 and 3 give the same
    sm_90 cubin with both: the step loop holds no dot and its loads are not pipelined, hence the
    one value.)"""
    mod = load_example(KERNEL)
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:                      # the entry is not in SWEEPS yet
        configs, axes = None, SWEEP_AXES
    assert axes == SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert configs is None or len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c, p["blocksize"])
            assert mod.grid(c, p)[0] >= 3 * H200_SMS, (p, c)
    # the points differ in character: blocksize, double quantization, dtype, shape
    assert {p["blocksize"] for p in mod.POINTS} == {64, 128}
    assert {p["double_quant"] for p in mod.POINTS} == {True, False}
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point, BASELINE at the other two, and the
    ragged (element-masked) specialization compile without spills, in at most 16 KiB of shared
    memory (0-1 KiB with triton 3.9, up to 16 KiB with 3.6's layout conversions)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 16 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:] + [_pt(7, 37, 128, True, "fp16")]:
        args = mod.example_args(cfg, p)
        assert args["FULL"] == int(_full(p))
        res = compile_kernel(mod._kernel, args=args, arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0 and res.shared <= 16 * 1024, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch, against reference and bit for bit against torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        base = mod.torch_baseline(inputs)
        return {"contiguous": bool(out.is_contiguous()),
                "dtype": {"torch.float16": "fp16", "torch.bfloat16": "bf16"}.get(str(out.dtype)),
                "baseline": H.compare(base, ref, point["dtype"]),
                "n_differ_baseline": int((out.view(torch.int16) != base.view(torch.int16)).sum())}

    H.run_cases(KERNEL, CASES[KERNEL], extra=extra)


if __name__ == "__main__":
    _run()
