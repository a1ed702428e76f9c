"""Refresh the command output pasted into README.md from real runs.

Each block in README.md of the form

    <!-- output: occmodel predict --warps 8 -->
    ```text
    ...anything...
    ```

gets its body replaced by `$ <command>` and that command's real stdout (run
from the repo root). `python scripts/update_readme.py --check` exits 1 if any
block is stale, without writing.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"(<!-- output: (?P<cmd>.+?) -->\n```text\n)(?P<body>.*?)(```)", re.S)


def render(cmd: str) -> str:
    argv = shlex.split(cmd)
    if argv[0] == "occmodel":
        argv = [sys.executable, "-m", "occmodel"] + argv[1:]
    elif argv[0] == "python":
        argv[0] = sys.executable
    out = subprocess.run(argv, capture_output=True, text=True, cwd=README.parent, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"{cmd!r} failed ({out.returncode}): {out.stderr.strip()}")
    return f"$ {cmd}\n{out.stdout.rstrip()}\n"


def main() -> int:
    text = README.read_text()
    new = BLOCK.sub(lambda m: m.group(1) + render(m.group("cmd")) + m.group(4), text)
    if "--check" in sys.argv:
        stale = new != text
        print("README output is stale" if stale else "README output is current")
        return int(stale)
    README.write_text(new)
    print(f"refreshed {len(BLOCK.findall(text))} blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
