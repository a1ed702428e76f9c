"""Typed errors. Library code raises these; only ``cli.main`` turns them into
a one-line message and exit status 2. Every message names the bad value and
what is allowed."""

from __future__ import annotations

import difflib
from typing import Iterable


class OccmodelError(Exception):
    """Bad input or an unusable environment (not a bug in occmodel)."""


class SpecError(OccmodelError):
    """An unknown spec name, or a spec YAML that fails the schema."""


class ConfigError(OccmodelError):
    """A launch config or parameter outside what the kernel/hardware allows."""


class KernelError(OccmodelError):
    """An unknown kernel, or a kernel file/function that cannot be loaded."""


class CompileError(OccmodelError):
    """The compile could not even be attempted (bad signature, unknown arch)."""


class NoGPUError(OccmodelError):
    """A command that needs a CUDA GPU ran where there is none."""


def suggest(value: str, valid: Iterable[str]) -> str:
    """' (did you mean X?)' when one valid name is close to `value`, else ''."""
    close = difflib.get_close_matches(str(value), list(valid), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""
