"""The command line, run as a user runs it: `occmodel ...` and `python -m occmodel ...`."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from occmodel import cli

ENTRY_POINTS = [[sys.executable, "-m", "occmodel"]]
if shutil.which("occmodel"):
    ENTRY_POINTS.append(["occmodel"])


def run(*args, entry=None, check_rc=None):
    proc = subprocess.run((entry or ENTRY_POINTS[0]) + list(args), capture_output=True, text=True, timeout=300)
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda e: " ".join(e[-2:]))
def test_occupancy_calculator_both_entry_points(entry):
    out = run("occupancy", "--spec", "sm_120", "--threads", "128", "--regs", "96", "--smem", "61440",
              "--format", "json", entry=entry, check_rc=0).stdout
    doc = json.loads(out)
    occ = doc["occupancy"]
    assert doc["command"] == "occupancy" and doc["schema_version"] == 2
    assert (occ["blocks_per_sm"], occ["warps_per_sm"], occ["limiter"]) == (1, 4, "shared_memory")
    assert occ["limits"]["registers"] == 5


def test_occupancy_accepts_kb_and_warps():
    out = run("occupancy", "--warps", "4", "--regs", "96", "--smem", "60K", "--format", "csv", check_rc=0).stdout
    assert "shared_memory,1,True" in out


def test_markdown_pastes_into_a_doc():
    out = run("occupancy", "--threads", "256", "--regs", "64", "--format", "markdown", check_rc=0).stdout
    assert out.startswith("### Occupancy on sm_120") and "|---" in out and "**Assumptions**" in out


def test_specs_list_and_show():
    listing = run("specs", "--format", "csv", check_rc=0).stdout
    assert listing.splitlines()[0].startswith("spec,cc,max_warps_per_sm")
    assert "sm_120,12.0,48,24" in listing
    shown = json.loads(run("specs", "show", "sm_90", "--format", "json", check_rc=0).stdout)
    fields = {r["field"]: r["value"] for r in shown["sections"][0]["rows"]}
    assert fields["sm.shared_memory_per_block_optin"] == 232448


@pytest.mark.parametrize("args, fragment", [
    (["occupancy", "--threads", "1025", "--regs", "32"], "1025 is out of range for threads per block; allowed 1..1024"),
    (["occupancy", "--threads", "128", "--regs", "256"], "256 is out of range for registers per thread; allowed 1..255"),
    (["occupancy", "--threads", "128", "--regs", "0"], "allowed 1..255"),
    (["occupancy", "--threads", "128", "--regs", "32", "--smem", "-5"], "'-5' is not a size"),
    (["occupancy", "--threads", "128", "--regs", "32", "--carveout", "101"], "allowed 0..100"),
    (["occupancy", "--spec", "sm_12", "--threads", "128", "--regs", "32"], "did you mean 'sm_120'"),
    (["specs", "show", "nowhere.yaml"], "spec file 'nowhere.yaml' does not exist"),
    (["occupancy", "--threads", "128"], "the following arguments are required: --regs"),
])
def test_bad_input_is_one_line_exit_2_no_traceback(args, fragment):
    proc = run(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("occmodel: error: ")
    assert fragment in lines[0]


def test_malformed_user_spec_is_one_line(tmp_path):
    bad = tmp_path / "gpu.yaml"
    bad.write_text("name: [unclosed\n")
    proc = run("specs", "show", str(bad))
    assert proc.returncode == 2 and "gpu.yaml:" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_help_teaches():
    out = run("occupancy", "--help", check_rc=0).stdout
    assert "example:" in out and "--carveout" in out


@pytest.mark.parametrize("argv, absent", [
    (["--help"], {"sympy", "numpy", "tabulate", "triton", "torch", "yaml"}),
    (["occupancy", "--threads", "128", "--regs", "96", "--smem", "60K"], {"sympy", "numpy", "triton", "torch"}),
    (["specs"], {"sympy", "numpy", "triton", "torch"}),
])
def test_a_command_imports_only_what_it_uses(argv, absent):
    """Start-up is the point of a calculator run twenty times: --help imports no heavy
    library, the calculator neither sympy nor numpy (benchmarks/bench_cli_startup.py times it)."""
    code = ("import sys\nfrom occmodel import cli\ntry:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (sorted(absent),))
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)
    assert "LOADED []" in proc.stdout, proc.stdout[-500:] + proc.stderr[-500:]


def test_every_command_has_its_full_help():
    from occmodel.commands import SUMMARY
    assert set(SUMMARY) == set(cli.COMMANDS)
    for name in cli.COMMANDS:
        text = cli.build_parser([name])._subparsers._group_actions[0].choices[name].format_help()
        assert ("--format" in text or name == "plot") and "seed'" not in text and "the seed" not in text, name
    assert "seed" not in cli.build_parser(every=True).format_help()
