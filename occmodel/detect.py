"""A spec YAML for the local GPU, from the driver's device attributes.

    attrs = read_device_attributes()           # needs libcuda (a GPU and its driver), not torch
    text = spec_yaml(attrs)                     # YAML, every field marked [D] device or [T] table
    spec = load_spec(path_of_written_text)      # it loads like any shipped spec

The per-SM limits the driver exposes (threads, blocks, registers and shared memory per
SM and per block, the reserved shared memory, warp size) are read from the device; what
the driver does not expose (allocation granularities, the register cap per thread,
barrier slots, the carveout steps, peak FLOP rates) comes from occmodel's shipped spec
for the same compute capability, or the nearest lower one of the same major version
(said in the YAML header). The detected device becomes the first product: SM count and
L2 read from the device, memory bandwidth computed from its memory clock and bus width.
A device value that differs from the shipped table is flagged in its comment.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Mapping

from .errors import ConfigError, NoGPUError, SpecError
from .spec import HardwareSpec, known_specs, load_spec

# CUdevice_attribute numbers (cuda.h); names as scripts/record_driver_occupancy.py records them
DEVICE_ATTRIBUTES = {
    "max_threads_per_block": 1, "max_shared_memory_per_block": 8, "warp_size": 10,
    "max_registers_per_block": 12, "clock_rate_khz": 13, "multiprocessor_count": 16,
    "memory_clock_rate_khz": 36, "global_memory_bus_width": 37, "l2_cache_size": 38,
    "max_threads_per_multiprocessor": 39, "compute_capability_major": 75, "compute_capability_minor": 76,
    "max_shared_memory_per_multiprocessor": 81, "max_registers_per_multiprocessor": 82,
    "max_shared_memory_per_block_optin": 97, "max_blocks_per_multiprocessor": 106,
    "reserved_shared_memory_per_block": 111,
}
# spec field -> device attribute it is read from; every other sm field comes from the table
SM_FROM_DEVICE = {
    "warp_size": "warp_size", "max_threads_per_block": "max_threads_per_block",
    "max_threads_per_sm": "max_threads_per_multiprocessor", "max_blocks_per_sm": "max_blocks_per_multiprocessor",
    "registers_per_sm": "max_registers_per_multiprocessor", "registers_per_block": "max_registers_per_block",
    "shared_memory_per_sm": "max_shared_memory_per_multiprocessor",
    "shared_memory_per_block": "max_shared_memory_per_block",
    "shared_memory_per_block_optin": "max_shared_memory_per_block_optin",
    "reserved_shared_memory_per_block": "reserved_shared_memory_per_block",
}
SM_ORDER = ("warp_size", "max_threads_per_block", "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm",
            "registers_per_block", "max_registers_per_thread", "register_allocation_unit",
            "warp_allocation_granularity", "shared_memory_per_sm", "shared_memory_per_block",
            "shared_memory_per_block_optin", "reserved_shared_memory_per_block", "shared_memory_allocation_unit",
            "barriers_per_block_slot", "carveout_kb", "alu_lanes_per_partition")


def read_device_attributes(device: int = 0) -> dict[str, Any]:
    """{"device": name, "driver_api_version": int, "attributes": {name: int}} from libcuda.

    Raises NoGPUError when there is no driver or no device, ConfigError for a bad index."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise NoGPUError(f"specs detect needs a CUDA GPU and its driver; libcuda.so.1 cannot be loaded ({exc})") \
            from None
    rc = lib.cuInit(0)
    if rc != 0:
        raise NoGPUError(f"specs detect needs a CUDA GPU; cuInit failed with CUresult {rc} (no usable device)")
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    if count.value == 0:
        raise NoGPUError("specs detect needs a CUDA GPU; the driver sees none")
    if not 0 <= device < count.value:
        raise ConfigError(f"--device {device} is out of range; allowed 0..{count.value - 1}")
    dev = ctypes.c_int()
    lib.cuDeviceGet(ctypes.byref(dev), device)
    attrs = {}
    for name, number in DEVICE_ATTRIBUTES.items():
        value = ctypes.c_int(0)
        attrs[name] = value.value if lib.cuDeviceGetAttribute(ctypes.byref(value), number, dev) == 0 else None
    buf = ctypes.create_string_buffer(256)
    lib.cuDeviceGetName(buf, 256, dev)
    version = ctypes.c_int(0)
    lib.cuDriverGetVersion(ctypes.byref(version))
    return {"device": buf.value.decode(), "driver_api_version": version.value, "attributes": attrs}


