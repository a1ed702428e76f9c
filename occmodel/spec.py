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

import yaml

from .errors import SpecError, suggest

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

_SM_FIELDS: dict[str, str] = {f.name: _INT for f in dataclasses.fields(SMLimits)}
_SM_FIELDS["carveout_kb"] = "int list"
_PRODUCT_FIELDS = {"name": _STR, "sms": _INT, "memory_bandwidth_gbs": _NUM, "l2_mb": _NUM,
                   "fp16_tensor_tflops": _NUM, "fp32_tflops": _NUM, "source": _STR}
_PRODUCT_OPTIONAL = {"boost_clock_mhz": _NUM}
_TOP_FIELDS = {"name": _STR, "arch": _STR, "compute_capability": "int pair",
               "description": _STR, "sm": "mapping", "products": "list"}


def _type_ok(value: Any, kind: str) -> bool:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == _INT:
        return is_int and value >= 0
    if kind == _NUM:
        return (is_int or isinstance(value, float)) and value >= 0
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


def _line_map(text: str) -> dict[str, int]:
    """Dotted path -> 1-based line of each key in the YAML text."""
    lines: dict[str, int] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
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

    root = yaml.compose(text)
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
            errors.append((path, f"must be {'a non-negative ' if kind in (_INT, _NUM) else 'a '}{kind}, got {data[key]!r}"))
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
        _check_fields(data["sm"], _SM_FIELDS, "sm", errors)
        sm = data["sm"]
        positive = ("warp_size", "max_threads_per_block", "max_threads_per_sm", "max_blocks_per_sm",
                    "registers_per_sm", "registers_per_block", "register_allocation_unit",
                    "warp_allocation_granularity", "shared_memory_allocation_unit", "shared_memory_per_sm")
        for key in positive:
            if _type_ok(sm.get(key), _INT) and sm[key] == 0:
                errors.append((f"sm.{key}", "must be > 0"))
        if all(_type_ok(sm.get(k), _INT) for k in ("shared_memory_per_block_optin", "shared_memory_per_sm")):
            if sm["shared_memory_per_block_optin"] > sm["shared_memory_per_sm"]:
                errors.append(("sm.shared_memory_per_block_optin", "must not exceed sm.shared_memory_per_sm"))
    if isinstance(data.get("products"), list):
        for i, prod in enumerate(data["products"]):
            _check_fields(prod, _PRODUCT_FIELDS, f"products[{i}]", errors, _PRODUCT_OPTIONAL)
    return errors


def known_specs() -> list[str]:
    """Names of the specs shipped with occmodel, sorted by compute capability."""
    names = [p.stem for p in SPEC_DIR.glob("*.yaml")]
    return sorted(names, key=lambda n: int(n.split("_")[1]) if n.split("_")[-1].isdigit() else 0)


def _resolve(name_or_path: str | os.PathLike) -> Path:
    text = str(name_or_path)
    looks_like_path = text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text
    if looks_like_path:
        path = Path(text)
        if not path.is_file():
            raise SpecError(f"spec file {text!r} does not exist")
        return path
    path = SPEC_DIR / f"{text}.yaml"
    if not path.is_file():
        names = known_specs()
        raise SpecError(f"unknown spec {text!r}; known specs: {', '.join(names)}"
                        f"{suggest(text, names)} (or pass a path to a .yaml file)")
    return path


def load_spec(name_or_path: str | os.PathLike = DEFAULT_SPEC) -> HardwareSpec:
    """Load and validate a spec by name (``"sm_120"``) or YAML path.

    Raises SpecError naming the file, line and dotted field of every problem.
    """
    if isinstance(name_or_path, HardwareSpec):
        return name_or_path
    path = _resolve(name_or_path)
    text = path.read_text()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{where}: malformed YAML: {problem}") from None
    errors = _validate(data)
    if errors:
        lines = _line_map(text)

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
