"""The rank model's terms found on the development kernels (issue 14), on hand-worked cases:
the SASS loop reading (unroll, issue slots), the latency curve, the loaded latency at a
config's own load, and the issue term."""

import math

import pytest

from occmodel import calibrate as C
from occmodel import rank as R
from occmodel import sass as S

# An excerpt in cuobjdump's layout: a prologue, a loop whose trip loads 4 x 32-bit (a 4-way
# unrolled column loop, as ptxas makes of rmsnorm's pass 1 at BLOCK_N=256, 4 warps) plus one
# 128-bit load, an exp2 and a block-wide barrier, and the exit trap (a branch to itself, not a loop).
LISTING = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                   /* 0x00000a00ff017b82 */
        /*0010*/                   S2R R19, SR_TID.X ;                      /* 0x0000000000137919 */
        /*0020*/              @!P4 LDG.E R18, desc[UR12][R10.64] ;          /* 0x0000000c0a12c981 */
        /*0030*/              @!P3 LDG.E R22, desc[UR12][R8.64] ;           /* 0x0000000c0816b981 */
        /*0040*/              @!P2 LDG.E R23, desc[UR12][R2.64] ;           /* 0x0000000c0217a981 */
        /*0050*/              @!P4 LDG.E R17, desc[UR12][R12.64] ;          /* 0x0000000c0c11c981 */
        /*0060*/                   LDG.E.128 R4, desc[UR12][R14.64] ;       /* 0x0000000c0e04c981 */
        /*0070*/                   FFMA R11, R11, R11, R6 ;                 /* 0x0000000b0b0b7223 */
        /*0080*/                   MUFU.EX2 R7, R7 ;                        /* 0x0000000b0b0b7223 */
        /*0090*/                   NOP ;                                    /* 0x0000000000007918 */
        /*0098*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;            /* 0x0000000000007b1d */
        /*00a0*/                   ISETP.GE.AND P2, PT, R15, R14, PT ;      /* 0x0000000e0f00720c */
        /*00b0*/              @!P2 BRA 0x20 ;                               /* 0x0000000400909947 */
        /*00c0*/                   EXIT ;                                   /* 0x000000000000794d */
        /*00d0*/                   BRA 0xd0;                                /* 0xfffffffc00fc7947 */
"""


def test_sass_loop_of_a_hand_worked_listing():
    loops = S.sass_loops(LISTING)
    assert len(loops) == 1                        # BRA 0xd0 at 0xd0 is the exit trap
    lp = loops[0]
    assert (lp.start, lp.end) == (0x20, 0xb0)
    # 0x20..0xb0: 11 instructions, the NOP left out -> 10
    assert lp.instructions == 10
    assert lp.barriers == 1
    assert lp.global_loads == 5
    assert lp.global_load_bytes == 4 * 4 + 16     # four LDG.E (4 B) + one LDG.E.128 (16 B)
    assert lp.xu == 1 and lp.mma == 0 and lp.inner
    assert S.main_loop(loops) is lp
    # 128 threads x 32 B = 4,096 B per trip; one source iteration loads 1,024 B -> 4 iterations
    assert S.unroll(lp, threads=128, bytes_per_iteration=1024) == 4
    assert S.unroll(lp, threads=128, bytes_per_iteration=0) == 1
    # 10 slots, the MUFU counted 8 times: 10 + 7 = 17
    assert S.issue_slots(lp) == 17


# A dequantizing loop's conversions, as ptxas writes them for sm_90 (scripts/convert_pipe_probe.py's modes):
# int16 / int8 -> fp32 (I2F.S16 / .S8), fp32 -> bf16 (F2F.BF16.F32) and fp32 -> int (F2I) run on the XU
# pipe, as MUFU; sm_90's int32 -> fp32 (I2FP.F32.S32) and the fp16 pair pack (F2FP.F16.F32.PACK_AB) do not
# (measured on an H100: reports/GPU_NOTES.md section 28).
CONVERSIONS = """
        /*0000*/                   I2F.S16 R3, R2 ;
        /*0010*/                   I2F.S8 R5, R4 ;
        /*0020*/                   F2F.BF16.F32 R7, R6 ;
        /*0030*/                   F2I.TRUNC.NTZ R9, R8 ;
        /*0040*/                   MUFU.EX2 R11, R10 ;
        /*0050*/                   I2FP.F32.S32 R13, R12 ;
        /*0060*/                   F2FP.F16.F32.PACK_AB R15, R14, R13 ;
        /*0070*/                   FADD R17, R16, R3 ;
        /*0080*/                   ISETP.GE.AND P0, PT, R17, R18, PT ;
        /*0090*/               @P0 BRA 0x0 ;
"""


def test_conversions_that_run_on_the_xu_pipe_take_its_eight_slots():
    lp = S.main_loop(S.sass_loops(CONVERSIONS))
    assert lp.instructions == 10
    assert lp.xu == 5                             # I2F.S16, I2F.S8, F2F.BF16.F32, F2I, MUFU.EX2
    # 10 slots, the five XU ops counted 8 times each: 10 + 5 x 7 = 45
    assert S.issue_slots(lp) == 45
    from occmodel.sass_chain import is_xu
    assert not is_xu("I2FP.F32.S32") and not is_xu("F2FP.BF16.F32.PACK_AB") and is_xu("F2F.F16.F32")


def test_no_loop_no_main_loop():
    assert S.sass_loops("") == [] and S.main_loop([]) is None


def _cal(curve=((4096, 400.0), (16384, 700.0), (65536, 2600.0))):
    return C.Calibration(spec="sm_90", gpu="test", sms=100, bandwidth_gbs=4000.0, latency_ns=1000.0,
                         launch_us=1.0, l2_bandwidth_gbs=10000.0, source="hand-worked", l2_latency_ns=300.0,
                         shared_bandwidth_gbs=128 * 100 * 2.0, latency_curve=curve)   # 2 GHz clock


def test_latency_curve_is_read_at_the_load():
    cal = _cal()
    assert C.latency_at(cal, 1000) == 400.0                  # below the lightest probe
    assert C.latency_at(cal, 10240) == pytest.approx(550.0)  # halfway 4 K..16 K: 400 + 300 / 2
    assert C.latency_at(cal, 131072) == pytest.approx(5200.0)  # past the last: 2,600 x 128 K / 64 K
    no_curve = _cal(curve=())
    assert C.latency_at(no_curve, 131072) == 1000.0          # the single figure


def test_latency_curve_round_trips_and_bad_curves_are_named(tmp_path):
    cal = _cal()
    path = C.save(cal, tmp_path / "c.yaml")
    assert C.load(path) == cal
    text = path.read_text().replace("- - 4096.0", "- - -4096.0")
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(C.CalibrationError, match="latency_curve: pair"):
        C.load(tmp_path / "bad.yaml")


def test_latency_is_the_curve_at_one_reference_load():
    """L is the curve read at LATENCY_LOAD_BYTES (16 KB/SM: 700 ns on this curve) for every config,
    however many bytes it keeps in flight: the queueing past that load is term (b)'s."""
    r = R.rates(_cal(), peak_flops=1e15)
    assert r.clock == pytest.approx(2e9)
    assert R.LATENCY_LOAD_BYTES == 16384 and r.latency() == pytest.approx(700e-9)
    heavy = R._Loop(d=1024, t=1024, s=0, f=0, k=2)               # 16 CTAs x 2 tiles x 1 KB = 32 KB/SM
    light = R._Loop(d=1024, t=1024, s=0, f=0, k=1)
    assert R.in_flight(16, heavy) == 32768
    assert R._steps(r, 16, heavy)["latency"] == pytest.approx(700e-9 / 2)      # L / k
    assert R._steps(r, 1, light)["latency"] == pytest.approx(700e-9)
    # unpipelined: one tile in flight per CTA, or 1 / h of them when ptxas hoists loads (h = 1/4: 4)
    assert R.in_flight(8, R._Loop(d=1024, t=1024, s=0, f=0, k=0, u=4)) == 8192
    assert R.in_flight(8, R._Loop(d=1024, t=1024, s=0, f=0, k=0, hoist=0.25)) == 4 * 8192
    # without a curve: the single figure
    assert R.rates(_cal(curve=()), peak_flops=1e15).latency() == pytest.approx(1000e-9)


