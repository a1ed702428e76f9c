"""Spilled registers cost where ptxas placed their round trips (rank's spill_s): the main loop's local
loads and stores every iteration, the ones before or after it once a CTA. On a hand-worked listing and
a hand-worked estimate (no GPU)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from occmodel import calibrate as C
from occmodel import rank as R
from occmodel import sass as S
from hand_cards import toy

# cuobjdump's layout: a prologue that spills two 64-bit registers (STL.64 x 2) and loads, a loop
# (0x40..0x80) that reloads one 128-bit spill slot (LDL.128) and loads a word, and an epilogue that
# reloads a 32-bit slot (LDL) before its store.
SPILLING = """
        /*0000*/                   STL.64 [R1], R8 ;
        /*0010*/                   STL.64 [R1+0x8], R10 ;
        /*0020*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0030*/                   MOV R6, RZ ;
        /*0040*/                   LDG.E R3, desc[UR4][R4.64] ;
        /*0050*/                   LDL.128 R12, [R1+0x10] ;
        /*0060*/                   FFMA R6, R3, R12, R6 ;
        /*0070*/                   ISETP.GE.AND P0, PT, R4, R9, PT ;
        /*0080*/              @!P0 BRA 0x40 ;
        /*0090*/                   LDL R7, [R1+0x20] ;
        /*00a0*/                   STG.E desc[UR4][R4.64], R6 ;
        /*00b0*/                   EXIT ;
        /*00c0*/                   BRA 0xc0;
"""


def test_local_bytes_inside_and_outside_the_main_loop():
    loop = S.main_loop(S.sass_loops(SPILLING))
    assert (loop.start, loop.end) == (0x40, 0x80)
    assert loop.local_bytes == 16                          # one LDL.128 a trip
    assert S.local_bytes(SPILLING) == 8 + 8 + 16 + 4       # every STL / LDL of the listing once
    work = R._sass_loop(SimpleNamespace(sass=SPILLING), 128, None)
    assert work.spill == 16.0 and work.spill_once == 20    # 8 + 8 before the loop, 4 after it
    assert R._sass_loop(None, 128, None).spill is None     # no listing: unknown


def test_spill_time_charges_the_loop_every_iteration_and_the_rest_once():
    cal = C.Calibration(spec="sm_90", gpu="test", sms=100, bandwidth_gbs=4000.0, latency_ns=1000.0,
                        launch_us=1.0, l2_bandwidth_gbs=10000.0, source="hand-worked")
    card, cfg = toy(), {"num_warps": 4, "num_stages": 2}

    def spill_s(**kw):
        res = R.Resources(blocks_per_sm=2, threads=128, tile_bytes=4096, ahead=1, n_spills=6, source="hand", **kw)
        return R.estimate(card, cal, cfg, {}, res, 1e15).spill_s
    # 128 threads x (16 B x 2,000 CTA-iterations + 20 B x 200 CTAs) / 10 TB/s = 0.4608 us
    assert spill_s(spill_loop=16.0, spill_once=20.0) == pytest.approx(128 * (16 * 2000 + 20 * 200) / 1e13)
    # spills only outside the loop: paid once a CTA, not every iteration
    assert spill_s(spill_loop=0.0, spill_once=20.0) == pytest.approx(128 * 20 * 200 / 1e13)
    # without the SASS: every spilled word stored and reloaded each iteration, 6 x 4 B x 2
    assert spill_s() == pytest.approx(6 * 4 * 2 * 128 * 2000 / 1e13)
