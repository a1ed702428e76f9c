"""Your kernel, no card: every command on a bare @triton.jit kernel (tests/user_kernel/mm.py),
with its types given as --signature or derived from example arguments (--args, or the
launcher's example_args), compiled numbers checked against cuobjdump, and compiles counted."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from occmodel import compile_kernel
from occmodel.source import load_source

HERE = Path(__file__).parent
MM = str(HERE / "user_kernel" / "mm.py")
KERNEL = f"{MM}:mm_kernel"
SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16"     # positional, runtime params
SIG_NAMED = ("A=*fp16:16,B=*fp16:16,C=*fp16:16,M=i32:16,N=i32:16,K=i32:16,stride_am=i32:16,stride_bk=i32:16,"
             "stride_cm=i32:16")
TILES = ["--baseline", "BM=64,BN=64,BK=32"]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = dict(os.environ)
    e["OCCMODEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("bare-cache"))
    e["OCCMODEL_COMPILE_LOG"] = str(tmp_path_factory.mktemp("bare-log") / "compiles.log")
    return e


def occ(env, *args, rc=0):
    proc = subprocess.run([sys.executable, "-m", "occmodel", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def doc(env, *args):
    return json.loads(occ(env, *args, "--format", "json").stdout)


def compiles(env) -> Counter:
    path = Path(env["OCCMODEL_COMPILE_LOG"])
    return Counter(path.read_text().split()) if path.exists() else Counter()


def section(d, start):
    return next(s for s in d["sections"] if s["title"].startswith(start))


# --------------------------------------------------------------- the library
def test_a_bare_kernel_is_a_card_that_knows_nothing_more():
    k = load_source(KERNEL, signature=SIG)
    assert k.kind == "bare kernel" and [p.name for p in k.params] == ["BM", "BN", "BK"]
    cfg = k.resolve({"BM": 64, "BN": 64, "BK": 32})
    assert cfg == {"BM": 64, "BN": 64, "BK": 32, "num_warps": 4, "num_stages": 3}   # Triton's launch defaults
    # the positional form names the runtime parameters in order; the NAME=TYPE form is the same signature
    assert k.signature(cfg) == load_source(KERNEL, signature=SIG_NAMED).signature(cfg)
    assert k.constexprs(cfg) == {"BM": 64, "BN": 64, "BK": 32}
    assert k.shared_memory((12, 0), cfg) is None and k.grid(cfg, {}) is None and not k.has_launcher()


def test_the_launcher_supplies_baseline_points_and_workload():
    k = load_source(KERNEL, launcher=MM)
    cfg = k.resolve()                                   # BASELINE from the launcher file
    assert cfg == {"BM": 64, "BN": 64, "BK": 32, "num_warps": 4, "num_stages": 2}
    assert k.default_points[0] == {"M": 512, "N": 512, "K": 512} and k.has_launcher() and k.has_reference()
    pt = k.resolve_point({"M": 1024, "N": 256, "K": 2048})
    # 1024/64 x 256/64 = 64 CTAs, 2048/32 = 64 K steps, 2 B x (M K + K N + M N)
    assert (k.grid(cfg, pt), k.loop_iterations(cfg, pt)) == (64, 64)
    assert k.bytes_moved(cfg, pt) == 2 * (1024 * 2048 + 2048 * 256 + 1024 * 256)
    # the launcher's example_args (meta tensors, 512s) give the launcher's specialization: all ':16'
    assert set(k.signature(cfg).values()) == {"*fp16:16", "i32:16"}


def test_args_derive_a_different_specialization_than_a_plain_signature(tmp_path):
    hinted = load_source(KERNEL, signature=SIG)
    odd = load_source(KERNEL, args=f"{MM}:odd_args")          # 1000 x 1000: no ':16' on the ints
    cfg = {"BM": 64, "BN": 64, "BK": 32, "num_warps": 4, "num_stages": 3}
    sig_odd = odd.signature(odd.resolve(cfg))
    assert sig_odd["stride_am"] == "i32" and sig_odd["A"] == "*fp16:16"
    a = compile_kernel(hinted.kernel, hinted.signature(cfg), hinted.constexprs(cfg), arch="sm_90", num_warps=4,
                       num_stages=3, cache=False)
    b = compile_kernel(odd.kernel, sig_odd, odd.constexprs(cfg), arch="sm_90", num_warps=4, num_stages=3, cache=False)
    # without ':16' on the strides the loads cannot be vectorised or pipelined: shared memory differs
    assert (a.total_shared, a.n_regs) != (b.total_shared, b.n_regs)


# ------------------------------------------------------------------ commands
def test_compile_signature_form_matches_cuobjdump(env, tmp_path):
    from test_compile import assert_matches_cuobjdump
    d = doc(env, "compile", "--kernel", KERNEL, "--signature", SIG, *TILES, "--stages", "2,3", "--spec", "sm_90")
    rows = d["sections"][0]["rows"]
    assert [r["num_stages"] for r in rows] == [2, 3] and all(r["status"] == "ok" for r in rows)
    k = load_source(KERNEL, signature=SIG)
    for row in rows:
        cfg = k.resolve({"BM": 64, "BN": 64, "BK": 32, "num_stages": row["num_stages"]})
        ind = compile_kernel(k.kernel, k.signature(cfg), k.constexprs(cfg), arch="sm_90", num_warps=4,
                             num_stages=row["num_stages"], keep_ir=True, cache=False)
        assert_matches_cuobjdump(ind, tmp_path)              # the cubin read independently
        assert (row["shared"], row["regs"], row["spills"]) == (ind.total_shared, ind.n_regs, ind.n_spills)


def test_predict_table_compile_args_form_and_one_compile_per_config(env):
    before = compiles(env)
    args = ["--kernel", KERNEL, "--args", f"{MM}:odd_args", *TILES, "--spec", "sm_90"]
    p = doc(env, "predict", *args[:-4], "--baseline", "BM=64,BN=64,BK=32,num_stages=2", "--spec", "sm_90",
            "--stages", "3")
    assert p["source"] == "compiled" and "model" not in p
    prem = section(p, "Premise")["rows"][0]
    assert prem["mechanism"] in ("holds", "fails") and "TTGIR" in prem["why"]   # decided from the compiled IR
    t = doc(env, "table", *args, "--stages", "2,3", "--warps", "4")
    rows = t["sections"][0]["rows"]
    assert [r["source"] for r in rows] == ["compiled", "compiled"]
    c = doc(env, "compile", *args, "--stages", "2,3", "--pipeline")
    assert [r["shared"] for r in c["sections"][0]["rows"]] == [r["shared"] for r in rows]
    # predict compiles the baseline (num_stages=2) and the candidate (3); table and
    # compile --pipeline list the same two configs: each is compiled exactly once, its IR kept the first time
    new = compiles(env) - before
    assert new and max(new.values()) == 1 and len(new) == 2, new


def test_fit_plot_and_accuracy_on_a_bare_kernel(env, tmp_path):
    f = doc(env, "fit", "--kernel", KERNEL, "--signature", SIG, "--baseline", "BM=64,BN=64", "-D", "BK=16,32,64",
            "--stages", "2,3", "--spec", "sm_90", "--sample", "0.5")
    assert f["held_out"]["shared"]["exact"]
    out = tmp_path / "h.svg"
    h = doc(env, "plot", "heatmap", "--kernel", KERNEL, "--signature", SIG, *TILES, "--x", "num_warps=4,8",
            "--y", "num_stages=2,3", "--out", out, "--spec", "sm_90")
    assert out.exists() and {r["source"] for r in h["sections"][0]["rows"]} == {"compiled"}
    proc = occ(env, "accuracy", "--kernel", KERNEL, "--signature", SIG, rc=2)
    assert "no hand model" in proc.stderr and "occmodel fit" in proc.stderr


def test_rank_and_validate_dry_run_with_a_launcher(env):
    args = ["--kernel", KERNEL, "--launcher", MM, "--spec", "sm_90"]
    r = doc(env, "rank", *args, "--stages", "2,3", "--compiled")
    assert len(r["estimates"]) == 2 and all(e["total_s"] for row in r["estimates"] for e in row)
    v = doc(env, "validate", *args, "--candidate", "num_stages=3", "--dry-run")
    what = {row["item"]: row["value"] for row in v["sections"][0]["rows"]}
    assert what["correctness"].startswith("correctness gated")
    static = section(v, "Static picture")["rows"]
    assert [s["compile"] for s in static] == ["ok", "ok"] and static[0]["pred_shared"] is None


def test_bad_input_says_how_to_give_it(env, tmp_path):
    no_types = occ(env, "predict", "--kernel", KERNEL, *TILES, "--stages", "2", rc=2).stderr.strip().splitlines()
    assert len(no_types) == 1 and "--signature" in no_types[0] and "--args" in no_types[0]
    bad = tmp_path / "launcher.py"
    bad.write_text("POINTS = [{'M': 64}]\n")
    missing = occ(env, "validate", "--kernel", KERNEL, "--launcher", bad, "--candidate", "num_stages=3",
                  "--dry-run", rc=2).stderr.strip().splitlines()
    assert len(missing) == 1 and "none of the launcher functions" in missing[0] and "launch(inputs, cfg)" in missing[0]
    count = occ(env, "compile", "--kernel", KERNEL, "--signature", "*fp16:16,i32", *TILES, rc=2).stderr
    assert "2 types for 9 runtime parameters" in count and "A=TYPE" in count
    rank = occ(env, "rank", "--kernel", KERNEL, "--signature", SIG, *TILES, rc=2).stderr.strip().splitlines()
    assert len(rank) == 1 and "grid" in rank[0] and "launcher" in rank[0]


def test_a_minimal_card_answers_or_says_what_is_missing(env):
    card = f"{HERE / 'user_kernel' / 'minimal_card.py'}:CARD"
    p = doc(env, "predict", "--kernel", card, "--stages", "3", "--spec", "sm_90")
    assert p["source"] == "compiled"                      # no hand model: compiled, not a NotImplementedError
    v = doc(env, "validate", "--kernel", card, "--candidate", "num_stages=3", "--dry-run", "--spec", "sm_90")
    assert section(v, "Static picture")["rows"][1]["compile"] == "ok"
    rank = occ(env, "rank", "--kernel", card, "--stages", "2,3", "--spec", "sm_90", rc=2).stderr.strip().splitlines()
    assert len(rank) == 1 and "rank needs grid, loop_iterations, bytes_moved, flops" in rank[0]


def test_the_python_api_a_notebook_would_use():
    import occmodel
    from occmodel.card import import_file
    mod = import_file(MM)
    launcher = occmodel.Launcher(make_inputs=mod.make_inputs, launch=mod.launch, example_args=mod.example_args,
                                 points=({"M": 512, "N": 512, "K": 512},))
    kernel = occmodel.bare_kernel(mod.mm_kernel, launcher=launcher)
    spec = occmodel.load_spec("sm_90")
    evs = occmodel.gather(kernel, spec, [kernel.resolve({"BM": 64, "BN": 64, "BK": 32, "num_stages": s})
                                         for s in (2, 3)])
    assert [e.source for e in evs] == ["compiled", "compiled"] and evs[1].shared > evs[0].shared
    assert evs[0].pipeline.main.dots and kernel.has_launcher() and not kernel.has_reference()


def test_table_derives_the_configs_it_does_not_compile(env):
    t = doc(env, "table", "--kernel", KERNEL, "--launcher", MM, "-D", "BM=32,64,128", "-D", "BN=32,64",
            "--stages", "2,3,4", "--spec", "sm_90", "--derive", "0.5")
    rows = t["sections"][0]["rows"]
    derived = [r for r in rows if r["source"] == "derived"]
    assert derived and len(derived) >= 0.4 * len(rows)           # at most half compiled (rounded up)
    # every derived shared-memory figure equals what a real compile then gives (at --derive 0.3 this
    # sweep used to get 4 wrong answers on sm_90: the BLOCK_M=32 path, sampled at one num_stages only,
    # had its ring depth, S-1 there but S on the wgmma path, extrapolated; it is refused now -- see
    # tests/test_derive.py::test_mm_sm90_mma_sync_tile_sampled_at_one_num_stages_is_refused)
    from occmodel import evidence as E, load_spec
    k = load_source(KERNEL, launcher=MM)
    cfgs = [k.resolve({"BM": r["BM"], "BN": r["BN"], "num_stages": r["num_stages"]}) for r in derived]
    truth = E.compiled(k, load_spec("sm_90"), cfgs, progress=False)
    assert [r["shared"] for r in derived] == [ev.shared for ev in truth]


DTYPES_LAUNCHER = '''
import sys
sys.path.insert(0, {folder!r})
POINTS = [{{"M": 512, "N": 512, "K": 512, "dtype": "fp16"}}, {{"M": 512, "N": 512, "K": 512, "dtype": "fp32"}}]
BASELINE = {{"BM": 64, "BN": 64, "BK": 32, "num_warps": 4, "num_stages": 3}}


def _dt(point):
    import torch
    return {{"fp16": torch.float16, "fp32": torch.float32}}[point["dtype"]]


def make_inputs(point, seed=0, device="cuda"):
    import torch
    g = torch.Generator(device="cpu").manual_seed(seed)
    return {{"a": torch.randn(point["M"], point["K"], generator=g).to(device=device, dtype=_dt(point)),
            "b": torch.randn(point["K"], point["N"], generator=g).to(device=device, dtype=_dt(point))}}


def launch(inputs, cfg):
    import torch
    import triton
    from mm import mm_kernel
    a, b = inputs["a"], inputs["b"]
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    mm_kernel[(triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]))](a, b, c, M, N, K, a.stride(0), b.stride(0),
                                                                      c.stride(0), **cfg)
    return c


def grid(cfg, point):
    return -(-point["M"] // cfg["BM"]) * -(-point["N"] // cfg["BN"])


def loop_iterations(cfg, point):
    return -(-point["K"] // cfg["BK"])


def bytes_moved(point):
    e = 2 if point["dtype"] == "fp16" else 4
    return e * (point["M"] + point["N"]) * point["K"] + 2 * point["M"] * point["N"]


def flops(point):
    return 2 * point["M"] * point["N"] * point["K"]


def example_args(cfg, point):
    import torch
    M, N, K = point["M"], point["N"], point["K"]
    a = torch.empty((M, K), dtype=_dt(point), device="meta")
    b = torch.empty((K, N), dtype=_dt(point), device="meta")
    c = torch.empty((M, N), dtype=torch.float16, device="meta")
    return (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
'''


def test_each_point_is_compiled_as_the_launcher_launches_it_there(env, tmp_path):
    """A launcher whose points differ in dtype: the fp32 point is compiled with fp32 pointers (its
    example_args there), not as the first point's fp16 kernel -- its pipelined tile is twice the bytes."""
    launcher = tmp_path / "mm_dtypes.py"
    launcher.write_text(DTYPES_LAUNCHER.format(folder=str(HERE / "user_kernel")))
    k = load_source(KERNEL, launcher=str(launcher))
    cfg = k.resolve()
    fp16, fp32 = k.default_points
    assert k.signature(cfg)["A"] == "*fp16:16" and k.at_point(fp16).signature(cfg)["A"] == "*fp16:16"
    assert k.at_point(fp32).signature(cfg)["A"] == "*fp32:16"
    assert load_source(KERNEL, signature=SIG).at_point(fp32).signature(cfg)["A"] == "*fp16:16"   # --signature wins
    r = doc(env, "rank", "--kernel", KERNEL, "--launcher", launcher, "--spec", "sm_90", "--compiled")
    (e16, e32), = r["estimates"][:1]
    assert any("2 distinct specializations over 2 points" in a for a in r["assumptions"])
    # the fp32 point's estimate is the one a launcher holding only that point gives
    alone = tmp_path / "mm_fp32.py"
    alone.write_text(launcher.read_text().replace('POINTS = [{"M": 512, "N": 512, "K": 512, "dtype": "fp16"}, ', "POINTS = ["))
    (only32,), = doc(env, "rank", "--kernel", KERNEL, "--launcher", alone, "--spec", "sm_90", "--compiled")["estimates"][:1]
    assert e32 == only32 and e32["tile_per_iter"] > e16["tile_per_iter"]


