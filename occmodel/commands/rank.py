"""``occmodel rank``: order configs by the static throughput model, before any GPU run."""

from __future__ import annotations

from . import SUMMARY

import argparse
import dataclasses
import json
import math
from types import SimpleNamespace

from .. import calibrate as C
from .. import rank as R
from .. import evidence as E
from ..errors import ConfigError, KernelError
from ..report import Report, Section
from ..spec import load_spec
from . import _configs
from ._args import define


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "rank", parents=[common], help=SUMMARY["rank"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Estimate each config's time per launch at each workload point from what occmodel knows. "
                    "One main-loop iteration of the CTAs an SM holds takes about the slowest of (a) the load latency "
                    "over the tiles in flight (unpipelined: each iteration waits it -- times the round trips a "
                    "thread's register loads need, divided by the iterations ptxas issues together -- then runs its "
                    "warps' instructions, one per 3 cycles at best), (b) their share of DRAM bandwidth (plus what "
                    "a later pass's re-read of the same data misses in L2, and the read-back and second write of an "
                    "atomics' target the launch zero-filled and the L2 could not hold), (c) of L2 bandwidth, (d) of "
                    "shared-memory bandwidth for the dot operands every warp re-reads (from the TTGIR's warp "
                    "layouts: needs --compiled), (e) of the tensor cores (fp8 / int8 dots at twice the fp16 rate, tf32 "
                    "at half), (f) of instruction issue (the compiled SASS "
                    "main loop's instructions over 4 schedulers, each needing 3 warps to issue every cycle; a special "
                    "function or an int <-> float conversion (MUFU, I2F, F2I, F2F: the XU pipe) counts 8; a loop "
                    "unrolled away, e.g. a tl.static_range, is the whole listing spread over its iterations; a compute loop "
                    "beside the main loop, e.g. a triangular solve's steps after its K loop, adds its trips' instructions "
                    "once a CTA, spread over the main loop's iterations), (g) of "
                    "the shared-memory pipe for a cross-warp exchange in the loop "
                    "(a reduction or layout conversion behind a block-wide barrier), combined as a smooth maximum "
                    "((sum of t^4)^(1/4)); a CTA adds a latency before its loop when the loop's trip count is "
                    "loaded (a segment's offsets, a sequence's length: bound_waits, once per segment that loads its own); then waves "
                    "of CTAs (grid vs SMs x "
                    "resident blocks, the tail wave costed), secondary kernels (decode's combine), spills "
                    "(--compiled: the main loop's local loads / stores every iteration, the rest of the listing's once a CTA) "
                    "and launches. Every term is a column. "
                    "Constants: --calibration FILE (from `occmodel calibrate`), else a cached calibration for "
                    "the spec, else the spec product's datasheet with default latency and launch figures. "
                    "How good it is on kernels it never saw (H200): README, 'How good is it?'.",
        epilog="examples:\n"
               "  occmodel rank --kernel decode_attention --spec sm_90 --points C=1,8,64 --warps 2,4,8 \\\n"
               "      --stages 1,2,3,4 -D BLOCK_T=16,32,64 --top 5\n"
               "  occmodel rank --kernel matmul --spec sm_90 --warps 4,8 --stages 2,3,4 -D BLOCK_M=64,128 --compiled")
    _configs.add_config_args(p, sweep=True)
    p.add_argument("--points", type=define, action="append", default=[], metavar="NAME=V1,V2",
                   help="workload points, e.g. C=1,8,64 (repeatable; the product is taken; -D fixes others)")
    p.add_argument("--compiled", action="store_true",
                   help="compile every config for the spec's arch: real registers, shared memory, spills, "
                        "the TTGIR's pipeline depth and the dots' shared-memory operand reads (recommended: "
                        "without it term (d) is unknown)")
    p.add_argument("--calibration", default=None, metavar="FILE", help="calibration YAML from `occmodel calibrate`")
    p.add_argument("--product", default=None, help="the spec's product for datasheet figures (default: first)")
    p.add_argument("--top", type=int, default=None, metavar="K",
                   help="also print the best K configs as --candidate flags and as a Python list")
    p.set_defaults(run=run)


def _split(card, args) -> tuple[list[dict], SimpleNamespace]:
    """(points, args with only card -D's) from --points and -D."""
    from ..configs import workload_points
    points, card_defines = workload_points(card, args.points, args.defines)
    return points, SimpleNamespace(**{**vars(args), "defines": card_defines})


