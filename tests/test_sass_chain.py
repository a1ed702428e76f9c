"""One warp's trip through a SASS loop, hand-worked (occmodel.sass_chain): in-order issue, one
instruction a cycle, a dependent instruction waits its producer's latency, a pipe busy for its
occupancy; and the loads a trip waits for in full."""

import pytest

from occmodel import sass_chain as C


def _listing(lines: list[str]) -> str:
    """A loop of `lines` at addresses 0x0, 0x10, ..., closed by a backward branch."""
    body = [f"        /*{16 * i:04x}*/                   {text} ;" for i, text in enumerate(lines)]
    body.append(f"        /*{16 * len(lines):04x}*/                   @!P0 BRA 0x0 ;")
    return "\n".join(body)


def _trip(lines: list[str], memory: float = 0.0) -> float:
    sass = _listing(lines)
    return C.trip_cycles(sass, 0, 16 * len(lines), memory)


def test_independent_instructions_issue_one_a_cycle():
    # 8 FFMAs on different registers + the branch: 9 issue cycles a trip, nothing waits
    lines = [f"FFMA R{10 + i}, R2, R3, R{10 + i}" for i in range(8)]
    assert _trip(lines) == pytest.approx(9.0)


def test_a_dependent_chain_waits_each_latency():
    # R10 <- R10 x R2 + R3 four times a trip: each waits the previous one's 4 cycles, and the first
    # one of the next trip waits the last one of this trip (carried): 4 x 4 = 16 cycles a trip
    lines = ["FFMA R10, R10, R2, R3"] * 4
    assert _trip(lines) == pytest.approx(4 * C.DEFAULT_LATENCY)


def test_special_functions_share_one_pipe_of_eight_cycles():
    # 4 independent exp2: the MUFU pipe takes each for 8 cycles (4 lanes a sub-partition)
    lines = [f"MUFU.EX2 R{10 + i}, R{20 + i}" for i in range(4)]
    assert _trip(lines) == pytest.approx(4 * 8)


def test_narrow_int_to_float_conversions_share_the_xu_pipe_but_sm90_fast_ones_do_not():
    # 4 independent I2F.S16: the XU pipe, 8 cycles each (measured on an H100, as MUFU's); 4 I2FP.F32.S32
    # and 4 F2FP packs issue one a cycle (4 + 4 + the branch), as measured
    assert _trip([f"I2F.S16 R{10 + i}, R{20 + i}" for i in range(4)]) == pytest.approx(4 * 8)
    fast = [f"I2FP.F32.S32 R{10 + i}, R{20 + i}" for i in range(4)] + \
           [f"F2FP.F16.F32.PACK_AB R{30 + i}, R{20 + i}, R{21 + i}" for i in range(4)]
    assert _trip(fast) == pytest.approx(9.0)


def test_a_predicate_guard_is_a_dependence():
    # the FSETP writes P1 (18 cycles after the MUFU it reads); the guarded FMUL reads P1 and R10
    lines = ["MUFU.EX2 R10, R4", "FSETP.GEU.AND P1, PT, R10, -126, PT", "@!P1 FMUL R11, R10, 0.5"]
    # MUFU at 0, FSETP at 18, FMUL at 22, BRA at 23; the next trip's MUFU at 24 (pipe free at 8)
    assert _trip(lines) == pytest.approx(24.0)


def test_wide_loads_write_every_register_they_span():
    # LDS.128 R4 fills R4..R7: an FADD on R7 waits the shared load's latency
    lines = ["LDS.128 R4, [R2]", "FADD R20, R7, R8"]
    assert _trip(lines) == pytest.approx(dict(C.LATENCY)["LDS"] + 2)


def test_a_barrier_holds_the_warp():
    lines = ["FADD R10, R2, R3", "BAR.SYNC.DEFER_BLOCKING 0x0", "FADD R11, R2, R3"]
    assert _trip(lines) == pytest.approx(1 + C.BARRIER_CYCLES + 1 + 1)


def test_global_loads_cost_nothing_by_default_and_memory_when_asked():
    lines = ["LDG.E R4, desc[UR4][R2.64]", "FADD R10, R4, R5"]
    assert _trip(lines) == pytest.approx(3.0)
    assert _trip(lines, memory=500.0) == pytest.approx(500.0 + 2)


def test_load_waits_count_the_rounds_a_trip_waits_out():
    together = ["LDG.E R4, desc[UR4][R2.64]", "LDG.E R6, desc[UR4][R2.64+0x4]", "FADD R10, R4, R5",
                "FADD R11, R6, R5"]
    interleaved = ["LDG.E R4, desc[UR4][R2.64]", "FADD R10, R4, R5", "LDG.E R6, desc[UR4][R2.64+0x4]",
                   "FADD R11, R6, R5"]
    # a load whose address comes from another load: a pointer chase, two rounds
    chased = ["LDG.E R4, desc[UR4][R2.64]", "LDG.E R6, desc[UR4][R4.64]", "FADD R11, R6, R5"]
    # the next trip's load issued early (a prefetch into R4 used by the next trip): the wait
    # overlaps the rest of the trip and is not a full latency
    assert C.load_waits(_listing(together), 0, 0x40) == pytest.approx(1.0, abs=1e-3)
    assert C.load_waits(_listing(interleaved), 0, 0x40) == pytest.approx(2.0, abs=1e-3)
    assert C.load_waits(_listing(chased), 0, 0x30) == pytest.approx(2.0, abs=1e-3)


