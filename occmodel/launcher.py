"""The launcher contract: how validate and rank run a kernel that has no card.

A launcher is the benchmark wrapper a kernel engineer already has, as plain
functions in one Python file (torch imported inside them, so the file loads
anywhere)::

    POINTS = [{"M": 4096}, {"M": 16384}]     # optional: default workload points
    BASELINE = {"BLOCK_M": 64, "num_warps": 4, "num_stages": 3}   # optional

    def make_inputs(point, seed=0, device="cuda"): ...   # to run it (validate): random inputs (a dict)
    def launch(inputs, cfg): ...                          # to run it (validate): kernel[grid](...); the output
    def reference(inputs): ...                            # optional: torch reference -> correctness gate
    def bytes_moved(point): ...                           # optional: unavoidable DRAM bytes per launch
    def flops(point): ...                                 # optional
    def grid(cfg, point): ...                             # optional: CTAs of one launch, or the grid tuple (rank)
    def loop_iterations(cfg, point): ...                  # optional: main-loop iterations per CTA (rank)
    def cta_iterations(cfg, point): ...                   # optional: iterations of each CTA when they differ
    def example_args(cfg, point): ...                     # optional: launch args -> Triton's specialization
    def torch_baseline(inputs): ...                       # optional: a torch version to time beside it
    def secondary_kernels(cfg, point): ...                # optional: the launch's further kernels, for rank:
                                                          # [{"name", "grid", "iterations", "tile_bytes",
                                                          #   "dram_bytes", "ahead", "blocks_per_sm"}, ...]

`cfg` is a dict of the kernel's constexprs plus ``num_warps`` and ``num_stages``. A launcher
without ``make_inputs`` and ``launch`` still serves ``rank`` and the pruner (nothing runs); what
runs the kernel (``validate``) names them when they are missing.
``make_inputs`` may take only ``point``; ``seed`` and ``device`` are passed when it
accepts them. In Python, build one directly: ``Launcher(make_inputs=..., launch=...)``.
Pure: nothing here imports torch.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import Any, Callable, Mapping

from .errors import KernelError

RUN = ("make_inputs", "launch")          # what running the kernel needs (validate); rank needs neither
HOOKS = ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations", "example_args", "torch_baseline",
            "secondary_kernels", "cta_iterations")


@dataclass(frozen=True)
class Launcher:
    """The GPU side of a bare kernel (see the module doc for each function's contract)."""

    make_inputs: Callable[..., dict] | None = None
    launch: Callable[[dict, Mapping[str, Any]], Any] | None = None
    reference: Callable[[dict], Any] | None = None
    bytes_moved: Callable[[Mapping[str, Any]], int] | None = None
    flops: Callable[[Mapping[str, Any]], int] | None = None
    grid: Callable[[Mapping[str, Any], Mapping[str, Any]], int | tuple[int, ...]] | None = None
    loop_iterations: Callable[[Mapping[str, Any], Mapping[str, Any]], int] | None = None
    example_args: Callable[[Mapping[str, Any], Mapping[str, Any]], Any] | None = None
    torch_baseline: Callable[[dict], Any] | None = None
    secondary_kernels: Callable[[Mapping[str, Any], Mapping[str, Any]], Any] | None = None
    cta_iterations: Callable[[Mapping[str, Any], Mapping[str, Any]], Any] | None = None
    points: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    baseline: Mapping[str, Any] | None = None
    name: str = ""

    def __post_init__(self):
        for f in HOOKS:
            value = getattr(self, f)
            if value is not None and not callable(value):
                raise KernelError(f"launcher {self.name or ''}: {f} is a {type(value).__name__}, not a function")

    @property
    def runs(self) -> bool:
        """Whether it can run the kernel: make_inputs and launch are both given."""
        return all(getattr(self, f) is not None for f in RUN)

    def require_run(self) -> None:
        """KernelError naming the missing make_inputs / launch (what running the kernel needs)."""
        missing = [f for f in RUN if getattr(self, f) is None]
        if missing:
            raise KernelError(f"launcher {self.name or ''} has no {' and no '.join(missing)}: running the kernel "
                              "(validate) needs make_inputs(point) and launch(inputs, cfg); rank and the pruner "
                              "do not")

    def inputs(self, point: Mapping[str, Any], device: str = "cuda", seed: int = 0) -> dict:
        """make_inputs(point[, seed=][, device=]) with the keywords it accepts."""
        self.require_run()
        try:
            params = inspect.signature(self.make_inputs).parameters
        except (TypeError, ValueError):
            params = {}
        kwargs = {k: v for k, v in (("seed", seed), ("device", device))
                  if k in params or any(p.kind is p.VAR_KEYWORD for p in params.values())}
        return self.make_inputs(dict(point), **kwargs)

    @property
    def provides(self) -> list[str]:
        """The optional functions this launcher has (for reports)."""
        return [f for f in HOOKS if f not in RUN and getattr(self, f) is not None]


def from_module(module: ModuleType | Any, name: str = "") -> Launcher:
    """A Launcher from a module's (or any object's) attributes; KernelError when it has none of the
    launcher functions (a wrong file), or one of them is not a function."""
    where = name or getattr(module, "__file__", None) or getattr(module, "__name__", repr(module))
    if not any(callable(getattr(module, f, None)) for f in HOOKS):
        raise KernelError(f"launcher {where} has none of the launcher functions (make_inputs(point) and "
                          f"launch(inputs, cfg) to run it; grid, loop_iterations, bytes_moved, flops, example_args "
                          f"for rank; see docs/launcher.md)")
    points = getattr(module, "POINTS", ()) or ()
    if isinstance(points, Mapping) or not all(isinstance(p, Mapping) for p in points):
        raise KernelError(f"launcher {where}: POINTS must be a list of dicts, e.g. [{{'M': 4096}}]")
    baseline = getattr(module, "BASELINE", None)
    if baseline is not None and not isinstance(baseline, Mapping):
        raise KernelError(f"launcher {where}: BASELINE must be a dict, e.g. {{'BLOCK_M': 64, 'num_warps': 4}}")
    kwargs = {f: getattr(module, f, None) for f in HOOKS}
    return Launcher(**kwargs, points=tuple(dict(p) for p in points), baseline=baseline, name=str(where))


def load_launcher(where: str | Launcher | ModuleType) -> Launcher:
    """``path/to/launcher.py`` (or ``package.module``), a module, or a Launcher."""
    if isinstance(where, Launcher):
        return where
    if isinstance(where, ModuleType):
        return from_module(where)
    from .card import import_file
    text = str(where)
    if text.endswith(".py") or "/" in text:
        return from_module(import_file(text), text)
    import importlib
    try:
        module = importlib.import_module(text)
    except Exception as exc:
        raise KernelError(f"cannot import launcher {text!r}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    return from_module(module, text)


def field_names() -> list[str]:
    return [f.name for f in fields(Launcher)]
