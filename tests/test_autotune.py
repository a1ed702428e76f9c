"""occmodel.autotune.pruner, called the way triton's Autotuner calls early_config_prune
(CPU only: every config is compiled for sm_120, never launched)."""

import logging

import pytest
import sympy
import torch
import triton

from occmodel import load_spec, occupancy
from occmodel.autotune import ROW_KEYS, pruner
from occmodel.calibrate import Calibration
from occmodel.card import KernelCard, Param
from occmodel.launcher import Launcher
from occmodel.compile import compile_kernel
from occmodel.errors import ConfigError, KernelError
from occmodel.kernels import matmul as mm
from occmodel.model import predict

import kernels_for_tests as K

SPEC = load_spec("sm_120")


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(fresh_cache):
    return fresh_cache


def _cfg(m, n, k, warps, stages):
    return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=warps, num_stages=stages)


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); shared = (stages - 1) x (BM + BN) x BK x 2 B on sm_120
SWEEP = [
    _cfg(128, 128, 32, 4, 3),    # 32 KB
    _cfg(128, 128, 64, 4, 4),    # 96 KB: fits one block under the 99 KB opt-in limit
    _cfg(128, 128, 64, 4, 5),    # 128 KB: over the limit
    _cfg(256, 128, 64, 8, 4),    # 144 KB: over
    _cfg(128, 128, 128, 8, 2),   # 64 KB
    _cfg(128, 128, 128, 8, 3),   # 128 KB: over
    _cfg(64, 64, 32, 4, 2),
    _cfg(64, 64, 64, 4, 4),
    _cfg(128, 64, 32, 4, 3),
    _cfg(64, 128, 64, 8, 3),
    _cfg(128, 256, 64, 8, 3),    # 96 KB
    _cfg(32, 32, 32, 2, 2),
    _cfg(256, 128, 32, 4, 2),    # a 256 x 128 fp32 accumulator over 128 threads: spills
    _cfg(64, 64, 8, 4, 2),       # BLOCK_K = 8 < 16: tl.dot refuses it, the compile fails
]
M = N = K_DIM = 512


def _launch_args():
    a = torch.empty(M, K_DIM, dtype=torch.float16)
    b = torch.empty(K_DIM, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float16)
    return (a, b, c, M, N, K_DIM, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def _prune_like_triton(configs, prune, **launch_kwargs):
    """What triton's Autotuner.run does (3.6 and 3.9): nargs = the positional args by name, then
    prune_configs(kwargs) with the launch's keyword args plus grid and warmup."""
    tuned = triton.autotune(configs, key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})(mm._kernel)
    tuned.nargs = dict(zip(tuned.arg_names, _launch_args()))
    try:
        return tuned.prune_configs({"grid": (1,), "warmup": False, **launch_kwargs})
    finally:
        tuned.nargs = None


def _fits_independently(config) -> bool:
    """Compile the config with the card's declared signature and judge fit by hand."""
    res = compile_kernel(mm._kernel, signature=mm.CARD.signature({"dtype": "fp16"}),
                         constexprs={**config.kwargs, "GROUP_M": 8}, arch="sm_120",
                         num_warps=config.num_warps, num_stages=config.num_stages)
    if not res.ok:
        return False
    occ = occupancy(SPEC, threads=32 * config.num_warps, regs=res.n_regs, smem=res.total_shared)
    return res.total_shared <= SPEC.sm.shared_memory_per_block_optin and res.n_spills == 0 and occ.blocks_per_sm >= 1


@pytest.fixture(scope="module")
def swept():
    prune = pruner(spec="sm_120")
    kept = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    return prune, kept


@pytest.mark.slow
def test_keeps_every_feasible_config_and_drops_every_infeasible_one(swept):
    prune, kept = swept
    expected = [c for c in SWEEP if _fits_independently(c)]
    assert kept == expected
    assert all(k is c for k, c in zip(kept, expected))          # the caller's own Config objects
    rows = prune.decisions
    assert [r["kept"] for r in rows] == [c in expected for c in SWEEP]
    assert set(rows[0]) == set(ROW_KEYS)
    # the sweep exercises every reason
    reasons = {SWEEP.index(c): rows[SWEEP.index(c)]["reason"] for c in SWEEP if c not in expected}
    assert "per-block limit of sm_120" in reasons[3] and "147,456 B" in reasons[3]   # 3 x (256+128) x 64 x 2
    assert "compile failed (compile_error)" in reasons[13]
    assert "spills > max_spills=0" in reasons[12]
    assert rows[1]["kept"] and rows[1]["blocks_per_sm"] == 1                         # the 96 KB borderline


