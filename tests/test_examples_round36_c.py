"""examples/summed_area_table.py (the summed-area table / integral image of a batch of images, optionally with the
squared-sum table: a strip-sum pass, a scan of the strip totals, and the main pass scanning each tile along
both axes with the row prefixes of the strips on its left and a carry down the columns) against its float64
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its sweep against the
points, and a compile for sm_90 (every kernel, a few sweep configs at every point) and sm_120 from its own
``example_args``.

As in test_examples_round35_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round36_c.py summed_area_table``) that prints one JSON line; the subprocess
installs the harness's interpreter fix for runtime loop bounds.

Shapes are small and odd: H 1-37 rows (one chunk; several with a partial last one), W 1-1061 columns (one strip,
the single-strip path without the workspace passes; 2-4 strips with a partial last one; 34 strips, more than
the carry pass's CARRY_S = 32 a step), uint8 / fp16 / fp32, with and without the squared table. A strided case:
an ROI crop of a NaN-padded fp32 buffer (a stray read past the crop shows as NaN).

Per case: launch's output against the module's reference (the harness's tolerance; uint8's int32 tables exactly);
a second run bitwise equal (no atomics); the output's dtype and shape; summed_area_table's views; the inputs
unchanged (their whole buffers); torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "summed_area_table"
ROLE = "held-out-36"
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = {**H.TOL, "uint8": 0.0}                         # uint8 images give int32 tables: exact

SWEEP_AXES = {"BLOCK_H": [4, 8, 16, 32], "BLOCK_W": [32, 64, 128], "PREFETCH": [0, 1], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bh=16, bw=64, pf=1, w=4, st=1):
    return {"BLOCK_H": bh, "BLOCK_W": bw, "PREFETCH": pf, "num_warps": w, "num_stages": st}


def _pt(B, H_, W, dtype="uint8", squared=False):
    return {"B": B, "H": H_, "W": W, "dtype": dtype, "squared": squared}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # BASELINE: 3 strips of 64 (the last 22 columns), 3 chunks of 16 rows (the last 5)
        "baseline_uint8": (_pt(2, 37, 150, "uint8"), _cfg(16, 64, 1, 4)),
        # both tables, 4 strips of 32 (the last 4 columns), 3 chunks of 8 (the last 3), 8 warps
        "squared_fp32": (_pt(1, 19, 100, "fp32", True), _cfg(8, 32, 0, 8)),
        # a single strip (W 30 <= 128): no workspace passes, both tables, one partial chunk of 32
        "single_strip_fp16": (_pt(3, 21, 30, "fp16", True), _cfg(32, 128, 1, 4, 2)),
        # uint8 squared table (exact int32), 2 strips of 64 (the last 6 columns), 3 chunks of 4 (the last 1), 8 warps
        "squared_uint8": (_pt(2, 9, 70, "uint8", True), _cfg(4, 64, 1, 8)),
        # 34 strips of 32: the carry pass walks two CARRY_S steps (the second 2 strips), 3 rows
        "many_strips_fp16": (_pt(1, 3, 32 * 33 + 5, "fp16"), _cfg(8, 32, 0, 4)),
        # an ROI crop [3:16, 5:50] of a NaN-padded [2, 20, 61] fp32 buffer: 2 strips of 32, 2 chunks of 8
        "strided_nan_fp32": (_pt(2, 13, 45, "fp32"), _cfg(8, 32, 1, 4)),
        # one row (H 1: the column scan of a one-row chunk), 2 strips of 32
        "one_row_fp32": (_pt(3, 1, 40, "fp32"), _cfg(32, 32, 1, 8)),
        # one column (W 1): a single strip, 2 chunks of 16 (the last 4)
        "one_col_uint8": (_pt(2, 20, 1, "uint8"), _cfg(16, 64, 0, 4)),
    },
}
STRIDED = "strided_nan_fp32"
CROP = (20, 61, 3, 5)                                 # the buffer's rows and columns, the crop's offsets

SM120_CFGS = [_cfg(16, 64, 1, 4), _cfg(32, 128, 1, 4), _cfg(4, 32, 0, 8)]


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variant (module doc), then a copy of the input's buffer."""
    import torch

    if name == STRIDED:
        img = inputs["img"]
        R, C, oy, ox = CROP
        buf = torch.full((img.shape[0], R, C), float("nan"), dtype=img.dtype)
        buf[:, oy:oy + img.shape[1], ox:ox + img.shape[2]] = img
        inputs["img"] = buf[:, oy:oy + img.shape[1], ox:ox + img.shape[2]]
    inputs["img_root0"] = _root(inputs["img"]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    T = 2 if p["squared"] else 1
    want = [T, p["B"], p["H"], p["W"]] if p["squared"] else [p["B"], p["H"], p["W"]]
    assert res["shape"] == want, res
    assert res["dtype"] == ("int32" if p["dtype"] == "uint8" else "fp32"), res
    if p["dtype"] == "uint8":
        assert res["max_err"] == 0.0, res                                # int32 tables are exact
    assert res["deterministic"] is True and res["inputs_unchanged"] is True, res
    assert res["views_ok"] is True, res
    assert res["baseline_err"] <= TOL[p["dtype"]] * res["scale"], res
    assert res["grid"] == [math.ceil(p["W"] / cfg["BLOCK_W"]), p["B"]], res
    if name == STRIDED:
        R, C, _, _ = CROP
        assert res["strides"] == [R * C, C, 1], res


def test_every_tunable_is_covered():
    H.assert_tunables_covered(CASES)


def test_cases_cover_the_paths():
    """One strip and several (partial last strip), more strips than the carry pass's CARRY_S, several chunks with
    a partial last one, every dtype with and without the squared table, each sweep value of the tunables."""
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    strips = [(math.ceil(p["W"] / c["BLOCK_W"]), p, c) for p, c in cases.values()]
    assert any(n == 1 for n, _, _ in strips) and any(n > 1 and p["W"] % c["BLOCK_W"] for n, p, c in strips)
    assert any(n > mod.CARRY_S for n, _, _ in strips)
    assert any(p["H"] > c["BLOCK_H"] and p["H"] % c["BLOCK_H"] for p, c in cases.values())
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["dtype"] for p, _ in cases.values() if p["squared"]} == set(mod.DTYPES)
    assert any(n > 1 and p["squared"] for n, p, _ in strips) and any(n == 1 and p["squared"] for n, p, _ in strips)
    for k in mod.TUNABLES:
        assert {c[k] for _, c in cases.values()} >= set(SWEEP_AXES[k]), k