def test_issue_term_and_unpipelined_latency():
    r = R.rates(_cal(), peak_flops=1e15)
    # 2 CTAs x 4 warps each issue 100 slots per iteration on 4 schedulers at 2 GHz: 2 warps per scheduler,
    # fewer than the 3 a scheduler needs to issue every cycle (one warp: an instruction per 3 cycles):
    # 100 x 3 / 2e9 = 150 ns; 16 CTAs (32 warps per scheduler): 100 x 32 / 2e9 = 1,600 ns
    lp = R._Loop(d=1024, t=1024, s=0, f=0, k=0, u=2, warps=4, issue=100.0)
    steps = R._steps(r, 2, lp)
    assert R.DEPENDENT_ISSUE_CYCLES == 3.0
    assert steps["issue"] == pytest.approx(150e-9)
    assert R._steps(r, 32, lp)["issue"] == pytest.approx(1600e-9)
    # unpipelined: a CTA waits its tile each iteration (L = 700 ns), then its warps run their 100 slots,
    # one per 3 cycles at best: 100 x 3 / 2e9 = 150 ns -> 850 ns per iteration
    assert steps["latency"] == pytest.approx(700e-9 + 150e-9)
    # without an issue count (no SASS) only the wait: 700 ns
    assert R._steps(r, 2, R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=4))["latency"] == pytest.approx(700e-9)
    # one warp alone: one slot per 3 clocks at most: 100 slots -> 150 ns
    assert R._steps(r, 1, R._Loop(d=1, t=1, s=0, f=0, k=0, warps=1, issue=100.0))["issue"] == pytest.approx(150e-9)
    # an unpipelined kernel pays no separate first-tile latency; a pipelined one does
    flat = R._kernel(r, grid=100, blocks=1, n=10, lp=R._Loop(d=1024, t=1024, s=0, f=0, k=0))
    piped = R._kernel(r, grid=100, blocks=1, n=10, lp=R._Loop(d=1024, t=1024, s=0, f=0, k=1))
    assert flat.total_s == pytest.approx(10 * R.pmax(flat.terms))
    assert piped.total_s == pytest.approx(10 * R.pmax(piped.terms) + r.latency())
    assert math.isfinite(piped.total_s)


def test_issue_term_with_a_warps_own_chain():
    """With the SASS trip's one-warp chain known (sass_chain: in-order issue, dependency latencies),
    a scheduler with w warps takes max(w x slots, chain) per iteration -- the chain replaces the
    3-cycles-an-instruction floor -- and an unpipelined CTA's compute phase is at least its chain."""
    r = R.rates(_cal(), peak_flops=1e15)
    lp = R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=4, issue=100.0, chain=180.0)
    # 1 CTA of 4 warps: one warp a scheduler, its chain binds: 180 cycles / 2 GHz = 90 ns (not 100 x 3)
    assert R._steps(r, 1, lp)["issue"] == pytest.approx(90e-9)
    # 2 CTAs: 2 warps a scheduler issue 2 x 100 slots = 200 cycles > the chain: 100 ns
    assert R._steps(r, 2, lp)["issue"] == pytest.approx(100e-9)
    # 32 CTAs: 32 warps a scheduler, 3,200 cycles: 1,600 ns, as without a chain
    assert R._steps(r, 32, lp)["issue"] == pytest.approx(1600e-9)
    # unpipelined: the wait, then the compute phase: 100 x 3 cycles (150 ns) unless the chain is longer
    assert R._steps(r, 2, lp)["latency"] == pytest.approx(700e-9 + 150e-9)
    long = R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=4, issue=100.0, chain=500.0)
    assert R._steps(r, 2, long)["latency"] == pytest.approx(700e-9 + 250e-9)
    assert R._steps(r, 1, long)["issue"] == pytest.approx(250e-9)


def test_unpipelined_compute_phase_is_a_2_norm_of_its_three_streams():
    """Term (a), unpipelined: after the wait, the CTA's shared reads, its dots and its warps' instruction
    stream partly overlap -- combined as sqrt(a^2 + b^2 + c^2), not summed (COMPUTE_PHASE_P = 2)."""
    r = R.rates(_cal(), peak_flops=1e15)
    smem_sm = r.smem / r.sms
    peak_sm = r.peak / r.sms
    # shared reads 300 ns, dots 400 ns, 160 slots x 3 cycles = 480 cycles at 2 GHz = 240 ns:
    # sqrt(300^2 + 400^2 + 240^2) = 554.6 ns, against 940 ns summed
    lp = R._Loop(d=1024, t=1024, s=300e-9 * smem_sm, f=400e-9 * peak_sm, k=0, warps=4, issue=160.0)
    assert R.COMPUTE_PHASE_P == 2.0
    own = math.sqrt(300.0 ** 2 + 400.0 ** 2 + 240.0 ** 2) * 1e-9
    assert R._steps(r, 2, lp)["latency"] == pytest.approx(700e-9 + own)
    assert own == pytest.approx(554.6e-9, rel=1e-3)
    # one stream alone is itself (the norm of one value): the wait plus the dots' 400 ns
    only = R._Loop(d=1024, t=1024, s=0, f=400e-9 * peak_sm, k=0, warps=4)
    assert R._steps(r, 2, only)["latency"] == pytest.approx(1100e-9)
    # a pipelined loop's term (a) is L / k whatever its compute: the phases are terms (d), (e), (f) there
    piped = R._Loop(d=1024, t=1024, s=300e-9 * smem_sm, f=400e-9 * peak_sm, k=2, warps=4, issue=160.0)
    assert R._steps(r, 2, piped)["latency"] == pytest.approx(350e-9)


def test_a_dot_loops_compute_phase_issues_an_instruction_a_cycle():
    """Term (a), unpipelined, a loop with a tl.dot (DOT_LOOP_ISSUE): the CTA's W warps issue their i slots at
    one a cycle on the 4 schedulers -- i x max(1, W / 4) cycles, at least the chain -- not i x D."""
    r = R.rates(_cal(), peak_flops=1e15)
    # 4 warps, 1,000 slots each, chain 800 cycles: one warp a scheduler, 1,000 cycles = 500 ns at 2 GHz
    dot = R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=4, issue=1000.0, chain=800.0, dots=True)
    assert R._steps(r, 2, dot)["latency"] == pytest.approx(700e-9 + 500e-9)
    # the same stream without a dot: 3 cycles an instruction, 3,000 cycles = 1,500 ns
    plain = R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=4, issue=1000.0, chain=800.0)
    assert R._steps(r, 2, plain)["latency"] == pytest.approx(700e-9 + 1500e-9)
    # 8 warps: two a scheduler, 2,000 cycles = 1,000 ns; a chain longer than that binds (2,400 cycles)
    eight = R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=8, issue=1000.0, chain=800.0, dots=True)
    assert R._steps(r, 1, eight)["latency"] == pytest.approx(700e-9 + 1000e-9)
    long = R._Loop(d=1024, t=1024, s=0, f=0, k=0, warps=4, issue=1000.0, chain=2400.0, dots=True)
    assert R._steps(r, 1, long)["latency"] == pytest.approx(700e-9 + 1200e-9)
    # the issue term (f) is the same with or without the dot: all c x W warps share the schedulers
    assert R._steps(r, 2, dot)["issue"] == R._steps(r, 2, plain)["issue"] == pytest.approx(1000e-9)


def test_a_dependent_load_waits_a_latency_of_its_own():
    """Term (a), unpipelined: a gather's row load waits for its index load, g = 1 more latency a step."""
    r = R.rates(_cal(), peak_flops=1e15)
    plain = R._Loop(d=1024, t=1024, s=0, f=0, k=0)
    gather = R._Loop(d=1024, t=1024, s=0, f=0, k=0, gathers=1.0)
    hoisted = R._Loop(d=1024, t=1024, s=0, f=0, k=0, hoist=0.25, gathers=0.25)   # 4 iterations a trip
    assert R._steps(r, 1, plain)["latency"] == pytest.approx(700e-9)
    assert R._steps(r, 1, gather)["latency"] == pytest.approx(2 * 700e-9)
    assert R._steps(r, 1, hoisted)["latency"] == pytest.approx(0.5 * 700e-9)
    # pipelined: the tiles ahead hide it (L / k), g is not charged
    assert R._steps(r, 1, R._Loop(d=1024, t=1024, s=0, f=0, k=2, gathers=1.0))["latency"] == pytest.approx(350e-9)


def test_a_compiled_loops_chain_reaches_the_issue_term():
    """_sass_loop reads the main loop's chain from its listing (sass_chain.trip_cycles over the unroll)."""
    listing = "\n".join(f"        /*{16 * i:04x}*/                   {text} ;" for i, text in enumerate(
        ["LDG.E R4, desc[UR4][R2.64]"] + ["FFMA R10, R10, R4, R3"] * 8 + ["@!P0 BRA 0x0"]))
    work = R._sass_loop(type("Result", (), {"sass": listing})(), 128, None)
    # 8 dependent FFMAs (4 cycles each, the first waits the last of the trip before) + the branch: 32
    # cycles a trip; 10 issue slots
    assert work.issue == pytest.approx(10.0)
    assert work.chain == pytest.approx(8 * 4.0)
    assert work.gathers == pytest.approx(0.0, abs=1e-3)         # the FFMAs use the load; no load uses it
    gather = "\n".join(f"        /*{16 * i:04x}*/                   {text} ;" for i, text in enumerate(
        ["LDG.E R4, desc[UR4][R2.64]", "IMAD.WIDE R6, R4, 0x4, R8", "LDG.E R10, desc[UR4][R6.64]",
         "FADD R11, R10, R11", "@!P0 BRA 0x0"]))
    assert R._sass_loop(type("Result", (), {"sass": gather})(), 128, None).gathers == pytest.approx(1.0, abs=1e-3)