@pytest.mark.slow
def test_second_call_reuses_decisions_and_logs_every_drop(swept, caplog):
    prune, kept = swept
    with caplog.at_level(logging.INFO, logger="occmodel.autotune"):
        again = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    assert again == kept
    dropped = [r for r in caplog.records if r.getMessage().startswith("dropped [")]
    assert len(dropped) == len(SWEEP) - len(kept)
    assert caplog.records[-1].getMessage() == f"kept {len(kept)} of {len(SWEEP)} configs for sm_120 (compile)"


@pytest.mark.slow
def test_top_k_keeps_most_resident_warps_then_fewest_spills(swept, caplog):
    """No card or launcher: no workload hooks, so top_k falls back to occupancy and says so."""
    _, kept = swept
    prune = pruner(spec="sm_120", top_k=3)
    with caplog.at_level(logging.WARNING, logger="occmodel.autotune"):
        top = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    rows = {r["index"]: r for r in prune.decisions}
    feasible = [i for i, c in enumerate(SWEEP) if c in kept]
    ranked = sorted(feasible, key=lambda i: (-rows[i]["warps_per_sm"], rows[i]["n_spills"], i))
    assert top == [SWEEP[i] for i in sorted(ranked[:3])]
    assert all("not in top_k=3 by occupancy" in rows[i]["reason"] for i in ranked[3:])
    assert prune.ranked_by == "occupancy" and "NOT by the rank estimate: no workload hooks" in prune.note
    assert any(r.levelno == logging.WARNING and "NOT by the rank estimate" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_top_k_by_the_estimate_with_the_matmul_card_takes_the_point_from_the_launch(swept):
    """card="matmul": its workload parameters M, N, K are launch arguments, so the point is the
    launch's (512^3); configs are compiled with their TTGIR and the kept ones have the smallest
    estimates."""
    _, kept = swept
    prune = pruner(spec="sm_120", top_k=3, card="matmul", log=None)
    top = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    assert prune.ranked_by == "estimate" and prune.last_point == {"M": 512, "N": 512, "K": 512}
    assert "ranked by the rank estimate at M=512, N=512, K=512" in prune.note
    rows = [r for r in prune.decisions if SWEEP[r["index"]] in kept]
    assert all(r["estimate_us"] and r["bound"] for r in rows)
    best = sorted(r["estimate_us"] for r in rows)
    assert len(top) >= 3 and sorted(r["estimate_us"] for r in rows if r["kept"]) == best[:len(top)]
    assert all("by estimate (rank" in r["reason"] for r in rows if not r["kept"])


def test_model_mode_follows_predict():
    configs = [_cfg(128, 128, 32, 4, 3), _cfg(128, 128, 64, 4, 5), _cfg(64, 64, 32, 4, 2), _cfg(256, 256, 64, 4, 3)]
    prune = pruner(spec="sm_120", use="model", card="matmul", log=None)
    kept = _prune_like_triton(configs, prune, GROUP_M=8)
    for c, row in zip(configs, prune.decisions):
        pred = predict(mm.CARD, SPEC, mm.CARD.resolve({**c.kwargs, "num_warps": c.num_warps,
                                                       "num_stages": c.num_stages}))
        assert row["shared"] == pred.shared and row["warps_per_sm"] == pred.occupancy.warps_per_sm
        assert row["kept"] == (pred.fits and not pred.spills_predicted), row
    assert kept == [configs[0], configs[2]]


# ----------------------------------------------------- top_k by the rank estimate
class _StreamCard(KernelCard):
    """A hand-checkable card: 100 CTAs (one per SM of the test calibration), 10 loop iterations
    each, N x (1 + 128 / BLOCK) DRAM bytes per launch (small tiles re-read), no flops; shared
    memory BLOCK x 512 B, 32 registers. DRAM-bound by far, so estimate ~ bytes / bandwidth."""

    def shared_memory(self, cc, cfg):
        return self.symbols()["BLOCK"] * 512

    def registers(self, cc, cfg):
        return sympy.Integer(32)

    def grid(self, cfg, point):
        return 100

    def loop_iterations(self, cfg, point):
        return 10

    def bytes_moved(self, cfg, point):
        return point["N"] * (1 + 128 // cfg["BLOCK"])

    def flops(self, cfg, point):
        return 0

    def loop_tile_bytes(self, cfg):
        return 1024


STREAM = _StreamCard(name="stream_test", summary="hand-checkable streaming card",
                     params=(Param("BLOCK", 64, "tile", choices=(16, 32, 64, 128)),),
                     baseline={"BLOCK": 64, "num_warps": 4, "num_stages": 2},
                     workload_params=(Param("N", 2**20, "elements", maximum=2**40, tunable=False),))
# 100 SMs, 1,000 GB/s: 1e9 bytes take 1 ms
TOY_CAL = Calibration(spec="sm_120", gpu="toy", sms=100, bandwidth_gbs=1000.0, latency_ns=800.0, launch_us=1.0,
                      l2_bandwidth_gbs=2500.0, source="test constants")
STREAM_CONFIGS = [triton.Config({"BLOCK": 16}, num_warps=4, num_stages=2),
                  triton.Config({"BLOCK": 32}, num_warps=4, num_stages=2),
                  triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2),
                  triton.Config({"BLOCK": 64}, num_warps=8, num_stages=2),
                  triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2)]


