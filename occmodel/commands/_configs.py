"""Turning CLI flags into card configs (shared by predict, table, compile, ...)."""

from __future__ import annotations

import itertools

from ..card import Config, KernelCard
from ..errors import ConfigError
from ._args import assignments, check_sweep_size, define, drop_configs, int_list  # noqa: F401


def add_config_args(p, sweep: bool = False) -> None:
    """--kernel, --baseline, --warps, --stages, -D; lists allowed when `sweep`."""
    p.add_argument("--kernel", default="decode_attention",
                   help="built-in card (decode_attention, matmul) or path/to/file.py:card "
                        "(default: decode_attention at the seed's baseline)")
    p.add_argument("--baseline", type=assignments, default=None, metavar="NAME=V,...",
                   help="baseline config, e.g. BLOCK_T=16,num_warps=4,num_stages=2 (default: the card's)")
    if sweep:
        p.add_argument("--warps", type=int_list, default=None, help="num_warps values, e.g. 4,8")
        p.add_argument("--stages", type=int_list, default=None, help="num_stages values, e.g. 2,3,4 or 1..4")
    else:
        p.add_argument("--warps", type=int, default=None, help="candidate num_warps (1, 2, 4, 8, 16, 32)")
        p.add_argument("--stages", type=int, default=None, help="candidate num_stages (>= 1)")
    p.add_argument("-D", dest="defines", type=define, action="append", default=[], metavar="NAME=VALUE",
                   help="set a card parameter" + (" (comma list to sweep: -D BLOCK_T=16,32)" if sweep else
                                                  " for the candidate (repeatable), e.g. -D BLOCK_T=32"))
    p.add_argument("--carveout", type=int, default=None, metavar="PERCENT",
                   help="shared-memory carveout preference 0..100 (default: driver default)")


def baseline(card: KernelCard, args) -> Config:
    return card.resolve(base=args.baseline) if args.baseline is not None else card.resolve()


def candidate(card: KernelCard, base: Config, args) -> Config:
    overrides = {}
    for name, values in args.defines:
        if len(values) != 1:
            raise ConfigError(f"-D {name}={','.join(values)}: predict takes one value per parameter "
                              "(use `occmodel table` to sweep)")
        overrides[name] = values[0]
    if args.warps is not None:
        overrides["num_warps"] = args.warps
    if args.stages is not None:
        overrides["num_stages"] = args.stages
    return card.resolve(overrides, base=base)


def sweep(card: KernelCard, base: Config, args) -> list[tuple[dict, Config | None, str]]:
    """The cartesian product of the listed values on top of the baseline, as
    (requested values, config or None, error). An invalid value becomes an error
    row rather than ending the sweep; an unknown parameter name ends it at once."""
    axes: dict[str, list] = {}
    if args.warps:
        axes["num_warps"] = args.warps
    if args.stages:
        axes["num_stages"] = args.stages
    for name, values in args.defines:
        card.param(name)                      # unknown names fail before the sweep starts
        axes[name] = values
    names = list(axes)
    check_sweep_size({k: len(v) for k, v in axes.items()})
    out = []
    for combo in itertools.product(*axes.values()):
        asked = dict(zip(names, combo))
        try:
            out.append((asked, card.resolve(asked, base=base), ""))
        except ConfigError as exc:
            out.append((asked, None, str(exc)))
    return out


def check_carveout(value):
    if value is not None and not 0 <= value <= 100:
        raise ConfigError(f"--carveout {value} is out of range; allowed 0..100 percent")
    return value


# ------------------------------------------------- kernels without a card
def load_kernel_arg(text: str):
    """--kernel as a KernelCard (built-in name, a card module under occmodel/kernels, or
    file.py:CARD / module:CARD) or a bare @triton.jit function (file.py:fn / module:fn)."""
    import importlib
    from ..card import KernelCard, load_card, load_object
    from ..errors import KernelError
    if ":" not in text:
        try:
            return load_card(text)
        except KernelError:
            if not text.isidentifier():
                raise
            try:                                 # a card module not (yet) in BUILTIN_CARDS
                card = getattr(importlib.import_module(f"occmodel.kernels.{text}"), "CARD", None)
            except ModuleNotFoundError:
                card = None
            if isinstance(card, KernelCard):
                return card
            raise
    obj = load_object(text)
    if isinstance(obj, KernelCard):
        return obj
    from ..compile import jit_function
    from ..errors import CompileError
    try:
        return jit_function(obj)
    except CompileError:
        raise KernelError(f"{text!r} is a {type(obj).__name__}, neither a KernelCard nor a @triton.jit "
                          "function") from None


def constexpr_value(text: str):
    """A -D value for a bare kernel: int (0x.. too), float, True/False, tl.<dtype>, else the string."""
    text = text.strip()
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
        if hasattr(tl, attr):
            return getattr(tl, attr)
    return text


def kernel_sweep(args, default_warps=(4,), default_stages=(3,)) -> tuple[list[str], list[dict]]:
    """(swept names, configs) for a bare kernel: the product of -D lists, --warps and
    --stages; each config holds its constexprs plus num_warps and num_stages."""
    axes: dict[str, list] = {}
    for name, values in args.defines:
        if name in axes:
            raise ConfigError(f"-D {name} given twice; list its values once: -D {name}=V1,V2")
        axes[name] = [constexpr_value(v) for v in values]
    axes["num_warps"] = list(args.warps or default_warps)
    axes["num_stages"] = list(args.stages or default_stages)
    for w in axes["num_warps"]:
        if w < 1 or w > 32 or w & (w - 1):
            raise ConfigError(f"--warps {w} is not allowed; allowed: 1, 2, 4, 8, 16, 32")
    for s in axes["num_stages"]:
        if s < 1:
            raise ConfigError(f"--stages {s} is not allowed; allowed >= 1")
    check_sweep_size({k: len(v) for k, v in axes.items()})
    swept = [k for k, v in axes.items() if len(v) > 1]
    return swept, [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]


def signature_arg(text: str | None):
    """--signature: the AOT string ('*fp16:16, i32') or NAME=TYPE pairs ('X=*fp16:16,N=i32')."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts and all("=" in p for p in parts):
        return {k.strip(): v.strip() for k, v in (p.split("=", 1) for p in parts)}
    if any("=" in p for p in parts):
        raise ConfigError(f"--signature {text!r} mixes NAME=TYPE and positional entries; use one form")
    return text


def workload_points(card: KernelCard, args) -> tuple[list[dict], list[tuple[str, list[str]]]]:
    """(workload points, the -D's that are card parameters) from --points and -D: the product
    of the --points lists, -D fixing other workload parameters (one value each); without
    --points, the card's default points."""
    workload = {p.name for p in card.workload_params}
    fixed = {}
    card_defines = []
    for name, values in args.defines:
        if name in workload:
            if len(values) != 1:
                raise ConfigError(f"-D {name}={','.join(values)}: list workload values with --points {name}=...")
            fixed[name] = values[0]
        else:
            card_defines.append((name, values))
    axes = dict(args.points)
    for n in axes:
        if n not in workload:
            raise ConfigError(f"--points {n}: not a workload parameter of {card.name}; valid: "
                              f"{', '.join(sorted(workload))}")
    check_sweep_size({k: len(v) for k, v in axes.items()}, "set of workload points")
    if axes:
        points = [card.resolve_point({**fixed, **dict(zip(axes, combo))}) for combo in itertools.product(*axes.values())]
    else:
        points = [card.resolve_point({**dict(pt), **fixed}) for pt in card.default_points] or [card.resolve_point(fixed)]
    return points, card_defines
