"""``occmodel occupancy``: the occupancy calculator by hand (NVIDIA's rules, exact)."""

from __future__ import annotations

from . import SUMMARY

import argparse

from ..occupancy import LIMITERS, UNLIMITED, Occupancy, occupancy
from ..report import Report, Section
from ..spec import HardwareSpec, load_spec
from ._args import byte_size, int_in


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "occupancy", parents=[common], help=SUMMARY["occupancy"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Resident blocks and warps per SM for one launch config, exactly as the CUDA driver "
                    "computes them (checked against cuOccupancyMaxActiveBlocksPerMultiprocessor on an H200), "
                    "with the blocks each limit allows and the headroom before the answer changes.",
        epilog="example:\n  occmodel occupancy --spec sm_120 --threads 128 --regs 96 --smem 60K\n"
               "  occmodel occupancy --spec sm_90 --warps 8 --regs 168 --smem 110000 --carveout 50")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--threads", type=int_in(1, 1024, "threads per block"), help="threads per block (1..1024)")
    size.add_argument("--warps", type=int_in(1, 32, "warps per block"), help="warps per block (threads = 32 x warps)")
    p.add_argument("--regs", type=int_in(1, 255, "registers per thread"), required=True,
                   help="registers per thread, as ptxas reports them (1..255)")
    p.add_argument("--smem", type=byte_size, default=0,
                   help="shared memory per block, static + dynamic: bytes or KB (61440, 60K); default 0")
    p.add_argument("--carveout", type=int_in(0, 100, "carveout percent"), default=None,
                   help="preferred shared-memory carveout in percent (0..100); default: the driver default")
    p.set_defaults(run=run)


def run(args) -> Report:
    spec = load_spec(args.spec)
    threads = args.threads if args.threads is not None else 32 * args.warps
    occ = occupancy(spec, threads=threads, regs=args.regs, smem=args.smem, carveout=args.carveout)
    return occupancy_report(spec, occ)


def _limit_rows(spec: HardwareSpec, occ: Occupancy) -> list[dict]:
    sm = spec.sm
    what = {
        "warps": f"{sm.max_warps_per_sm} warps/SM // {occ.warps_per_block} warps per block",
        "blocks": f"at most {sm.max_blocks_per_sm} blocks/SM",
        "registers": (f"{occ.regs} regs -> {occ.regs_per_block // max(occ.warps_per_block, 1):,} per warp "
                      f"(unit {sm.register_allocation_unit}); {sm.registers_per_sm:,}/SM in "
                      f"{sm.warp_allocation_granularity} sub-partitions"),
        "shared_memory": (f"{occ.smem:,} B + {sm.reserved_shared_memory_per_block} B reserved -> "
                          f"{occ.smem_per_block:,} B per block; {occ.smem_per_sm:,} B/SM at this carveout"),
        "barriers": f"{sm.barriers_per_block_slot} x {sm.max_blocks_per_sm} block barriers, 1 per block",
    }
    rows = []
    for name in LIMITERS:
        if name == "barriers" and spec.compute_capability[0] < 9:
            continue
        n = occ.limits[name]
        rows.append({"limit": name, "blocks_per_sm": None if n == UNLIMITED else n,
                     "binding": name in occ.limiters, "rule": what[name]})
    return rows


def occupancy_report(spec: HardwareSpec, occ: Occupancy) -> Report:
    sm = spec.sm
    carve = "driver default" if occ.carveout is None else f"{occ.carveout}%"
    title = (f"Occupancy on {spec.name} ({spec.compute_capability[0]}.{spec.compute_capability[1]}): "
             f"{occ.threads} threads, {occ.regs} regs/thread, {occ.smem:,} B shared, carveout {carve}")
    limits = Section(title, [("limit", "limit"), ("blocks_per_sm", "blocks/SM allowed"),
                             ("binding", "binding"), ("rule", "rule")], _limit_rows(spec, occ))
    summary = [{"resident_blocks_per_sm": occ.blocks_per_sm, "warps_per_sm": occ.warps_per_sm,
                "max_warps_per_sm": sm.max_warps_per_sm, "occupancy": round(occ.occupancy, 4),
                "limiter": occ.limiter if occ.fits else f"{occ.limiter} (does not fit: {occ.reason})"}]
    result = Section("Result", [("resident_blocks_per_sm", "resident blocks/SM"), ("warps_per_sm", "warps/SM"),
                                ("max_warps_per_sm", "max warps/SM"), ("occupancy", "occupancy"),
                                ("limiter", "limiter")], summary)
    hr = occ.headroom
    head_rows = []
    if hr is not None:
        def lose(v, unit):
            return "never within the legal range" if v is None else f"+{v:,} {unit}"

        def gain(v, unit):
            return "no reduction helps (another limit binds)" if v is None else f"-{v:,} {unit}"
        head_rows = [
            {"resource": "registers per thread", "lose_a_block": lose(hr.regs_to_lose, "regs"),
             "gain_a_block": gain(hr.regs_to_gain, "regs")},
            {"resource": "shared memory per block", "lose_a_block": lose(hr.smem_to_lose, "B"),
             "gain_a_block": gain(hr.smem_to_gain, "B")}]
    headroom = Section("Headroom (how far each resource can move before resident blocks change)",
                       [("resource", "resource"), ("lose_a_block", "one block is lost at"),
                        ("gain_a_block", "one block is gained at")], head_rows)
    assumptions = [f"spec {spec.name} from {spec.path}",
                   "the kernel opts in to the large per-block shared-memory limit, as Triton's launcher does",
                   "one block barrier per block (named barriers of warp-specialized kernels can lower this)"]
    return Report("occupancy", [limits, result, headroom], assumptions,
                  extra={"occupancy": occ.as_dict(), "spec": spec.name})
