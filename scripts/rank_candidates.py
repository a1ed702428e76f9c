"""The candidates declared beside the frozen model (rounds 35-36), judged with each file's 'measured best' calibration: each
config's resources computed once, eight estimates from them --
  A  the model as it is;
  B  rank.EPILOGUE_ISSUE = True: the kernel body's issue slots and chain outside every loop, shared over the
     main-loop iterations (configs whose SASS has no loop are costed as under A: unrolled_body);
  C  B, and an unpipelined loop's latency rounds wait L2_lat + min(1, d / t) x (L - L2_lat);
  D  C only for loops without a tl.dot;
  E  B and an L1 term: c x Q / clock, Q the L1 lookups one CTA's main-loop iteration makes -- each warp
     instruction's distinct 128-byte lines, summed over its plain global loads and stores
     (sectors.SectorTraffic.load_requests + store_requests): the L1TEX tag stage resolves a warp's
     lines over successive cycles (session 39, median_filter2d's 8-row tiles);
  F  E and D's latency;
  G  A and E's L1 term (added after round 36's freeze, before its timing: the L1 term without B);
  H  G with Q per declared iteration: Q x (the TTGIR main loop's trips per CTA) / (the iterations the kernel
     declares per CTA) when fewer -- a loop over a filter's rows whose columns are a tl.static_range makes one
     TTGIR trip of several declared iterations (depthwise_conv2d: 7 trips of 7 taps, 49 declared; G charged
     each declared iteration a whole trip's lookups). Added after round 36's freeze, before its timing.
usage (triton 3.6.0; OCC_ROOT: the checkout to judge, default the one holding this script):
  python3 scripts/rank_candidates.py OUT.json KERNELS|all [MEASURE.json | rev]
OUT.json is resumed (cases in it are skipped); without MEASURE.json every development file (rev: newest first).
Judge a freeze from a worktree of it (OCC_ROOT): from session 39 on, rank has H's term (h) itself, so on a newer
checkout A already holds it (and G / H only re-set it)."""
import os, sys, json, time, dataclasses
_root = os.environ.get('OCC_ROOT', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, _root); sys.path.insert(0, _root + '/scripts')
import rank_study as RS
from occmodel import rank as R, evidence as E, sectors as S
from occmodel.spec import load_spec

_orig = R._sass_loop
_side = {}
def _patched(*a, **k):
    R.EPILOGUE_ISSUE = True
    w1 = _orig(*a, **k)
    R.EPILOGUE_ISSUE = False
    w0 = _orig(*a, **k)
    _side['b'] = (w1.issue, w1.chain) if w0.issue else None
    return w0

_orig_steps = R._steps
HIT = {'on': False}
def _steps_c(r, c, lp, lat=None):
    if HIT['on'] and lat is None and lp.k < 1 and lp.t > 0 and not (HIT.get('nodots') and lp.dots):
        L = r.latency()
        m = min(1.0, lp.d / lp.t)
        lat = r.l2_lat + m * max(0.0, L - r.l2_lat)
    return _orig_steps(r, c, lp, lat)

L1 = {'on': False, 'q': 0.0}
def _steps_e(r, c, lp, lat=None):
    t = _steps_c(r, c, lp, lat)
    if L1['on'] and lp.warps:                   # the main kernel only (a secondary kernel's loop has no warps)
        t = dict(t, l1=c * L1['q'] / r.clock)
    return t

def l1_lookups(kernel, cfg, pt, ev):
    """Q: per CTA per main-loop iteration (a loop-less kernel: its body over loop_iterations); 0 uncounted."""
    rep = getattr(ev, 'pipeline', None)
    facts = R._launch_facts(kernel, cfg, pt, ev)
    if facts is None or rep is None:
        return 0.0
    ttgir, dims, args = facts
    tr = S.traffic(ttgir, rep, args, dims, kernel.float_args(cfg, pt), data=kernel.tensor_data(cfg, pt))
    if tr is None:
        return 0.0
    per = 1 if rep.main is not None else max(1, kernel.loop_iterations(cfg, pt) or 1)
    return (tr.load_requests + tr.store_requests) / per