def test_unroll_from_the_bytes_each_thread_loads():
    """A trip unrolled u times repeats each load exactly: its bytes a thread are u x one iteration's
    (replicated elements included). A ratio no whole number explains is not an unroll."""
    lp = S.sass_loops(LISTING)[0]                  # 32 B a thread a trip
    assert S.unroll(lp, 128, 1024, thread_bytes=8.0) == 4
    assert S.unroll(lp, 128, 1024, thread_bytes=16.0) == 2
    # selective_scan's 16-warp chunk: 40 B a trip against 24 B an iteration -- one chunk a trip (1.67 is
    # no unroll), where the TTGIR's unique bytes (3,584 over 512 threads) would read 40 / 7 -> 6
    scan = S.SassLoop(0, 0x10, 958, 40, 20, 0, 0, 0, True)
    assert S.unroll(scan, 512, 3584) == 6
    assert S.unroll(scan, 512, 3584, thread_bytes=24.0) == 1


def test_far_rounds_weigh_further_load_waits_by_the_new_bytes():
    """Term (a): waits beyond b x h + g each cost a latency times the share of loaded bytes that are new."""
    # a scan loading five fresh tiles one after another: 5 waits, 1 counted, all bytes new -> 4 more
    assert R.far_rounds(5.0, 1.0, new_bytes=2048, loaded_bytes=2048) == pytest.approx(4.0)
    # the same with half its bytes re-read (B / C rows shared by the CTAs of a batch row): 2
    assert R.far_rounds(5.0, 1.0, new_bytes=1024, loaded_bytes=2048) == pytest.approx(2.0)
    # a 7x7 convolution's row of taps: 7 tap tiles loaded, one tile's worth new -> 3 waits cost 2 / 7
    assert R.far_rounds(3.0, 1.0, new_bytes=1024, loaded_bytes=7 * 1024) == pytest.approx(2 / 7)
    assert R.far_rounds(1.0, 1.0, 1024, 1024) == 0.0 and R.far_rounds(0.5, 1.0, 1024, 1024) == 0.0
    # in term (a): (b x h + g + r) x L
    r = R.rates(_cal(), peak_flops=1e15)
    lp = R._Loop(d=1024, t=1024, s=0, f=0, k=0, rounds=2.0)
    assert R._steps(r, 1, lp)["latency"] == pytest.approx(3 * 700e-9)


def test_a_compiled_loops_load_waits_reach_the_loop_work():
    """_sass_loop counts the full load waits of a trip that uses each load before it issues the next."""
    listing = "\n".join(f"        /*{16 * i:04x}*/                   {text} ;" for i, text in enumerate(
        ["LDG.E R4, desc[UR4][R2.64]", "FADD R11, R4, R11", "LDG.E R5, desc[UR4][R8.64]", "FADD R11, R5, R11",
         "LDG.E R6, desc[UR4][R12.64]", "FADD R11, R6, R11", "@!P0 BRA 0x0"]))
    work = R._sass_loop(type("Result", (), {"sass": listing})(), 128, None)
    assert work.load_waits == pytest.approx(3.0, abs=1e-3)
    assert work.gathers == pytest.approx(0.0, abs=1e-3)        # no address comes from a load


def test_exchange_term_costs_a_loops_shared_round_trips():
    """Term (g): a main loop holding a block-wide barrier sends its shared loads / stores through the
    SM's one shared-memory pipe; a vector reduction across warps pays EXCHANGE_CYCLES_PER_OP per access
    (bank conflicts), anything else 1 cycle (conflict-free)."""
    from hand_cards import toy

    card = toy()
    cal, cfg = _cal(), {"num_warps": 4, "num_stages": 2}

    def one(barriers, cycles):
        res = R.Resources(blocks_per_sm=2, threads=128, tile_bytes=4096, ahead=1, n_spills=0, source="hand",
                          loop_barriers=barriers, exchange_cycles=cycles)
        return R.estimate(card, cal, cfg, {}, res, 1e15)
    plain, barred = one(0, 0.0), one(5, 33 * R.EXCHANGE_CYCLES_PER_OP)
    assert plain.exchange_step_s == 0.0 and barred.loop_barriers == 5
    # 2 CTAs x 4 warps x 33 accesses x 9.5 cycles / 2 GHz = 1,254 ns per iteration of the 2 CTAs
    assert barred.exchange_step_s == pytest.approx(2 * 4 * 33 * 9.5 / 2e9)
    assert barred.bound == "exchange" and plain.bound == "latency"
    # step = pmax(exchange 1,254, latency 700 (q = 2 x 4 KB -> the 16 KB floor), DRAM 2 x 4,096 / 40 GB/s
    # = 204.8, L2 2 x 4,096 / 100 GB/s = 81.92 ns) = (1254^4 + 700^4 + 204.8^4 + 81.92^4)^(1/4) = 1,283.6 ns;
    # one wave (200 CTAs <= 100 SMs x 2): 10 steps + the first tile's 700 ns + 1 us launch
    assert barred.step_s == pytest.approx(1283.6035e-9)
    assert barred.total_s == pytest.approx(10 * 1283.6035e-9 + 700e-9 + 1e-6)


def test_sass_counts_shared_accesses_not_ldmatrix_or_async_copies():
    body = """
        /*0000*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0020*/                   STS [R18], R3 ;
        /*0030*/                   STS.U16 [R9+UR5+0x4], R5 ;
        /*0040*/                   LDS R2, [R17] ;
        /*0050*/                   LDSM.16.M88.4 R8, [R20] ;
        /*0060*/                   LDGSTS.E.BYPASS.128 [R21], desc[UR6][R22.64] ;
        /*0070*/                   ATOMS.ADD RZ, [R23], R24 ;
        /*0080*/              @!P0 BRA 0x0 ;
"""
    lp = S.main_loop(S.sass_loops(body))
    # STS, STS.U16, LDS, ATOMS.ADD: 4; LDSM (a dot operand) and LDGSTS (an async global load) are not
    assert lp.shared_ops == 4 and lp.barriers == 1


def test_async_copies_and_their_barrier_are_not_register_loads():
    """LDGSTS (a copy into shared memory) and LDGDEPBAR (the wait for a group of them) start with "LDG" but
    load no register: a pipelined loop's trip that holds one LDG.E.64 loads 8 bytes per thread, not 8 + 8 + 4."""
    body = """
        /*0000*/                   LDGSTS.E.64 [R61+0x2000], desc[UR10][R16.64], P6 ;
        /*0010*/                   LDGDEPBAR ;
        /*0020*/                   LDG.E.64 R4, desc[UR10][R2.64] ;
        /*0030*/              @!P0 BRA 0x0 ;
"""
    lp = S.main_loop(S.sass_loops(body))
    assert (lp.global_loads, lp.global_load_bytes, lp.async_copies, lp.load_waves) == (1, 8, 1, 1)


def test_a_trips_unroll_is_read_from_its_register_loads_only():
    """A loop whose loads are partly async copies into a one-slot ring (fused_recurrent_gla at
    LOOP_STAGES=2: g copied by LDGSTS, nothing prefetched a full tile ahead, so read as unpipelined)
    and partly register loads: the trip's LDG bytes a thread are compared with the register loads'
    own bytes a thread, not with every load's tile bytes over the threads."""
    from occmodel import pipeline as P
    body = """
        /*0000*/                   LDGSTS.E [R61+0x2000], desc[UR10][R16.64], P6 ;
        /*0010*/                   LDGDEPBAR ;
        /*0020*/                   LDG.E.128 R4, desc[UR10][R2.64] ;
        /*0030*/                   FFMA R11, R4, R5, R11 ;
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0050*/              @!P0 BRA 0x0 ;
"""
    q = P.LoopLoad("q", "plain", 0, "64xbf16", 128, thread_bytes=16.0)     # 8 bf16 a thread (replicated)
    g = P.LoopLoad("g", "cp.async", 1, "64xf32", 256)                      # one slot: 0 tiles ahead
    main = P.LoopInfo("k.py:1", 0, False, (q, g), 0, 1)
    rep = type("Report", (), {"main": main, "ahead": 0, "loops": (main,), "exchange_elements": 0.0,
                              "passes": lambda self: None})()
    # 16 B a thread a trip against the register load's 16 B an iteration: one iteration a trip (every
    # load's slot bytes over the threads, 128 + 256 B / 128 = 3 B a thread, would read 16 / 3 -> 5)
    assert S.unroll(S.main_loop(S.sass_loops(body)), 128, 128 + 256) == 5
    work = R._sass_loop(type("Result", (), {"sass": body})(), 128, rep)
    assert work.unroll == 1 and work.issue == 6.0           # six instructions, none divided by an unroll


