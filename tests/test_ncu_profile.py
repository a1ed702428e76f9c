"""scripts/ncu_profile.py (a GPU experiment) on the CPU: how it reads its cases and Nsight Compute's
`--csv --page details` rows, and that bad input or a machine without ncu stops it in one line, exit 2."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ncu_profile.py"


def _module():
    spec = importlib.util.spec_from_file_location("ncu_profile", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_case_names_the_sweep_point_config_and_kernel():
    m = _module()
    c = m.parse_case('w4a16_splitk_gemv|2|{"BLOCK_N": 16, "num_stages": 3}|^_kernel$')
    assert c == {"kernel": "w4a16_splitk_gemv", "point": 2, "config": {"BLOCK_N": 16, "num_stages": 3},
                 "regex": "^_kernel$"}
    for bad in ("w4a16|2|{}", "k|two|{}|_kernel", "k|0|[1]|_kernel", "k|0|{}|", "k|0|{oops|_kernel"):
        with pytest.raises(ValueError):
            m.parse_case(bad)


def test_details_rows_become_section_metric_pairs():
    """ncu's details CSV: a quoted header, one row per (launch, section, metric); lines ncu or the
    profiled program print around them (==PROF==, the probe's verdict) are not rows."""
    text = "\n".join([
        "==PROF== Connected to process 4242",
        "w4a16_splitk_gemv point 2 {...}: ok",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
        '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
        '"0","4242","python3","127.0.0.1","_kernel","1","7","(256, 1, 1)","(1024, 4, 1)","0","9.0",'
        '"GPU Speed Of Light Throughput","Duration","us","6,712.35"',
        '"0","4242","python3","127.0.0.1","_kernel","1","7","(256, 1, 1)","(1024, 4, 1)","0","9.0",'
        '"Warp State Statistics","Stall Long Scoreboard","cycle","31.4"',
        "==PROF== Disconnected from process 4242",
    ])
    got = _module().metrics_of(text)
    assert got == {"GPU Speed Of Light Throughput / Duration": ["us", "6,712.35"],
                   "Warp State Statistics / Stall Long Scoreboard": ["cycle", "31.4"]}


@pytest.mark.parametrize("args, says", [
    (["k|x|{}|_kernel"], "POINT must be an integer"),
    (['w4a16_splitk_gemv|2|{"SPLIT": 4}|_kernel'], "ncu (Nsight Compute) is not on the PATH"),
])
def test_bad_case_or_no_ncu_is_one_line_exit_2(args, says, tmp_path):
    env = {"PATH": str(tmp_path)}          # no ncu on this PATH
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "o.json"), *args],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and says in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()
