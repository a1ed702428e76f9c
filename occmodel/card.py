"""Kernel cards: a ``@triton.jit`` kernel plus what occmodel needs to reason about it.

A card module under ``occmodel/kernels/`` (or a user's file) defines a
:class:`KernelCard` instance. The card declares

* ``params``: the knobs (constexprs such as BLOCK_T, and problem parameters such
  as head size or dtype) with defaults and allowed values; ``num_warps`` and
  ``num_stages`` are added to every card;
* ``signature(cfg)`` / ``constexprs(cfg)``: what a real launch passes, in Triton's
  AOT convention (``*bf16:16`` = pointer 16-byte aligned), so compiling the card
  reproduces the launcher's specialization;
* ``shared_memory(cc)`` / ``registers(cc)``: sympy expressions over the parameter
  symbols (see :func:`symbols`) — the model;
* the GPU side (``make_inputs``, ``launch``, ``reference``, ``bytes_moved``...),
  which imports torch lazily, so the card itself loads without torch.

A config is a plain ``dict[str, int | str]`` holding every parameter;
:meth:`KernelCard.resolve` builds and validates one.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import sympy

from .errors import ConfigError, KernelError, suggest

Config = dict[str, Any]
BUILTIN_CARDS = ("decode_attention", "decode_attention_nopipe", "matmul")
DEFAULT_CARD = "decode_attention"


@dataclass(frozen=True)
class Param:
    """One card parameter. ``choices`` lists the allowed values (None: any int
    >= ``minimum``); ``tunable`` marks launch/config knobs as opposed to problem
    parameters (shape, dtype) that a workload fixes."""

    name: str
    default: Any
    doc: str
    choices: tuple | None = None
    minimum: int = 1
    power_of_two: bool = False
    tunable: bool = True

    def check(self, value: Any) -> Any:
        """Coerce a CLI string or Python value to this parameter's type, or raise ConfigError."""
        if isinstance(self.default, str):
            value = str(value)
        else:
            if isinstance(value, str):
                try:
                    value = int(value, 0)
                except ValueError:
                    raise ConfigError(f"{self.name}={value!r} is not an integer") from None
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{self.name}={value!r} must be an integer")
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise ConfigError(f"{self.name}={value} is not allowed; allowed: {allowed}")
        if not isinstance(value, str):
            if value < self.minimum:
                raise ConfigError(f"{self.name}={value} is too small; allowed >= {self.minimum}")
            if self.power_of_two and value & (value - 1):
                raise ConfigError(f"{self.name}={value} is not a power of two")
        return value


LAUNCH_PARAMS = (
    Param("num_warps", 4, "warps per CTA (threads = 32 x num_warps)", choices=(1, 2, 4, 8, 16, 32)),
    Param("num_stages", 2, "software-pipelining depth Triton uses for loads in loops", minimum=1),
)


def symbols(names) -> dict[str, sympy.Symbol]:
    """Positive-integer sympy symbols for parameter names (what card expressions use)."""
    return {n: sympy.Symbol(n, integer=True, positive=True) for n in names}


