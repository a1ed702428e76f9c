"""A bare ``@triton.jit`` kernel as a :class:`~occmodel.card.KernelCard` that knows nothing more.

    kernel = bare_kernel(fn, signature="X=*fp16:16,N=i32:16")            # or args=..., launcher=...
    kernel.resolve({"BLOCK": 1024, "num_warps": 4})                    # a config, checked

What a card states by hand comes, for a bare kernel, from the user's inputs:

* parameters: the kernel's constexprs (their Python defaults, if any, are the
  defaults; a constexpr without one must be given a value);
* the launch specialization, in this order: ``signature`` (Triton's AOT types:
  positional for the runtime parameters in order, or ``NAME=TYPE`` pairs), else
  ``args`` (a function ``args(cfg)`` returning example launch arguments), else the
  launcher's ``example_args(cfg, point)``; from arguments the exact specialization
  Triton's launcher would apply is derived (:func:`occmodel.compile.signature_from_args`);
* the GPU side and workload (make_inputs, launch, reference, grid, points...):
  an optional :class:`~occmodel.launcher.Launcher`;
* shared memory and registers: no hand model (``None``): consumers compile.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .card import LAUNCH_PARAMS, Config, KernelCard, Param
from .errors import ConfigError, KernelError
from .launcher import Launcher


def constexpr_value(value: Any) -> Any:
    """A constexpr value from the command line: int (0x.. too), float, True/False,
    ``tl.<dtype>`` / ``triton.language.<dtype>``, else the string itself."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    for conv in (lambda t: int(t, 0), float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text in ("True", "False"):
        return text == "True"
    if text.startswith(("tl.", "triton.language.")):
        import triton.language as tl
        attr = text.rsplit(".", 1)[1]
        if isinstance(getattr(tl, attr, None), tl.dtype):
            return getattr(tl, attr)
        raise ConfigError(f"{text!r} is not a triton.language dtype (e.g. tl.float16, tl.bfloat16, tl.float32)")
    return text


@dataclass(frozen=True)
class BareParam(Param):
    """A constexpr of a bare kernel: any value (parsed as :func:`constexpr_value`)."""

    def check(self, value: Any) -> Any:
        return constexpr_value(value)