def test_a_launchers_secondary_kernels_are_costed_and_bad_ones_named(env, tmp_path):
    """A launcher that runs a second kernel (here a split-K style reduction of 64 CTAs x 4 iterations
    over 8 KB just written) declares it; rank adds its time and launch. A wrong key is one line, exit 2."""
    from occmodel import rank as R
    from occmodel.spec import load_spec
    from occmodel.calibrate import resolve

    src = (HERE / "user_kernel" / "mm.py").read_text()
    plain = tmp_path / "mm_plain.py"
    plain.write_text(src)
    (tmp_path / "tiles.py").write_text((HERE / "user_kernel" / "tiles.py").read_text())
    two = tmp_path / "mm_two.py"
    two.write_text(src + '\n\ndef secondary_kernels(cfg, point):\n'
                   '    return [{"name": "reduce", "grid": 64, "iterations": 4, "tile_bytes": 8192}]\n')
    spec = load_spec("sm_90")
    cal = resolve(spec, None, None)
    k1, k2 = load_source(f"{plain}:mm_kernel", launcher=str(plain)), load_source(f"{two}:mm_kernel", launcher=str(two))
    cfg, pt = k1.resolve(), k1.default_points[0]
    (x,) = k2.secondary_kernels(cfg, pt)
    assert (x.name, x.grid, x.iterations, x.tile_bytes, x.dram_bytes, x.ahead, x.blocks_per_sm) == ("reduce", 64, 4, 8192, 0, 0, 8)
    res = R.Resources(blocks_per_sm=4, threads=128, tile_bytes=8192, ahead=1, n_spills=0, source="model")
    e1 = R.estimate(k1, cal, cfg, pt, res, R.peak_flops(spec))
    e2 = R.estimate(k2, cal, cfg, pt, res, R.peak_flops(spec))
    # one wave of 64 CTAs x 4 unpipelined iterations, each waiting the L2 latency (dram_bytes 0: just written)
    assert e1.secondary_s == 0 and e2.secondary_s >= 4 * cal.l2_latency_ns * 1e-9
    assert e2.total_s == pytest.approx(e1.total_s + e2.secondary_s + cal.launch_us * 1e-6)
    bad = tmp_path / "mm_bad.py"
    bad.write_text(src + '\n\ndef secondary_kernels(cfg, point):\n'
                   '    return [{"name": "reduce", "grid": 64, "iterations": 4, "tile_bytes": 8192, "ctas": 3}]\n')
    p = occ(env, "rank", "--kernel", f"{bad}:mm_kernel", "--launcher", bad, "--spec", "sm_90", "--stages", "2", rc=2)
    assert "unknown key 'ctas'" in p.stderr and "allowed: name, grid" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # per CTA and iteration, not the whole tensor: DRAM bytes above the bytes a CTA loads are refused by name
    whole = tmp_path / "mm_whole.py"
    whole.write_text(src + '\n\ndef secondary_kernels(cfg, point):\n'
                     '    return [{"name": "fill", "grid": 64, "iterations": 1, "tile_bytes": 2048, "dram_bytes": 822083584}]\n')
    p = occ(env, "rank", "--kernel", f"{whole}:mm_kernel", "--launcher", whole, "--spec", "sm_90", "--stages", "2", rc=2)
    assert "'fill' dram_bytes=822083584 exceeds tile_bytes=2048" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_points_may_hold_flags_and_dtype_names():
    # a launcher's POINTS with a bool flag and a dtype string (fp8_scaled_mm's bias=False, dtype="bf16"):
    # each is a workload parameter of its own type, given on the command line as text
    from occmodel.bare import bare_kernel
    from occmodel.launcher import Launcher
    from occmodel.card import load_object
    fn = load_object(KERNEL)
    k = bare_kernel(fn, signature=SIG, launcher=Launcher(dict, lambda inputs, cfg: None, name="flags",
                                                          points=({"M": 512, "bias": False, "dtype": "bf16"},)))
    assert k.resolve_point({}) == {"M": 512, "bias": False, "dtype": "bf16"}
    assert k.resolve_point({"bias": "True", "dtype": "fp16", "M": "1024"}) == {"M": 1024, "bias": True, "dtype": "fp16"}