def test_stores_write_nothing():
    # the STG waits for R10 (the FFMA's result) but writes no register: the FADD reading its address
    # register R6 goes right after it. FFMA 0, STG 4, FADD 5, BRA 6, the next trip at 7
    lines = ["FFMA R10, R2, R3, R4", "STG.E desc[UR4][R6.64], R10", "FADD R11, R6, R5"]
    assert _trip(lines) == pytest.approx(7.0)


def test_dependent_loads_count_loads_whose_address_comes_from_a_load():
    # a gather: the index load, then the row at that index -- one load waits for another's data
    gather = ["LDG.E R4, desc[UR4][R2.64]", "IMAD.WIDE R6, R4, 0x4, R8", "LDG.E R10, desc[UR4][R6.64]",
              "FADD R11, R10, R5"]
    # two independent loads, each used before the next issues: waits, but no address depends on a load
    interleaved = ["LDG.E R4, desc[UR4][R2.64]", "FADD R11, R4, R5", "LDG.E R10, desc[UR4][R2.64+0x4]",
                   "FADD R12, R10, R5"]
    # a three-level chase (a binary search's probes): two loads wait for the one before
    chase = ["LDG.E R4, desc[UR4][R2.64]", "LEA R6, P0, R4, R8, 0x2", "LDG.E R10, desc[UR4][R6.64]",
             "LEA R12, P0, R10, R8, 0x2", "LDG.E R14, desc[UR4][R12.64]"]
    assert C.dependent_loads(_listing(gather), 0, 0x40) == pytest.approx(1.0, abs=1e-3)
    assert C.dependent_loads(_listing(interleaved), 0, 0x40) == pytest.approx(0.0, abs=1e-3)
    assert C.load_waits(_listing(interleaved), 0, 0x40) == pytest.approx(2.0, abs=1e-3)
    assert C.dependent_loads(_listing(chase), 0, 0x50) == pytest.approx(2.0, abs=1e-3)


# A cp.async ring of depth 1, as Triton compiles a num_stages=2 loop it cannot pipeline (gnn_scatter_add's
# edge ids, paged_decode's K / V): the trip waits at its top for the group the previous trip committed at
# its end, then reads it from shared memory.
_RING_TOP = ["DEPBAR.LE SB0, 0x0", "BAR.SYNC.DEFER_BLOCKING 0x0", "LDS R4, [R20]"]
_RING_END = ["LDGSTS.E [R20], desc[UR4][R2.64]", "LDGDEPBAR"]


def test_a_depth_one_async_copy_ring_waits_its_group_once_a_trip():
    # the ids land in shared memory, the trip computes on them: one full latency a trip, and no load's
    # address waits on another load's data
    ring = _RING_TOP + ["FADD R10, R4, R5", "STG.E desc[UR4][R8.64], R10"] + _RING_END
    n = len(ring)
    assert C.load_waits(_listing(ring), 0, 16 * n) == pytest.approx(1.0, abs=1e-3)
    assert C.dependent_loads(_listing(ring), 0, 16 * n) == pytest.approx(0.0, abs=1e-3)
    # without a memory latency the DEPBAR waits for nothing: the chain is the trip's own work
    assert C.trip_cycles(_listing(ring), 0, 16 * n) < 100


def test_a_gather_whose_indices_come_by_async_copy_is_a_dependent_load():
    # LDGSTS -> DEPBAR -> LDS -> LDG: the gathered row waits for the copied index (two rounds a trip),
    # as the same gather from a register load does
    ring = _RING_TOP + ["IMAD.WIDE R6, R4, 0x4, R8", "LDG.E R10, desc[UR4][R6.64]",
                        "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R12.64], R10"] + _RING_END
    n = len(ring)
    assert C.dependent_loads(_listing(ring), 0, 16 * n) == pytest.approx(1.0, abs=1e-3)
    assert C.load_waits(_listing(ring), 0, 16 * n) == pytest.approx(2.0, abs=1e-3)


def test_an_async_copy_addressed_by_a_load_is_waited_but_not_a_dependent_load():
    # paged attention: the block table's entry (a register load) addresses the K tile's async copy. The
    # warp waits for the entry before it can issue the copy (load_waits: the entry, then the copy), but
    # dependent_loads does not count the copy: ptxas interleaves a table load before each copy, and the
    # entries, a few bytes an iteration of one line, hit the cache (counting them read paged_decode's
    # num_stages 2 trips as four DRAM latencies; development, session 35: Spearman 0.82 -> 0.64)
    paged = ["DEPBAR.LE SB0, 0x0", "LDSM.16.M88.4 R24, [R30]", "HMMA.16816.F32.BF16 R32, R24, R26, R32",
             "LDG.E R4, desc[UR4][R2.64]", "IMAD.WIDE R6, R4, 0x100, R8", "LDGSTS.E.BYPASS.128 [R30], desc[UR4][R6.64]",
             "LDGDEPBAR"]
    n = len(paged)
    assert C.dependent_loads(_listing(paged), 0, 16 * n) == pytest.approx(0.0, abs=1e-3)
    assert C.load_waits(_listing(paged), 0, 16 * n) == pytest.approx(2.0, abs=1e-3)


def test_a_deeper_ring_leaves_groups_in_flight():
    # DEPBAR.LE SB0, 0x1 waits only for the group committed a trip earlier: one latency over two trips
    # in the three-trip replay's window (no group before the loop), so less than a full wait a trip
    ring = ["DEPBAR.LE SB0, 0x1", "LDS R4, [R20]", "FADD R10, R4, R5", "STG.E desc[UR4][R8.64], R10"] + _RING_END
    n = len(ring)
    assert 0.0 < C.load_waits(_listing(ring), 0, 16 * n) < 1.0
