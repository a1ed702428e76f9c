"""The ``occmodel`` command line. Each subcommand lives in ``occmodel/commands/``
as a module with ``add_parser(subparsers, common)`` and ``run(args) -> Report``.

Exit status (the README's "Exit status" section is the full policy):

* 0   every config was evaluated (rows that do not fit or fail to compile are data);
* 2   bad input or an unusable environment: one line on stderr naming the file or
      value and what is allowed, no traceback; also a sweep in which a config was
      invalid and skipped (its row says why), and one in which no config could be
      compiled for a reason of the machine;
* 130 interrupted (Ctrl-C): the rows finished so far are printed, marked partial;
* 141 stdout was closed by its reader (``occmodel ... | head``): output was lost, so
      not 0, and quietly, as a tool killed by SIGPIPE would.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from .errors import OccmodelError
from .report import FORMATS, render

COMMANDS = ("predict", "table", "compile", "accuracy", "fit", "validate", "occupancy", "specs", "plot", "rank", "calibrate",
            "cache")
"""Every subcommand; ``occmodel.commands.NAME`` defines it. Only the command being run is
imported (each pulls in what it needs: sympy, triton, numpy, tabulate); the others appear
in ``--help`` by their one-line summary (``occmodel.commands.SUMMARY``)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (usage stays available through --help), and the
    repeat rules of :mod:`occmodel.commands._args`: a one-value flag given twice is an
    error; -D / --points accumulate, one NAME once."""

    REPEAT_NOTE = ("repeated flags: -D, --points and --candidate accumulate (one NAME once per flag: "
                   "-D BLOCK_T=16,32, not -D BLOCK_T=16 -D BLOCK_T=32); any other flag given twice is an error")

    def error(self, message: str):  # noqa: D102
        raise OccmodelError(f"{message} (see {self.prog} --help)")

    def add_argument(self, *names, **kw):  # noqa: D102
        from .commands._args import AppendNamed, StoreOnce, define
        optional = bool(names) and names[0].startswith("-")
        if optional and kw.get("action") in (None, "store") and kw.get("nargs") is None:
            kw["action"] = StoreOnce
        elif optional and kw.get("action") == "append" and kw.get("type") is define:
            kw["action"] = AppendNamed
        return super().add_argument(*names, **kw)

    def format_help(self) -> str:  # noqa: D102
        text = super().format_help()
        if any(isinstance(a, argparse._AppendAction) or type(a).__name__ == "AppendNamed" for a in self._actions):
            text += "\n" + self.REPEAT_NOTE + "\n"
        return text


def _common() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--format", choices=FORMATS, default="table",
                        help="output: terminal table (default), markdown for design docs, "
                             "stable json, or csv for spreadsheets")
    common.add_argument("--spec", default="sm_120",
                        help="hardware spec: a name under occmodel/specs (see `occmodel specs`) "
                             "or a path to your own YAML (default: sm_120)")
    return common


def _command_in(argv: list[str] | None) -> str | None:
    """The subcommand argv names (its first word that is not an option), if any."""
    words = sys.argv[1:] if argv is None else argv
    first = next((w for w in words if not w.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(argv: list[str] | None = None, *, every: bool | None = None) -> argparse.ArgumentParser:
    """The parser. By default only the command in `argv` gets its full definition (its module is
    imported); the others are one-line entries for ``--help``. ``every=True`` defines them all."""
    parser = _Parser(prog="occmodel", description=(
        "Will this Triton config fit, what occupancy will it get, and did the occupancy change buy "
        "throughput? Predict shared memory, registers and occupancy per config; compile for any arch "
        "without a GPU; validate premises on a GPU."),
        epilog="Start with: occmodel predict --warps 8 --stages 3   (a decode-attention kernel on sm_120)")
    parser.add_argument("--version", action="version", version=f"occmodel {_version()}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = _common()
    from .commands import SUMMARY
    wanted = _command_in(argv)
    for name in COMMANDS:
        if not every and name != wanted:
            subs.add_parser(name, help=SUMMARY[name], add_help=False)
            continue
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


EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PIPE = 0, 2, 130, 141


def _compile_interrupted() -> bool:
    from . import _interrupt                             # never import triton just to ask
    return _interrupt.EVENT.is_set()


def _mark_partial(report) -> None:
    note = ("PARTIAL: interrupted (Ctrl-C); rows with status 'interrupted' were not compiled "
            "and hold no compiled numbers")
    report.assumptions.insert(0, note)
    report.extra["partial"] = True


def _write_stdout(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    from . import _interrupt
    sticky = _interrupt.STICKY
    _interrupt.STICKY = True             # after a Ctrl-C this command compiles nothing new
    _interrupt.EVENT.clear()
    try:
        return _main(argv)
    finally:
        _interrupt.STICKY = sticky
        from . import _sweep
        _sweep.reset()                   # library defaults again; an engine connection closed


def _main(argv: list[str] | None) -> int:
    # triton 3.9 warns once per process that a default will change in 3.10; the compile cache key
    # holds the resolved options, so the note adds nothing for a CLI user
    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_ERROR
        if hasattr(args, "max_configs"):           # a command that compiles: how its sweeps run
            from . import _sweep
            _sweep.configure(executor=args.executor,
                             max_new=None if args.yes else args.max_configs or _sweep.MAX_NEW_DEFAULT)
        report = args.run(args)
        status = getattr(args, "exit_status", EXIT_OK)
        partial = _compile_interrupted()
        if partial and report is not None:
            _mark_partial(report)
        if report is not None:
            text = render(report, args.format)
            try:
                _write_stdout(text)
            except BrokenPipeError:
                _silence_stdout()
                return EXIT_PIPE
            except OSError as exc:
                _silence_stdout()
                print(f"occmodel: error: cannot write the output to stdout: {exc.strerror or exc}",
                      file=sys.stderr)
                return EXIT_ERROR
        for message in getattr(args, "late_errors", []):
            print(f"occmodel: error: {message}", file=sys.stderr)
            status = EXIT_ERROR
        dropped = getattr(args, "dropped", None)
        if dropped:
            asked, why = dropped[0]
            label = ", ".join(f"{k}={v}" for k, v in asked.items()) or "the config"
            print(f"occmodel: error: {len(dropped)} config(s) invalid and skipped (listed in the output); "
                  f"first: {label}: {why}", file=sys.stderr)
        if partial:
            print("occmodel: interrupted: the rows above are partial", file=sys.stderr)
            return EXIT_INTERRUPTED
        return status
    except OccmodelError as exc:
        print(f"occmodel: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("occmodel: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:            # the machine, not occmodel: a file or device that failed
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        print(f"occmodel: error: {type(exc).__name__}{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except RecursionError:
        print("occmodel: error: input nested too deeply to process", file=sys.stderr)
        return EXIT_ERROR
    except MemoryError:
        print("occmodel: error: out of memory (is an input, such as a sweep or a YAML file, far too large?)",
              file=sys.stderr)
        return EXIT_ERROR


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" in text else text