def test_points_are_realistic():
    """Three points of different character (64 1080p uint8 frames; two 8192^2 fp32 tiles; 2048 fp16 128 x 128
    feature maps with the squared table), each moving 0.4-1.7 GB (img twice, the tables once): >= 80 us at
    4.8 TB/s; far below the H200's fp32 rate in adds."""
    mod = load_example(KERNEL)
    P = mod.POINTS
    assert len(P) == 3 and {p["dtype"] for p in P} == set(mod.DTYPES)
    assert [(p["B"], p["H"], p["W"], p["squared"]) for p in P] == [(64, 1080, 1920, False), (2, 8192, 8192, False),
                                                                    (2048, 128, 128, True)]
    esize = {"uint8": 1, "fp16": 2, "fp32": 4}
    for p in P:
        n = p["B"] * p["H"] * p["W"]
        T = 2 if p["squared"] else 1
        want = 2 * esize[p["dtype"]] * n + 4 * T * n
        assert mod.bytes_moved(p) == want and mod.flops(p) == (8 * n if p["squared"] else 3 * n)
        assert 0.4e9 <= want <= 1.7e9 and want / 4.8e12 >= 80e-6, p
        assert 4 * T * n > 2 * 50e6                                           # the tables far past the L2
        assert mod.flops(p) / 60e12 < want / 4.8e12 / 10, p
        if p["dtype"] == "uint8":                                             # the int32 table cannot overflow
            assert 255 * p["H"] * p["W"] < 2**31


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the data not constant; reference by hand on a tiny case;
    torch_baseline; grid / loop_iterations / secondary_kernels / example_args against the shapes."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "secondary_kernels", "example_args", "torch_baseline", "summed_area_table",
               "strip_sum_example_args", "carry_example_args"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES and set(mod.BASELINE) == set(mod.TUNABLES)
    for dt, tdt in (("uint8", torch.uint8), ("fp16", torch.float16), ("fp32", torch.float32)):
        p = _pt(3, 20, 33, dt, dt == "fp16")
        inp = mod.make_inputs(p, seed=1, device="cpu")
        x = inp["img"]
        assert x.shape == (3, 20, 33) and x.dtype == tdt and x.is_contiguous() and inp["squared"] is (dt == "fp16")
        assert float(x.float().std()) > 0.05 * (255 if dt == "uint8" else 1)
        assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["img"], x)
        assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["img"], x)
    # by hand: [[1, 2], [3, 4]] -> [[1, 3], [4, 10]]; squares [[1, 4], [9, 16]] -> [[1, 5], [10, 30]]
    hand = {"img": torch.tensor([[[1, 2], [3, 4]]], dtype=torch.uint8), "squared": True}
    ref = mod.reference(hand)
    assert ref.dtype == torch.float64 and ref.shape == (2, 1, 2, 2)
    assert ref[0, 0].tolist() == [[1, 3], [4, 10]] and ref[1, 0].tolist() == [[1, 5], [10, 30]]
    base = mod.torch_baseline(hand)
    assert base.dtype == torch.int32 and torch.equal(base.double(), ref)
    hand["squared"] = False
    assert mod.reference(hand).shape == (1, 2, 2) and mod.torch_baseline(hand).shape == (1, 2, 2)
    # the hooks at a mid-size point: B 3, H 45, W 200 (fp16, squared)
    q = _pt(3, 45, 200, "fp16", True)
    c = _cfg(16, 64, 1, 4)
    assert mod.grid(c, q) == (4, 3) and mod.loop_iterations(c, q) == 3
    sk = mod.secondary_kernels(c, q)
    assert sk == [{"name": "_strip_sum_kernel", "grid": 12, "iterations": 3, "tile_bytes": 2 * 16 * 64,
                   "dram_bytes": 2 * 16 * 64, "ahead": 1},
                  {"name": "_carry_kernel", "grid": 6, "iterations": 1, "tile_bytes": 4 * mod.CARRY_S * mod.CARRY_R,
                   "dram_bytes": 0}]
    assert mod.secondary_kernels(_cfg(8, 256, 1, 4), q) == []              # one strip: no workspace passes
    a = mod.example_args(c, q)
    assert a["X"].device.type == "meta" and a["X"].shape == (3, 45, 200) and a["X"].dtype == torch.float16
    assert a["OUT"].shape == (2, 3, 45, 200) and a["OUT"].dtype == torch.float32
    assert a["WS"].shape == (2, 3, 4, 45) and a["WS"].dtype == torch.float32
    assert (a["B"], a["H"], a["W"], a["NS"], a["stride_xb"], a["stride_xh"]) == (3, 45, 200, 4, 9000, 200)
    assert (a["SQ"], a["SINGLE_STRIP"], a["BLOCK_H"], a["BLOCK_W"], a["PREFETCH"]) == (True, False, 16, 64, 1)
    assert H.meta_nbytes(a) == 2 * 3 * 45 * 200 + 4 * 2 * 3 * 45 * 200 + 4 * 2 * 3 * 4 * 45
    s = mod.strip_sum_example_args(c, q)
    assert s["WS"].shape == (2, 3, 4, 45) and s["NS"] == 4 and s["SQ"] is True and s["PREFETCH"] == 1
    k = mod.carry_example_args(c, q)
    assert k["WS"].shape == (2, 3, 4, 45) and (k["H"], k["NS"]) == (45, 4)
    a1 = mod.example_args(_cfg(8, 256, 1, 4), _pt(2, 10, 200, "uint8"))
    assert a1["SINGLE_STRIP"] is True and a1["WS"].shape == (1,) and a1["OUT"].dtype == torch.int32
    assert mod.bytes_moved(q) == 2 * 2 * 3 * 45 * 200 + 8 * 3 * 45 * 200 and mod.flops(q) == 8 * 3 * 45 * 200
    assert mod.bytes_moved(_pt(1, 10, 10)) == 2 * 100 + 4 * 100 and mod.flops(_pt(1, 10, 10)) == 300


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    img = mod.make_inputs(_pt(2, 8, 40), device="cpu")["img"]

    def call(*a, **kw):
        a = a or (img,)
        return mod.summed_area_table(*a, **kw)

    with pytest.raises(ValueError, match="BLOCK_H=12"):
        call(BLOCK_H=12)
    with pytest.raises(ValueError, match="BLOCK_W=8"):
        call(BLOCK_W=8)
    with pytest.raises(ValueError, match="BLOCK_H x BLOCK_W = 16384"):
        call(BLOCK_H=64, BLOCK_W=256)
    with pytest.raises(ValueError, match="PREFETCH=2"):
        call(PREFETCH=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        call(num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(num_stages=0)
    with pytest.raises(ValueError, match="squared=1"):
        call(img, 1)
    with pytest.raises(ValueError, match="img must be a 3-d"):
        call(img[0])
    with pytest.raises(ValueError, match="img must be a 3-d"):
        call(img.to(torch.int32))
    with pytest.raises(ValueError, match="unit stride along W"):
        call(img.transpose(1, 2))
    with pytest.raises(ValueError, match="is empty"):
        call(img[:, :0])
    with pytest.raises(ValueError, match="uint8 table of 255 H W overflows"):
        mod.grid(mod.BASELINE, _pt(1, 8192, 8192, "uint8"))
    with pytest.raises(ValueError, match="uint8 squared table"):
        call(torch.zeros((1, 200, 200), dtype=torch.uint8), True)
    with pytest.raises(ValueError, match="B=40000"):
        mod.grid(mod.BASELINE, _pt(40000, 2, 2, "fp16", True))
    with pytest.raises(ValueError, match="table elements"):
        mod.bytes_moved(_pt(64, 8192, 8192, "fp32"))
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(_pt(1, 4, 4, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="squared='yes'"):
        mod.flops(_pt(1, 4, 4, "fp16", "yes"))
    with pytest.raises(ValueError, match="H=0"):
        mod.bytes_moved(_pt(1, 0, 4))
    with pytest.raises(ValueError, match="W=2.5"):
        mod.flops(_pt(1, 4, 2.5))
    with pytest.raises(ValueError, match="B=True"):
        mod.example_args(mod.BASELINE, _pt(True, 4, 4))
    with pytest.raises(ValueError, match="BLOCK_W=48"):
        mod.grid(dict(mod.BASELINE, BLOCK_W=48), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_warps=None"):
        mod.loop_iterations(dict(mod.BASELINE, num_warps=None), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_H=0"):
        mod.secondary_kernels(dict(mod.BASELINE, BLOCK_H=0), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The sweep: 48 configs (BLOCK_H 4 / 8 / 16 / 32, BLOCK_W 32 / 64 / 128, PREFETCH 0 / 1, 4 / 8 warps, num_stages
    1) with
    BASELINE among them; at every point each config is valid, its grid (NS, B) and chunk loop consistent and
    its secondary kernels present exactly when there is more than one strip. (Every config was compiled for
    sm_90 at every point with triton 3.6.0 and 3.9: none spills -- the register and shared-memory ranges are in
    the module doc.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert (gx, gy) == (math.ceil(p["W"] / c["BLOCK_W"]), p["B"]) and gy <= 65535
            assert gx * gy >= 128, (p, c)                 # the fewest: 2 x 64 strips of 128 (8192^2 tiles)
            assert mod.loop_iterations(c, p) == math.ceil(p["H"] / c["BLOCK_H"])
            sk = mod.secondary_kernels(c, p)
            assert len(sk) == (2 if gx > 1 else 0)
            for k in sk:
                assert k["grid"] > 0 and k["iterations"] > 0 and k["tile_bytes"] > 0
    # clearly worse configs are in: 8192-row strips of 128 columns give 128 CTAs (under one a SM) of 2048 steps
    assert mod.grid(_cfg(4, 128), mod.POINTS[1]) == (64, 2) and mod.loop_iterations(_cfg(4, 128), mod.POINTS[1]) == 2048


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def _compile(mod, kernel, cfg, p, arch="sm_90"):
    from occmodel import compile_kernel

    if kernel == "_carry_kernel":
        return compile_kernel(mod._carry_kernel, args=mod.carry_example_args(cfg, p), arch=arch,
                              num_warps=mod.CARRY_WARPS, num_stages=1)
    args = (mod.example_args if kernel == "_kernel" else mod.strip_sum_example_args)(cfg, p)
    return compile_kernel(getattr(mod, kernel), args=args, arch=arch, num_warps=cfg["num_warps"],
                          num_stages=cfg["num_stages"])


@pytest.mark.slow
@pytest.mark.parametrize("pi", [0, 1, 2])
def test_example_compiles_sm90(shared_cache, pi):
    """On sm_90 at each point: BASELINE, the largest tile (32 x 128 on 4 warps, prefetching) and the smallest
    (4 x 32 on 8 warps, no prefetch) compile from example_args without spills, `_kernel` and `_strip_sum_kernel` alike (the latter
    where there is more than one strip), and so does the fixed `_carry_kernel`; shared memory the column scan's
    cross-warp scratch (at most 16 KiB). (Every config of the sweep was compiled at every point under both Tritons
    when the kernel was written: the module doc's figures; CI compiles these.)"""
    mod = load_example(KERNEL)
    p = mod.POINTS[pi]
    base = dict(mod.BASELINE)
    for cfg in (base, _cfg(32, 128, 1, 4), _cfg(4, 32, 0, 8)):
        assert cfg in _cfgs()
        for kernel in ("_kernel", "_strip_sum_kernel"):
            if kernel != "_kernel" and mod.grid(cfg, p)[0] == 1:
                continue
            res = _compile(mod, kernel, cfg, p)
            assert res.status == "ok", f"{kernel} {cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (kernel, pi, cfg, res.n_regs, res.n_spills)
            assert res.shared <= min(48 * 1024, SM90_SMEM_PER_BLOCK), (kernel, pi, cfg, res.shared)
    res = _compile(mod, "_carry_kernel", base, p)
    assert res.status == "ok" and 0 < res.n_regs <= 255 and res.n_spills == 0, (res.status, res.message)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest tile and the smallest at the first point (1080p uint8
    frames) compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(48 * 1024, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), a rerun, the API's views, the
    input's buffer, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.int32: "int32", torch.float32: "fp32"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        again = mod.launch(inputs, cfg)
        t, sq = mod.summed_area_table(inputs["img"], inputs["squared"], **{k: cfg[k] for k in mod.TUNABLES})
        tables = torch.stack([t, sq]) if point["squared"] else t
        views_ok = (sq is None) != point["squared"] and torch.equal(tables, out) and t.is_contiguous()
        base = mod.torch_baseline(inputs).double()
        img = inputs["img"]
        return {"dtype": names.get(out.dtype), "deterministic": bool(torch.equal(out, again)),
                "views_ok": bool(views_ok), "baseline_err": float((base - ref).abs().max()),
                "inputs_unchanged": same(_root(img).double(), inputs["img_root0"].double()),
                "grid": list(mod.grid(cfg, point)), "strides": list(img.stride())}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
