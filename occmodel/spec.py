"""Hardware specs: one YAML per compute capability under ``occmodel/specs/``.

``load_spec(name_or_path)`` returns a frozen :class:`HardwareSpec`. Loading
checks the whole schema first and reports *every* problem at once, each with
its dotted path and YAML line (``sm_x.yaml:12: sm.max_warps_per_sm: unknown
field``), as one :class:`SpecError`. Pure: no torch, no GPU.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._lazy import LazyModule
from .errors import SpecError, suggest

yaml = LazyModule("yaml")      # imported when a spec is read, not by `occmodel --help`

SPEC_DIR = Path(__file__).parent / "specs"
DEFAULT_SPEC = "sm_120"


@dataclass(frozen=True)
class SMLimits:
    """Per-SM limits and allocation granularities, in the driver's units."""

    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    register_allocation_unit: int
    warp_allocation_granularity: int
    shared_memory_per_sm: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    reserved_shared_memory_per_block: int
    shared_memory_allocation_unit: int
    barriers_per_block_slot: int
    carveout_kb: tuple[int, ...]
    # integer / logic ALU lanes per SM sub-partition (a warp's ISETP, LOP3, SEL, IADD3 takes 32 / this cycles
    # of its pipe); optional in a spec file, 16 (Volta to Hopper) when absent
    alu_lanes_per_partition: int = 16

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


@dataclass(frozen=True)
class Product:
    """A named GPU of this compute capability (datasheet figures, with source)."""

    name: str
    sms: int
    memory_bandwidth_gbs: float
    l2_mb: float
    fp16_tensor_tflops: float
    fp32_tflops: float
    source: str
    boost_clock_mhz: float | None = None      # optional: the SM clock the shared-memory bandwidth scales with


@dataclass(frozen=True)
class HardwareSpec:
    name: str
    arch: str
    compute_capability: tuple[int, int]
    description: str
    sm: SMLimits
    products: tuple[Product, ...]
    path: str

    def product(self, name: str | None = None) -> Product:
        """The named product, or the first one listed (the spec's default)."""
        if not self.products:
            raise SpecError(f"spec {self.name!r} lists no products")
        if name is None:
            return self.products[0]
        names = [p.name for p in self.products]
        for p in self.products:
            if p.name.lower() == name.lower():
                return p
        raise SpecError(f"unknown product {name!r} for spec {self.name!r}; known: "
                        f"{', '.join(names)}{suggest(name, names)}")

    def product_for_gpu(self, gpu_name: str) -> Product | None:
        """The product a GPU is, by its driver name ('NVIDIA H200' -> H200); None if none matches."""
        squash = lambda t: "".join(t.lower().split())  # noqa: E731
        def model_number(p):   # 'H100 SXM' matches 'NVIDIA H100 80GB HBM3'; 'RTX ...' is no model number
            first = p.name.split()[0]
            return any(c.isdigit() for c in first) and first in gpu_name
        for match in (lambda p: squash(p.name) in squash(gpu_name), model_number):
            for p in self.products:
                if match(p):
                    return p
        return None


# ---------------------------------------------------------------- schema
_INT, _NUM, _STR = "int", "number", "str"

_SM_OPTIONAL = {"alu_lanes_per_partition": _INT}
_SM_FIELDS: dict[str, str] = {f.name: _INT for f in dataclasses.fields(SMLimits) if f.name not in _SM_OPTIONAL}
_SM_FIELDS["carveout_kb"] = "int list"
_PRODUCT_FIELDS = {"name": _STR, "sms": _INT, "memory_bandwidth_gbs": _NUM, "l2_mb": _NUM,
                   "fp16_tensor_tflops": _NUM, "fp32_tflops": _NUM, "source": _STR}
_PRODUCT_OPTIONAL = {"boost_clock_mhz": _NUM}
_TOP_FIELDS = {"name": _STR, "arch": _STR, "compute_capability": "int pair",
               "description": _STR, "sm": "mapping", "products": "list"}


MAX_INT = 2**31 - 1             # no per-SM quantity comes near; larger is a typo (or an attack)
MAX_NODES = 100_000             # YAML nodes after alias expansion: real specs have a few hundred
MAX_BYTES = 1 << 20             # spec files are a few KB


def _type_ok(value: Any, kind: str) -> bool:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == _INT:
        return is_int and 0 <= value <= MAX_INT
    if kind == _NUM:
        return (is_int or isinstance(value, float)) and 0 <= value <= 1e12   # rejects nan and inf too
    if kind == _STR:
        return isinstance(value, str) and value != ""
    if kind == "int list":
        return isinstance(value, list) and all(_type_ok(v, _INT) for v in value) and len(value) > 0
    if kind == "int pair":
        return isinstance(value, list) and len(value) == 2 and all(_type_ok(v, _INT) for v in value)
    if kind == "mapping":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    raise AssertionError(kind)


def _short(value: Any) -> str:
    """repr of a value, bounded (an aliased YAML structure can be exponentially large)."""
    import reprlib
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother, r.maxlong = 3, 4, 4, 60, 60, 40
    return r.repr(value)


