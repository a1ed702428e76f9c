"""Benchmark: CPU time of the instant commands against `python -c "import numpy"`.

    python benchmarks/bench_cli_startup.py [--rounds 15] [--occmodel "python -m occmodel"]

Each round runs, in turn, `python -c "import numpy"`, `occmodel --help`,
`occmodel occupancy --threads 128 --regs 96 --smem 60K` and
`occmodel predict --warps 8 --stages 3` (the order rotates every round), so load from
other work on the machine falls on all four alike. The measure is CPU time, user + sys of
the child (os.wait4), not wall time: on a shared 2-core box wall time mostly measures the
neighbours. Prints the median per command and its ratio to the numpy import (targets: 2x,
2.5x, 4x). predict is measured warm: one untimed run first fills the model memo
(occmodel.model.memo), as any second run on a machine would find it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

TARGETS = {"occmodel --help": 2.0, "occmodel occupancy --threads 128 --regs 96 --smem 60K": 2.5,
           "occmodel predict --warps 8 --stages 3": 4.0}
BASE = "python -c 'import numpy'"


def cpu_seconds(argv: list[str], env: dict) -> float:
    """User + sys CPU seconds of one run of argv (its exit status must be 0)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--occmodel", default=f"{sys.executable} -m occmodel",
                    help="how to start occmodel (default: this interpreter's -m occmodel)")
    args = ap.parse_args()
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    occ = shlex.split(args.occmodel)
    commands = {BASE: [sys.executable, "-c", "import numpy"]}
    for text in TARGETS:
        commands[text] = occ + shlex.split(text)[1:]
    cpu_seconds(commands["occmodel predict --warps 8 --stages 3"], env)      # fill the model memo
    times: dict[str, list[float]] = {k: [] for k in commands}
    names = list(commands)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(cpu_seconds(commands[name], env))
    base = statistics.median(times[BASE])
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.rounds} interleaved rounds; "
          "median CPU seconds (user + sys)")
    print(f"{'command':58s} {'CPU s':>7s} {'ratio':>6s} {'target':>7s}")
    print(f"{BASE:58s} {base:7.3f} {1:6.2f}")
    for name, target in TARGETS.items():
        med = statistics.median(times[name])
        mark = "ok" if med / base <= target else "MISSED"
        print(f"{name:58s} {med:7.3f} {med / base:6.2f} {target:6.1f}x {mark}")


if __name__ == "__main__":
    main()