def _estimates(card, spec, cal, cfgs, points, args) -> tuple[list[list], bool, int, list[str]]:
    """(estimates[i][j], compiled?, how many points needed their own compile, one line per config that
    failed to compile at a point: its bound reads "compile error", not "does not fit"). A bare kernel whose
    launch types come from its launcher is compiled as launched at each point (the point's dtype or
    shapes can change the signature and the constexprs taken from the example arguments); points
    that specialize alike share one set of compiles."""
    explicit = {name for name, _ in args.defines} | set(args.baseline or {})
    groups: dict[str, tuple] = {}
    at: list[tuple] = []
    for pt in points:
        kp = card.at_point(pt)
        # a constexpr the launcher derives (from a tunable, the point or both) is read again for each config
        # at this point: the point's example arguments for this config, not the baseline's value there
        cfgs_p = cfgs if kp is card else [
            kp.resolve({k: v for k, v in cfg.items() if k not in kp.from_example or k in explicit}) for cfg in cfgs]
        key = json.dumps([[kp.signature(c), kp.constexprs(c)] for c in cfgs_p], sort_keys=True, default=str) \
            if kp is not card else ""
        if key not in groups:
            groups[key] = (kp, cfgs_p, E.gather(kp, spec, cfgs_p, compile=True if args.compiled else None))
        at.append(groups[key])
    est = [[None] * len(points) for _ in cfgs]
    failed = []
    for j, (kp, cfgs_p, evs) in enumerate(at):
        col = R.estimate_many(kp, spec, cal, cfgs_p, [points[j]], evs, args.product)
        for i in range(len(cfgs)):
            est[i][j] = col[i][0]
            if evs[i].status == "compile_error":
                est[i][j] = dataclasses.replace(est[i][j], bound="compile error")
                failed.append(f"{_given(cfgs[i])} at {_label(points[j], list(points[j]))}: {evs[i].message}")
    return est, at[0][2][0].source == E.COMPILED, len(groups), failed


def _given(cfg: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items())


def _label(pt: dict, varying: list[str]) -> str:
    return ",".join(f"{k}={pt[k]}" for k in varying if k in pt) or ",".join(f"{k}={v}" for k, v in pt.items())