@dataclass
class BareKernel(KernelCard):
    fn: Any = None                                   # the JITFunction
    fixed_signature: dict[str, str] | None = None    # from `signature`
    from_example: tuple[str, ...] = ()               # constexprs whose value came from the example arguments
    example_error: str | None = None                 # why the example arguments gave no constexpr values
    launcher_knobs: tuple[str, ...] = ()             # tunables of the launcher that are not constexprs of the kernel
    args_fn: Callable[..., Any] | None = None        # from `args`
    heuristics: tuple = ()                           # (name, fn(args)) of the @triton.heuristics wrapping the kernel
    wrapped: Any = None                              # what the user gave (autotune / heuristics wrappers included)
    launcher: Launcher | None = None
    _specs: dict = field(default_factory=dict, repr=False)

    @property
    def kind(self) -> str:
        return "bare kernel"

    # ----------------------------------------------------------- config
    def check(self, cfg: Config) -> None:
        missing = [p.name for p in self.params if cfg.get(p.name) is None and not _none_default(self.fn, p.name)]
        if missing:
            why = (f" (the example arguments could not give it: {self.example_error}, called with the launcher's "
                   "BASELINE and the kernel's defaults only -- put the tunables it reads in BASELINE)"
                   if self.example_error else "")
            raise ConfigError(f"constexpr {', '.join(missing)} of {self.name} has no value; give it, e.g. "
                              f"--baseline {missing[0]}=64 (or -D {missing[0]}=64 to set or sweep it){why}")

    def resolve(self, overrides: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None) -> Config:
        """As a card resolves a config, but a constexpr taken from the example arguments (from_example)
        that `overrides` does not set, and `base` holds only as derived (its value is what the example
        arguments give for `base` itself), is read again from the example arguments of this config: a
        launcher that derives it from a tunable (ONE_TILE = N <= BLOCK_N, EVEN_K = K % BLOCK_K == 0,
        NUM_STAGES = num_stages, ROWS = BLOCK // D) launches each config with its own value, not the
        baseline's -- in a sweep on a resolved baseline (occmodel.configs) too."""
        cfg = super().resolve(overrides, base)
        derived = [n for n in self.from_example if n not in (overrides or {})]
        if not derived:
            return cfg
        point = self.default_points[0] if self.default_points else {}
        try:
            # the launcher derives them: it sees the config without their stale values (BLOCK_C = num_warps
            # unless the config gives one: the baseline's BLOCK_C 8 must not follow num_warps 2), else with them
            try:
                values = self._example_values({k: v for k, v in cfg.items() if k not in derived}, point)
            except (KernelError, ConfigError):
                values = None
            if values is None:
                values = self._example_values(cfg, point)
            if base is not None and values is not None:    # a value `base` pins (a --baseline), not one it derived
                own = self._example_values(dict(base), point) or {}
                derived = [n for n in derived if n not in base or own.get(n) is None
                           or self.param(n).check(own[n]) == base[n]]
        except (KernelError, ConfigError):
            return cfg                   # compiling says why, as for any config whose example fails
        for n in (derived if values is not None else ()):
            if values.get(n) is not None:
                cfg[n] = self.param(n).check(values[n])
        return cfg

    # ---------------------------------------------------------- compile
    def _spec(self, cfg: Config) -> tuple[dict[str, str], dict[str, Any]]:
        """(signature, constexprs) for cfg, from the first source that states them."""
        consts = {p.name: cfg[p.name] for p in self.params if p.name not in self.launcher_knobs}
        if self.fixed_signature is not None:
            return dict(self.fixed_signature), consts
        key = tuple(sorted((k, repr(v)) for k, v in cfg.items()))
        hit = self._specs.get(key)
        if hit is not None:
            return hit
        from .compile import signature_from_args
        if self.args_fn is not None:
            values, who = _call(self.args_fn, cfg, self.default_points), "the --args function"
        elif self.launcher is not None and self.launcher.example_args is not None:
            values, who = _call(self.launcher.example_args, cfg, self.default_points), "the launcher's example_args"
        else:
            runtime = ", ".join(runtime_params(self.fn)) or "none"
            raise KernelError(f"bare kernel {self.name} needs its launch types: give --signature "
                              f"(NAME=TYPE,... for its runtime parameters {runtime}; e.g. X=*fp16:16,N=i32:16) "
                              "or --args FILE.py:fn returning example launch arguments for a config")
        values = _as_mapping(self.fn, values, who)
        values.update(consts)                        # the config's constexprs win over the example's
        values = {k: v for k, v in values.items() if k not in ("num_warps", "num_stages")}
        self._specs[key] = spec = signature_from_args(self.fn, values)
        return spec

    def signature(self, cfg: Config) -> dict[str, str]:
        return self._spec(cfg)[0]

    def constexprs(self, cfg: Config) -> dict[str, Any]:
        return self._spec(cfg)[1]

    def at_point(self, point: Mapping[str, Any]) -> "BareKernel":
        """This kernel as its launcher specializes it at `point`: the launcher's example_args (or the
        --args function) called there, and the constexprs taken from those arguments read there (a
        point's dtype or head size changes the cubin). Itself when the launch types do not come from
        a point (--signature, or no launcher)."""
        if self.fixed_signature is not None or self.launcher is None:
            return self
        if self.args_fn is None and self.launcher.example_args is None:
            return self
        import dataclasses
        rest = tuple(p for p in self.default_points if dict(p) != dict(point))
        launcher = dataclasses.replace(self.launcher, points=(dict(point), *rest))
        return bare_kernel(self.wrapped or self.fn, args=self.args_fn, launcher=launcher, name=self.name)

    def specialization_source(self) -> str:
        if self.fixed_signature is not None:
            return "--signature as given"
        where = f" at point {dict(self.default_points[0])}" if self.default_points else ""
        heur = [n for n in self.from_example if n in dict(self.heuristics)]
        plain = [n for n in self.from_example if n not in heur]
        taken = (f"; constexpr {', '.join(plain)} taken from those arguments" if plain else "") + \
                (f"; constexpr {', '.join(heur)} set by the kernel's @triton.heuristics on them" if heur else "")
        taken += " (override with --baseline)" if taken else ""
        if self.args_fn is not None:
            return "derived from the --args function's example arguments, as Triton's launcher specializes" + taken
        if self.launcher is not None and self.launcher.example_args is not None:
            return f"derived from the launcher's example_args{where}, as Triton's launcher specializes" + taken
        return "none given"

    # ---------------------------------------------------------- workload
    def _hook(self, name: str, guarded: bool = True):
        """The launcher's hook `name` (None without it); a hook of the model (grid, cta_iterations, ...)
        through :func:`_guarded`, a run's own (reference, torch_baseline) as the user wrote it."""
        f = getattr(self.launcher, name, None) if self.launcher is not None else None
        return _guarded(self.name, name, f) if f is not None and guarded else f

    def grid(self, cfg, point):
        dims = self.launch_grid(cfg, point)
        return None if dims is None else math.prod(dims)

    def launch_grid(self, cfg, point):
        """The launcher's grid(cfg, point) as a tuple: (CTAs,) from an int, else the launch grid it
        returned (1-3 ints, x first)."""
        f = self._hook("grid")
        if f is None:
            return None
        g = f(cfg, point)
        dims = [int(x) for x in g] if isinstance(g, (tuple, list)) else [int(g)]
        if not 1 <= len(dims) <= 3 or min(dims) < 1:
            raise KernelError(f"launcher of {self.name}: grid(cfg, point) returned {g!r}; allowed: an int >= 1 "
                              "or a tuple of 1-3 ints >= 1 (the launch grid, x first)")
        return tuple(dims)

    def scalar_args(self, cfg, point):
        """The integer arguments of the launch at `point` (the launcher's example_args, or the --args
        function), by parameter name; None without either."""
        values = self._example_values(cfg, point)
        if values is None:
            return None
        return {k: int(v) for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}

    def float_args(self, cfg, point):
        """The float arguments of the launch at `point` (as scalar_args), by parameter name."""
        values = self._example_values(cfg, point)
        return None if values is None else {k: float(v) for k, v in values.items() if isinstance(v, float)}

    def _example_values(self, cfg, point) -> dict[str, Any] | None:
        """The launcher's example_args (or the --args function) at `point`, by parameter name; None
        without either or with a fixed --signature."""
        source = self.args_fn or (self.launcher.example_args if self.launcher is not None else None)
        if source is None or self.fixed_signature is not None:
            return None
        values = _as_mapping(self.fn, _call(source, {**cfg}, [dict(point)]), "the example arguments")
        return _heuristic_values(self.heuristics, values, cfg)

    def index_data(self, cfg, point):
        """The integer tensors of the launcher's example_args that hold data (on the CPU, not the meta
        device): a routing's expert ids, a gather's row ids; flat numpy int64 arrays by parameter name.
        None without example_args or without any."""
        values = self._example_values(cfg, point)
        if values is None:
            return None
        out = {k: _int_values(v) for k, v in values.items()}
        return {k: v for k, v in out.items() if v is not None} or None

    def tensor_data(self, cfg, point):
        """The integer and float tensors of the launcher's example_args that hold data (on the CPU, not
        the meta device), by parameter name: flat numpy arrays (int64 / float32) in memory order from each
        tensor's first element (what the kernel's pointer arithmetic addresses). None without any."""
        values = self._example_values(cfg, point)
        if values is None:
            return None
        out = {k: _memory_values(v) for k, v in values.items()}
        return {k: v for k, v in out.items() if v is not None} or None

    def tensor_bytes(self, cfg, point):
        """The bytes every tensor of the launcher's example_args spans (meta tensors too), by parameter
        name; None without example_args."""
        values = self._example_values(cfg, point)
        if values is None:
            return None
        return {k: n for k, n in ((k, _span_bytes(v)) for k, v in values.items()) if n is not None}

    def loop_iterations(self, cfg, point):
        f = self._hook("loop_iterations")
        return None if f is None else int(f(cfg, point))

    def cta_iterations(self, cfg, point):
        """The launcher's cta_iterations(cfg, point): one int >= 0 per CTA of grid(cfg, point), in launch
        order; None without the hook."""
        f = self._hook("cta_iterations")
        if f is None:
            return None
        got = f(cfg, point)
        grid = self.grid(cfg, point)
        try:
            its = [int(x) for x in got]
        except (TypeError, ValueError):
            its = None
        if its is None or len(its) != grid or min(its, default=0) < 0:
            raise KernelError(f"launcher of {self.name}: cta_iterations(cfg, point) must give one int >= 0 per CTA "
                              f"of grid(cfg, point) = {grid}; got {type(got).__name__} of "
                              f"{len(its) if its is not None else '?'} values")
        return its

    def bytes_moved(self, cfg, point):
        f = self._hook("bytes_moved")
        return None if f is None else int(f(point))

    def flops(self, cfg, point):
        f = self._hook("flops")
        return None if f is None else int(f(point))

    def secondary_kernels(self, cfg, point):
        """The launcher's further kernels of one launch (a split-K reduction, a merge), each a dict of
        card.Secondary's fields; [] without the hook."""
        f = self._hook("secondary_kernels")
        if f is None:
            return []
        return [_secondary(self.name, x) for x in (f(cfg, point) or [])]

    def has_launcher(self) -> bool:
        """Whether it can run: a launcher with make_inputs and launch (rank needs neither)."""
        return self.launcher is not None and self.launcher.runs

    def make_inputs(self, cfg, point, device="cpu", seed=0):
        if self.launcher is None:
            return super().make_inputs(cfg, point, device, seed)
        return self.launcher.inputs(point, device=device, seed=seed)

    def launch(self, inputs, cfg):
        if self.launcher is None:
            return super().launch(inputs, cfg)
        self.launcher.require_run()
        return self.launcher.launch(inputs, cfg)

    def reference(self, inputs):
        f = self._hook("reference", guarded=False)
        return None if f is None else f(inputs)

    def has_reference(self) -> bool:
        return self._hook("reference") is not None

    def torch_baseline(self, inputs):
        f = self._hook("torch_baseline", guarded=False)
        return None if f is None else f(inputs)

    def has_torch_baseline(self) -> bool:
        return self._hook("torch_baseline") is not None