@dataclass
class KernelCard:
    """Base class of kernel cards. Subclasses fill the fields and override the methods."""

    name: str
    summary: str
    params: tuple[Param, ...]
    baseline: Mapping[str, Any]
    kernel: Any = None                      # the @triton.jit function whose occupancy matters
    pipelined_loads: str = ""               # which loads Triton software-pipelines, in words
    specialization: str = ""                # the launcher specialization the signature encodes
    workload_params: tuple[Param, ...] = field(default_factory=tuple)
    default_points: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    throughput_unit: str = "launches/s"

    # ----------------------------------------------------------- config
    @property
    def all_params(self) -> tuple[Param, ...]:
        return self.params + LAUNCH_PARAMS

    def param(self, name: str) -> Param:
        for p in self.all_params:
            if p.name == name:
                return p
        names = [p.name for p in self.all_params]
        raise ConfigError(f"unknown parameter {name!r} for kernel {self.name!r}; valid: "
                          f"{', '.join(names)}{suggest(name, names)}")

    def resolve(self, overrides: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None) -> Config:
        """Defaults, then `base` (default: the card's baseline), then `overrides`; all checked."""
        cfg: Config = {p.name: p.default for p in self.all_params}
        for source in (self.baseline if base is None else base, overrides or {}):
            for key, value in source.items():
                cfg[key] = self.param(key).check(value)
        self.check(cfg)
        return cfg

    def check(self, cfg: Config) -> None:
        """Cross-parameter rules (override to add; raise ConfigError)."""

    def resolve_point(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """A workload point with defaults filled and values checked."""
        out = {p.name: p.default for p in self.workload_params}
        names = [p.name for p in self.workload_params]
        for key, value in point.items():
            if key not in names:
                raise ConfigError(f"unknown workload parameter {key!r} for kernel {self.name!r}; valid: "
                                  f"{', '.join(names)}{suggest(key, names)}")
            out[key] = next(p for p in self.workload_params if p.name == key).check(value)
        return out

    # ------------------------------------------------------------ model
    def symbols(self) -> dict[str, sympy.Symbol]:
        return symbols(p.name for p in self.all_params if not isinstance(p.default, str))

    def shared_memory(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        """Bytes of shared memory Triton allocates, as an expression over the numeric
        parameter symbols. `cfg` supplies the non-numeric parameters (dtype)."""
        raise NotImplementedError

    def registers(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        """Estimated registers per thread (before ptxas's 255 cap)."""
        raise NotImplementedError

    # ---------------------------------------------------------- compile
    def signature(self, cfg: Config) -> dict[str, str]:
        raise NotImplementedError

    def constexprs(self, cfg: Config) -> dict[str, Any]:
        raise NotImplementedError

    # ------------------------------------------- workload (GPU side, torch lazily)
    def grid(self, cfg: Config, point: Mapping[str, Any]) -> int:
        """CTAs one launch of the main kernel starts."""
        raise NotImplementedError

    def loop_iterations(self, cfg: Config, point: Mapping[str, Any]) -> int:
        """Main-loop iterations each CTA runs (what a num_stages pipeline must fill)."""
        raise NotImplementedError

    def bytes_moved(self, cfg: Config, point: Mapping[str, Any]) -> int:
        raise NotImplementedError

    def flops(self, cfg: Config, point: Mapping[str, Any]) -> int:
        raise NotImplementedError

    def make_inputs(self, cfg: Config, point: Mapping[str, Any], device: str = "cpu", seed: int = 0) -> dict:
        raise NotImplementedError

    def launch(self, inputs: dict, cfg: Config):
        """Run the Triton kernel(s) on `inputs`; return the output tensor."""
        raise NotImplementedError

    def reference(self, inputs: dict):
        """The readable torch reference (float32 or better)."""
        raise NotImplementedError

    def work_units(self, point: Mapping[str, Any]) -> float:
        """How many `throughput_unit`s one launch produces (e.g. tokens)."""
        return 1.0


# ------------------------------------------------------------------ loading
def load_card(spec: str | KernelCard = DEFAULT_CARD) -> KernelCard:
    """A built-in card by name, or ``path/to/file.py:attr`` / ``package.module:attr``."""
    if isinstance(spec, KernelCard):
        return spec
    text = str(spec)
    if ":" not in text:
        if text not in BUILTIN_CARDS:
            raise KernelError(f"unknown kernel {text!r}; built-in kernels: {', '.join(BUILTIN_CARDS)}"
                              f"{suggest(text, BUILTIN_CARDS)} (or pass path/to/file.py:card)")
        return importlib.import_module(f"occmodel.kernels.{text}").CARD
    obj = load_object(text)
    if not isinstance(obj, KernelCard):
        raise KernelError(f"{text!r} is a {type(obj).__name__}, not a KernelCard "
                          "(pass a card, or use compile --signature for a bare @triton.jit function)")
    return obj


def load_object(text: str) -> Any:
    """Import ``path/to/file.py:name`` or ``package.module:name``; KernelError if it cannot."""
    where, _, attr = text.rpartition(":")
    if not where or not attr:
        raise KernelError(f"{text!r} must look like path/to/file.py:name or package.module:name")
    try:
        if where.endswith(".py") or "/" in where:
            path = Path(where)
            if not path.is_file():
                raise KernelError(f"kernel file {where!r} does not exist")
            mod_name = f"occmodel_user_{abs(hash(str(path.resolve())))}"
            module = sys.modules.get(mod_name)
            if module is None:
                spec = importlib.util.spec_from_file_location(mod_name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_name] = module
                spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except KernelError:
        raise
    except (Exception, SystemExit) as exc:  # the user's module failed to import (or called sys.exit)
        sys.modules.pop(f"occmodel_user_{abs(hash(str(Path(where).resolve())))}", None)
        raise KernelError(f"cannot import {where!r}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    if not hasattr(module, attr):
        names = [n for n in dir(module) if not n.startswith("_")]
        raise KernelError(f"{where!r} has no attribute {attr!r}{suggest(attr, names)}")
    return getattr(module, attr)
