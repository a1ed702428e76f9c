"""The flags every kernel command shares, and their translation into library calls
(occmodel.source for --kernel, occmodel.configs for configs and points)."""

from __future__ import annotations

from .. import configs as C
from ..card import Config, KernelCard
from ..source import load_source
from ._args import assignments, define, drop_configs, int_list  # noqa: F401

KERNEL_HELP = ("built-in card (decode_attention, decode_attention_nopipe, matmul), your card "
               "(path/to/file.py:CARD), or your own @triton.jit function (path/to/file.py:fn or "
               "package.module:fn) with --signature or --args")


def add_kernel_args(p, default: str | None = "decode_attention") -> None:
    """--kernel and what a bare @triton.jit kernel needs: --signature / --args, --launcher."""
    p.add_argument("--kernel", default=default, required=default is None,
                   help=KERNEL_HELP + (f" (default: {default})" if default else ""))
    p.add_argument("--signature", default=None, metavar="TYPES",
                   help="bare kernels: Triton AOT types of the runtime parameters, in order ('*fp16:16,*fp16:16,"
                        "i32') or NAME=TYPE pairs ('X=*fp16:16,N=i32:16'); ':16' = divisible by 16 (pointers: "
                        "16-byte aligned), ':1' = equal to 1, as Triton's launcher specializes")
    p.add_argument("--args", default=None, metavar="FILE.py:FN",
                   help="bare kernels: a function FN(cfg) returning example launch arguments (tensors on any "
                        "device, ints, floats); the exact specialization Triton's launcher would apply is derived "
                        "from them (instead of --signature)")
    p.add_argument("--launcher", default=None, metavar="FILE.py",
                   help="bare kernels: a file with make_inputs(point) and launch(inputs, cfg) (optionally "
                        "reference, bytes_moved, flops, grid, loop_iterations, example_args, POINTS, BASELINE); "
                        "needed by validate and rank (see docs/launcher.md)")
    add_sweep_args(p)


def add_sweep_args(p) -> None:
    """How compile sweeps run: --executor (a Dask cluster), --yes / --max-configs (large sweeps)."""
    from .._sweep import MAX_NEW_DEFAULT
    from ._args import int_in
    p.add_argument("--executor", default=None, metavar="ADDRESS",
                   help="compile on a running Dask distributed cluster: its scheduler address (tcp://HOST:8786) "
                        "or scheduler file; results land in this machine's cache (pip install "
                        "'occmodel[distributed]'; default: a local process pool)")
    p.add_argument("--max-configs", type=int_in(1, None, "--max-configs"), default=None, metavar="N",
                   help=f"compile at most N new (uncached) configs without asking (default {MAX_NEW_DEFAULT}); "
                        "a larger sweep stops before compiling and says how many and how long")
    p.add_argument("--yes", action="store_true", help="start a sweep of any size (no --max-configs limit)")


def kernel(args) -> KernelCard:
    """The kernel --kernel names, with --signature / --args / --launcher applied."""
    return load_source(args.kernel, signature=getattr(args, "signature", None), args=getattr(args, "args", None),
                       launcher=getattr(args, "launcher", None))


def add_config_args(p, sweep: bool = False) -> None:
    """The kernel flags plus --baseline, --warps, --stages, -D, --carveout; lists when `sweep`."""
    add_kernel_args(p)
    p.add_argument("--baseline", type=assignments, default=None, metavar="NAME=V,...",
                   help="baseline config, e.g. BLOCK_T=16,num_warps=4,num_stages=2 (default: the card's, or for a "
                        "bare kernel its constexpr defaults with num_warps=4, num_stages=3)")
    p.set_defaults(sweep_command=sweep)
    if sweep:
        p.add_argument("--warps", type=int_list, default=None, help="num_warps values, e.g. 4,8")
        p.add_argument("--stages", type=int_list, default=None, help="num_stages values, e.g. 2,3,4 or 1..4")
    else:
        p.add_argument("--warps", type=int, default=None, help="candidate num_warps (1, 2, 4, 8, 16, 32)")
        p.add_argument("--stages", type=int, default=None, help="candidate num_stages (>= 1)")
    p.add_argument("-D", dest="defines", type=define, action="append", default=[], metavar="NAME=VALUE",
                   help="set a kernel parameter (a card parameter or a bare kernel's constexpr)"
                        + (" (comma list to sweep: -D BLOCK_T=16,32)" if sweep else
                           " for the candidate (repeatable), e.g. -D BLOCK_T=32"))
    p.add_argument("--carveout", type=int, default=None, metavar="PERCENT",
                   help="shared-memory carveout preference 0..100 (default: driver default)")


def baseline(kernel: KernelCard, args) -> Config:
    """--baseline on the kernel's defaults; in a sweep (-D lists) a constexpr without a value
    takes its first listed value."""
    return C.baseline(kernel, args.baseline, fill=args.defines if getattr(args, "sweep_command", False) else ())


def candidate(kernel: KernelCard, base: Config, args) -> Config:
    return C.candidate(kernel, base, args.warps, args.stages, args.defines)


def sweep(kernel: KernelCard, base: Config, args) -> list[tuple[dict, Config | None, str]]:
    return C.sweep(kernel, base, args.warps, args.stages, args.defines)


check_carveout = C.check_carveout
