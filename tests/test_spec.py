"""Spec loading: shipped specs, user YAML files, and every kind of bad input."""

import json
from pathlib import Path

import pytest

from occmodel import load_spec
from occmodel.errors import SpecError
from occmodel.spec import SPEC_DIR, known_specs

DATA = Path(__file__).parent / "data"


def test_ships_the_six_compute_capabilities():
    assert set(known_specs()) >= {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"}


def test_sm120_is_consumer_blackwell_not_datacentre():
    sm = load_spec("sm_120").sm
    # the pitfall hardware.md names: 2048 threads / 228 KB is sm_100, not sm_120
    assert (sm.max_warps_per_sm, sm.max_blocks_per_sm) == (48, 24)
    assert (sm.shared_memory_per_sm, sm.shared_memory_per_block_optin) == (100 * 1024, 99 * 1024)
    assert [p.name for p in load_spec("sm_120").products] == ["RTX PRO 6000 Blackwell", "RTX 5090"]


def test_sm90_spec_equals_what_an_h200_reports():
    attrs = json.loads((DATA / "h200_device_attributes.json").read_text())["attributes"]
    sm = load_spec("sm_90").sm
    assert sm.max_threads_per_sm == attrs["max_threads_per_multiprocessor"]
    assert sm.max_blocks_per_sm == attrs["max_blocks_per_multiprocessor"]
    assert sm.shared_memory_per_sm == attrs["max_shared_memory_per_multiprocessor"]
    assert sm.shared_memory_per_block_optin == attrs["max_shared_memory_per_block_optin"]
    assert sm.shared_memory_per_block == attrs["max_shared_memory_per_block"]
    assert sm.reserved_shared_memory_per_block == attrs["reserved_shared_memory_per_block"]
    assert sm.registers_per_sm == attrs["max_registers_per_multiprocessor"]
    assert load_spec("sm_90").product("H200").sms == attrs["multiprocessor_count"]


def test_spec_is_frozen():
    spec = load_spec("sm_90")
    with pytest.raises(Exception):
        spec.sm.max_blocks_per_sm = 64


def test_user_yaml_path_loads(tmp_path):
    text = (SPEC_DIR / "sm_120.yaml").read_text().replace("name: sm_120", "name: my_gpu")
    path = tmp_path / "my_gpu.yaml"
    path.write_text(text)
    assert load_spec(str(path)).name == "my_gpu"


def test_unknown_spec_lists_known_and_suggests():
    with pytest.raises(SpecError, match=r"unknown spec 'sm_12'.*sm_120.*did you mean 'sm_120'"):
        load_spec("sm_12")


def test_missing_file():
    with pytest.raises(SpecError, match="does not exist"):
        load_spec("nowhere/gpu.yaml")


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nsm:\n  warp_size: [32\n  max_threads_per_block: 1024\n")
    with pytest.raises(SpecError, match=r"bad\.yaml:\d+: malformed YAML"):
        load_spec(str(path))


def test_schema_errors_are_all_reported_with_dotted_path_and_line(tmp_path):
    text = (SPEC_DIR / "sm_120.yaml").read_text()
    text = text.replace("  max_blocks_per_sm: 24", "  max_blocks_per_sm: -3")
    text = text.replace("  warp_size: 32\n", "")
    text = text.replace("  register_allocation_unit: 256", "  register_alloc_unit: 256")
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    msg = str(err.value)
    assert "4 errors" in msg
    assert "sm.warp_size: required field" in msg
    assert "sm.register_allocation_unit: required field" in msg
    assert "sm.register_alloc_unit: unknown field (did you mean 'register_allocation_unit'?)" in msg
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("  max_blocks_per_sm: -3"))
    assert f"broken.yaml:{line}: sm.max_blocks_per_sm: must be a non-negative int, got -3" in msg
    assert "\n" not in msg


def test_alu_lanes_are_optional_and_must_divide_a_warp(tmp_path):
    """A spec file written before alu_lanes_per_partition existed still loads (16: Volta to Hopper); a value
    that does not divide 32 is named with what is allowed."""
    text = (SPEC_DIR / "sm_90.yaml").read_text()
    old = "\n".join(t for t in text.splitlines() if "alu_lanes_per_partition" not in t)
    (tmp_path / "old.yaml").write_text(old)
    assert load_spec(str(tmp_path / "old.yaml")).sm.alu_lanes_per_partition == 16
    (tmp_path / "odd.yaml").write_text(text.replace("alu_lanes_per_partition: 16", "alu_lanes_per_partition: 24"))
    with pytest.raises(SpecError, match=r"sm.alu_lanes_per_partition: must divide 32 .* got 24"):
        load_spec(str(tmp_path / "odd.yaml"))
