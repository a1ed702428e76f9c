"""Whether a Ctrl-C cut compiles short (shared by :mod:`occmodel.compile_pool` and the CLI).

In a library (a notebook), each :func:`~occmodel.compile_pool.compile_many` call starts
afresh: an interrupt ends that call only. The CLI sets ``STICKY``: once interrupted, later
calls in the same command compile nothing new, and ``cli.main`` prints the partial rows
and exits 130. Imports nothing heavy (the CLI asks without importing triton)."""

from __future__ import annotations

import threading

EVENT = threading.Event()
STICKY = False