def _stream_pruner(**kwargs):
    return pruner(spec="sm_120", use="model", card=STREAM, calibration=TOY_CAL, log=None, **kwargs)


def test_top_k_follows_the_estimate_with_a_point_and_keeps_a_tie_together():
    """Worked by hand, N = 1e9: d = bytes / (100 CTAs x 10 iterations); one CTA per SM, so one
    iteration takes d / (1e12 B/s / 100 SMs) (the latency term, 800 ns / 1 tile ahead, and the
    L2 term, 1,024 B / 25 GB/s per SM = 41 ns, are far below); 10 iterations + one latency +
    one launch:
        BLOCK=128: 2e9 B -> 10 x 200 us + 0.8 + 1 = 2,001.8 us   (#1)
        BLOCK=64:  3e9 B -> 3,001.8 us, at num_warps 4 and 8 alike (threads change no term: #2, a tie)
        BLOCK=32:  5e9 B -> 5,001.8 us (#4);  BLOCK=16: 9e9 B -> 9,001.8 us (#5)
    Resident warps say the opposite (BLOCK=16: 11 blocks x 4 warps = 44 warps/SM ... BLOCK=128: 4)."""
    prune = _stream_pruner(top_k=2, point={"N": 10**9})
    kept = prune(STREAM_CONFIGS, {})
    est = [r["estimate_us"] for r in prune.decisions]
    for got, want in zip(est, (9001.8, 5001.8, 3001.8, 3001.8, 2001.8)):
        assert got == pytest.approx(want, rel=5e-3)          # within 0.5 %: bytes / bandwidth rules
    assert [r["bound"] for r in prune.decisions] == ["dram"] * 5
    assert est[2] == est[3]                                   # the tie is exact
    assert kept == STREAM_CONFIGS[2:]                         # #1 and both configs tied at #2
    assert prune.ranked_by == "estimate" and prune.last_point == {"N": 10**9}
    assert "the #2 place is a 2-way tie on the estimate: all 2 kept (3 configs for top_k=2)" in prune.note
    assert "not in top_k=2 by estimate (rank 4: " in prune.decisions[1]["reason"]
    assert "dram-bound at N=1000000000" in prune.decisions[0]["reason"]
    top1 = _stream_pruner(top_k=1, point={"N": 10**9})
    assert top1(STREAM_CONFIGS, {}) == [STREAM_CONFIGS[4]] and "tie" not in top1.note


