"""`--format json` has the keys docs/json_schema.md documents (the table between its
<!-- extra-keys --> markers), and `--format csv` the same columns. Commands marked (GPU) or
(compiles) in that table are left to their own tests."""

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


def _documented():
    text = DOC.read_text()
    table = text.split("<!-- extra-keys -->")[1].split("<!-- /extra-keys -->")[0]
    rows = []
    for line in table.strip().splitlines()[2:]:
        name, invocation, keys = [c.strip() for c in line.strip("|").split("|")]
        if "(GPU)" in invocation or "(compiles)" in invocation:
            continue
        argv = shlex.split(re.search(r"`([^`]*)`", invocation).group(1))
        extra = set() if keys == "(none)" else set(re.findall(r"`([a-z_]+)`", keys))
        rows.append(pytest.param(argv, extra, id=name))
    return rows


CASES = _documented()


def test_the_doc_covers_the_cli_commands():
    documented = {p.values[0][0] for p in CASES}
    assert {"occupancy", "specs", "predict", "table", "plot", "validate"} <= documented


def _scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """`cache info` / `cache clear` read and free a cache of the test's own, never the user's."""
    monkeypatch.setenv("OCCMODEL_CACHE_DIR", str(tmp_path / "occmodel-cache"))


def _run(argv, fmt, tmp_path, capsys):
    argv = [str(tmp_path / a) if a.startswith("F.") else a for a in argv]
    rc = cli.main(argv + ["--format", fmt])
    out = capsys.readouterr().out
    assert rc == 0, out
    return out


@pytest.mark.parametrize("argv, extra", CASES)
def test_json_has_the_documented_keys(argv, extra, tmp_path, capsys):
    doc = json.loads(_run(argv, "json", tmp_path, capsys))
    assert set(doc) == ENVELOPE | extra
    assert doc["command"] == argv[0] and doc["schema_version"] == 2
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