def _line_map(root: yaml.Node | None) -> dict[str, int]:
    """Dotted path -> 1-based line of each key in the composed YAML (each node walked once:
    an alias is not followed again, so an alias bomb costs no more than its text)."""
    lines: dict[str, int] = {}
    seen: set[int] = set()

    def walk(node: yaml.Node, prefix: str) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, val in node.value:
                path = f"{prefix}.{key.value}" if prefix else str(key.value)
                lines[path] = key.start_mark.line + 1
                walk(val, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                path = f"{prefix}[{i}]"
                lines[path] = item.start_mark.line + 1
                walk(item, path)

    if root is not None:
        walk(root, "")
    return lines


def _check_fields(data: Any, fields: dict[str, str], prefix: str, errors: list[tuple[str, str]],
                  optional: dict[str, str] | None = None) -> None:
    if not isinstance(data, dict):
        errors.append((prefix or "<top>", "must be a mapping"))
        return
    optional = optional or {}
    for key, kind in {**fields, **optional}.items():
        path = f"{prefix}.{key}" if prefix else key
        if key not in data:
            if key not in optional:
                errors.append((path, "required field"))
        elif not _type_ok(data[key], kind):
            what = f"a non-negative {kind}" if kind in (_INT, _NUM) else f"a {kind}"
            v = data[key]
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                what += f" of at most {MAX_INT:,}" if kind == _INT else " (finite, at most 1e12)"
            errors.append((path, f"must be {what}, got {_short(v)}"))
    for key in data:
        if key not in fields and key not in optional:
            path = f"{prefix}.{key}" if prefix else str(key)
            errors.append((path, f"unknown field{suggest(str(key), {**fields, **optional})}"))


def _validate(data: Any) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    _check_fields(data, _TOP_FIELDS, "", errors)
    if not isinstance(data, dict):
        return errors
    if isinstance(data.get("sm"), dict):
        _check_fields(data["sm"], _SM_FIELDS, "sm", errors, _SM_OPTIONAL)
        sm = data["sm"]
        _cross_check(sm, errors)
    if isinstance(data.get("products"), list):
        for i, prod in enumerate(data["products"]):
            _check_fields(prod, _PRODUCT_FIELDS, f"products[{i}]", errors, _PRODUCT_OPTIONAL)
            if isinstance(prod, dict):
                for key in ("sms", "memory_bandwidth_gbs"):
                    if _type_ok(prod.get(key), _NUM) and prod[key] == 0:
                        errors.append((f"products[{i}].{key}", "must be > 0"))
    return errors


_POSITIVE = ("warp_size", "max_threads_per_block", "max_threads_per_sm", "max_blocks_per_sm",
             "registers_per_sm", "registers_per_block", "max_registers_per_thread", "register_allocation_unit",
             "warp_allocation_granularity", "shared_memory_allocation_unit", "shared_memory_per_sm",
             "shared_memory_per_block", "shared_memory_per_block_optin", "barriers_per_block_slot",
             "alu_lanes_per_partition")
_POWERS_OF_TWO = ("register_allocation_unit", "warp_allocation_granularity", "shared_memory_allocation_unit")
_NOT_ABOVE = (("max_threads_per_block", "max_threads_per_sm"), ("registers_per_block", "registers_per_sm"),
              ("shared_memory_per_block", "shared_memory_per_block_optin"),
              ("shared_memory_per_block_optin", "shared_memory_per_sm"),
              ("reserved_shared_memory_per_block", "shared_memory_per_sm"))


def _cross_check(sm: dict, errors: list[tuple[str, str]]) -> None:
    """The limits must describe a GPU the driver's rules can work with."""
    ok = {k: v for k, v in sm.items() if _type_ok(v, _INT)}
    for key in _POSITIVE:
        if ok.get(key) == 0:
            errors.append((f"sm.{key}", "must be > 0"))
    if ok.get("warp_size") not in (None, 32):
        errors.append(("sm.warp_size", f"must be 32 (every NVIDIA GPU), got {ok['warp_size']}"))
    if ok.get("alu_lanes_per_partition") and 32 % ok["alu_lanes_per_partition"]:
        errors.append(("sm.alu_lanes_per_partition", f"must divide 32 (a warp's lanes): 16 on Volta to Hopper, 32 "
                       f"where every core runs integer ops (RTX Blackwell), got {ok['alu_lanes_per_partition']}"))
    for key in _POWERS_OF_TWO:
        v = ok.get(key)
        if v and v & (v - 1):
            errors.append((f"sm.{key}", f"must be a power of two, got {v}"))
    if ok.get("max_registers_per_thread", 0) > 255:
        errors.append(("sm.max_registers_per_thread", f"must be at most 255, got {ok['max_registers_per_thread']}"))
    for small, big in _NOT_ABOVE:
        if small in ok and big in ok and ok[small] > ok[big]:
            errors.append((f"sm.{small}", f"{ok[small]:,} must not exceed sm.{big} ({ok[big]:,})"))
    for key in ("max_threads_per_block", "max_threads_per_sm"):
        if ok.get(key) and ok.get("warp_size") == 32 and ok[key] % 32:
            errors.append((f"sm.{key}", f"must be a multiple of the warp size 32, got {ok[key]}"))
    carve = sm.get("carveout_kb")
    if _type_ok(carve, "int list") and "shared_memory_per_sm" in ok:
        over = [kb for kb in carve if kb * 1024 > ok["shared_memory_per_sm"]]
        if over:
            errors.append(("sm.carveout_kb", f"{over[0]} KB exceeds sm.shared_memory_per_sm "
                                             f"({ok['shared_memory_per_sm']:,} B)"))
        if len(set(carve)) != len(carve):
            errors.append(("sm.carveout_kb", "lists a carveout twice"))


def known_specs() -> list[str]:
    """Names of the specs shipped with occmodel, sorted by compute capability."""
    names = [p.stem for p in SPEC_DIR.glob("*.yaml")]
    return sorted(names, key=lambda n: int(n.split("_")[1]) if n.split("_")[-1].isdigit() else 0)


def _resolve(name_or_path: str | os.PathLike) -> Path:
    text = str(name_or_path)
    looks_like_path = text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text
    if looks_like_path:
        path = Path(text)
        if path.is_dir():
            raise SpecError(f"spec file {text!r} is a folder; pass a .yaml file")
        if not path.is_file():
            raise SpecError(f"spec file {text!r} does not exist")
        return path
    path = SPEC_DIR / f"{text}.yaml"
    if not path.is_file():
        names = known_specs()
        raise SpecError(f"unknown spec {text!r}; known specs: {', '.join(names)}"
                        f"{suggest(text, names)} (or pass a path to a .yaml file)")
    return path


def _read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """(data, composed root) of a spec file; SpecError naming the file for anything that is
    not a small, readable, well-formed YAML document (binary, too large, too deep, an alias
    bomb, duplicate keys, numbers Python will not parse)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise SpecError(f"spec file {str(path)!r} is {size:,} bytes; a spec is a few KB (limit {MAX_BYTES:,})")
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read spec file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"spec file {str(path)!r} is not UTF-8 text (byte {exc.start}); is it a YAML file?") from None
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise SpecError(f"spec file {str(path)!r} is empty")
        _check_nodes(root, path)
        data = loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{where}: malformed YAML: {problem}") from None
    except RecursionError:
        raise SpecError(f"{path}: YAML nested too deeply to be a spec") from None
    except ValueError as exc:              # e.g. an integer with more digits than Python converts
        raise SpecError(f"{path}: malformed YAML: {str(exc).splitlines()[0][:200]}") from None
    finally:
        loader.dispose()
    return data, root


def _check_nodes(root: yaml.Node, path: Path) -> None:
    """SpecError for duplicate mapping keys, and for a document whose aliases expand it past
    MAX_NODES (counted with memoised sizes: linear in the text, however the aliases nest)."""
    size: dict[int, int] = {}
    stack = [(root, False)]
    while stack:                               # iterative post-order: deep nesting costs no recursion
        node, done = stack.pop()
        if id(node) in size:
            continue
        kids = ([n for kv in node.value for n in kv] if isinstance(node, yaml.MappingNode)
                else list(node.value) if isinstance(node, yaml.SequenceNode) else [])
        if not done:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
            continue
        size[id(node)] = min(1 + sum(size.get(id(k), 1) for k in kids), MAX_NODES + 1)
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            dup = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
            if dup is not None:
                line = next(k.start_mark.line for k, _ in reversed(node.value) if getattr(k, "value", None) == dup)
                raise SpecError(f"{path}:{line + 1}: key {dup!r} appears twice in one mapping")
    if size[id(root)] > MAX_NODES:
        raise SpecError(f"{path}: the YAML expands to more than {MAX_NODES:,} values (through aliases); "
                        "a spec has a few hundred")


def load_spec(name_or_path: str | os.PathLike = DEFAULT_SPEC) -> HardwareSpec:
    """Load and validate a spec by name (``"sm_120"``) or YAML path.

    Raises SpecError naming the file, line and dotted field of every problem.
    """
    if isinstance(name_or_path, HardwareSpec):
        return name_or_path
    path = _resolve(name_or_path)
    data, root = _read_yaml(path)
    errors = _validate(data)
    if errors:
        lines = _line_map(root)

        def where(p: str) -> str:
            # a missing field has no line of its own: point at its parent
            probe = p
            while probe and probe not in lines:
                probe = probe.rpartition(".")[0]
            return f"{path}:{lines[probe]}" if probe in lines else str(path)

        detail = "; ".join(f"{where(p)}: {p}: {msg}" for p, msg in errors)
        raise SpecError(f"invalid spec ({len(errors)} error{'s' * (len(errors) > 1)}): {detail}")
    sm = dict(data["sm"])
    sm["carveout_kb"] = tuple(sorted(sm["carveout_kb"]))
    return HardwareSpec(
        name=data["name"], arch=data["arch"],
        compute_capability=(data["compute_capability"][0], data["compute_capability"][1]),
        description=data["description"], sm=SMLimits(**sm),
        products=tuple(Product(**p) for p in data["products"]), path=str(path))