def test_the_point_can_come_from_the_launch():
    """A function of the launch's arguments, or the card's workload parameter passed by name."""
    by_fn = _stream_pruner(top_k=1, point=lambda args: {"N": args["n_elements"]})
    assert by_fn(STREAM_CONFIGS, {"n_elements": 10**9}) == [STREAM_CONFIGS[4]]
    assert by_fn.last_point == {"N": 10**9}
    by_name = _stream_pruner(top_k=1)
    assert by_name(STREAM_CONFIGS, {"X": None, "N": 10**9}) == [STREAM_CONFIGS[4]]
    assert by_name.ranked_by == "estimate" and by_name.last_point == {"N": 10**9}


def test_without_a_point_top_k_falls_back_to_occupancy_and_says_so(caplog):
    """Resident warps/SM on sm_120 (48 warps, 100 KB shared, 1 KB reserved per block):
    BLOCK=16 8 KB -> 11 blocks x 4 = 44; BLOCK=64 at 8 warps 32 KB -> 3 x 8 = 24; BLOCK=32 16 KB -> 5 x 4 = 20;
    BLOCK=64 at 4 warps -> 12; BLOCK=128 64 KB -> 1 x 4 = 4. top_k=2 keeps the first two."""
    prune = pruner(spec="sm_120", use="model", card=STREAM, calibration=TOY_CAL, top_k=2)
    with caplog.at_level(logging.WARNING, logger="occmodel.autotune"):
        kept = prune(STREAM_CONFIGS, {"X": None})
    assert [r["warps_per_sm"] for r in prune.decisions] == [44, 20, 12, 24, 4]
    assert kept == [STREAM_CONFIGS[0], STREAM_CONFIGS[3]]
    assert prune.ranked_by == "occupancy"
    assert prune.note.startswith("top_k=2 ranked by occupancy (resident warps/SM), NOT by the rank estimate: "
                                 "no workload point")
    assert "workload parameters: N" in prune.note
    assert all(r["estimate_us"] is None for r in prune.decisions)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [prune.note]
    assert prune.note in prune.report().assumptions and prune.report().extra["ranked_by"] == "occupancy"
    # a point function that fails is a fallback too, with its error
    bad = _stream_pruner(top_k=2, point=lambda args: {"N": args["missing"]})
    assert bad(STREAM_CONFIGS, {}) == kept and "no workload point: KeyError" in bad.note
    # asked for occupancy: no fallback to report
    asked = _stream_pruner(top_k=2, by="occupancy", point={"N": 10**9})
    assert asked(STREAM_CONFIGS, {}) == kept and asked.ranked_by == "occupancy" and asked.note == ""


def test_top_k_by_the_estimate_for_a_bare_kernel_with_a_launcher():
    """use="compile": the launcher gives the workload hooks, the compile (with its TTGIR) the
    resources; the kept config is the one rank.estimate_many puts first on the same evidence."""
    from occmodel import calibrate, evidence, rank
    from occmodel.bare import bare_kernel
    launcher = Launcher(make_inputs=lambda point: {}, launch=lambda inputs, cfg: None,
                        grid=lambda cfg, point: -(-point["N"] // cfg["BLOCK"]),
                        loop_iterations=lambda cfg, point: 1, bytes_moved=lambda point: 6 * point["N"],
                        flops=lambda point: point["N"], points=({"N": 1 << 20},))
    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((128, 1), (1024, 4), (4096, 8))]
    prune = pruner(spec="sm_120", kernel=K.add_kernel, launcher=launcher, top_k=1, log=None)
    x = torch.empty(1 << 20, dtype=torch.float16)
    kept = prune(configs, {"X": x, "Y": x, "Z": x, "N": 1 << 20})
    assert prune.ranked_by == "estimate" and prune.last_point == {"N": 1 << 20}
    kernel = bare_kernel(K.add_kernel, launcher=launcher, signature="X=*fp16:16,Y=*fp16:16,Z=*fp16:16,N=i32:16")
    cfgs = [{"BLOCK": c.kwargs["BLOCK"], "num_warps": c.num_warps, "num_stages": c.num_stages} for c in configs]
    spec = load_spec("sm_120")
    evs = evidence.gather(kernel, spec, cfgs, compile=True, progress=False)
    est = rank.estimate_many(kernel, spec, calibrate.resolve(spec), cfgs, [{"N": 1 << 20}], evs)
    totals = [row[0].total_s for row in est]
    assert [r["estimate_us"] for r in prune.decisions] == [pytest.approx(t * 1e6, abs=1e-3) for t in totals]
    assert kept == [configs[min(range(3), key=totals.__getitem__)]]


