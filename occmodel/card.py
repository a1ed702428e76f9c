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
  symbols (see :func:`symbols`) — the model (optional: without it, compiles decide);
* the GPU side (``make_inputs``, ``launch``, ``reference``, ``bytes_moved``...),
  which imports torch lazily, so the card itself loads without torch.

Every optional hook is a method of :class:`KernelCard` with a documented default
(the table in its docstring); a bare kernel is a card that knows nothing more.

A config is a plain ``dict[str, int | str]`` holding every parameter;
:meth:`KernelCard.resolve` builds and validates one.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ._lazy import sympy

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
    maximum: int = 2**31 - 1         # launch values and constexprs are 32-bit for Triton (and the model's arrays)
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
            if value > self.maximum:
                raise ConfigError(f"{self.name}={value} is too large; allowed <= {self.maximum:,}")
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


@dataclass(frozen=True)
class Secondary:
    """A further kernel of the same launch (e.g. a split-KV combine), as rank costs it:
    its grid, loop iterations per CTA and bytes per iteration."""

    name: str
    grid: int
    iterations: int
    tile_bytes: int          # bytes per iteration per CTA
    dram_bytes: int = 0      # of which from DRAM (0: L2-resident, just written)
    ahead: int = 0           # its loop's pipelining (0: plain loads)
    blocks_per_sm: int = 8   # an assumption for small helper kernels (their grids are about one wave)