def test_an_alu_bound_trip_costs_two_cycles_per_integer_op():
    """A bitonic compare-exchange step as ptxas writes it: 6 instructions, 4 of them integer compare /
    select / logic ops of the ALU pipe (16 lanes a sub-partition to sm_90: 2 cycles a warp each), 1 shuffle.
    The ALU pipe binds: max(6, 2 x 4) = 8 cycles; where every core runs integer ops (sm_120, 32 lanes),
    the issue slots bind (6). A trip with MUFU ops and few ALU ops keeps its issue count: 3 + 7 = 10."""
    body = """
        /*0000*/                   SHFL.BFLY PT, R5, R4, 0x10, 0x1f ;
        /*0010*/                   ISETP.GT.AND P0, PT, R4, R5, PT ;
        /*0020*/                   SEL R6, R4, R5, P0 ;
        /*0030*/                   SEL R7, R5, R4, P0 ;
        /*0040*/                   LOP3.LUT R8, R6, 0xffff, RZ, 0xc0, !PT ;
        /*0050*/              @!P1 BRA 0x0 ;
"""
    lp = S.main_loop(S.sass_loops(body))
    assert (lp.instructions, lp.alu) == (6, 4)      # BRA is not an ALU op: ISETP, SEL, SEL, LOP3
    assert S.issue_slots(lp, alu_cycles=2.0) == 8 and S.issue_slots(lp, alu_cycles=1.0) == 6
    exp = """
        /*0000*/                   MUFU.EX2 R7, R7 ;
        /*0010*/                   ISETP.GE.AND P2, PT, R15, R14, PT ;
        /*0020*/              @!P2 BRA 0x0 ;
"""
    assert S.issue_slots(S.main_loop(S.sass_loops(exp)), alu_cycles=2.0) == 3 + 7
    from occmodel.spec import load_spec
    assert load_spec("sm_90").sm.alu_lanes_per_partition == 16 and load_spec("sm_120").sm.alu_lanes_per_partition == 32


