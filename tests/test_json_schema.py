"""`--format json` has the keys docs/json_schema.md documents (the table between its
<!-- extra-keys --> markers), every per-config object the keys of its <!-- config-keys -->
table with typed values, and `--format csv` the same columns. Every command of the CLI has
a row; rows marked (compiles) run here (a compile cache shared with the other compiling
tests); rows marked (GPU) run only where a GPU is."""

import csv
import io
import json
import re
import shlex
from pathlib import Path

import pytest

from occmodel import cli

DOC = Path(__file__).parent.parent / "docs" / "json_schema.md"
ENVELOPE = {"command", "schema_version", "assumptions", "sections"}
pytestmark = pytest.mark.usefixtures("shared_cache")     # the (compiles) rows reuse the session's compiles


def _table(marker: str) -> list[list[str]]:
    text = DOC.read_text()
    table = text.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.strip().splitlines()[2:]]


def _documented():
    rows = []
    for name, invocation, keys in _table("extra-keys"):
        argv = shlex.split(re.search(r"`([^`]*)`", invocation).group(1))
        extra = set() if keys.startswith("(") else set(re.findall(r"`([a-z_]+)`", keys))
        marks = []
        if "(GPU)" in invocation:
            marks.append(pytest.mark.requires_gpu)
            argv.append("--spec=LOCAL")                 # the GPU's own spec: both commands refuse another
        rows.append(pytest.param(argv, extra, id=name, marks=marks))
    return rows


CONFIG_KEYS = {k for row in _table("config-keys") for k in re.findall(r"`([a-z_]+)`", row[0])}
CASES = _documented()


def test_the_doc_covers_every_cli_command():
    documented = {p.values[0][0] for p in CASES}
    assert documented == set(cli.COMMANDS)
    assert {"config", "shared", "regs", "spills", "blocks_per_sm", "warps_per_sm", "occupancy", "limiter",
            "source", "status", "why"} <= CONFIG_KEYS


FIT_KEYS = {"config", "status", "message", "predicted", "shared", "regs", "spills", "why"}


def _config_objects(doc: dict) -> list[dict]:
    if doc["command"] == "fit":                # held-out configs: the fit's prediction and the compile
        assert all(set(c) == FIT_KEYS for c in doc["configs"]) and doc["configs"]
        return []
    objs = list(doc.get("configs") or [])
    for key in ("baseline", "candidate"):
        if isinstance(doc.get(key), dict):
            objs.append(doc[key])
    out = []
    for o in objs:                             # validate's configs wrap a predicted and a compiled object
        out += [o] if ("source" in o or "predicted" not in o) else []
        out += [o[k] for k in ("predicted", "compiled") if isinstance(o.get(k), dict)]
    return [o for o in out if o.get("status") != "invalid"]


def _check_config(obj: dict) -> None:
    assert CONFIG_KEYS <= set(obj), CONFIG_KEYS - set(obj)
    assert isinstance(obj["config"], dict) and "num_warps" in obj["config"]
    for k in ("shared", "static_shared", "regs", "regs_estimate", "spills", "threads", "blocks_per_sm",
              "warps_per_sm"):
        assert obj[k] is None or (isinstance(obj[k], int) and not isinstance(obj[k], bool)), (k, obj[k])
    assert obj["occupancy"] is None or isinstance(obj["occupancy"], float) and 0 <= obj["occupancy"] <= 1
    assert isinstance(obj["fits"], bool) and isinstance(obj["why"], str)


def _scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """`cache info` / `cache clear` read and free a cache of the test's own, never the user's."""
    monkeypatch.setenv("OCCMODEL_CACHE_DIR", str(tmp_path / "occmodel-cache"))


def _local_spec() -> str:
    import torch
    major, minor = torch.cuda.get_device_capability(0)
    return f"sm_{major}{minor}"


def _run(argv, fmt, tmp_path, capsys):
    argv = [str(tmp_path / a) if a.startswith("F.") else a for a in argv]
    argv = [f"--spec={_local_spec()}" if a == "--spec=LOCAL" else a for a in argv]
    rc = cli.main(argv + ["--format", fmt])
    out = capsys.readouterr().out
    assert rc == 0, out
    return out


@pytest.mark.parametrize("argv, extra", CASES)
def test_json_has_the_documented_keys(argv, extra, tmp_path, capsys):
    doc = json.loads(_run(argv, "json", tmp_path, capsys))
    assert set(doc) == ENVELOPE | extra
    assert doc["command"] == argv[0] and doc["schema_version"] == 2
    objs = _config_objects(doc)
    if ("configs" in extra or "baseline" in extra) and doc["command"] != "fit":
        assert objs, "no per-config object"
    for obj in objs:
        _check_config(obj)
    assert isinstance(doc["assumptions"], list) and doc["sections"]
    for section in doc["sections"]:
        assert set(section) == {"title", "columns", "rows", "notes"}
        for row in section["rows"]:
            assert list(row) == section["columns"]
            for v in row.values():
                assert _scalar(v) or (isinstance(v, list) and all(map(_scalar, v))), v


@pytest.mark.parametrize("argv, extra", CASES)
def test_csv_header_is_the_column_keys(argv, extra, tmp_path, capsys):
    doc = json.loads(_run(argv, "json", tmp_path, capsys))
    lines = list(csv.reader(io.StringIO(_run(argv, "csv", tmp_path, capsys))))
    first = doc["sections"][0]
    if len(doc["sections"]) == 1:
        assert lines[0] == first["columns"] and len(lines) == 1 + len(first["rows"])
    else:
        headers = [ln for ln in lines if ln and ln[0] == "section"]
        assert headers == [["section"] + s["columns"] for s in doc["sections"]]


def test_json_writes_a_value_it_has_no_type_for_as_text():
    """A config may hold a Triton dtype (`-D dtype=tl.float32`, Liger's group-norm constexpr): the JSON
    names it ("fp32") instead of stopping with a traceback."""
    import triton.language as tl

    from occmodel.report import Report, Section, render
    report = Report(command="rank", sections=[Section("t", [("dtype", "dtype")], [{"dtype": tl.float32}])],
                    extra={"estimates": [[{"config": {"dtype": tl.float32, "BLOCK": 256}}]]})
    doc = json.loads(render(report, "json"))
    assert doc["sections"][0]["rows"] == [{"dtype": "fp32"}]
    assert doc["estimates"][0][0]["config"] == {"dtype": "fp32", "BLOCK": 256}
