"""``occmodel specs`` (list the shipped specs), ``occmodel specs show NAME`` and
``occmodel specs detect [--out FILE]`` (a spec YAML for the local GPU)."""

from __future__ import annotations

from . import SUMMARY

from ..report import Report, Section
from ..spec import known_specs, load_spec


def add_parser(subs, common) -> None:
    p = subs.add_parser("specs", parents=[common], help=SUMMARY["specs"],
                        description="List the hardware specs occmodel ships (one per compute capability), "
                                    "or show every limit of one: `occmodel specs show sm_120`. "
                                    "`--spec PATH` or `show PATH` reads your own YAML. `occmodel specs detect` "
                                    "writes a spec YAML for the local GPU from the driver's device attributes "
                                    "(to stdout, or to --out FILE and then lists each field and its source).")
    p.add_argument("action", nargs="?", choices=("list", "show", "detect"), default="list")
    p.add_argument("name", nargs="?", help="spec name or YAML path for `show` (default: --spec)")
    p.add_argument("--out", metavar="FILE", default=None, help="detect: write the YAML here (default: stdout)")
    p.add_argument("--device", type=int, default=0, help="detect: CUDA device index (default 0)")
    p.set_defaults(run=run)


def run(args) -> Report | None:
    if args.action == "detect":
        return _detect(args)
    if args.action == "show":
        return _show(load_spec(args.name or args.spec))
    rows = []
    for name in known_specs():
        s = load_spec(name)
        sm = s.sm
        rows.append({"spec": s.name, "cc": f"{s.compute_capability[0]}.{s.compute_capability[1]}",
                     "max_warps_per_sm": sm.max_warps_per_sm, "max_blocks_per_sm": sm.max_blocks_per_sm,
                     "registers_per_sm": sm.registers_per_sm, "shared_memory_per_sm": sm.shared_memory_per_sm,
                     "shared_memory_per_block_optin": sm.shared_memory_per_block_optin,
                     "products": ", ".join(p.name for p in s.products)})
    cols = [("spec", "spec"), ("cc", "cc"), ("max_warps_per_sm", "warps/SM"), ("max_blocks_per_sm", "blocks/SM"),
            ("registers_per_sm", "regs/SM"), ("shared_memory_per_sm", "shared/SM (B)"),
            ("shared_memory_per_block_optin", "shared/block opt-in (B)"), ("products", "products")]
    return Report("specs", [Section("Hardware specs shipped with occmodel", cols, rows,
                                    ["`occmodel specs show NAME` lists every limit and its source"])],
                  extra={"specs": [_spec_dict(load_spec(name)) for name in known_specs()]})


def _spec_dict(spec) -> dict:
    """One spec, typed, for JSON: name, compute capability [major, minor], every sm.* limit, products."""
    sm = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(spec.sm).items()}
    return {"name": spec.name, "compute_capability": list(spec.compute_capability), "arch": spec.arch,
            "description": spec.description, "sm": sm, "products": [vars(p).copy() for p in spec.products]}


def _show(spec) -> Report:
    sm = spec.sm
    limits = [{"field": f"sm.{k}", "value": list(v) if isinstance(v, tuple) else v}
              for k, v in vars(sm).items()]
    limits.insert(0, {"field": "compute_capability", "value": f"{spec.compute_capability[0]}.{spec.compute_capability[1]}"})
    products = [vars(p).copy() for p in spec.products]
    pcols = [("name", "product"), ("sms", "SMs"), ("memory_bandwidth_gbs", "GB/s"), ("l2_mb", "L2 (MB)"),
             ("fp16_tensor_tflops", "fp16 tensor TFLOP/s"), ("fp32_tflops", "fp32 TFLOP/s"), ("source", "source")]
    return Report("specs", [
        Section(f"{spec.name}: {spec.description}", [("field", "field"), ("value", "value")], limits,
                [f"from {spec.path}"]),
        Section("Products (datasheet figures; leads, not measurements)", pcols, products)],
        extra={"spec": _spec_dict(spec)})


def _detect(args) -> Report | None:
    from pathlib import Path

    from ..detect import detect
    from ..errors import SpecError
    text, info = detect(args.device)
    if args.out is None:
        print(text, end="")
        return None
    out = Path(args.out)
    try:
        out.write_text(text)
    except OSError as exc:
        raise SpecError(f"cannot write --out {args.out!r}: {exc.strerror}") from None
    spec = load_spec(out)                     # what we wrote must load
    rows = []
    for line in text.splitlines():
        key, sep, rest = line.strip().lstrip("- ").partition(":")
        if sep and "#" in rest and key:
            value, _, note = rest.partition("#")
            rows.append({"field": key, "value": value.strip(), "source": "device" if note.strip().startswith("D")
                         else "table", "detail": note.strip()[2:]})
    return Report("specs", [Section(f"Detected {info['device']} -> {out} (spec {spec.name})",
                                    [("field", "field"), ("value", "value"), ("source", "source"),
                                     ("detail", "detail")], rows,
                                    [f"`occmodel ... --spec {out}` uses it"])],
                  extra={"device": info["device"], "attributes": info["attributes"], "path": str(out)})