def trips_share(kernel, cfg, pt, ev):
    """The TTGIR main loop's trips per CTA over the iterations the kernel declares per CTA, at most 1 (1 when
    either is unknown or there is no main loop)."""
    rep = getattr(ev, 'pipeline', None)
    facts = R._launch_facts(kernel, cfg, pt, ev)
    if facts is None or rep is None or rep.main is None:
        return 1.0
    from occmodel.tile_order import loop_trips
    ttgir, dims, args = facts
    trips = loop_trips(ttgir, rep, args, dims) or {}
    idx = [i for i, lp in enumerate(rep.loops) if lp is rep.main]
    t = trips.get(idx[0]) if idx else None
    its = kernel.cta_iterations(cfg, pt)
    n = (sum(its) / max(1, len(its))) if its else (kernel.loop_iterations(cfg, pt) or 0)
    return min(1.0, t / n) if t and n else 1.0

def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print("usage: rank_candidates.py OUT.json KERNELS|all [MEASURE.json | rev]", file=sys.stderr)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    out_path, names = sys.argv[1], sys.argv[2]
    want = None if names == 'all' else set(names.split(','))
    out = {}
    if os.path.exists(out_path):                 # resumed; a damaged file is never overwritten
        try:
            out = json.load(open(out_path))
        except ValueError as err:
            print(f"rank_candidates.py: {out_path} is not a JSON file this script wrote ({err}); move it away or "
                  "name a new OUT.json", file=sys.stderr)
            sys.exit(2)
    R._sass_loop, R._steps = _patched, _steps_e      # the candidates' switches (module doc), for this run only
    files = [(sys.argv[3], None, None)] if len(sys.argv) > 3 and sys.argv[3] != 'rev' else list(RS.MEASURED)
    if sys.argv[-1] == 'rev':
        files = files[::-1]
    for path, take, legacy in files:
        doc = RS.read_json(str(RS.ROOT / path))
        spec = load_spec(doc.get("spec", "sm_90"))
        cal = RS.calibrations(doc, spec, None)['measured best']
        entries = RS.measured_entries(doc) + (RS.legacy_entries(RS.read_json(str(RS.ROOT / legacy))) if legacy else [])
        for e in entries:
            if (take is not None and e['kernel'] not in take) or (want is not None and e['kernel'] not in want):
                continue
            name = e['kernel']
            peak = R.peak_flops(spec); l2 = spec.product(None).l2_mb * 2**20
            alu = spec.sm.warp_size / spec.sm.alu_lanes_per_partition
            for j, pt in enumerate(e['points']):
                key = f"{name}/{j}"
                if key in out: continue
                t0 = time.time()
                kernel = RS.point_kernel(name, pt)
                cfgs = [kernel.resolve(c) for c in e['configs']]
                evs = E.gather(kernel, spec, cfgs, compile=True, progress=False)
                meas = [e['median_s'][i][j] for i in range(len(cfgs))]
                cols = {k: [] for k in 'abcdefgh'}; q = []; bound_e = []
                for i, cfg in enumerate(cfgs):
                    res = R.resources(kernel, cfg, pt, evs[i], alu)
                    side = _side.get('b')
                    _side.clear()
                    resb = dataclasses.replace(res, issue_per_iter=side[0], chain_cycles=side[1]) if side else res
                    L1['q'] = l1_lookups(kernel, cfg, pt, evs[i]); q.append(L1['q'])
                    est = lambda rr: R.estimate(kernel, cal, cfg, pt, rr, peak, l2)
                    cols['a'].append(est(res).total_s)
                    cols['b'].append(est(resb).total_s)
                    HIT['on'] = True
                    cols['c'].append(est(resb).total_s)
                    HIT['nodots'] = True
                    cols['d'].append(est(resb).total_s)
                    L1['on'] = True
                    cols['f'].append(est(resb).total_s)
                    HIT['on'] = False; HIT['nodots'] = False
                    e_ = est(resb); cols['e'].append(e_.total_s); bound_e.append(e_.bound)
                    cols['g'].append(est(res).total_s)
                    sh = trips_share(kernel, cfg, pt, evs[i]); L1['q'] = q[-1] * sh
                    cols['h'].append(est(res).total_s)
                    L1['on'] = False
                m = {k: RS.metrics(meas, v) for k, v in cols.items()}
                out[key] = {"meas": meas, **cols, "l1_lookups": q, "bound_e": bound_e, **{"m" + k: v for k, v in m.items()}}
                json.dump(out, open(out_path, 'w'))
                print(key + ": " + " | ".join(f"{k.upper()} rho {m[k].get('spearman')} top3 {m[k].get('best_in_top3')} "
                                              f"#1 {m[k].get('top1_vs_best')}" for k in 'abcdefgh')
                      + f" | l1-bound {sum(b == 'l1' for b in bound_e)}/{len(bound_e)} ({time.time()-t0:.0f}s)", flush=True)

if __name__ == '__main__':
    main()
