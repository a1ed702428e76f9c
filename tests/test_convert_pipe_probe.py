"""scripts/convert_pipe_probe.py (a GPU experiment) on the CPU: its modes compute what its torch
reference says, in Triton's interpreter, and without a GPU it stops in one line with exit 2."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "convert_pipe_probe.py"

CHECK = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import convert_pipe_probe as P
block = P.CHAINS * P.WARPS * 32
x0 = torch.randint(-100, 100, (2 * block,), dtype=torch.int32)
y = torch.empty(2 * block)
for mode in P.MODES:
    if mode == "f2fp_bf16":      # the interpreter rounds fp32 -> bf16 unlike the GPU (and torch); GPU-checked
        continue
    P._probe[(2,)](x0, y, 16, MODE=mode, BLOCK=block)
    ref = P.reference(x0, mode, 16)
    err = ((y - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-5, (mode, err)
print("ok", len(P.MODES) - 1)
"""


def test_every_mode_matches_its_reference_in_the_interpreter():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", CHECK, str(ROOT / "scripts")], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok 7"


def test_bad_iters_and_no_gpu_exit_2_in_one_line():
    torch = pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--iters", "0"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "convert_pipe_probe: error: --iters 0: must be a whole number >= 1"]
    if not torch.cuda.is_available():
        proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and proc.stderr.strip() == "convert_pipe_probe: error: needs a CUDA GPU"