def _us(s: float) -> float | None:
    return round(s * 1e6, 2) if math.isfinite(s) else None


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    if args.top is not None and args.top < 1:
        raise ConfigError(f"--top {args.top} is out of range; allowed >= 1")
    points, sargs = _split(card, args)
    base = _configs.baseline(card, sargs)
    if not (sargs.warps or sargs.stages or sargs.defines):
        sargs.warps, sargs.stages = [2, 4, 8], [1, 2, 3, 4]
    entries = _configs.sweep(card, base, sargs)
    swept = list(entries[0][0]) if entries else []
    cfgs = [cfg for _, cfg, _ in entries if cfg is not None]
    skipped = [(asked, err) for asked, cfg, err in entries if cfg is None]
    if not cfgs:
        raise ConfigError(f"no valid config in the sweep; first problem: {skipped[0][1]}" if skipped else "empty sweep")
    _configs.drop_configs(args, skipped)
    cal = C.resolve(spec, args.calibration, args.product)
    est, compiled, respecialized, failed = _estimates(card, spec, cal, cfgs, points, args)
    if failed and len(failed) == len(cfgs) * len(points):
        raise KernelError(f"no config compiled; first error: {failed[0]}")
    keys = list(dict.fromkeys(k for p in points for k in p))      # a launcher's optional key is in some points only
    varying = [k for k in keys if len({repr(p.get(k)) for p in points}) > 1]
    labels = [_label(p, varying) for p in points]
    score = R.aggregate_rank([[e.total_s for e in row] for row in est])
    order = sorted(range(len(cfgs)), key=lambda i: score[i])
    standing = R.standing(score)
    cfg_cols = [(k, k) for k in swept]

    agg_rows = []
    for i in order:
        row = {"rank": standing[i], **{k: cfgs[i][k] for k in swept}, "score": round(score[i], 3) if math.isfinite(score[i]) else None,
               "blocks_per_sm": est[i][0].blocks_per_sm}
        row.update({f"t{j}": _us(e.total_s) for j, e in enumerate(est[i])})
        agg_rows.append(row)
    agg = Section(f"{card.name} on {spec.name}: {len(cfgs)} configs ranked over {len(points)} point(s)",
                  [("rank", "rank"), *cfg_cols, ("score", "score"), ("blocks_per_sm", "blocks/SM"),
                   *[(f"t{j}", f"est us {lab}") for j, lab in enumerate(labels)]], agg_rows,
                  ["score: geometric mean over points of estimate / best estimate (1 = best everywhere); equal "
                   "scores share a rank (a tie: the estimate cannot order them)"]
                  + [f"skipped {a}: {e}" for a, e in skipped])
    if failed:
        agg.notes.append(f"{len(failed)} (config, point) pair(s) failed to compile and are ranked last; first: {failed[0]}")
    sections = [agg]
    term_cols = [("rank", "rank"), *cfg_cols, ("total_us", "est us"), ("bound", "bound"), ("grid", "grid"),
                 ("blocks_per_sm", "blocks/SM"), ("waves", "waves"), ("iterations", "iters"),
                 ("tiles_in_flight", "tiles ahead"), ("shared_kb", "smem reads KB/iter"),
                 ("lat_ns", "(a) latency ns"), ("dram_ns", "(b) DRAM ns"), ("l2_ns", "(c) L2 ns"),
                 ("shared_ns", "(d) shared ns"), ("tensor_ns", "(e) tensor ns"), ("issue_ns", "(f) issue ns"),
                 ("slots", "(f) slots/warp/iter"), ("chain", "(f) one-warp chain cycles/iter"), ("exchange_ns", "(g) exchange ns"), ("l1_ns", "(h) L1 lookups ns"),
                 ("barriers", "loop barriers"), ("reread_miss", "re-read L2 miss %"), ("revisit_mb", "tile-order re-read MB"),
                 ("partial_mb", "partial-line store MB"), ("fill_mb", "atomic read-back MB"),
                 ("hoist", "latency waits/iter"), ("gathers", "dependent loads/iter"), ("rounds", "further load rounds/iter"),
                 ("bound_waits", "loaded-bound waits/CTA"), ("dram_eff", "DRAM share %"), ("atomic_us", "atomics us"),
                 ("waves_us", "main us"),
                 ("tail_us", "tail wave us"), ("secondary_us", "secondary us"), ("spill_us", "spill us"),
                 ("launch_us", "launch us")]
    for j, lab in enumerate(labels):
        totals = [est[i][j].total_s for i in range(len(cfgs))]
        col = sorted(range(len(cfgs)), key=lambda i: totals[i])
        point_standing = R.standing(totals)
        rows = []
        for i in col:
            e = est[i][j]
            rows.append({"rank": point_standing[i], **{k: cfgs[i][k] for k in swept}, "total_us": _us(e.total_s), "bound": e.bound,
                         "grid": e.grid, "blocks_per_sm": e.blocks_per_sm, "waves": e.waves,
                         "iterations": e.iterations, "tiles_in_flight": e.tiles_in_flight,
                         "shared_kb": round(e.shared_per_iter / 1024, 1) if e.shared_per_iter else None,
                         "lat_ns": _ns(e.latency_step_s), "dram_ns": _ns(e.dram_step_s), "l2_ns": _ns(e.l2_step_s),
                         "shared_ns": _ns(e.shared_step_s), "tensor_ns": _ns(e.tensor_step_s),
                         "issue_ns": _ns(e.issue_step_s), "slots": round(e.issue_slots, 1) if e.issue_slots else None,
                         "chain": round(e.chain_cycles) if e.chain_cycles else None, "exchange_ns": _ns(e.exchange_step_s), "l1_ns": _ns(e.l1_step_s) if e.l1_lookups else None, "barriers": e.loop_barriers if compiled else None,
                         "reread_miss": None if e.reread_miss is None else round(100 * e.reread_miss),
                         "revisit_mb": round(e.revisit_bytes / 1e6, 1) if e.revisit_bytes else None,
                         "partial_mb": round(e.partial_store_bytes * e.grid * e.iterations / 1e6, 1)
                         if e.partial_store_bytes else None,
                         "fill_mb": round(e.atomic_fill_bytes / 1e6, 1) if e.atomic_fill_bytes else None,
                         "hoist": round(e.hoist, 3) if compiled and not e.tiles_in_flight else None,
                         "gathers": round(e.dependent_loads, 3) if e.dependent_loads else None,
                         "rounds": round(e.load_rounds, 3) if e.load_rounds else None,
                         "bound_waits": round(e.bound_waits, 3) if e.bound_waits else None,
                         "dram_eff": round(100 * e.dram_eff) if e.dram_eff < 1 else None,
                         "atomic_us": _us(e.atomic_s) if e.atomic_s else None,
                         "waves_us": _us(e.waves_s), "tail_us": _us(e.tail_s), "secondary_us": _us(e.secondary_s),
                         "spill_us": _us(e.spill_s), "launch_us": _us(e.launch_s)})
        sections.append(Section(f"Point {_label(points[j], list(points[j]))}", term_cols, rows))
    top = []
    if args.top:
        top = [cfgs[i] for i in order[:args.top] if math.isfinite(score[i])]
        flags = " ".join("--candidate " + ",".join(f"{k}={c[k]}" for k in swept) for c in top)
        pylist = "[" + ", ".join("{" + ", ".join(f"{k!r}: {c[k]!r}" for k in swept) + "}" for c in top) + "]"
        ties = R.tie_note(score, args.top)
        sections.append(Section(f"Top {len(top)} for validate / the autotune pruner",
                                [("form", "form"), ("text", "text")],
                                [{"form": "validate flags", "text": flags}, {"form": "python list", "text": pylist}],
                                [f"ties: {ties} — the estimate cannot order tied configs; measure them all"]
                                if ties else []))
    reread = [i for i in range(len(cfgs)) if any(e.reread_miss is not None for e in est[i])]
    if reread:
        agg.notes.append(f"{len(reread)} config(s) load again in a later pass what an earlier pass loaded (a two-pass "
                         "kernel): the share of that re-read that misses L2 (the `re-read L2 miss %` column: 0 while "
                         f"all resident CTAs' first passes stay under {R.REREAD_HIT_BELOW:g}x the L2, all past "
                         f"{R.REREAD_MISS_ABOVE:g}x, fitted on three H200 kernels) is charged to DRAM; bytes_moved "
                         "counts each tensor once")
    revisit = [i for i in range(len(cfgs)) if any(e.revisit_bytes for e in est[i])]
    if revisit:
        agg.notes.append(f"{len(revisit)} config(s) read operand strips again in a later wave after they left L2 (the "
                         "`tile-order re-read MB` column, charged to DRAM): from the compiled kernel's program-id "
                         "arithmetic evaluated for every CTA, replayed in waves of SMs x blocks/SM (strips that share tiles, "
                         "as a sliding window's neighbours do, tile by tile), with the same L2 "
                         "ramp as the re-read above; bytes_moved assumes every operand is read from DRAM once")
    torn = [i for i in range(len(cfgs)) if any(e.partial_store_bytes for e in est[i])]
    if torn:
        agg.notes.append(f"{len(torn)} config(s) store parts of 128-byte lines whose rest is written later (by the "
                         "same CTA's next iterations or by CTAs further on in the launch) after the L2 has let them go "
                         "(the `partial-line store MB` column, charged to DRAM: each such line costs a whole line "
                         "again): from the compiled kernel's store addresses, evaluated for sample CTAs and their "
                         "launch neighbours, with the L2 ramp of the re-read above; found on one H200 kernel "
                         "(a hash encoding storing 16 of each 256-byte output row a program: 3.5x slower)")
    filled = [i for i in range(len(cfgs)) if any(e.atomic_fill_bytes for e in est[i])]
    if filled:
        agg.notes.append(f"{len(filled)} config(s) add with global atomics into a target the launch zero-filled "
                         "(its secondary kernels' DRAM bytes cover it) and the L2 cannot hold: each line the atomics "
                         "touch is read back from DRAM and written again (the `atomic read-back MB` column, charged to "
                         "DRAM): the target's bytes from example_args, the lines from the compiled kernel's atomic "
                         "addresses for sample CTAs (with the index data example_args gives), with the L2 ramp of the "
                         "re-read above; seen with Nsight Compute on one H100 scatter (+358 MB read from DRAM)")
    short = [i for i in range(len(cfgs)) if any(e.dram_eff < 1 for e in est[i])]
    if short:
        agg.notes.append(f"{len(short)} config(s) read fewer than {R.DRAM_RUN_BYTES} contiguous bytes of each row per "
                         "main-loop iteration and the rest of those rows in the next ones (a K loop over K-contiguous "
                         "data with a small BLOCK_K): term (b) gets that share of the DRAM bandwidth (the `DRAM share %` "
                         "column; found on one H200 kernel, an int8 weight at BLOCK_K=64: 1.4-1.7x slower than 128)")
    partial = [i for i in range(len(cfgs)) if any(e.l2_waste_bytes > 0.25 * e.tile_bytes for e in est[i])]
    if partial:
        agg.notes.append(f"{len(partial)} config(s) pay term (c) for L2 requests, not bytes: the compiled kernel's "
                         "addresses, evaluated for every element of sample CTAs, touch more 128-byte lines than the "
                         "bytes they use fill (a gather across channel planes, narrow columns of a row-major "
                         "tensor); each line a CTA-iteration loads with a plain load, and each line a warp's store "
                         "instruction writes, is a whole line's L2 time: the unused part is added to the tile's "
                         "bytes (measured on an H100: one-sector requests go at about the rate of whole lines)")
    given = sorted({k for pt in points for k in (card.tensor_data(cfgs[0], pt) or {})}) if cfgs and compiled else []
    if given:
        agg.notes.append(f"addresses loaded from {', '.join(given)} come from the values example_args gives (CPU "
                         "tensors with data): a gather through them is counted for those values, which stand for "
                         "the real data (another draw, or real routing / coordinates, can touch other lines)")
    atomic = [i for i in range(len(cfgs)) if any(e.atomic_s for e in est[i])]
    if atomic:
        agg.notes.append(f"{len(atomic)} config(s) send global atomics that many CTAs aim at the same lines (the "
                         f"`atomics us` column): the launch takes at least the busiest lines' requests x "
                         f"{R.ATOMIC_REQUEST_S * 1e9:g} ns (measured on one H200 kernel; assumed on other GPUs); "
                         "atomics through loaded indices (a scatter) are not traced")
    barred = [i for i in range(len(cfgs)) if any(e.loop_barriers for e in est[i])]
    if barred:
        top_barred = [i for i in order[:args.top or 5] if i in barred]
        agg.notes.append(f"{len(barred)} config(s) hold a block-wide barrier in the main loop (a reduction or layout "
                         "conversion across warps; the `loop barriers` column): term (g) costs its shared-memory "
                         f"round trips at {R.EXCHANGE_CYCLES_PER_OP:g} cycles per warp-level access (measured on one "
                         "H200 kernel, good to about 2x: the bank conflicts are not computed)" + (
                             f"; {len(top_barred)} of them in the top {args.top or 5}: measure before trusting their rank"
                             if top_barred else ""))
    src = ("compiled (n_regs, total_shared, n_spills; the TTGIR's ring depth, tile bytes and dot warp layouts)"
           if compiled else "the card's model (no compile: spills and shared-memory operand reads unknown, "
                                 "term (d) is 0; pass --compiled)")
    lat = (f"latency {R.rates(cal, 1.0).latency() * 1e9:.0f} ns (the measured curve "
           f"{', '.join(f'{q / 1024:g} KB/SM {ns:g} ns' for q, ns in cal.latency_curve)} read at "
           f"{R.LATENCY_LOAD_BYTES // 1024} KB/SM)" if cal.latency_curve else f"latency {cal.latency_ns:g} ns")
    assumptions = [f"constants: {cal.gpu}, {cal.sms} SMs, DRAM {cal.bandwidth_gbs:g} GB/s, {lat}, "
                   f"L2 {cal.l2_bandwidth_gbs:g} GB/s, L2 latency {cal.l2_latency_ns:g} ns, shared "
                   f"{cal.shared_bandwidth_gbs:g} GB/s, launch {cal.launch_us:g} us; {cal.source}",
                   f"peak {R.peak_flops(spec, args.product) / 1e12:g} TFLOP/s (fp16 tensor, datasheet); L2 "
                   f"{spec.product(args.product).l2_mb:g} MiB ({spec.product(args.product).name}, datasheet: where a "
                   "later pass's re-read, or a later wave's, stops hitting)",
                   f"resources from {src}",
                   *([f"specialization: each point compiled as the launcher launches it there ({respecialized} "
                      f"distinct specializations over {len(points)} points)"] if respecialized > 1 else []),
                   "the estimate ranks configs; it is not a time to quote (see rank.py for the formula)"]
    return Report("rank", sections, assumptions,
                  extra={"spec": spec.name, "kernel": card.name, "points": points,
                         "ties": R.tie_note(score, args.top) if args.top else "",
                         "top": top, "estimates": [[_finite(e.as_dict()) for e in row] for row in est]})


def _ns(seconds: float) -> float | None:
    return round(seconds * 1e9, 1) if math.isfinite(seconds) else None


def _finite(d: dict) -> dict:
    """inf (a config that does not fit) as None, so --format json stays strict JSON."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
