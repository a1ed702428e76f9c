"""Why does one config run slower than another? Nsight Compute's stall reasons and memory counters for
single launches of study configs (GPU; needs `ncu` on the PATH).

    python3 scripts/ncu_profile.py --out $OUT/ncu.json \
        'w4a16_splitk_gemv|2|{"BLOCK_N": 16, "BLOCK_K": 128, "SPLIT": 4, "num_warps": 8, "num_stages": 1}|_kernel' \
        ...

Each case is `KERNEL|POINT|CONFIG-JSON|KERNEL-NAME-REGEX`: a sweep of scripts/rank_study.py, the index of
its workload point, the swept values, and the regex (ncu -k regex:) of the Triton kernel to profile (the
launch's other kernels and the torch reference are left out). The launch is `rank_study.py probe` (one
launch, checked against the reference). ncu runs with --clock-control none (the clocks as the study's
timings had them) and one pass set: the warp-state and scheduler sections, the memory tables and the
counters below. Output: per case, every metric ncu printed (name -> [unit, value]), and ncu's raw CSV;
a case that fails keeps its error and the rest still run.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "SchedulerStats", "WarpStateStats",
            "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "InstructionStats")
METRICS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
           "smsp__inst_executed_op_ldgsts.sum", "smsp__inst_executed.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
           "lts__t_requests_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
           "lts__t_requests_srcunit_tex_op_write.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
           "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "sm__cycles_elapsed.avg", "smsp__cycles_active.avg")
ROOT = Path(__file__).resolve().parent.parent


def parse_case(text: str) -> dict:
    """'KERNEL|POINT|CONFIG-JSON|REGEX' -> a case dict; ValueError naming what is wrong."""
    parts = text.split("|")
    if len(parts) != 4:
        raise ValueError(f"case {text!r} is not KERNEL|POINT|CONFIG-JSON|KERNEL-NAME-REGEX")
    kernel, point, cfg, regex = parts
    try:
        case = {"kernel": kernel, "point": int(point), "config": json.loads(cfg), "regex": regex}
    except ValueError as exc:
        raise ValueError(f"case {text!r}: POINT must be an integer and CONFIG a JSON object ({exc})") from None
    if not isinstance(case["config"], dict) or not regex:
        raise ValueError(f"case {text!r}: CONFIG must be a JSON object and the regex not empty")
    return case


def metrics_of(csv_text: str) -> dict:
    """ncu --csv --page details rows -> {'Section / Metric': [unit, value]} (the last launch's)."""
    out = {}
    lines = [ln for ln in csv_text.splitlines() if ln.startswith('"')]
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = f"{row.get('Section Name', '')} / {row.get('Metric Name', '')}"
        out[name] = [row.get("Metric Unit", ""), row.get("Metric Value", "")]
    return out


def profile(case: dict, timeout: int) -> dict:
    cmd = ["ncu", "--clock-control", "none", "--csv", "--page", "details", "-k", f"regex:{case['regex']}",
           "--launch-count", "1"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(METRICS), sys.executable, str(ROOT / "scripts" / "rank_study.py"), "probe",
            case["kernel"], "--point", str(case["point"]), "--config", json.dumps(case["config"])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**case, "error": f"ncu ran past {timeout} s"}
    res = {**case, "returncode": p.returncode, "probe": [ln for ln in p.stdout.splitlines() if " point " in ln][-1:],
           "metrics": metrics_of(p.stdout), "raw_csv": p.stdout[-200000:]}
    if p.returncode != 0 or not res["metrics"]:
        res["error"] = (p.stderr or p.stdout)[-2000:]
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="+", help="KERNEL|POINT|CONFIG-JSON|KERNEL-NAME-REGEX")
    ap.add_argument("--out", required=True, help="the JSON to write (rewritten after every case)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds one case's ncu may take")
    args = ap.parse_args(argv)
    try:
        cases = [parse_case(c) for c in args.cases]
    except ValueError as exc:
        print(f"ncu_profile: error: {exc}", file=sys.stderr)
        return 2
    if shutil.which("ncu") is None:
        print("ncu_profile: error: ncu (Nsight Compute) is not on the PATH; run this on the GPU machine", file=sys.stderr)
        return 2
    done = []
    for c in cases:
        r = profile(c, args.timeout)
        done.append(r)
        Path(args.out).write_text(json.dumps(done, indent=1))
        d = r.get("metrics", {}).get("GPU Speed Of Light Throughput / Duration", ["", "?"])
        print(f"{c['kernel']} point {c['point']} {c['config']}: {r.get('error', '').splitlines()[-1:] or 'ok'} "
              f"duration {d[1]} {d[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