def test_a_config_that_cannot_even_be_built_is_dropped_not_raised():
    configs = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 32, "NOPE": 1}, num_warps=4),
               triton.Config({"BLOCK": 32}, num_warps=4)]
    messages = []
    prune = pruner(spec="sm_120", kernel=K.failing_kernel, log=messages.append)
    kept = prune(configs, {"X": torch.empty(256)}, grid=(1,), warmup=False)
    assert kept == [configs[2]]
    rows = prune.decisions
    assert "BLOCK must be at most 64" in rows[0]["reason"] and rows[0]["status"] == "compile_error"
    assert "unknown parameter 'NOPE'" in rows[1]["reason"] and rows[1]["status"] == "error"
    assert len(messages) == 2 + 1 and messages[-1].startswith("kept 1 of 3")


def test_heuristics_and_custom_signature():
    tuned = triton.autotune([triton.Config({}, num_warps=w) for w in (1, 2, 4)], key=["N"],
                            prune_configs_by={"early_config_prune": pruner(
                                spec="sm_120", kernel_args_to_signature=lambda a: {
                                    "X": "*fp32", "Y": "*fp32", "Z": "*fp32", "N": "i32"})})(
        triton.heuristics({"BLOCK": lambda a: 64 * a["num_warps"]})(K.add_kernel))
    tuned.nargs = dict(zip(tuned.arg_names, (None, None, None, 1000)))   # the signature ignores the values
    kept = tuned.prune_configs({"grid": (1,), "warmup": False})
    assert len(kept) == 3
    rows = tuned.early_config_prune.decisions
    assert all(r["status"] == "ok" and r["kept"] for r in rows)


def test_nothing_fits_is_a_typed_error_and_bad_arguments_are_rejected():
    prune = pruner(spec="sm_120", kernel=K.failing_kernel, log=None)
    with pytest.raises(ConfigError, match="no config of 1 fits sm_120"):
        prune([triton.Config({"BLOCK": 128})], {"X": torch.empty(128)})
    with pytest.raises(KernelError, match="does not know its kernel"):
        pruner(spec="sm_120")([triton.Config({"BLOCK": 16})], {"X": torch.empty(16)})
    for kwargs, fragment in [({"use": "guess"}, "use='guess' is not allowed"),
                             ({"by": "speed"}, "by='speed' is not allowed"),
                             ({"top_k": 0}, "top_k=0 is not allowed"),
                             ({"point": 4096}, "point=4096 is not allowed"),
                             ({"use": "model"}, "use='model' needs card="),
                             ({"spec": "sm_12"}, "did you mean 'sm_120'")]:
        with pytest.raises(Exception, match=fragment):
            pruner(**kwargs)


@pytest.mark.requires_gpu
def test_on_a_gpu_triton_benchmarks_only_what_the_pruner_kept():
    major, minor = torch.cuda.get_device_capability()
    configs = [_cfg(64, 64, 32, 4, 3), _cfg(128, 128, 32, 4, 3),
               _cfg(256, 256, 128, 8, 5),        # >= 4 x 128 KB of operand ring: fits no GPU
               _cfg(256, 128, 32, 4, 2)]         # spills on sm_90 and sm_120
    prune = pruner(spec=f"sm_{major}{minor}")
    tuned = triton.autotune(configs, key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})(mm._kernel)
    a = torch.randn(M, K_DIM, device="cuda", dtype=torch.float16)
    b = torch.randn(K_DIM, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    tuned[grid](a, b, c, M, N, K_DIM, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                GROUP_M=8)
    torch.cuda.synchronize()
    kept = [configs[r["index"]] for r in prune.decisions if r["kept"]]
    assert configs[0] in kept and configs[2] not in kept
    assert tuned.best_config in kept
    if len(kept) > 1:
        assert set(tuned.configs_timings) == set(kept)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)
