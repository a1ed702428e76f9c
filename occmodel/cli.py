"""The ``occmodel`` command line. Each subcommand lives in ``occmodel/commands/``
as a module with ``add_parser(subparsers, common)`` and ``run(args) -> Report``.

Exit status: 0 success; 2 bad input or unusable environment (one line on
stderr naming the bad value and what is allowed, no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from .errors import OccmodelError
from .report import FORMATS, render

COMMANDS = ("predict", "table", "compile", "accuracy", "fit", "validate", "occupancy", "specs", "plot", "rank", "calibrate")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (usage stays available through --help)."""

    def error(self, message: str):  # noqa: D102
        raise OccmodelError(f"{message} (see {self.prog} --help)")


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--format", choices=FORMATS, default="table",
                        help="output: terminal table (default), markdown for design docs, "
                             "stable json, or csv for spreadsheets")
    common.add_argument("--spec", default="sm_120",
                        help="hardware spec: a name under occmodel/specs (see `occmodel specs`) "
                             "or a path to your own YAML (default: sm_120)")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="occmodel", description=(
        "Will this Triton config fit, what occupancy will it get, and did the occupancy change buy "
        "throughput? Predict shared memory, registers and occupancy per config; compile for any arch "
        "without a GPU; validate premises on a GPU."),
        epilog="Start with: occmodel predict --warps 8 --stages 3   (the seed kernel on sm_120)")
    parser.add_argument("--version", action="version", version=f"occmodel {_version()}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = _common()
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"occmodel.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"occmodel.commands.{name}":
                continue          # command not built yet
            raise
        module.add_parser(subs, common)
    return parser


def _version() -> str:
    from . import __version__
    return __version__


def main(argv: list[str] | None = None) -> int:
    # triton 3.9 warns once per process that a default will change in 3.10; the compile cache key
    # holds the resolved options, so the note adds nothing for a CLI user
    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        report = args.run(args)
        if report is not None:
            print(render(report, args.format))
        return getattr(args, "exit_status", 0)
    except OccmodelError as exc:
        print(f"occmodel: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("occmodel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