@dataclass
class KernelCard:
    """The kernel contract every consumer uses. A card subclass overrides what a person
    knows; every hook below has a documented default, so a bare ``@triton.jit`` kernel
    (:class:`occmodel.bare.BareKernel`) is the zero-knowledge case of the same contract.

    Defaults, and what a consumer does with them:

    ===========================  ========================  ==========================================
    hook                         default                   consumer when it is the default
    ===========================  ========================  ==========================================
    shared_memory / registers    None (no hand model)      numbers come from compiles (exact)
    signature / constexprs       required for compiling    --
    sweep()                      [the baseline]            accuracy sweeps the flags' product
    grid / loop_iterations       None (unknown)            rank refuses, naming the missing hook
    cta_iterations               None (all CTAs alike)     rank runs every CTA loop_iterations times
    bytes_moved / flops          None (unknown)            bandwidth columns say "unknown"
    make_inputs / launch         KernelError               validate needs them (a launcher)
    reference                    None (no check)           "timed without a correctness check"
    torch_baseline               None                      no torch comparison row
    secondary_kernels            []                        rank costs the main kernel only
    at_point                     itself                    every point shares one compile
    loop_tile_bytes              None                      rank uses the TTGIR's pipelined slots
    work_units                   1.0 per launch            throughput in launches/s
    ===========================  ========================  ==========================================
    """

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
    optional_workload: tuple[str, ...] = ()   # workload keys some default points leave out (no default of their own)

    @property
    def kind(self) -> str:
        """"card" for a hand-written card, "bare kernel" for the zero-knowledge case."""
        return "card"

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
        """A workload point with defaults filled and values checked; an optional key (optional_workload:
        a row pitch only some points give) stays out unless `point` gives it -- the launcher's own
        default applies, never another point's value."""
        out = {p.name: p.default for p in self.workload_params if p.name not in self.optional_workload}
        names = [p.name for p in self.workload_params]
        for key, value in point.items():
            if key not in names:
                raise ConfigError(f"unknown workload parameter {key!r} for kernel {self.name!r}; valid: "
                                  f"{', '.join(names) or '(none: give the launcher a POINTS list)'}"
                                  f"{suggest(key, names)}")
            out[key] = next(p for p in self.workload_params if p.name == key).check(value)
        return out

    def sweep(self) -> list[Config]:
        """The configs `occmodel accuracy` checks by default (default: the baseline alone)."""
        return [self.resolve()]

    # ------------------------------------------------------------ model
    def symbols(self) -> dict[str, sympy.Symbol]:
        return symbols(p.name for p in self.all_params if not isinstance(p.default, str))

    def shared_memory(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr | None:
        """Bytes of shared memory Triton allocates, as an expression over the numeric
        parameter symbols (`cfg` supplies the non-numeric ones, e.g. dtype); None: no
        hand model (consumers compile instead)."""
        return None

    def registers(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr | None:
        """Estimated registers per thread (before ptxas's 255 cap); None: no hand model."""
        return None

    def has_model(self, cc: tuple[int, int], cfg: Config) -> bool:
        """Whether both hand expressions exist for this arch and config (building them costs
        sympy: the answer is memoised per arch and string parameters, see occmodel.model)."""
        cls = type(self)
        if cls.shared_memory is KernelCard.shared_memory or cls.registers is KernelCard.registers:
            return False
        from .model import model_exists
        return model_exists(self, cc, cfg)

    # ---------------------------------------------------------- compile
    def signature(self, cfg: Config) -> dict[str, str] | str:
        """Triton AOT types of the runtime parameters for `cfg` (see compile_kernel)."""
        raise KernelError(f"kernel {self.name!r} states no signature")

    def constexprs(self, cfg: Config) -> dict[str, Any]:
        """The constexpr values a launch of `cfg` passes."""
        raise KernelError(f"kernel {self.name!r} states no constexprs")

    # ------------------------------------------- workload (GPU side, torch lazily)
    def grid(self, cfg: Config, point: Mapping[str, Any]) -> int | None:
        """CTAs one launch of the main kernel starts (None: unknown)."""
        return None

    def launch_grid(self, cfg: Config, point: Mapping[str, Any]) -> tuple[int, ...] | None:
        """The main kernel's launch grid as known, x first: (x, y, z), or (CTAs,) when only the count
        is known (None: unknown)."""
        g = self.grid(cfg, point)
        return None if g is None else (int(g),)

    def scalar_args(self, cfg: Config, point: Mapping[str, Any]) -> dict[str, int] | None:
        """The main kernel's integer launch arguments at `point`, by parameter name (None: unknown)."""
        return None

    def float_args(self, cfg: Config, point: Mapping[str, Any]) -> dict[str, float] | None:
        """The main kernel's float launch arguments at `point` (a resize's scale), by parameter name
        (None: unknown)."""
        return None

    def index_data(self, cfg: Config, point: Mapping[str, Any]) -> dict[str, Any] | None:
        """The launch's integer index tensors whose values are known at `point`, by parameter name (flat
        numpy int64 arrays): what a gather reads its row or expert ids from (None: none known)."""
        return None

    def tensor_data(self, cfg: Config, point: Mapping[str, Any]) -> dict[str, Any] | None:
        """The launch's tensors whose values are known at `point`, integer and float, by parameter name:
        flat numpy arrays (int64, float32) in memory order from the argument's pointer -- what a gather
        computes its addresses from (a grid_sample's coordinates, a scatter's ids). None: none known."""
        return None

    def tensor_bytes(self, cfg: Config, point: Mapping[str, Any]) -> dict[str, int] | None:
        """The bytes each tensor argument of the launch spans at `point` (first to last element, a strided
        view's gaps included), by parameter name, whether or not its values are known (a meta tensor's
        too): how large an atomic's target is against the L2. None: unknown."""
        return None

    def loop_iterations(self, cfg: Config, point: Mapping[str, Any]) -> int | None:
        """Main-loop iterations each CTA runs (what a num_stages pipeline must fill; None: unknown)."""
        return None

    def cta_iterations(self, cfg: Config, point: Mapping[str, Any]) -> Sequence[int] | None:
        """Main-loop iterations of every CTA in launch order (program id x fastest) when they differ --
        ragged work such as segments of different lengths; 0 for a CTA that returns at once. None:
        every CTA runs loop_iterations."""
        return None

    def bytes_moved(self, cfg: Config, point: Mapping[str, Any]) -> int | None:
        """Unavoidable DRAM bytes of one launch (None: unknown)."""
        return None

    def flops(self, cfg: Config, point: Mapping[str, Any]) -> int | None:
        """Floating-point operations of one launch (None: unknown)."""
        return None

    def secondary_kernels(self, cfg: Config, point: Mapping[str, Any]) -> list[Secondary]:
        """Further kernels of the same launch that rank should cost (default: none)."""
        return []

    def at_point(self, point: Mapping[str, Any]) -> "KernelCard":
        """This kernel as it is compiled for `point` (default: itself -- a card's signature does not
        depend on the point; a bare kernel's launcher may, see BareKernel.at_point)."""
        return self

    def loop_tile_bytes(self, cfg: Config) -> int | None:
        """Bytes one CTA loads per main-loop iteration (None: from the TTGIR or the bytes moved)."""
        return None

    def make_inputs(self, cfg: Config, point: Mapping[str, Any], device: str = "cpu", seed: int = 0) -> dict:
        raise KernelError(f"kernel {self.name!r} has no launcher: make_inputs is missing "
                          "(give --launcher FILE.py with make_inputs(point) and launch(inputs, cfg))")

    def launch(self, inputs: dict, cfg: Config):
        """Run the Triton kernel(s) on `inputs`; return the output tensor."""
        raise KernelError(f"kernel {self.name!r} has no launcher: launch is missing "
                          "(give --launcher FILE.py with make_inputs(point) and launch(inputs, cfg))")

    def has_launcher(self) -> bool:
        """Whether make_inputs and launch are provided (validate needs both)."""
        cls = type(self)
        return cls.make_inputs is not KernelCard.make_inputs and cls.launch is not KernelCard.launch

    def reference(self, inputs: dict):
        """The readable torch reference (float32 or better); None: no correctness check."""
        return None

    def has_reference(self) -> bool:
        return type(self).reference is not KernelCard.reference

    def torch_baseline(self, inputs: dict):
        """A plain-torch implementation to time beside the kernel (None: none)."""
        return None

    def has_torch_baseline(self) -> bool:
        return type(self).torch_baseline is not KernelCard.torch_baseline

    def work_units(self, point: Mapping[str, Any]) -> float:
        """How many `throughput_unit`s one launch produces (e.g. tokens)."""
        return 1.0


# ------------------------------------------------------------------ loading
def load_card(spec: str | KernelCard = DEFAULT_CARD) -> KernelCard:
    """A built-in card by name (or a card module under occmodel/kernels), or
    ``path/to/file.py:attr`` / ``package.module:attr`` naming a KernelCard.
    For a kernel source that may also be a bare @triton.jit function, use
    :func:`occmodel.source.load_source` (the one discovery path of the CLI)."""
    if isinstance(spec, KernelCard):
        return spec
    text = str(spec)
    if ":" not in text:
        if text not in BUILTIN_CARDS:
            card = None
            if text.isidentifier():          # a card module not (yet) listed in BUILTIN_CARDS
                try:
                    card = getattr(importlib.import_module(f"occmodel.kernels.{text}"), "CARD", None)
                except ModuleNotFoundError:
                    card = None
            if isinstance(card, KernelCard):
                return card
            raise KernelError(f"unknown kernel {text!r}; built-in kernels: {', '.join(BUILTIN_CARDS)}"
                              f"{suggest(text, BUILTIN_CARDS)} (or pass path/to/file.py:name)")
        return importlib.import_module(f"occmodel.kernels.{text}").CARD
    obj = load_object(text)
    if not isinstance(obj, KernelCard):
        raise KernelError(f"{text!r} is a {type(obj).__name__}, not a KernelCard "
                          "(a bare @triton.jit function works with --signature or --args)")
    return obj


def import_file(where: str):
    """Import a Python file by path (its folder put on sys.path, so it can import the
    modules beside it); the same module object on every call. KernelError if it cannot."""
    path = Path(where)
    if not path.is_file():
        raise KernelError(f"kernel file {where!r} does not exist")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    mod_name = f"occmodel_user_{abs(hash(str(path.resolve())))}"
    module = sys.modules.get(mod_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise KernelError(f"{where!r} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            sys.modules.pop(mod_name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise KernelError(f"cannot import {where!r}: {_one_line(exc)}") from None
    return module


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit: {exc.code} (the file called sys.exit while being imported)"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")


def load_object(text: str) -> Any:
    """Import ``path/to/file.py:name`` or ``package.module:name``; KernelError if it cannot."""
    where, _, attr = text.rpartition(":")
    if not where or not attr:
        raise KernelError(f"{text!r} must look like path/to/file.py:name or package.module:name")
    if where.endswith(".py") or "/" in where:
        module = import_file(where)
    else:
        try:
            module = importlib.import_module(where)
        except BaseException as exc:  # the user's module failed to import
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise KernelError(f"cannot import {where!r}: {_one_line(exc)}") from None
    if not hasattr(module, attr):
        names = [n for n in dir(module) if not n.startswith("_")]
        raise KernelError(f"{where!r} has no attribute {attr!r}{suggest(attr, names)}")
    return getattr(module, attr)