# A main loop's vector reduction across warps, as triton 3.6 writes it (moe_gather, BLOCK_T=1, BLOCK_D=128,
# 4 warps): the reduced axis (1) spans 4 warps; the result [1, 128] in the slice layout holds
# 1 x 8 (sizePerThread along D) = 8 elements per thread.
REDUCE_TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [1, 1, 8], threadsPerWarp = [1, 2, 16], warpsPerCTA = [1, 4, 1], order = [2, 0, 1]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%arg0: !tt.ptr<f16>) attributes {noinline = false} {
    scf.for %d0 = %c0_i32 to %n step %c128_i32  : i32 {
      %acc_46 = arith.mulf %a, %b : tensor<1x8x128xf32, #blocked> loc(#loc80)
      %acc_47 = "tt.reduce"(%acc_46) <{axis = 1 : i32}> ({
      ^bb0(%x: f32 loc(#loc1), %y: f32 loc(#loc1)):
        %s = arith.addf %x, %y : f32 loc(#loc93)
        tt.reduce.return %s : f32 loc(#loc91)
      }) : (tensor<1x8x128xf32, #blocked>) -> tensor<1x128xf32, #ttg.slice<{dim = 1, parent = #blocked}>> loc(#loc91)
      %r = "tt.reduce"(%q) <{axis = 1 : i32}> ({
      ^bb0(%x: f32 loc(#loc1), %y: f32 loc(#loc1)):
        %s = arith.addf %x, %y : f32 loc(#loc93)
        tt.reduce.return %s : f32 loc(#loc91)
      }) : (tensor<8x256xf32, #blocked1>) -> tensor<8xf32, #ttg.slice<{dim = 1, parent = #blocked1}>> loc(#loc92)
    } loc(#loc33)
    tt.return loc(#loc44)
  } loc(#loc)
} loc(#loc)
"""


def test_pipeline_reads_a_vector_reduction_across_warps():
    from occmodel import pipeline as P
    rep = P.parse_ttgir(REDUCE_TTGIR)
    # the second reduce's axis 1 lies within a warp (warpsPerCTA [4, 1]): no exchange; the first: 8 elements
    assert [lp.exchange_elements for lp in rep.loops] == [8.0]
    within = REDUCE_TTGIR.replace("warpsPerCTA = [1, 4, 1]", "warpsPerCTA = [4, 1, 1]")
    assert P.parse_ttgir(within).loops[0].exchange_elements == 0.0


def test_pmax_is_a_smooth_maximum():
    """Two equal terms cost 2^(1/4) = 1.19x either alone (p = 4); a term 3x smaller adds 0.6 %
    ((1 + 1/81)^(1/4) = 1.0031); no terms cost nothing; an infinite term is infinite."""
    assert R.OVERLAP_P == 4.0
    assert R.pmax({"a": 1.0, "b": 1.0}) == pytest.approx(2 ** 0.25)
    assert R.pmax({"a": 3.0, "b": 1.0}) == pytest.approx(3.0 * (1 + 1 / 81) ** 0.25)
    assert R.pmax({"a": 0.0}) == 0.0 and R.pmax({"a": math.inf, "b": 1.0}) == math.inf
    assert R.pmax({"a": 5.0, "b": 0.0}) == 5.0


def test_register_loads_take_several_round_trips_when_they_outgrow_the_registers():
    """gemv's fp32 BLOCK_N=32 x BLOCK_K=512 tile on 2 warps: 65,536 B / 64 threads / 4 B = 256 words per
    thread into 64 registers -> 4 latency round trips per iteration; a tile that fits waits once."""
    assert R.load_batches(32 * 512 * 4, 64, 64) == pytest.approx(4.0)
    assert R.load_batches(4 * 512 * 4, 64, 44) == 1.0            # 32 words < 44 registers
    assert R.load_batches(4096, 128, None) == 1.0 and R.load_batches(0, 128, 64) == 1.0
    r = R.rates(_cal(), peak_flops=1e15)
    one = R._steps(r, 1, R._Loop(d=1024, t=1024, s=0, f=0, k=0))["latency"]
    four = R._steps(r, 1, R._Loop(d=1024, t=1024, s=0, f=0, k=0, batches=4.0))["latency"]
    assert four == pytest.approx(4 * one)                       # unpipelined: 4 x L
    piped = R._Loop(d=1024, t=1024, s=0, f=0, k=2, batches=4.0)
    assert R._steps(r, 1, piped)["latency"] == pytest.approx(r.latency() / 2)   # k >= 1: no change


# A two-pass row kernel's TTGIR, cut down from softmax_online's (1 warp, BLOCK_N=128, fp16): pass 1 loads
# x for the row's max and sum, pass 2 loads x again and stores y. The two loops reuse SSA names (%cols,
# %x_12, %x_13 mean different values in each), as MLIR prints sibling regions.
TWO_PASS_TTGIR = """
#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
module attributes {"ttg.num-warps" = 1 : i32} {
  tt.func public @_kernel(%X: !tt.ptr<f16>, %Y: !tt.ptr<f16>, %n_cols: i32) attributes {noinline = false} {
    %x_row_6 = tt.addptr %X, %x_row_5 : !tt.ptr<f16>, i64
    %y_row_8 = tt.addptr %Y, %y_row_7 : !tt.ptr<f16>, i64
    %x_9 = tt.splat %x_row_6 : !tt.ptr<f16> -> tensor<128x!tt.ptr<f16>, #blocked>
    %s:2 = scf.for %c0 = %c0_i32 to %n_cols step %c128_i32 iter_args(%m = %cst_2, %s_10 = %cst_1) -> (f32, f32)  : i32 {
      %cols = tt.splat %c0 : i32 -> tensor<128xi32, #blocked>
      %x_13 = tt.addptr %x_9, %cols : tensor<128x!tt.ptr<f16>, #blocked>, tensor<128xi32, #blocked>
      %x_14 = tt.load %x_13, %x_12, %cst_3 : tensor<128x!tt.ptr<f16>, #blocked>
      scf.yield %m, %s_10 : f32, f32
    }
    %0 = tt.splat %y_row_8 : !tt.ptr<f16> -> tensor<128x!tt.ptr<f16>, #blocked>
    scf.for %c0 = %c0_i32 to %n_cols step %c128_i32  : i32 {
      %cols = tt.splat %c0 : i32 -> tensor<128xi32, #blocked>
      %x_11 = tt.addptr %x_9, %cols : tensor<128x!tt.ptr<f16>, #blocked>, tensor<128xi32, #blocked>
      %x_12 = tt.load %x_11, %ok, %cst_3 : tensor<128x!tt.ptr<f16>, #blocked>
      %3 = tt.addptr %0, %cols : tensor<128x!tt.ptr<f16>, #blocked>, tensor<128xi32, #blocked>
      tt.store %3, %x_12, %ok : tensor<128x!tt.ptr<f16>, #blocked>
    }
    %x_13 = tt.addptr %Y, %x_row_5 : !tt.ptr<f16>, i64
    tt.return
  }
}
"""


def test_two_passes_over_one_argument_are_found_through_reused_names():
    from occmodel import pipeline as P

    rep = P.parse_ttgir(TWO_PASS_TTGIR)
    assert [lp.parent for lp in rep.loops] == [-1, -1]
    # %x_13 is redefined after both loops (from %Y): each use reads its nearest definition above, so
    # pass 1's load still traces to X; every load of x is 128 x 2 B = 256 B, 4 elements x 2 B per thread
    assert [[(ld.root, ld.slot_bytes, ld.thread_bytes) for ld in lp.loads] for lp in rep.loops] == [
        [("X", 256, 8.0)], [("X", 256, 8.0)]]
    assert rep.passes() == P.Passes(count=2, first_bytes=256, again_bytes=256, thread_bytes=(8.0, 8.0),
                                  exchange_elements=(0.0, 0.0))


def test_a_second_pass_that_loads_is_no_compute_sibling():
    from occmodel import pipeline as P

    assert P.parse_ttgir(TWO_PASS_TTGIR).siblings() == ()


def _solve_after_loop():
    """A fresh kernel: a row summed over K in a loading loop, then STEPS serial steps that load nothing
    (each waits the last: a cross-warp sum a step), then a store -- a triangular solve's shape."""
    import triton
    import triton.language as tl

    @triton.jit
    def solve_after_loop(X, Y, K, STEPS: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), tl.float32)
        for k0 in range(0, K, BLOCK):
            acc += tl.load(X + row * K + k0 + cols).to(tl.float32)
        for j in range(STEPS):
            acc = acc * 0.5 + tl.sum(acc) * 1e-3
        tl.store(Y + row * BLOCK + cols, acc)
    return solve_after_loop


def test_a_compute_loop_beside_the_main_loop_is_costed_once_per_cta():
    """The serial loop after the K loop (PipelineReport.siblings) is paired with its SASS loop, its trips
    come from the walk past the main loop, and its slots, chain and exchange join each main-loop
    iteration's work at trips / n (delta_kkt_solve's substitution, round 26: charged nothing before)."""
    from occmodel import compile_kernel
    from occmodel import pipeline as P
    from occmodel import tile_order as T

    res = compile_kernel(_solve_after_loop(), signature={"X": "*fp16:16", "Y": "*fp32:16", "K": "i32:16"},
                         constexprs={"STEPS": 63, "BLOCK": 256}, arch="sm_90", num_warps=4, num_stages=1,
                         keep_ir=True)
    rep = P.parse_ttgir(res.ttgir)
    assert rep.siblings() == (1,) and rep.main is rep.loops[0]
    trips = T.loop_trips(res.ttgir, rep, {"K": 1024}, (8, 1, 1), through=True)
    assert trips[0] == 4.0 and trips[1] == 63.0           # 1,024 / 256 K steps; the 63 serial steps
    assert 1 not in T.loop_trips(res.ttgir, rep, {"K": 1024}, (8, 1, 1))   # the walk stops at the main loop
    loops = S.sass_loops(res.sass)
    (sib, index), = R.sibling_loops(loops, S.main_loop(loops), rep, (63 / 4,))
    assert index == 1 and sib.global_loads == 0 and sib.barriers > 0 and sib is not S.main_loop(loops)
    plain = R._sass_loop(res, 128, rep, None, (None, 0.25))
    both = R._sass_loop(res, 128, rep, None, (None, 0.25), (63 / 4,))
    assert both.issue - plain.issue == pytest.approx(63 / 4 * S.issue_slots(sib))
    assert both.chain - plain.chain == pytest.approx(63 / 4 * sib.chain)
    assert both.exchange > plain.exchange
    # trips unknown, or counts that do not pair: nothing is charged
    assert R.sibling_loops(loops, S.main_loop(loops), rep, (None,)) == []
    assert R.sibling_loops(loops, S.main_loop(loops), rep, (1.0, 1.0)) == []


def _versions_after_load():
    """A fresh kernel: a row loaded once, then ITERS steps that load nothing in one of two versions (an
    scf.if on a runtime flag: a cheap step or an exact one, as a kernel with a fast and a safe path),
    the loop unrolled UNROLL times by Triton (tl.range's loop_unroll_factor), then a store."""
    import triton
    import triton.language as tl

    @triton.jit
    def versions_after_load(X, Y, ITERS, SAFE, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        acc = tl.load(X + row * BLOCK + cols).to(tl.float32)
        if SAFE != 0:
            for _ in tl.range(0, ITERS, loop_unroll_factor=UNROLL):
                acc = acc * 0.5 + tl.sum(acc) * 1e-3
        else:
            for _ in tl.range(0, ITERS, loop_unroll_factor=UNROLL):
                acc = tl.exp(acc - tl.max(acc)) + tl.sum(acc) * 1e-3
        tl.store(Y + row * BLOCK + cols, acc)
    return versions_after_load


def _compile_versions(unroll: int):
    """_versions_after_load compiled for sm_90 at UNROLL = unroll (4 warps, one stage, with its TTGIR)."""
    from occmodel import compile_kernel

    return compile_kernel(_versions_after_load(), signature={"X": "*fp16:16", "Y": "*fp32:16", "ITERS": "i32",
                                                              "SAFE": "i32"},
                          constexprs={"BLOCK": 256, "UNROLL": unroll}, arch="sm_90", num_warps=4, num_stages=1,
                          keep_ir=True)


@pytest.mark.parametrize("unroll", [1, 2])
def test_an_unrolled_loop_that_loads_nothing_costs_one_trip_over_its_unroll(unroll):
    """Triton's unroller leaves a loop of step u and a remainder beside it (LoopInfo.unroll reads u from
    the two steps); the other branch's version of the loop is no compute sibling (only one runs). Where
    a trip loads nothing, the unroll cannot be read from its bytes, so the TTGIR's is used (sinkhorn_knopp,
    round 27: UNROLL 2 configs costed as twice the work)."""
    from occmodel import pipeline as P

    res = _compile_versions(unroll)
    rep = P.parse_ttgir(res.ttgir)
    # per branch: the loop, then (unrolled) its remainder
    assert [lp.unroll for lp in rep.loops] == ([2, 1, 2, 1] if unroll == 2 else [1, 1])
    first, other = rep.loops[0], rep.loops[-1]
    assert rep.main is first and first.exclusive(other) and other.exclusive(first)
    assert not any(ld for lp in rep.loops for ld in lp.loads)
    # the remainder is the main loop's sibling; the other branch's loops are not
    assert rep.siblings() == ((1,) if unroll == 2 else ())
    work = R._sass_loop(res, 128, rep)
    assert work.unroll == unroll
    if unroll == 2:
        main = S.main_loop(S.sass_loops(res.sass))
        assert main.global_load_bytes == 0
        assert work.issue == pytest.approx(S.issue_slots(main) / 2)


def test_an_unrolled_loop_costs_about_what_its_plain_twin_does_per_iteration():
    """The same kernel at UNROLL 1 and 2: one source iteration's issue slots within 15 % of each other (before
    session 30 the unrolled trip was costed as one iteration: twice its twin's)."""
    from occmodel import pipeline as P

    issue = []
    for unroll in (1, 2):
        res = _compile_versions(unroll)
        issue.append(R._sass_loop(res, 128, P.parse_ttgir(res.ttgir)).issue)
    assert issue[1] == pytest.approx(issue[0], rel=0.15), issue


def test_reread_miss_is_linear_between_the_two_thresholds_of_the_l2():
    l2 = 60 * 2**20
    assert R.reread_miss(0.1 * l2, l2) == 0.0                     # under 0.2 x L2: every re-read hits
    assert R.reread_miss(2 * l2, l2) == 1.0                       # past 1.3 x L2: every re-read misses
    assert R.reread_miss(0.75 * l2, l2) == pytest.approx(0.5)     # (0.75 - 0.2) / (1.3 - 0.2)
    assert R.reread_miss(2 * l2, 0) == 0.0                        # L2 size unknown: no term


def test_a_reread_that_outgrows_the_l2_adds_dram_bytes():
    """softmax over 64 KB rows: 2 passes of n/2 = 16 iterations of 2 KB per CTA; F = 2 KB x 16 = 32 KB per
    CTA. 100 SMs x 8 CTAs x 32 KiB = 26.2 MB against a 16 MiB L2 (16.8 MB): miss (1.56 - 0.2) / 1.1 = 1.24
    -> 1 (all of it); at 1 CTA/SM (3.3 MB = 0.195 x L2) nothing misses."""
    from occmodel.card import KernelCard

    class Rows(KernelCard):
        def grid(self, cfg, point):
            return 4096

        def loop_iterations(self, cfg, point):
            return 32

        def bytes_moved(self, cfg, point):
            return 4096 * 32 * 2048          # d = 2 KB per iteration: x once + y once over both passes

        def flops(self, cfg, point):
            return 1

    cfg = {"num_warps": 4, "num_stages": 1}

    def d(blocks, again):
        res = R.Resources(blocks, 128, 2048, 0, 0, "compiled", passes=2, reread_first=2048, reread_again=again)
        return R.estimate(Rows(name="rows", summary="", params=(), baseline={}), _cal(), cfg, {}, res, 1e15, l2_bytes=16 * 2**20).dram_per_iter

    assert d(8, 0) == pytest.approx(2048)                       # no re-read: the unavoidable bytes
    assert d(8, 2048) == pytest.approx(2048 + 2048 / 2)         # all of pass 2's 2 KB misses, every 2nd iteration
    assert d(1, 2048) == pytest.approx(2048)                    # 3.2 MB in flight: it hits


# ptxas's unrolled pass-1 trip (4 iterations' loads issued together, then the math) and a pass-2 trip
# whose stores keep each iteration's loads apart: addresses, opcodes as cuobjdump prints them
HOISTED_SASS = """
        /*0100*/                   LDG.E.64 R4, desc[UR4][R2.64] ;
        /*0110*/                   LDG.E.64 R6, desc[UR4][R2.64+0x100] ;
        /*0120*/                   LDG.E.64 R8, desc[UR4][R2.64+0x200] ;
        /*0130*/                   LDG.E.64 R10, desc[UR4][R2.64+0x300] ;
        /*0140*/                   FFMA R12, R4, R4, R12 ;
        /*0150*/                   BRA 0x100 ;
        /*0200*/                   LDG.E.64 R4, desc[UR4][R2.64] ;
        /*0210*/                   FMUL R5, R4, R20 ;
        /*0220*/                   STG.E.64 desc[UR4][R8.64], R4 ;
        /*0230*/                   LDG.E.64 R6, desc[UR4][R2.64+0x100] ;
        /*0240*/                   FMUL R7, R6, R20 ;
        /*0250*/                   STG.E.64 desc[UR4][R8.64+0x100], R6 ;
        /*0260*/                   BRA 0x200 ;
"""


def test_hoisted_loads_wait_the_latency_once_per_trip():
    from types import SimpleNamespace

    from occmodel import pipeline as P

    loops = sorted(S.sass_loops(HOISTED_SASS), key=lambda lp: lp.start)
    assert [(lp.global_load_bytes, lp.load_waves) for lp in loops] == [(32, 1), (16, 2)]
    # pass 1: 32 B per trip / 8 B per iteration = 4 iterations, 1 wait -> 1/4; pass 2: 2 iterations, 2 waits
    # (a load may alias the store before it) -> 1; the mean over the two passes: 5/8
    sass = SimpleNamespace(sass=HOISTED_SASS)
    assert R.hoisting(sass, P.Passes(2, 0, 0, (8.0, 8.0))) == pytest.approx(0.625)
    # a pass with a pipelined load (per-thread bytes unknown) or a loop count that does not match: no change
    assert R.hoisting(sass, P.Passes(2, 0, 0, (8.0, 0.0))) == 1.0
    assert R.hoisting(sass, P.Passes(1, 0, 0, (8.0,))) == 1.0
    r = R.rates(_cal(), peak_flops=1e15)
    assert R._steps(r, 1, R._Loop(d=1, t=1, s=0, f=0, k=0, hoist=0.625))["latency"] == pytest.approx(0.625 * 700e-9)


def test_a_pass_whose_loads_sit_in_an_inner_loop_is_one_pass():
    """group_norm's shape: pass 2 is a channel loop loading the channel's scalar weight, around a loop
    streaming x. The main loop is the one loading the most bytes (x's 256 B, not the scalar's 2 B), and
    the channel loop with its inner loop is one pass that re-reads X."""
    from occmodel import pipeline as P

    nested = TWO_PASS_TTGIR.replace(
        "    scf.for %c0 = %c0_i32 to %n_cols step %c128_i32  : i32 {\n      %cols",
        "    scf.for %ch = %c0_i32 to %n_ch step %c1_i32  : i32 {\n"
        "      %w = tt.load %w_ptr : !tt.ptr<f16>\n"
        "    scf.for %c0 = %c0_i32 to %n_cols step %c128_i32  : i32 {\n      %cols").replace(
        "      tt.store %3, %x_12, %ok : tensor<128x!tt.ptr<f16>, #blocked>\n    }\n",
        "      tt.store %3, %x_12, %ok : tensor<128x!tt.ptr<f16>, #blocked>\n    }\n    }\n")
    rep = P.parse_ttgir(nested.replace("%n_cols: i32)", "%n_cols: i32, %w_ptr: !tt.ptr<f16>)"))
    assert [(lp.depth, lp.parent, len(lp.loads)) for lp in rep.loops] == [(0, -1, 1), (0, -1, 1), (1, 1, 1)]
    assert rep.loops[1].loads[0].root == "w_ptr" and rep.main is not rep.loops[1]
    assert rep.passes() == P.Passes(count=2, first_bytes=256, again_bytes=256, thread_bytes=(8.0, 8.0),
                                  exchange_elements=(0.0, 0.0))


def test_a_pass_that_loads_back_what_an_earlier_pass_stored_is_a_reread():
    """fused add + RMSNorm's shape: pass 1 stores r (to R) and pass 2 loads r back from R: a re-read of
    the 256 B per iteration pass 1 wrote, though pass 1 never loaded R."""
    from occmodel import pipeline as P

    stored = TWO_PASS_TTGIR.replace(
        "      scf.yield %m, %s_10 : f32, f32",
        "      %r_p = tt.splat %R : !tt.ptr<f16> -> tensor<128x!tt.ptr<f16>, #blocked>\n"
        "      tt.store %r_p, %x_14 : tensor<128x!tt.ptr<f16>, #blocked>\n"
        "      scf.yield %m, %s_10 : f32, f32").replace(
        "      %x_11 = tt.addptr %x_9, %cols", "      %r_9 = tt.splat %R : !tt.ptr<f16> -> tensor<128x!tt.ptr<f16>, #blocked>\n"
        "      %x_11 = tt.addptr %r_9, %cols").replace("%n_cols: i32)", "%n_cols: i32, %R: !tt.ptr<f16>)")
    rep = P.parse_ttgir(stored)
    assert rep.loops[0].stores == (("R", 256),)
    assert [[ld.root for ld in lp.loads] for lp in rep.loops] == [["X"], ["R"]]
    assert rep.passes() == P.Passes(count=2, first_bytes=256, again_bytes=256, thread_bytes=(8.0, 8.0),
                                  exchange_elements=(0.0, 0.0))


# A kernel whose 4-step source loop was a tl.static_range: no backward branch, two runs of loads (the
# index loads, then the gathered rows after a store), and the exit trap.
UNROLLED_SASS = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                   /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E R2, desc[UR4][R2.64] ;             /* 0x0000000402027981 */
        /*0020*/                   LDG.E R3, desc[UR4][R4.64] ;             /* 0x0000000402027981 */
        /*0030*/                   STG.E desc[UR4][R6.64], R3 ;             /* 0x0000000402027981 */
        /*0040*/                   LDG.E.128 R8, desc[UR4][R2.64] ;         /* 0x0000000402027981 */
        /*0050*/                   LDG.E.128 R12, desc[UR4][R3.64] ;        /* 0x0000000402027981 */
        /*0060*/                   MUFU.RCP R5, R5 ;                        /* 0x0000000402027981 */
        /*0070*/                   FADD R5, R8, R12 ;                       /* 0x0000000402027981 */
        /*0080*/                   NOP ;                                    /* 0x0000000000007918 */
        /*0090*/                   EXIT ;                                   /* 0x000000000000794d */
        /*00a0*/                   BRA 0xa0;                                /* 0xfffffffc00fc7947 */
"""


def test_an_unrolled_loop_is_the_whole_listing_spread_over_its_iterations():
    from types import SimpleNamespace

    assert S.sass_loops(UNROLLED_SASS) == []
    body = S.straight_line(UNROLLED_SASS)
    # 11 instructions, the NOP left out: 10 (the exit trap's BRA is counted like any instruction)
    assert body.instructions == 10 and body.global_loads == 4 and body.xu == 1
    assert body.global_load_bytes == 4 + 4 + 16 + 16 and body.load_waves == 2
    assert S.straight_line(LISTING) is None                       # it has a loop
    result = SimpleNamespace(sass=UNROLLED_SASS)
    # 4 iterations: (10 + 7 MUFU slots) / 4 issue slots each; 2 waits (two runs of loads) over 4 -> 0.5
    assert R.unrolled_body(result, 4, regs=64) == pytest.approx((17 / 4, 0.5, body.chain / 4))
    assert body.chain > 0
    # 40 B = 10 words per thread into 4 registers: 2.5 register-files of loads outnumber the 2 runs
    assert R.unrolled_body(result, 4, regs=4)[:2] == pytest.approx((17 / 4, 2.5 / 4))
    # a kernel with no loop at all (1 iteration): the whole listing is that iteration -- 17 issue slots;
    # its 2 runs of loads are 2 waits, capped at one per iteration (hoisting: <= 1)
    assert R.unrolled_body(result, 1, regs=64) == pytest.approx((17.0, 1.0, body.chain))
    # a listing with a loop: not an unrolled body
    assert R.unrolled_body(SimpleNamespace(sass=LISTING), 4, regs=64) is None


def test_one_byte_dot_operands_run_at_twice_the_fp16_tensor_rate():
    from occmodel import pipeline as P

    def dot(nbytes):
        return P.LoopDot("ttng.warp_group_dot", 128, 128, 64, nbytes, nbytes, 3, (4, 1), 128, False)

    assert dot(2).flops == 2 * 128 * 128 * 64
    assert dot(1).fp16_flops == dot(2).flops / 2        # fp8 / int8: 1,979 vs 989 TFLOP/s dense (H100 SXM)
    assert dot(4).fp16_flops == dot(2).flops * 2        # tf32: 495
    assert dot(2).fp16_flops == dot(2).flops


def test_one_pipelined_cta_pays_its_lockstep():
    """A pipelined CTA's warps meet at a barrier every iteration: alone on its SM its own issue and tensor
    work add up (nothing fills the gaps); beside another CTA they overlap as (issue^2 + tensor^2)^(1/2); not
    as the smooth maximum several CTAs reach (module doc)."""
    r = R.rates(_cal(), peak_flops=1e15)     # 2 GHz, 100 SMs: 1e13 FLOP/s per SM; L / k = 700 / 2 = 350 ns
    # 8 warps, 3,000 issue slots per warp per iteration: one CTA issues 3,000 x max(8/4, 3) / 2e9 = 4.5 us;
    # 4.5e7 tensor FLOPs per iteration / 1e13 = 4.5 us (the 350 ns latency adds < 1e-4 relative)
    lp = R._Loop(d=1, t=1, s=0, f=4.5e7, k=2, warps=8, issue=3000.0)
    one = R._steps(r, 1, lp)
    assert one["issue"] == pytest.approx(4.5e-6) and one["tensor"] == pytest.approx(4.5e-6)
    # smooth maximum (p = 4) of two equal terms: 4.5 x 2^(1/4) = 5.35 us; alone on the SM (c = 1) the
    # lockstep is their sum (q = 1): 9.0 us
    assert R.pmax(one) == pytest.approx(4.5e-6 * 2 ** 0.25, rel=1e-3)
    assert R.step(r, 1, lp) == pytest.approx(9.0e-6, rel=1e-6)
    # two such CTAs resident (c = 2): issue 3,000 x max(2 x 8/4, 3) / 2e9 = 6.0 us, tensor 9.0 us -> smooth
    # maximum 9.0 x (1 + (2/3)^4)^(1/4) = 9.41 us for the pair's two iterations; one CTA's floor beside the
    # other is q = 2: 6.36 us, below it
    assert R._steps(r, 2, lp)["issue"] == pytest.approx(6.0e-6) and R._steps(r, 2, lp)["tensor"] == pytest.approx(9.0e-6)
    assert R.step(r, 2, lp) == pytest.approx(9.0e-6 * (1 + (2 / 3) ** 4) ** 0.25, rel=1e-3)
    # the same work as two CTAs of 4 warps: per SM, issue 2 x 4 x 1,500 slots on 4 schedulers = 1,500 x
    # max(8/4, 3) / 2e9 = 2.25 us, tensor 2 x 2.25e7 / 1e13 = 4.5 us -> smooth maximum 4.5 x (1 + 0.5^4)^(1/4)
    # = 4.57 us; one of them beside the other: 1,500 x 3 / 2e9 = 2.25 and 2.25 us -> lockstep (q = 2)
    # 3.18 us: the pair's smooth maximum binds, and the pair runs 9.0 / 4.57 = 1.97x faster than the one
    # big CTA alone
    half = R._Loop(d=1, t=1, s=0, f=2.25e7, k=2, warps=4, issue=1500.0)
    assert R.step(r, 2, half) == pytest.approx(R.pmax(R._steps(r, 2, half)))
    assert R.step(r, 2, half) == pytest.approx(4.5e-6 * (1 + 0.5 ** 4) ** 0.25, rel=1e-3)
    # unpipelined, term (a) already sums the CTA's work: no floor
    flat = R._Loop(d=1, t=1, s=0, f=4.5e7, k=0, warps=8, issue=3000.0)
    assert R.step(r, 1, flat) == pytest.approx(R.pmax(R._steps(r, 1, flat)))


# An int8 GEMM's K loop on sm_90 (w8a8_gemm with a [K, N] weight, triton 3.6): the weight tile arrives in
# registers N-contiguous and is written K-major into shared memory a byte at a time (STS.U8) for the
# integer wgmma (IGMMA); the operand reads of a mma.sync dequantizing GEMM are LDS.S8 (w8a16_gemm).
NARROW_LOOP = """
        /*0000*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0020*/                   STS.U8 [R18+0x10], R3 ;
        /*0030*/                   STS.U8 [R18+0x90], R5 ;
        /*0038*/                   STS.U16 [R18+0x110], R5 ;
        /*0040*/                   PRMT R5, R4, 0x7771, RZ ;
        /*0050*/                   STS [R19], R6 ;
        /*0060*/                   LDS.S8 R7, [R20] ;
        /*0070*/                   IGMMA.64x64x32.S8.S8 R24, gdesc[UR4], R24 ;
        /*0080*/              @!P0 BRA 0x0 ;
"""


def test_byte_stores_into_shared_memory_pay_the_conflicted_rate():
    """Term (g): byte stores (STS.U8) -- an 8-bit operand transposed through shared memory -- cost
    EXCHANGE_CYCLES_PER_OP each; other shared accesses, 16-bit stores and byte loads included, 1 cycle.
    (Found on w8a8_gemm's [K, N]-weight point, round 12: 6.5-10.5 cycles per shared access measured over
    its best configs' loops, which the 1-cycle rate put 4-9x too fast; w4a16_gemm's STS.U16 of
    dequantized halves ran at the 1-cycle rate.)"""
    lp = S.main_loop(S.sass_loops(NARROW_LOOP))
    assert (lp.shared_ops, lp.narrow_stores, lp.barriers, lp.mma) == (5, 2, 1, 1)   # IGMMA is a tensor op
    u, _, barriers, cycles, *_ = R._sass_loop(type("Result", (), {"sass": NARROW_LOOP})(), 128, None)
    assert (u, barriers) == (1, 1)
    assert cycles == pytest.approx(2 * R.EXCHANGE_CYCLES_PER_OP + 3 * 1.0)


def _load(nbytes, run, walks, root=""):
    from occmodel import pipeline as P
    return P.LoopLoad("x", "cp.async", 3, "?", nbytes, 1, root=root, run_bytes=run, walks_rows=walks)


def test_short_rows_walked_by_the_loop_lower_the_dram_rate():
    """A load whose tile rows are r < DRAM_RUN_BYTES contiguous bytes and whose loop reads on along those
    rows next iteration streams at r / DRAM_RUN_BYTES of the DRAM bandwidth; loads
    combine by their bytes. Rows the loop leaves for other rows (a runtime stride: the neighbouring CTAs
    read the rest of them) and unknown rows cost nothing."""
    half = 0.5
    assert R.short_rows([_load(4096, R.DRAM_RUN_BYTES // 2, True)]) == pytest.approx(half)
    assert R.short_rows([_load(4096, R.DRAM_RUN_BYTES // 2, True), _load(4096, 2 * R.DRAM_RUN_BYTES, True)]) \
        == pytest.approx(2 / (1 / half + 1))
    # weighted by the DRAM bytes each argument brings when the tile order knows them: a decode GEMM's
    # 2 MB of walked activation rows beside a 128 MB weight read in full rows cost next to nothing
    a, w = _load(8192, R.DRAM_RUN_BYTES // 2, True, "A"), _load(8192, 2 * R.DRAM_RUN_BYTES, False, "B")
    assert R.short_rows([a, w]) == pytest.approx(2 / (1 / half + 1))
    assert R.short_rows([a, w], {"A": 2e6, "B": 128e6}) == pytest.approx(130e6 / (2e6 / half + 128e6))
    # an argument the tile order did not trace (a gather): every load by its bytes per iteration instead
    assert R.short_rows([a, w], {"A": 2e6}) == R.short_rows([a, w])
    assert R.short_rows([_load(4096, R.DRAM_RUN_BYTES // 2, False)]) == 1.0
    assert R.short_rows([_load(4096, 0, False)]) == R.short_rows([]) == 1.0
    # the DRAM term of the step divides by it
    r = R.rates(_cal(), 1e15)
    lp = R._Loop(d=4096, t=4096, s=0, f=0, k=2)
    slow = R._Loop(d=4096, t=4096, s=0, f=0, k=2, dram_eff=half)
    assert R._steps(r, 2, slow)["dram"] == pytest.approx(R._steps(r, 2, lp)["dram"] / half)


def test_a_gemm_with_two_phases_is_one_pass():
    """examples/streamk_gemm.py at HYBRID=1 compiled for sm_90: its data-parallel tile loop and its Stream-K
    loop each hold a K loop with a dot over A and B. They are other tiles' K loops, not a second pass
    re-reading the first one's row (until session 13 the model charged a full DRAM re-read of A and B per
    iteration: estimates 2-9x slow on round 15's HYBRID configs)."""
    import importlib.util
    from pathlib import Path

    from occmodel import compile_kernel
    from occmodel import pipeline as P
    spec = importlib.util.spec_from_file_location("streamk", Path(__file__).parents[1] / "examples" / "streamk_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "PROGRAMS_PER_SM": 1, "HYBRID": 1, "num_warps": 4, "num_stages": 3}
    res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90", num_warps=4,
                         num_stages=3, keep_ir=True)
    rep = P.analyze(res)
    dot_loops = [lp for lp in rep.loops if lp.has_dot and lp.loads]
    assert len(dot_loops) == 2 and rep.main in dot_loops            # the two phases' K loops
    passes = rep.passes()
    assert passes.count == 1 and passes.again_bytes == 0


# A K loop's wgmma chain as ptxas serializes it: every HGMMA waited for (gsb0, 0x0) before the next.
SERIALIZED = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   DEPBAR.LE SB0, 0x4 ;
        /*0020*/                   WARPGROUP.ARRIVE ;
        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8].tnspA.tnspB, R24, gsb0 ;
        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0050*/                   WARPGROUP.ARRIVE ;
        /*0060*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR12].tnspA.tnspB, R24, gsb0 ;
        /*0070*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0080*/                   LDGSTS.E.BYPASS.128 [R23], desc[UR18][R12.64], P2 ;
        /*0090*/              @!P0 BRA 0x10 ;
        /*00a0*/                   EXIT ;
"""
# The usual chain: both issued, one group left in flight (gsb0, 0x1) across the iteration.
PIPELINED = SERIALIZED.replace("""        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0050*/                   WARPGROUP.ARRIVE ;
""", "").replace("WARPGROUP.DEPBAR.LE gsb0, 0x0", "WARPGROUP.DEPBAR.LE gsb0, 0x1")


def test_serialized_wgmma_counts_its_waits():
    (ser,) = S.sass_loops(SERIALIZED)
    (pip,) = S.sass_loops(PIPELINED)
    assert (ser.mma, ser.mma_waits) == (2, 2)
    assert (pip.mma, pip.mma_waits) == (2, 0)


def test_a_serialized_chain_floors_the_tensor_term():
    r = R._Rates(sms=132, bw=4.8e12, l2=10e12, smem=132 * 128 * 1.8e9, peak=989e12, lat=700e-9,
                 l2_lat=300e-9, clock=1.8e9)
    f = 2 * 128 * 128 * 64                                   # one 128 x 128 x 64 tile step
    per_cta = f / (989e12 / 132)                             # 0.28 us at the SM's tensor rate
    one = R._Loop(d=0.0, t=0.0, s=0.0, f=f, k=3, warps=8)
    ser = R._Loop(d=0.0, t=0.0, s=0.0, f=f, k=3, warps=8, waits=4.0)
    # two CTAs share the tensor cores: 2 x 0.28 us; the serialized chain of one CTA is 0.28 us plus
    # 4 waits x 160 cycles -- 0.64 us, longer than both CTAs' share
    assert R._steps(r, 2, one)["tensor"] == pytest.approx(2 * per_cta)
    assert R._steps(r, 2, ser)["tensor"] == pytest.approx(per_cta + 4 * R.WGMMA_WAIT_CYCLES / 1.8e9)
    # with four CTAs the shared rate binds again
    assert R._steps(r, 4, ser)["tensor"] == pytest.approx(4 * per_cta)


def test_the_wgrad_gemm_loop_serialized_or_not():
    """examples/wgrad_gemm.py compiled for sm_90: 4 warps keep one wgmma group in flight across the K loop
    (no full waits: no chain cost); 8 warps with SPLIT_K 2 were serialized by triton 3.6.0's ptxas (a wait
    after every HGMMA: 1.8x slower on the H200, round 17) -- triton 3.9's compile is not."""
    import importlib.util
    from pathlib import Path

    import triton

    from occmodel import compile_kernel
    spec = importlib.util.spec_from_file_location("wgrad", Path(__file__).parents[1] / "examples" / "wgrad_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    loops = {}
    for warps in (4, 8):
        cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 2, "num_warps": warps, "num_stages": 4}
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90", num_warps=warps,
                             num_stages=4, keep_ir=True)
        assert res.ok, res.message
        loops[warps] = S.main_loop(S.sass_loops(res.sass))
    assert loops[4].mma == 8 and loops[4].mma_waits == 0            # 2 x m64 rows x 4 k16 steps, pipelined
    assert loops[8].mma == 4                                        # each warpgroup its 64 rows
    assert loops[8].mma_waits == (4 if triton.__version__.startswith("3.6") else 0)


def test_a_cp_async_only_loop_reads_its_unroll_from_its_commits():
    # lora_expand at num_stages 2 (a depth-1 ring, two commit groups an iteration): ptxas's trip commits 8
    # groups, so it covers 4 iterations; a count no whole number of iterations explains reads 1
    assert R.async_unroll(8, 2) == 4
    assert R.async_unroll(2, 2) == 1
    assert R.async_unroll(3, 2) == 1
    assert R.async_unroll(1, 2) == 1


def test_l1_term_costs_each_warp_instructions_lines_a_cycle():
    """Term (h): an iteration whose warp instructions touch Q distinct 128-byte lines (summed over the
    instructions: occmodel.sectors' load_requests + store_requests) holds the SM's L1 for Q cycles per CTA --
    the lanes of an 8-row byte tile run down its columns (median_filter2d, round 35), 8 lines a load."""
    from hand_cards import toy

    card = toy()
    cal, cfg = _cal(), {"num_warps": 4, "num_stages": 2}

    def one(q):
        res = R.Resources(blocks_per_sm=2, threads=128, tile_bytes=4096, ahead=1, n_spills=0, source="hand",
                          l1_lookups=q)
        return R.estimate(card, cal, cfg, {}, res, 1e15)
    plain, gathered = one(0.0), one(2239.0)
    assert plain.l1_step_s == 0.0 and plain.bound == "latency" and plain.l1_lookups == 0.0
    # 2 CTAs x 2,239 lookups / 2 GHz = 2,239 ns per iteration of the 2 CTAs
    assert gathered.l1_step_s == pytest.approx(2 * 2239 / 2e9) and gathered.bound == "l1"
    assert gathered.l1_lookups == 2239.0
    # step = pmax(l1 2,239, latency 700, DRAM 204.8, L2 81.92 ns) (see the exchange test's terms)
    want = (2239.0 ** 4 + 700.0 ** 4 + 204.8 ** 4 + 81.92 ** 4) ** 0.25 * 1e-9
    assert gathered.step_s == pytest.approx(want)
    assert gathered.total_s == pytest.approx(10 * want + 700e-9 + 1e-6)
    R.L1_LOOKUPS = False
    try:
        assert one(2239.0).total_s == pytest.approx(plain.total_s)     # the switch turns the term off
    finally:
        R.L1_LOOKUPS = True
