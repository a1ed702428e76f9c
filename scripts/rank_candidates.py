"""Round 35's candidates beside the frozen model, judged with each file's 'measured best' calibration: each
config's resources computed once, four estimates from them --
  A  the model as it is;
  B  rank.EPILOGUE_ISSUE = True: the kernel body's issue slots and chain outside every loop, shared over the
     main-loop iterations (configs whose SASS has no loop are costed as under A: unrolled_body);
  C  B, and an unpipelined loop's latency rounds wait L2_lat + min(1, d / t) x (L - L2_lat);
  D  C only for loops without a tl.dot.
usage (triton 3.6.0; OCC_ROOT: the checkout to judge, default the one holding this script):
  python3 scripts/rank_candidates.py OUT.json KERNELS|all [MEASURE.json | rev]
OUT.json is resumed (cases in it are skipped); without MEASURE.json every development file (rev: newest first)."""
import os, sys, json, time, dataclasses
_root = os.environ.get('OCC_ROOT', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, _root); sys.path.insert(0, _root + '/scripts')
import rank_study as RS
from occmodel import rank as R, evidence as E
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
    R._sass_loop, R._steps = _patched, _steps_c      # the candidates' switches (module doc), for this run only
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
                ta, tb, tc, td = [], [], [], []
                for i, cfg in enumerate(cfgs):
                    res = R.resources(kernel, cfg, pt, evs[i], alu)
                    side = _side.get('b')
                    _side.clear()
                    resb = dataclasses.replace(res, issue_per_iter=side[0], chain_cycles=side[1]) if side else res
                    ta.append(R.estimate(kernel, cal, cfg, pt, res, peak, l2).total_s)
                    tb.append(R.estimate(kernel, cal, cfg, pt, resb, peak, l2).total_s)
                    HIT['on'] = True
                    tc.append(R.estimate(kernel, cal, cfg, pt, resb, peak, l2).total_s)
                    HIT['nodots'] = True
                    td.append(R.estimate(kernel, cal, cfg, pt, resb, peak, l2).total_s)
                    HIT['on'] = False; HIT['nodots'] = False
                ma, mb, mc, md = RS.metrics(meas, ta), RS.metrics(meas, tb), RS.metrics(meas, tc), RS.metrics(meas, td)
                out[key] = {"meas": meas, "a": ta, "b": tb, "c": tc, "d": td, "ma": ma, "mb": mb, "mc": mc, "md": md}
                json.dump(out, open(out_path, 'w'))
                print(f"{key}: A rho {ma.get('spearman')} top3 {ma.get('best_in_top3')} #1 {ma.get('top1_vs_best')} | "
                      f"B rho {mb.get('spearman')} top3 {mb.get('best_in_top3')} #1 {mb.get('top1_vs_best')} | "
                      f"C rho {mc.get('spearman')} #1 {mc.get('top1_vs_best')} | D rho {md.get('spearman')} top3 {md.get('best_in_top3')} #1 {md.get('top1_vs_best')} ({time.time()-t0:.0f}s)", flush=True)

if __name__ == '__main__':
    main()
