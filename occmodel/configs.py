"""Configs and workload points from what a user lists (the CLI's -D, --warps, --stages,
--points; scripts call the same functions).

A config is a plain dict holding every parameter of a kernel (its constexprs or card
parameters, ``num_warps``, ``num_stages``), checked by the kernel's ``resolve``.
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

from .card import Config, KernelCard
from .errors import ConfigError

Defines = Sequence[tuple[str, Sequence[Any]]]      # [(NAME, [V1, V2, ...]), ...] in the order given
MAX_SWEEP = 100_000          # configs in one sweep (a 216-config compile sweep takes minutes)


def check_sweep_size(sizes: Mapping[str, int], what: str = "sweep") -> None:
    """ConfigError when the product of the axis sizes exceeds MAX_SWEEP (checked before building it)."""
    total = 1
    for n in sizes.values():
        total *= max(n, 1)
    if total > MAX_SWEEP:
        axes = " x ".join(f"{k} {n:,}" for k, n in sizes.items())
        raise ConfigError(f"the {what} has {total:,} configs ({axes}); the limit is {MAX_SWEEP:,}")


def baseline(kernel: KernelCard, given: Mapping[str, Any] | None = None, fixed: Mapping[str, Any] | None = None,
             fill: Defines = ()) -> Config:
    """The kernel's baseline with `given` (a --baseline) on top, then `fixed`.
    `fill` (a sweep's lists) supplies the first listed value of a parameter that has no value
    otherwise (a bare kernel's constexpr without a default)."""
    start = {**kernel.baseline, **(given or {})}
    for name, values in fill:
        if values and name not in start and kernel.param(name).default is None:
            start[name] = values[0]
    base = kernel.resolve(base=start)
    return kernel.resolve(fixed, base=base) if fixed else base


def candidate(kernel: KernelCard, base: Config, warps: int | None = None, stages: int | None = None,
              defines: Defines = ()) -> Config:
    """The baseline with one value per listed parameter changed."""
    overrides = {}
    for name, values in defines:
        if len(values) != 1:
            raise ConfigError(f"-D {name}={','.join(map(str, values))}: one value per parameter here "
                              "(use `occmodel table` to sweep)")
        overrides[name] = values[0]
    if warps is not None:
        overrides["num_warps"] = warps
    if stages is not None:
        overrides["num_stages"] = stages
    return kernel.resolve(overrides, base=base)


def sweep(kernel: KernelCard, base: Config, warps: Sequence[int] | None = None, stages: Sequence[int] | None = None,
          defines: Defines = ()) -> list[tuple[dict, Config | None, str]]:
    """The cartesian product of the listed values on top of `base`, as (requested values,
    config or None, error). An invalid value becomes an error row rather than ending the
    sweep; an unknown parameter name, or one listed twice, ends it at once."""
    axes: dict[str, list] = {}
    for name, values in defines:
        kernel.param(name)                      # unknown names fail before the sweep starts
        if name in axes:
            raise ConfigError(f"-D {name} given twice; list its values once: -D {name}=V1,V2")
        axes[name] = list(values)
    if warps:
        axes["num_warps"] = list(warps)
    if stages:
        axes["num_stages"] = list(stages)
    names = list(axes)
    check_sweep_size({k: len(v) for k, v in axes.items()})
    out = []
    for combo in itertools.product(*axes.values()):
        asked = dict(zip(names, combo))
        try:
            out.append((asked, kernel.resolve(asked, base=base), ""))
        except ConfigError as exc:
            out.append((asked, None, str(exc)))
    return out


def swept_names(cfgs: Sequence[Config]) -> list[str]:
    """Parameters that take more than one value over `cfgs`, in config order."""
    if not cfgs:
        return []
    return [k for k in cfgs[0] if len({repr(c[k]) for c in cfgs}) > 1]


def check_carveout(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise ConfigError(f"--carveout {value} is out of range; allowed 0..100 percent")
    return value


def workload_points(kernel: KernelCard, axes: Defines = (), defines: Defines = ()) -> tuple[list[dict], list[tuple]]:
    """(workload points, the defines that are kernel parameters): the product of the `axes`
    lists (--points), `defines` fixing other workload parameters (one value each);
    without axes, the kernel's default points."""
    workload = {p.name for p in kernel.workload_params}
    fixed = {}
    kernel_defines = []
    for name, values in defines:
        if name in workload:
            if len(values) != 1:
                raise ConfigError(f"-D {name}={','.join(map(str, values))}: list workload values with "
                                  f"--points {name}=...")
            fixed[name] = values[0]
        else:
            kernel_defines.append((name, values))
    axes = dict(axes)
    for n in axes:
        if n not in workload:
            raise ConfigError(f"--points {n}: not a workload parameter of {kernel.name}; valid: "
                              f"{', '.join(sorted(workload)) or 'none (a launcher states them in POINTS)'}")
    check_sweep_size({k: len(v) for k, v in axes.items()}, "set of workload points")
    if axes:
        points = [kernel.resolve_point({**fixed, **dict(zip(axes, combo))})
                  for combo in itertools.product(*axes.values())]
    else:
        points = ([kernel.resolve_point({**dict(pt), **fixed}) for pt in kernel.default_points]
                  or [kernel.resolve_point(fixed)])
    return points, kernel_defines


def plain(value: Any) -> Any:
    """A config value as it prints (tl.float16 -> 'fp16')."""
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    from .compile import _jsonable
    return _jsonable(value)


def describe(cfg: Mapping[str, Any], names: Sequence[str] | None = None) -> str:
    """'BLOCK_M=64, num_warps=4' (all parameters, or `names`)."""
    return ", ".join(f"{k}={plain(cfg[k])}" for k in (names if names is not None else cfg))