def table_for(cc: tuple[int, int]) -> HardwareSpec:
    """The shipped spec for compute capability `cc`, else the nearest lower one of the same major."""
    major, minor = cc
    same = [load_spec(n) for n in known_specs()]
    exact = [s for s in same if s.compute_capability == (major, minor)]
    if exact:
        return exact[0]
    lower = [s for s in same if s.compute_capability[0] == major and s.compute_capability[1] < minor]
    if lower:
        return max(lower, key=lambda s: s.compute_capability)
    raise SpecError(f"no shipped spec for compute capability {major}.{minor} (or {major}.x below it); shipped: "
                    f"{', '.join(known_specs())}; copy the nearest one and edit it")


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)                # a YAML double-quoted scalar
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _line(indent: str, key: str, value: Any, note: str, width: int = 52) -> str:
    head = f"{indent}{key}: {_scalar(value)}"
    return f"{head.ljust(width - 2)}  # {note}"


def spec_yaml(info: Mapping[str, Any]) -> str:
    """The spec YAML text for a device, `info` as :func:`read_device_attributes` returns it
    (or as tests/data/h200_device_attributes.json records it)."""
    attrs, name = info["attributes"], info.get("device", "unknown GPU")
    cc = (attrs["compute_capability_major"], attrs["compute_capability_minor"])
    table = load_spec(table_for(cc).path)
    arch = f"sm_{cc[0]}{cc[1]}"
    exact = table.compute_capability == cc
    out = [f"# occmodel hardware spec for {name} (compute capability {cc[0]}.{cc[1]}), written by",
           "# `occmodel specs detect`. [D] read from the device (cuDeviceGetAttribute, driver API "
           f"{info.get('driver_api_version', '?')});",
           f"# [T] from occmodel's shipped spec {table.name} (occmodel/specs/{table.name}.yaml, "
           f"{'the same compute capability' if exact else 'the nearest lower compute capability'}): allocation",
           "# granularities, the register cap per thread, barrier slots, carveout steps, integer ALU lanes, peak FLOP rates.",
           "# A device value that differs from the shipped spec says so in its comment.",
           "", f"name: {arch}", f"arch: {arch}", f"compute_capability: [{cc[0]}, {cc[1]}]",
           f"description: {_scalar(f'{name} (detected)')}", "", "sm:"]
    for field in SM_ORDER:
        table_value = getattr(table.sm, field)
        attr = SM_FROM_DEVICE.get(field)
        if attr is not None and attrs.get(attr) is not None:
            value, note = attrs[attr], f"D {attr}"
            if value != table_value:
                note += f" (the {table.name} table says {table_value})"
        else:
            value, note = (list(table_value) if isinstance(table_value, tuple) else table_value), f"T {table.name}"
        out.append(_line("  ", field, value, note))
    out += ["", "products:"] + _product_lines(name, attrs, table)
    return "\n".join(out) + "\n"


def _product_lines(name: str, attrs: Mapping[str, Any], table: HardwareSpec) -> list[str]:
    known = table.product_for_gpu(name)
    ref = known or table.product()
    lines = [_line("  - ", "name", name, "D device name")]
    sms = attrs.get("multiprocessor_count")
    lines.append(_line("    ", "sms", sms or ref.sms, "D multiprocessor_count" if sms else f"T {ref.name}"))
    clock, bus = attrs.get("memory_clock_rate_khz"), attrs.get("global_memory_bus_width")
    if clock and bus:
        gbs = round(2 * clock * 1e3 * bus / 8 / 1e9, 1)
        lines.append(_line("    ", "memory_bandwidth_gbs", gbs, "D 2 x memory_clock_rate x bus_width / 8"))
    else:
        lines.append(_line("    ", "memory_bandwidth_gbs", ref.memory_bandwidth_gbs, f"T {ref.name}"))
    l2 = attrs.get("l2_cache_size")
    lines.append(_line("    ", "l2_mb", round(l2 / 2**20, 1) if l2 else ref.l2_mb,
                       "D l2_cache_size" if l2 else f"T {ref.name}"))
    for field in ("fp16_tensor_tflops", "fp32_tflops"):
        lines.append(_line("    ", field, getattr(ref, field), f"T {ref.name} datasheet"))
    lines.append(_line("    ", "source", f"device attributes; peak rates from occmodel's {ref.name} entry",
                       "D + T"))
    for p in table.products:                   # the table's products stay available by name
        if p is ref and known:
            continue
        lines.append(_line("  - ", "name", p.name, f"T {table.name} (another product of this compute capability)"))
        for field in ("sms", "memory_bandwidth_gbs", "l2_mb", "fp16_tensor_tflops", "fp32_tflops", "source"):
            lines.append(f"    {field}: {_scalar(getattr(p, field))}")
    return lines


def detect(device: int = 0) -> tuple[str, dict[str, Any]]:
    """(YAML text, the attributes read) for the local GPU; NoGPUError without one."""
    info = read_device_attributes(device)
    return spec_yaml(info), info
