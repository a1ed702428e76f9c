"""The one discovery path for ``--kernel``: a card or a bare kernel, as a KernelCard.

    kernel = load_source("decode_attention")                                   # a built-in card
    kernel = load_source("my_cards.py:CARD")                                    # a user's card
    kernel = load_source("attn.py:_fwd", signature="Q=*fp16:16,...")            # a bare @triton.jit kernel
    kernel = load_source("attn.py:_fwd", args="attn.py:example_args", launcher="attn.py")

Every command resolves --kernel/--signature/--args/--launcher here, so a kernel
that works in one command works in all of them. A kernel file may import the
modules beside it (its folder is put on sys.path).
"""

from __future__ import annotations

from typing import Any, Callable

from .card import KernelCard, load_card, load_object
from .errors import ConfigError, KernelError
from .launcher import Launcher, load_launcher


def load_source(text: str | KernelCard | Any, *, signature: str | None = None,
                args: str | Callable | None = None, launcher: str | Launcher | None = None) -> KernelCard:
    """A KernelCard for --kernel (see the module doc). signature/args/launcher apply to bare
    kernels; a card states its own (ConfigError if given one)."""
    obj: Any = text
    if isinstance(text, str):
        obj = load_card(text) if ":" not in text else load_object(text)
    if isinstance(obj, KernelCard):
        given = [f for f, v in (("--signature", signature), ("--args", args)) if v is not None]
        if given:
            raise ConfigError(f"{given[0]} is for bare @triton.jit kernels; the card {obj.name!r} states its own "
                              "signature")
        if launcher is not None:
            raise ConfigError(f"--launcher is for bare @triton.jit kernels; the card {obj.name!r} launches itself")
        return obj
    from .bare import bare_kernel
    args_fn = args
    if isinstance(args, str):
        args_fn = load_object(args)
        if not callable(args_fn):
            raise KernelError(f"--args {args!r} is a {type(args_fn).__name__}, not a function of the config")
    launch = load_launcher(launcher) if launcher is not None else None
    return bare_kernel(obj, signature=signature, args=args_fn, launcher=launch,
                       name=getattr(obj, "__name__", None))
