"""How large compile sweeps run and show themselves: settings the CLI sets for one command.

Imports nothing heavy (``cli.main`` sets these without importing triton). The library
defaults leave :func:`~occmodel.compile_pool.compile_many` as it always was: no
executor, no size gate. The CLI sets, from ``--executor``, ``--yes`` and ``--max-configs``:

* ``EXECUTOR``: a Dask scheduler address (or scheduler file) every compile sweep of this
  command runs on (see :mod:`occmodel.engine`); None: the local process pool;
* ``MAX_NEW``: a sweep that would compile more new configs than this (cache hits do not
  count) stops before compiling anything and says how to go on; None: no limit.

Announcement and progress (see ``compile_pool._Progress``): a sweep compiling more than
:data:`ANNOUNCE` new configs first says how many and roughly how long, from the median
``compile_seconds`` of the cache's compiles for that arch (:data:`DEFAULT_SECONDS` when
it holds fewer than :data:`MIN_SAMPLES`), then draws a bar with count and ETA on a
terminal, or writes a plain line every :data:`LINE_EVERY_S` seconds when stderr is not one.
"""

from __future__ import annotations

ANNOUNCE = 48             # "more than a few dozen" new compiles: say how many and how long first
MAX_NEW_DEFAULT = 200     # the CLI's gate: more new compiles than this need --yes or --max-configs
DEFAULT_SECONDS = 1.5     # one cold compile on one core when the cache has measured none for the arch
MIN_SAMPLES = 3           # measured compiles needed before they replace the default
LINE_EVERY_S = 30.0       # plain progress lines (stderr not a terminal): at most one per this many seconds

EXECUTOR: str | None = None
MAX_NEW: int | None = None


def configure(executor: str | None = None, max_new: int | None = None) -> None:
    global EXECUTOR, MAX_NEW
    EXECUTOR, MAX_NEW = executor, max_new


def reset() -> None:
    """Back to the library defaults, closing an engine connection this command opened."""
    configure(None, None)
    import sys
    engine = sys.modules.get("occmodel.engine")
    if engine is not None:
        engine.close_all()


def duration(seconds: float) -> str:
    """'45 s', '3 min', '1 h 05 min'."""
    s = max(0, int(round(seconds)))
    if s < 90:
        return f"{s} s"
    if s < 3600:
        return f"{round(s / 60)} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