def _secondary(kernel: str, spec: Any) -> Any:
    """A card.Secondary from one entry of a launcher's secondary_kernels; KernelError naming a bad key or value."""
    import dataclasses
    from .card import Secondary
    names = [f.name for f in dataclasses.fields(Secondary)]
    if not isinstance(spec, Mapping):
        raise KernelError(f"launcher of {kernel}: secondary_kernels must return dicts with keys {', '.join(names)}; "
                          f"got a {type(spec).__name__}")
    unknown = [k for k in spec if k not in names]
    missing = [k for k in ("name", "grid", "iterations", "tile_bytes") if k not in spec]
    if unknown or missing:
        raise KernelError(f"launcher of {kernel}: secondary kernel {spec.get('name', '?')!r} "
                          + (f"has unknown key {unknown[0]!r}" if unknown else f"lacks {', '.join(missing)}")
                          + f"; allowed: {', '.join(names)}")
    bad = [k for k in names[1:] if k in spec and (not isinstance(spec[k], int) or isinstance(spec[k], bool)
                                                  or spec[k] < (1 if k in ("grid", "iterations", "blocks_per_sm") else 0))]
    if bad:
        raise KernelError(f"launcher of {kernel}: secondary kernel {spec['name']!r} {bad[0]}={spec[bad[0]]!r}; "
                          f"allowed: an int >= {1 if bad[0] in ('grid', 'iterations', 'blocks_per_sm') else 0}")
    if spec.get("dram_bytes", 0) > spec["tile_bytes"]:
        # session 21: a launcher gave a fill kernel's whole tensor as dram_bytes (822 MB a CTA); rank charged it
        raise KernelError(f"launcher of {kernel}: secondary kernel {spec['name']!r} dram_bytes={spec['dram_bytes']} "
                          f"exceeds tile_bytes={spec['tile_bytes']}; allowed: 0 <= dram_bytes <= tile_bytes (both are "
                          f"the bytes one CTA loads per iteration; dram_bytes the part of them from DRAM)")
    return Secondary(**{k: spec[k] for k in names if k in spec})