def test_a_launchers_cta_iterations_must_give_one_count_per_cta():
    from occmodel.bare import bare_kernel
    from occmodel.card import load_object
    from occmodel.errors import KernelError
    from occmodel.launcher import Launcher
    fn = load_object(KERNEL)

    def kernel(counts):
        return bare_kernel(fn, signature=SIG, launcher=Launcher(dict, lambda inputs, cfg: None, name="ragged",
                                                                grid=lambda cfg, point: (2, 2),
                                                                cta_iterations=lambda cfg, point: counts))
    assert kernel([3, 0, 1, 2]).cta_iterations({}, {}) == [3, 0, 1, 2]     # one per CTA of the 2 x 2 grid
    for bad in ([3, 0, 1], [3, 0, 1, -1], None):
        with pytest.raises(KernelError, match=r"one int >= 0 per CTA of grid\(cfg, point\) = 4"):
            kernel(bad).cta_iterations({}, {})


def test_a_launcher_hook_that_cannot_take_a_config_value_is_one_line_naming_it(env, tmp_path):
    """-D BLOCK=abc reaches the user's hooks as a string: each hook's failure names the hook, the
    config and the point, not the hook's traceback; the CLI exits 2 with that one line."""
    from occmodel.bare import bare_kernel
    from occmodel.card import load_object
    from occmodel.errors import KernelError
    from occmodel.launcher import Launcher
    fn = load_object(KERNEL)

    def cdiv(cfg, point):
        return -(-point["M"] // cfg["BM"])
    kernel = bare_kernel(fn, signature=SIG, launcher=Launcher(
        grid=cdiv, loop_iterations=cdiv, cta_iterations=lambda cfg, point: [1] * cdiv(cfg, point),
        bytes_moved=lambda point: point["M"] // point["dtype"], flops=lambda point: point["M"] // point["dtype"],
        secondary_kernels=lambda cfg, point: [cdiv(cfg, point)]))
    cfg, point = {"BM": "abc", "num_warps": 4}, {"M": 256, "dtype": "fp16"}
    for hook in ("grid", "loop_iterations", "cta_iterations", "bytes_moved", "flops", "secondary_kernels"):
        with pytest.raises(KernelError) as err:
            getattr(kernel, hook)(cfg, point)
        assert str(err.value).startswith(f"launcher of mm_kernel: {hook}() failed for ")
        assert "TypeError" in str(err.value) and "\n" not in str(err.value)
        assert ("BM='abc'" in str(err.value)) == (hook not in ("bytes_moved", "flops"))   # those take the point only
        assert "M=256, dtype='fp16'" in str(err.value)
    ok = bare_kernel(fn, signature=SIG, launcher=Launcher(grid=cdiv))
    assert ok.grid({"BM": 64}, point) == 4
    launcher = tmp_path / "launcher.py"
    launcher.write_text("POINTS = [{'M': 256}]\n"
                        "def grid(cfg, point):\n    return -(-point['M'] // cfg['BM'])\n"
                        "def loop_iterations(cfg, point):\n    return 4\n")
    lines = occ(env, "rank", "--kernel", KERNEL, "--signature", SIG, "--launcher", launcher, "--spec", "sm_90",
                "--baseline", "BM=64,BN=64,BK=32", "-D", "BM=abc", rc=2).stderr.strip().splitlines()
    assert len(lines) == 1 and "grid() failed for BM='abc'" in lines[0], lines


def test_a_launcher_for_rank_alone_needs_no_make_inputs_or_launch():
    """rank and the pruner run nothing: a launcher with only the workload hooks serves them; running
    the kernel names the two functions it lacks."""
    import occmodel
    from occmodel.card import import_file
    from occmodel.errors import KernelError

    launcher = occmodel.Launcher(grid=lambda cfg, point: 4, loop_iterations=lambda cfg, point: 8)
    assert not launcher.runs and launcher.provides == ["grid", "loop_iterations"]
    kernel = occmodel.bare_kernel(import_file(MM).mm_kernel, launcher=launcher)
    assert not kernel.has_launcher() and kernel.grid({}, {}) == 4
    with pytest.raises(KernelError, match="has no make_inputs and no launch: running the kernel"):
        kernel.make_inputs({}, {"M": 64})
    with pytest.raises(KernelError, match="no make_inputs and no launch"):
        kernel.launch({}, {})


def test_index_data_is_what_example_args_gives_on_the_cpu():
    """Integer tensors that example_args gives with data (on the CPU) reach rank as numpy arrays -- a
    MoE routing's expert ids; meta tensors, float tensors and scalars do not."""
    import numpy as np
    import occmodel
    import torch
    from occmodel.card import import_file
    mod = import_file(MM)

    def args(cfg, point):
        a = dict(zip([p.name for p in mod.mm_kernel.params], mod.example_args(cfg, point)))
        return {**a, "A": torch.arange(6, dtype=torch.int32).reshape(2, 3), "B": torch.zeros(4)}

    kernel = occmodel.bare_kernel(mod.mm_kernel, launcher=occmodel.Launcher(example_args=args,
                                                                            points=({"M": 64, "N": 64, "K": 64},)))
    data = kernel.index_data({"BM": 64, "BN": 64, "BK": 32}, {"M": 64, "N": 64, "K": 64})
    assert list(data) == ["A"] and np.array_equal(data["A"], np.arange(6)) and data["A"].dtype == np.int64
    meta_only = occmodel.bare_kernel(mod.mm_kernel, launcher=occmodel.Launcher(example_args=mod.example_args))
    assert meta_only.index_data({"BM": 64, "BN": 64, "BK": 32}, {"M": 64, "N": 64, "K": 64}) is None


def test_tensor_data_reads_cpu_tensors_in_memory_order():
    """tensor_data gives every CPU tensor of example_args with data, integer and float, in the order of the
    bytes the kernel's pointer addresses: a transposed view reads down its storage, not its logical rows;
    bf16 widens to float32. Meta tensors and scalars are not data."""
    import numpy as np
    import occmodel
    import torch
    from occmodel.card import import_file
    mod = import_file(MM)
    base = torch.arange(6, dtype=torch.int32).reshape(2, 3)

    def args(cfg, point):
        a = dict(zip([p.name for p in mod.mm_kernel.params], mod.example_args(cfg, point)))
        return {**a, "A": base.t(), "B": torch.tensor([0.5, -2.0, 3.0], dtype=torch.bfloat16)}

    kernel = occmodel.bare_kernel(mod.mm_kernel, launcher=occmodel.Launcher(example_args=args))
    data = kernel.tensor_data({"BM": 64, "BN": 64, "BK": 32}, {"M": 64, "N": 64, "K": 64})
    assert sorted(data) == ["A", "B"]
    assert np.array_equal(data["A"], np.arange(6)) and data["A"].dtype == np.int64   # storage order
    assert data["B"].tolist() == [0.5, -2.0, 3.0] and data["B"].dtype == np.float32
    meta_only = occmodel.bare_kernel(mod.mm_kernel, launcher=occmodel.Launcher(example_args=mod.example_args))
    assert meta_only.tensor_data({"BM": 64, "BN": 64, "BK": 32}, {"M": 64, "N": 64, "K": 64}) is None


def test_tensor_bytes_spans_every_tensor_meta_ones_included():
    """tensor_bytes: the bytes each tensor of example_args spans, first element to last, on any device --
    a meta tensor's too (what rank weighs an atomic's target against the L2 with): a column slice of a
    wider buffer spans its row pitch, not just its own elements. Scalars are left out."""
    import occmodel
    import torch
    from occmodel.card import import_file
    mod = import_file(MM)
    wide = torch.empty((64, 256), dtype=torch.float16, device="meta")

    def args(cfg, point):
        a = dict(zip([p.name for p in mod.mm_kernel.params], mod.example_args(cfg, point)))
        return {**a, "A": wide[:, :64]}

    kernel = occmodel.bare_kernel(mod.mm_kernel, launcher=occmodel.Launcher(example_args=args))
    sizes = kernel.tensor_bytes({"BM": 64, "BN": 64, "BK": 32}, {"M": 64, "N": 64, "K": 64})
    assert sizes["A"] == (63 * 256 + 64) * 2                 # 63 row pitches and one 64-element row
    assert all(not isinstance(v, bool) and v > 0 for v in sizes.values()) and "M" not in sizes


def test_an_example_args_that_needs_the_tunables_says_so():
    """A constexpr with no default whose example_args reads a tunable it was not given: the one-line
    error names the constexpr and why the example arguments could not give it (put it in BASELINE)."""
    import occmodel
    from occmodel.card import import_file
    from occmodel.errors import ConfigError
    mod = import_file(MM)

    def args(cfg, point):                       # reads BM, which has no default: None + 1 fails
        return mod.example_args(cfg, point) if cfg["BM"] + 1 else None

    kernel = occmodel.bare_kernel(mod.mm_kernel, launcher=occmodel.Launcher(example_args=args,
                                                                            points=({"M": 64, "N": 64, "K": 64},)))
    with pytest.raises(ConfigError) as err:
        kernel.check({"num_warps": 4, "num_stages": 3})
    msg = str(err.value)
    assert "has no value" in msg and "TypeError" in msg and "put the tunables it reads in BASELINE" in msg
    assert "\n" not in msg


ONE_TILE_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def add_one(X, N, BLOCK: tl.constexpr, ONE_TILE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if ONE_TILE:                                  # the whole row in one tile
        tl.store(X + offs, tl.load(X + offs, mask=offs < N) + 1, mask=offs < N)
    else:                                         # a loop over BLOCK-wide chunks
        for s in range(0, N, BLOCK):
            tl.store(X + s + offs, tl.load(X + s + offs, mask=s + offs < N) + 1, mask=s + offs < N)


BASELINE = {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}
POINTS = [{"N": 512}]


def example_args(cfg, point):
    import torch
    return {"X": torch.empty(point["N"], device="meta"), "N": point["N"], "BLOCK": cfg["BLOCK"],
            "ONE_TILE": point["N"] <= cfg["BLOCK"]}
'''


def test_a_constexpr_derived_from_a_tunable_follows_each_config(tmp_path):
    """ONE_TILE, which the launcher derives from BLOCK (no default, no tunable), takes each config's own
    value from example_args -- not the baseline's -- so BLOCK=256 compiles the chunk loop the GPU runs;
    a value given explicitly still wins."""
    path = tmp_path / "add_one.py"
    path.write_text(ONE_TILE_KERNEL)
    k = load_source(f"{path}:add_one", launcher=str(path))
    assert k.from_example == ("ONE_TILE",)
    assert k.resolve()["ONE_TILE"] is True
    small = k.resolve({"BLOCK": 256})
    assert small["ONE_TILE"] is False and k.constexprs(small)["ONE_TILE"] is False
    assert k.resolve({"BLOCK": 256, "ONE_TILE": True})["ONE_TILE"] is True
    from occmodel import sass as S

    def loops(cfg):
        r = compile_kernel(k.kernel, k.signature(cfg), k.constexprs(cfg), arch="sm_90", num_warps=4, num_stages=1,
                           keep_ir=True, cache=False)
        return S.sass_loops(r.sass)
    assert loops(small) and not loops(k.resolve())


CHANNELS_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def scale_channels(X, C: tl.constexpr):
    offs = tl.arange(0, C)
    tl.store(X + offs, tl.load(X + offs) * 2)


BASELINE = {"num_warps": 8, "num_stages": 1}
POINTS = [{"N": 64}]


def example_args(cfg, point):
    import torch
    c = cfg.get("C") or cfg["num_warps"]          # one channel a warp, unless the config gives C
    if c > cfg["num_warps"]:
        raise ValueError(f"C {c} exceeds one channel a warp on {cfg['num_warps']} warps")
    return {"X": torch.empty(point["N"], device="meta"), "C": c}
'''


def test_a_derived_constexpr_is_not_passed_back_to_the_launcher_stale(tmp_path):
    """triangle_mult (round 27) derives its channels a program from num_warps unless the config names them:
    re-reading C for 2 warps must not hand the launcher the baseline's C = 8 (which it would take as given,
    and reject)."""
    path = tmp_path / "channels.py"
    path.write_text(CHANNELS_KERNEL)
    k = load_source(f"{path}:scale_channels", launcher=str(path))
    assert k.from_example == ("C",) and k.resolve()["C"] == 8
    assert k.resolve({"num_warps": 2})["C"] == 2 and k.resolve({"num_warps": 4})["C"] == 4
    assert k.resolve({"num_warps": 8, "C": 4})["C"] == 4                 # given: it wins


def test_rank_compiles_each_config_with_its_own_derived_constexpr_at_each_point(env, tmp_path):
    """`occmodel rank` at several points: ONE_TILE (the launcher's N <= BLOCK) is read again for each config
    at each point -- BLOCK=256 at N=512 runs the chunk loop, BLOCK=1024 one tile -- not the baseline's value
    at that point for every config (which compiled BLOCK=256 as one tile, a kernel the GPU never runs)."""
    path = tmp_path / "add_one_hooks.py"
    path.write_text(ONE_TILE_KERNEL.replace('POINTS = [{"N": 512}]', 'POINTS = [{"N": 512}, {"N": 2048}]') + """

def grid(cfg, point):
    return (1,)


def loop_iterations(cfg, point):
    return 1 if point["N"] <= cfg["BLOCK"] else -(-point["N"] // cfg["BLOCK"])


def bytes_moved(point):
    return 8 * point["N"]


def flops(point):
    return point["N"]
""")
    r = doc(env, "rank", "--kernel", f"{path}:add_one", "--launcher", path, "--spec", "sm_90", "-D", "BLOCK=256,1024",
            "--compiled")
    got = {(e["config"]["BLOCK"], e["point"]["N"]): e["config"]["ONE_TILE"] for row in r["estimates"] for e in row}
    assert got == {(256, 512): False, (1024, 512): True, (256, 2048): False, (1024, 2048): False}


ROWS_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def scale_rows(X, R, D: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offs = rows[:, None] * D + tl.arange(0, D)[None, :]
    tl.store(X + offs, tl.load(X + offs, mask=rows[:, None] < R) * 2, mask=rows[:, None] < R)


BASELINE = {"BLOCK": 4096, "num_warps": 4, "num_stages": 1}       # BLOCK: the launcher's knob, not the kernel's
POINTS = [{"R": 4096, "D": 128}]


def example_args(cfg, point):
    import torch
    return {"X": torch.empty(point["R"] * point["D"], device="meta"), "R": point["R"], "D": point["D"],
            "ROWS": cfg["BLOCK"] // point["D"]}
'''


def test_a_launcher_tunable_the_kernel_does_not_take_is_a_config_parameter(tmp_path):
    """BLOCK is the launcher's tunable (rows a CTA = BLOCK // D); the kernel takes ROWS. BLOCK is a parameter
    of the config that `-D BLOCK=...` sweeps and the hooks read, never a constexpr of the compile; ROWS follows
    each config -- in a sweep on a resolved baseline too, as `occmodel table` builds it."""
    from occmodel import configs
    path = tmp_path / "scale_rows.py"
    path.write_text(ROWS_KERNEL)
    k = load_source(f"{path}:scale_rows", launcher=str(path))
    assert k.launcher_knobs == ("BLOCK",) and set(k.from_example) == {"D", "ROWS"}
    base = k.resolve()
    assert (base["BLOCK"], base["ROWS"]) == (4096, 32)
    rows = configs.sweep(k, base, defines=[("BLOCK", [1024, 16384])])
    assert [(asked["BLOCK"], cfg["ROWS"]) for asked, cfg, _ in rows] == [(1024, 8), (16384, 128)]
    assert "BLOCK" not in k.constexprs(rows[0][1]) and k.constexprs(rows[0][1])["ROWS"] == 8
    # a value the user pins in the baseline stays pinned
    pinned = k.resolve({"ROWS": 16})
    assert k.resolve({"BLOCK": 1024}, base=pinned)["ROWS"] == 16
    r = compile_kernel(k.kernel, k.signature(rows[1][1]), k.constexprs(rows[1][1]), arch="sm_90", num_warps=4,
                       num_stages=1, cache=False)
    assert r.ok, r.message


def test_a_kernel_under_heuristics_over_autotune_is_found():
    """flash-linear-attention stacks @triton.heuristics over @triton.autotune over @triton.jit; the
    Autotuner in the middle has no __call__, and the JIT function under both is still the kernel."""
    import triton
    import triton.language as tl

    from occmodel.bare import bare_kernel
    from occmodel.compile import jit_function

    @triton.heuristics({"EVEN": lambda args: args["N"] % args["BLOCK"] == 0})
    @triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (4, 8)], key=["N"])
    @triton.jit
    def scale_kernel(X, N, EVEN: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(X + offs, tl.load(X + offs, mask=offs < N) * 2, mask=offs < N)

    jf = jit_function(scale_kernel)
    assert jf.arg_names == ["X", "N", "EVEN", "BLOCK"]
    kernel = bare_kernel(scale_kernel, signature="*fp32:16,i32")
    assert [p.name for p in kernel.params] == ["EVEN", "BLOCK"]
    # with example arguments, the heuristic sets EVEN as Triton's launcher would -- for each config's BLOCK
    import torch

    from occmodel.launcher import Launcher

    def example_args(cfg, point):
        return {"X": torch.empty(point["N"], device="meta"), "N": point["N"]}

    launched = bare_kernel(scale_kernel, launcher=Launcher(example_args=example_args, points=({"N": 3000},),
                                                           baseline={"BLOCK": 1000}))
    assert launched.resolve({})["EVEN"] is True                   # 3000 % 1000
    assert launched.resolve({"BLOCK": 1024})["EVEN"] is False
    assert launched.at_point({"N": 4096}).resolve({"BLOCK": 1024})["EVEN"] is True
    assert "constexpr EVEN set by the kernel's @triton.heuristics on them" in launched.specialization

    # a heuristic's constexpr with a Python default is still the heuristic's, as Triton launches it
    @triton.heuristics({"EVEN": lambda args: args["N"] % args["BLOCK"] == 0})
    @triton.jit
    def scale_default(X, N, EVEN: tl.constexpr = False, BLOCK: tl.constexpr = 1024):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(X + offs, tl.load(X + offs, mask=offs < N) * 2, mask=offs < N)

    defaulted = bare_kernel(scale_default, launcher=Launcher(example_args=example_args, points=({"N": 4096},)))
    assert defaulted.resolve({})["EVEN"] is True and defaulted.resolve({"BLOCK": 1000})["EVEN"] is False


def test_rank_leaves_a_points_optional_workload_key_to_the_launcher(env, tmp_path):
    """A workload key that only some of the launcher's POINTS give (a row pitch: the first point reads x
    as a slice of a wider buffer, the others contiguous) stays out of the points that omit it: the
    launcher's own default (pitch = N) applies there, not the first point's pitch -- which, at a wider N,
    is no valid pitch at all and made `occmodel rank` fail."""
    path = tmp_path / "add_one_pitch.py"
    path.write_text(ONE_TILE_KERNEL.replace('POINTS = [{"N": 512}]', 'POINTS = [{"N": 512, "pitch": 640}, {"N": 2048}]')
                    .replace('"X": torch.empty(point["N"], device="meta")',
                             '"X": torch.empty(_pitch(point), device="meta")') + """

def _pitch(point):
    pitch = point.get("pitch", point["N"])
    if pitch < point["N"]:
        raise ValueError(f"pitch={pitch} must be at least N={point['N']}")
    return pitch


def grid(cfg, point):
    return (1,)


def loop_iterations(cfg, point):
    return 1 if point["N"] <= cfg["BLOCK"] else -(-point["N"] // cfg["BLOCK"])


def bytes_moved(point):
    return 8 * point["N"]


def flops(point):
    return point["N"]
""")
    r = doc(env, "rank", "--kernel", f"{path}:add_one", "--launcher", path, "--spec", "sm_90", "-D", "BLOCK=256,1024",
            "--compiled")
    assert [dict(p) for p in r["points"]] == [{"N": 512, "pitch": 640}, {"N": 2048}]
    assert {e["point"].get("pitch") for row in r["estimates"] for e in row} == {640, None}


def test_rank_names_a_config_that_fails_to_compile(env, tmp_path):
    """BLOCK=300 (tl.arange needs a power of two) fails to compile: ranked last with its bound "compile
    error" and the compiler's first line in a note -- not "does not fit", which means it compiled and ran
    out of shared memory or registers; when no config compiles, one line and exit status 2."""
    path = tmp_path / "add_one_bad_block.py"
    path.write_text(ONE_TILE_KERNEL + """

def grid(cfg, point):
    return (1,)


def loop_iterations(cfg, point):
    return 1


def bytes_moved(point):
    return 8 * point["N"]


def flops(point):
    return point["N"]
""")
    r = doc(env, "rank", "--kernel", f"{path}:add_one", "--launcher", path, "--spec", "sm_90", "-D", "BLOCK=300,1024",
            "--warps", "4", "--stages", "1", "--compiled")
    bounds = {e["config"]["BLOCK"]: e["bound"] for row in r["estimates"] for e in row}
    assert bounds[300] == "compile error" and bounds[1024] != "compile error"
    notes = r["sections"][0]["notes"]
    assert any("failed to compile" in n and "BLOCK=300" in n and "power of 2" in n for n in notes), notes
    proc = occ(env, "rank", "--kernel", f"{path}:add_one", "--launcher", path, "--spec", "sm_90", "-D", "BLOCK=300",
               "--warps", "4", "--stages", "1", rc=2)
    assert proc.stderr.count("\n") == 1 and "no config compiled" in proc.stderr and "BLOCK=300" in proc.stderr


GATHER_LAUNCHER = '''
import torch
import triton
import triton.language as tl


@triton.jit
def bag_sum(T, IDS, OUT, bag, DIM: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for i0 in range(0, bag, BLOCK_B):
        j = i0 + tl.arange(0, BLOCK_B)
        ids = tl.load(IDS + b * bag + j)
        acc += tl.sum(tl.load(T + ids[:, None] * DIM + d[None, :]).to(tl.float32), 0)
    tl.store(OUT + b * DIM + d, acc)


POINTS = [{"bags": 512, "bag": 64, "rows": 100000, "dim": 128, "meta": 0},
          {"bags": 512, "bag": 64, "rows": 100000, "dim": 128, "meta": 1}]


def example_args(cfg, point):
    ids = torch.randint(0, point["rows"], (point["bags"] * point["bag"],),
                        generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    return {"T": torch.empty((point["rows"], point["dim"]), dtype=torch.float16, device="meta"),
            "IDS": ids.to("meta") if point["meta"] else ids,
            "OUT": torch.empty((point["bags"], point["dim"]), dtype=torch.float32, device="meta"),
            "bag": point["bag"], "DIM": point["dim"]}


def grid(cfg, point):
    return (point["bags"], point["dim"] // cfg["BLOCK_D"])


def loop_iterations(cfg, point):
    return point["bag"] // cfg["BLOCK_B"]


def bytes_moved(point):
    return point["bags"] * point["bag"] * (point["dim"] * 2 + 4) + point["bags"] * point["dim"] * 4


def flops(point):
    return point["bags"] * point["bag"] * point["dim"]
'''


def test_a_gather_through_ids_example_args_gives_with_data_pays_for_its_lines(env, tmp_path):
    """An embedding-bag sum gathering 64 B of each 256-byte row (BLOCK_D 32 fp16) through random ids: with
    the ids on the CPU rank evaluates the gathered addresses and charges each row's whole 128-byte line
    (term (c)); with the same ids on meta it cannot, and the gather reads as coalesced. The text output
    says whose values the addresses came from."""
    launcher = tmp_path / "bag.py"
    launcher.write_text(GATHER_LAUNCHER)
    args = ("rank", "--kernel", f"{launcher}:bag_sum", "--launcher", launcher, "--spec", "sm_90", "--warps", "4",
            "--stages", "1", "-DBLOCK_B=16", "-DBLOCK_D=32", "--compiled")
    (data, meta), = doc(env, *args)["estimates"]
    # per CTA-iteration: 16 ids x one 128-byte line of T for 64 B used, and the ids' 64 B in one line
    assert data["l2_waste_bytes"] == 16 * (128 - 64) + (128 - 64)
    assert meta["l2_waste_bytes"] == 0 and data["total_s"] > meta["total_s"]
    assert "addresses loaded from IDS come from the values example_args gives" in occ(env, *args).stdout
