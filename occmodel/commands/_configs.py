"""Turning CLI flags into card configs (shared by predict, table, compile, ...)."""

from __future__ import annotations

import itertools

from ..card import Config, KernelCard
from ..errors import ConfigError
from ._args import assignments, define, int_list


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