# ------------------------------------------------------------ building one
def runtime_params(fn) -> list[str]:
    from . import triton_compat as tc
    return [name for name, is_constexpr, *_ in tc.param_info(fn) if not is_constexpr]


def _none_default(fn, name: str) -> bool:
    """A constexpr whose Python default is None may stay None."""
    for p in fn.params:
        if p.name == name:
            return bool(p.has_default and p.default is None)
    return False


def parse_signature(fn, text: str | Mapping[str, str]) -> dict[str, str]:
    """--signature as NAME=TYPE pairs (dict or 'X=*fp16:16,N=i32') or positional types of
    the runtime parameters in order ('*fp16:16,i32'); the AOT form with constexpr values in
    their places (one entry per parameter) is accepted too. ConfigError on a count mismatch,
    showing the NAME=TYPE form."""
    from . import triton_compat as tc
    info = tc.param_info(fn)
    names = [n for n, *_ in info]
    runtime = [n for n, c, *_ in info if not c]
    if isinstance(text, Mapping):
        pairs = dict(text)
    else:
        parts = [p.strip() for p in str(text).split(",") if p.strip()]
        if parts and all("=" in p for p in parts):
            pairs = {k.strip(): v.strip() for k, v in (p.split("=", 1) for p in parts)}
        elif any("=" in p for p in parts):
            raise ConfigError(f"--signature {text!r} mixes NAME=TYPE and positional entries; use one form")
        elif len(parts) == len(runtime):
            pairs = dict(zip(runtime, parts))
        elif len(parts) == len(names):            # Triton's AOT form: constexpr values in place
            pairs = dict(zip(names, parts))
        else:
            example = ",".join(f"{n}=TYPE" for n in runtime)
            raise ConfigError(f"--signature has {len(parts)} types for {len(runtime)} runtime parameters of "
                              f"{fn.__name__} ({', '.join(runtime) or 'none'}); give them in that order, or as "
                              f"NAME=TYPE pairs: {example}")
    unknown = [k for k in pairs if k not in names]
    if unknown:
        from .errors import suggest
        raise ConfigError(f"--signature names {unknown[0]!r}, not a parameter of {fn.__name__} "
                          f"({', '.join(names)}){suggest(unknown[0], names)}")
    missing = [n for n, c, *_ in info if not c and n not in pairs and not _has_default(fn, n)]
    if missing:
        raise ConfigError(f"--signature gives no type for {', '.join(missing)} of {fn.__name__}; e.g. "
                          f"{missing[0]}=i32 (':16' when the launch value is a multiple of 16)")
    return pairs


