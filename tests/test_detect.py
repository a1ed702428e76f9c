"""`occmodel specs detect`: the spec YAML written from device attributes.

CPU: the writer fed a real H200's recorded attributes (tests/data/h200_device_attributes.json,
from scripts/record_driver_occupancy.py). GPU tier: the local device read for real."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from occmodel import cli
from occmodel import detect as det
from occmodel.errors import SpecError
from occmodel.spec import load_spec

H200 = json.loads((Path(__file__).parent / "data" / "h200_device_attributes.json").read_text())


def _load(text: str, tmp_path, name="gpu.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return load_spec(path)


def test_h200_attributes_give_the_shipped_sm_90_limits(tmp_path):
    text = det.spec_yaml(H200)
    spec = _load(text, tmp_path)
    assert spec.sm == load_spec("sm_90").sm
    assert (spec.arch, spec.compute_capability) == ("sm_90", (9, 0))
    gpu = spec.product()                               # the detected device comes first
    assert gpu.name == "NVIDIA H200" and gpu.sms == 132 and gpu.l2_mb == 60
    # 2 x 3,201,000 kHz x 6016 bits / 8 = 4,814.3 GB/s (the datasheet says 4.8 TB/s)
    assert gpu.memory_bandwidth_gbs == pytest.approx(4814.3)
    assert spec.product("H100 SXM").sms == 132         # the table's other products stay


def test_every_field_says_where_it_came_from():
    notes = {}
    for line in det.spec_yaml(H200).splitlines():
        key, _, rest = line.strip().partition(":")
        if "#" in rest:
            notes[key] = rest.rpartition("#")[2].strip()
    for field in det.SM_ORDER:
        expected = "D" if field in det.SM_FROM_DEVICE else "T"
        assert notes[field].split()[0] == expected, (field, notes[field])
    assert notes["carveout_kb"] == "T sm_90" and notes["register_allocation_unit"] == "T sm_90"
    assert notes["max_blocks_per_sm"] == "D max_blocks_per_multiprocessor"


def test_a_device_value_that_differs_from_the_table_is_flagged(tmp_path):
    info = copy.deepcopy(H200)
    info["attributes"]["max_blocks_per_multiprocessor"] = 24
    text = det.spec_yaml(info)
    assert "max_blocks_per_sm: 24" in text and "(the sm_90 table says 32)" in text
    assert _load(text, tmp_path).sm.max_blocks_per_sm == 24


def test_table_for_an_unshipped_capability():
    assert det.table_for((8, 7)).name == "sm_86"       # nearest lower of the same major
    assert det.table_for((12, 1)).name == "sm_120"
    with pytest.raises(SpecError, match="no shipped spec for compute capability 13.0"):
        det.table_for((13, 0))


def test_cli_detect_writes_a_loadable_yaml_and_lists_sources(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(det, "read_device_attributes", lambda device=0: H200)
    out = tmp_path / "h200.yaml"
    assert cli.main(["specs", "detect", "--out", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "specs" and doc["device"] == "NVIDIA H200" and doc["path"] == str(out)
    sources = {r["field"]: r["source"] for r in doc["sections"][0]["rows"]}
    assert sources["shared_memory_per_block_optin"] == "device" and sources["carveout_kb"] == "table"
    assert load_spec(out).sm == load_spec("sm_90").sm
    assert cli.main(["specs", "detect"]) == 0           # no --out: the YAML on stdout
    assert capsys.readouterr().out == det.spec_yaml(H200)
    assert cli.main(["occupancy", "--spec", str(out), "--threads", "256", "--regs", "64", "--format", "csv"]) == 0


def test_no_gpu_is_one_line_exit_2():
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is present")
    except ImportError:
        pass
    proc = subprocess.run([sys.executable, "-m", "occmodel", "specs", "detect"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("occmodel: error: specs detect needs a CUDA GPU")


@pytest.mark.requires_gpu
def test_detected_spec_loads_and_matches_the_device(tmp_path):
    info = det.read_device_attributes()
    spec = _load(det.spec_yaml(info), tmp_path)
    attrs = info["attributes"]
    for field, attr in det.SM_FROM_DEVICE.items():
        assert getattr(spec.sm, field) == attrs[attr], field
    if (attrs["compute_capability_major"], attrs["compute_capability_minor"]) == (9, 0):   # the H200
        assert spec.sm == load_spec("sm_90").sm