def _guarded(kernel: str, name: str, f: Callable) -> Callable:
    """f, whose failure (a user's hook on a config value it cannot take: -D BLOCK=abc) is a KernelError
    naming the hook and its arguments, one line, instead of the hook's traceback."""
    def call(*args):
        try:
            return f(*args)
        except (KernelError, ConfigError):
            raise
        except Exception as exc:
            given = "; ".join(", ".join(f"{k}={v!r}" for k, v in a.items()
                                        if isinstance(v, (int, float, str)) and k not in ("num_warps", "num_stages"))
                              for a in args if isinstance(a, Mapping))
            raise _failure(f"launcher of {kernel}: {name}()", given or "its arguments", exc) from None
    return call


def _failure(what: str, given: str, exc: Exception) -> KernelError:
    """One line: what of the user's failed, on which values, and its exception's first line."""
    return KernelError(f"{what} failed for {given}: {type(exc).__name__}: {exc}".splitlines()[0])


def _has_default(fn, name: str) -> bool:
    return any(p.name == name and p.has_default for p in fn.params)


def _call(f: Callable, cfg: Config, points) -> Any:
    """f(cfg) or f(cfg, point) (the first default point), by how many arguments f takes."""
    try:
        n = len([p for p in inspect.signature(f).parameters.values()
                 if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        n = 1
    try:
        return f(dict(cfg), dict(points[0]) if points else {}) if n >= 2 else f(dict(cfg))
    except (KernelError, ConfigError):
        raise
    except Exception as exc:
        given = ", ".join(f"{k}={v}" for k, v in cfg.items() if k not in ("num_warps", "num_stages"))
        raise _failure(f"{getattr(f, '__name__', f)}(cfg)", given or "the baseline", exc) from None


def _int_values(v: Any):
    """A CPU integer tensor's values as a flat numpy int64 array; None for anything else (a meta
    tensor, a float tensor, a scalar). Duck-typed: torch is the launcher's, never imported here."""
    if getattr(getattr(v, "device", None), "type", None) != "cpu" or not hasattr(v, "numpy"):
        return None
    if not str(getattr(v, "dtype", "")).startswith(("torch.int", "torch.uint")):
        return None
    return _flat_ints(v, getattr(v, "_version", 0))


def _span_bytes(v: Any) -> int | None:
    """The bytes a tensor's elements span in memory, first to last (a strided view's gaps included);
    None for anything that is not a tensor. Duck-typed: any device, the meta device included."""
    if not all(hasattr(v, a) for a in ("shape", "stride", "element_size")):
        return None
    return 0 if any(int(n) == 0 for n in v.shape) else _span(v) * int(v.element_size())


def _span(t: Any) -> int:
    """The elements a non-empty tensor's storage spans from its first element to its last."""
    return 1 + sum((int(n) - 1) * abs(int(st)) for n, st in zip(t.shape, t.stride()))


@functools.lru_cache(maxsize=16)
def _flat_ints(v: Any, version: int):
    """_int_values' conversion, kept for the last few tensors (as _converted)."""
    import numpy as np
    return np.asarray(v.detach().reshape(-1).numpy(), dtype=np.int64)


def _memory_values(v: Any):
    """A CPU integer or float tensor's elements in memory order, from its first element to its last one
    (a strided view's gaps included), as a flat numpy array: int64 for integers (bool too), float32 for
    floating point (fp16 / bf16 widened); None for anything else (a meta tensor, a scalar). Duck-typed.
    The same tensor, unchanged since (its version counter), is converted once: rank asks per config."""
    if getattr(getattr(v, "device", None), "type", None) != "cpu" or not hasattr(v, "as_strided"):
        return None
    kind = str(getattr(v, "dtype", ""))
    if not kind.startswith(("torch.int", "torch.uint", "torch.float", "torch.bfloat", "torch.half", "torch.bool")):
        return None
    return _converted(v, getattr(v, "_version", 0), kind)


@functools.lru_cache(maxsize=16)
def _converted(v: Any, version: int, kind: str):
    """_memory_values' conversion, kept for the last few tensors (holding them keeps their ids unique)."""
    import numpy as np
    t = v.detach()
    if t.numel() == 0 or any(st < 0 for st in t.stride()):
        return None
    flat = t.as_strided((_span(t),), (1,), t.storage_offset())
    if kind.startswith(("torch.float", "torch.bfloat", "torch.half")):
        return np.asarray(flat.float().numpy(), dtype=np.float32)
    return np.asarray(flat.numpy(), dtype=np.int64)


def _as_mapping(fn, values: Any, who: str) -> dict[str, Any]:
    names = [p.name for p in fn.params]
    if isinstance(values, Mapping):
        return dict(values)
    if isinstance(values, (list, tuple)):
        if len(values) > len(names):
            raise KernelError(f"{who} returned {len(values)} arguments; {fn.__name__} takes {len(names)}")
        return dict(zip(names, values))
    raise KernelError(f"{who} returned a {type(values).__name__}; return a tuple of launch arguments or a "
                      "name -> value dict")


def wrapper_heuristics(fn) -> tuple:
    """(name, fn(args)) of every @triton.heuristics wrapped around the kernel, outermost first (Triton
    runs them in that order on the launch's arguments by name)."""
    out = []
    while fn is not None and not hasattr(fn, "params"):
        out += list((getattr(fn, "values", None) or {}).items()) if type(fn).__name__ == "Heuristics" else []
        fn = getattr(fn, "fn", None)
    return tuple(out)


def _heuristic_values(heuristics: tuple, values: dict, cfg: Mapping[str, Any]) -> dict:
    """`values` (example arguments by name) with what the kernel's @triton.heuristics make of them and of
    the config (IS_VARLEN = cu_seqlens is not None, EVEN = N % BLOCK == 0 for the config's BLOCK), as
    Triton's launcher runs them: outermost first, each on all arguments by name, overriding. A heuristic
    that cannot be evaluated there (it reads a meta tensor's data) is left out: the constexpr then asks
    for a value."""
    out = dict(values)
    for name, heur in heuristics:
        try:
            out[name] = heur({**{k: v for k, v in cfg.items() if v is not None}, **out})
        except Exception:           # noqa: BLE001 -- the user's lambda; a missing value is named later
            continue
    return out


def _defaults_from_example(fn, params: list, source: Callable, launcher, points, heuristics: tuple = ()) -> list:
    """Constexprs without a Python default take their value in the example arguments of the
    baseline at the first default point (e.g. HEAD_DIM from the tensors' shape). Returns (params,
    why the example arguments could not be read, or None)."""
    cfg = {p.name: p.default for p in params}
    cfg.update({"num_warps": 4, "num_stages": 3})
    cfg.update((launcher.baseline or {}) if launcher is not None else {})
    try:
        values = _as_mapping(fn, _call(source, cfg, points), "the example arguments")
    except (KernelError, ConfigError) as exc:
        return params, str(exc)        # check() names what is missing, and why the example did not say
    values = _heuristic_values(heuristics, values, cfg)
    given = dict(launcher.baseline or {}) if launcher is not None else {}
    heur = dict(heuristics)
    out = []
    for p in params:
        if (p.default is None or p.name in heur) and p.name not in given and values.get(p.name) is not None:
            how = "constexpr of the kernel, set by its @triton.heuristics" if p.name in heur else "constexpr of the kernel"
            p = BareParam(p.name, values[p.name], how + " (value from the example arguments)")
        out.append(p)
    return out, None


def bare_kernel(fn, *, signature: str | Mapping[str, str] | None = None, args: Callable | None = None,
                launcher: Launcher | None = None, name: str | None = None) -> BareKernel:
    """A BareKernel for `fn` (a @triton.jit function, possibly autotuned). `signature` and
    `args` exclude each other; without both, the launcher's example_args is used."""
    from .compile import jit_function
    from .errors import CompileError
    try:
        jf = jit_function(fn)
    except CompileError:
        raise KernelError(f"{fn!r} is neither a KernelCard nor a @triton.jit function") from None
    if signature is not None and args is not None:
        raise ConfigError("give either --signature or --args, not both")
    from . import triton_compat as tc
    params = []
    for p, (pname, is_constexpr, *_rest) in zip(jf.params, tc.param_info(jf)):
        if is_constexpr:
            default = p.default if p.has_default else None
            params.append(BareParam(pname, default, "constexpr of the kernel"))
    launch_names = {p.name for p in LAUNCH_PARAMS}
    clash = [p.name for p in params if p.name in launch_names]
    if clash:
        raise KernelError(f"{jf.__name__} has a constexpr named {clash[0]!r}, which occmodel reserves for the launch")
    points = tuple(launcher.points) if launcher is not None else ()
    source = args if args is not None else (launcher.example_args if launcher is not None else None)
    heuristics = wrapper_heuristics(fn)
    missing = [p.name for p in params if p.default is None or p.name in dict(heuristics)]
    example_error = None
    if missing and source is not None and signature is None:
        params, example_error = _defaults_from_example(jf, params, source, launcher, points, heuristics)
    workload, optional = (), ()
    if points:
        keys = list(dict.fromkeys(k for p in points for k in p))
        optional = tuple(k for k in keys if any(k not in p for p in points))
        # any value a point holds (an int, a dtype string, a bool flag), from the command line as constexpr_value
        # reads it; an optional key (left out of some point) has no default: the launcher's own applies there
        workload = tuple(BareParam(k, None if k in optional else points[0].get(k),
                                   "workload parameter (from the launcher's POINTS" + (", optional)" if k in optional else ")"),
                                   minimum=-2**63, maximum=2**63 - 1, tunable=False) for k in keys)
    baseline = {"num_warps": 4, "num_stages": 3}
    if launcher is not None and launcher.baseline:
        baseline.update(launcher.baseline)
    # a tunable of the launcher that the kernel does not take (BLOCK, from which the launcher derives the
    # kernel's ROWS = BLOCK // D): a parameter of the config, passed to the launcher's hooks, never compiled
    knobs = [k for k in baseline if k not in launch_names and k not in {p.name for p in params}]
    params += [BareParam(k, baseline[k], "tunable of the launcher (not a constexpr of the kernel: its hooks read it)")
               for k in knobs]
    kernel = BareKernel(name=name or jf.__name__, summary=f"bare @triton.jit kernel {jf.__name__}",
                        params=tuple(params), baseline=baseline, kernel=jf, workload_params=workload,
                        default_points=points, fn=jf, args_fn=args, launcher=launcher, heuristics=heuristics, wrapped=fn,
                        fixed_signature=None if signature is None else parse_signature(jf, signature))
    kernel.from_example = tuple(p.name for p in params if p.doc.endswith("(value from the example arguments)"))
    kernel.example_error = example_error
    kernel.launcher_knobs = tuple(knobs)
    kernel.optional_workload = optional
    kernel.specialization = kernel.specialization_source()
    return kernel
