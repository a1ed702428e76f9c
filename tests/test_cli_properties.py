"""Property tests of the CLI's argument parsing: any string for -D, --warps, --stages,
--points or --signature gives a valid run (exit 0) or exit 2 with one line on stderr,
never a traceback. In-process through ``cli.main`` with commands that use the model
only (predict, table, rank); --signature goes through the bare-kernel compile path with
the compile itself replaced by the request's validation, so nothing compiles."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from occmodel import cli  # noqa: E402

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# strings that look like what a user types, plus anything at all
_pieces = st.sampled_from(["4", "8", "0", "-1", "3", "16", "2..4", "8..4", "1..100000000", ",", "..", "=", "x",
                           "BLOCK_T", "C", "num_warps", "tl.float16", "0x10", "1e3", " ", "9" * 30, "nan", "*fp16:16"])
TEXT = st.one_of(st.text(max_size=30), st.lists(_pieces, max_size=6).map("".join))


def _run(argv, capsys) -> None:
    status = cli.main(argv)                      # an exception escaping main is a traceback: the test fails
    out, err = capsys.readouterr()
    assert status in (0, 2), (argv, status, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if status == 2:
        assert len(lines) == 1 and lines[0].startswith("occmodel: error: "), (argv, err)
    assert "Traceback" not in err


@SETTINGS
@given(TEXT)
def test_predict_define(capsys, text):
    _run(["predict", "-D", text], capsys)


@SETTINGS
@given(TEXT, TEXT)
def test_predict_warps_and_stages(capsys, warps, stages):
    _run(["predict", "--warps", warps, "--stages", stages], capsys)


@SETTINGS
@given(TEXT, TEXT, TEXT)
def test_table_sweep_lists(capsys, warps, stages, define):
    _run(["table", "--warps", warps, "--stages", stages, "-D", define], capsys)


@SETTINGS
@given(TEXT, TEXT)
def test_rank_points(capsys, points, define):
    _run(["rank", "--points", points, "-D", define, "--warps", "4"], capsys)


@pytest.fixture
def no_compile(monkeypatch):
    """compile_many that validates every job (make_request) and compiles nothing."""
    pytest.importorskip("triton")
    from occmodel import compile_pool
    from occmodel.compile import failed_result, make_request

    def fake(jobs, processes=None, progress=True):
        out = []
        for job in jobs:
            req = make_request(job.fn, job.signature, job.constexprs, job.args, job.arch, job.num_warps,
                               job.num_stages, job.options)
            out.append(failed_result(req, "compile_error", "not compiled in this test"))
        return out

    monkeypatch.setattr(compile_pool, "compile_many", fake)


@SETTINGS
@given(TEXT, TEXT)
def test_compile_signature_and_defines(capsys, no_compile, signature, define):
    import kernels_for_tests  # noqa: F401  (importable by path below)
    from pathlib import Path
    kernel = f"{Path(__file__).parent / 'kernels_for_tests.py'}:add_kernel"
    _run(["compile", "--kernel", kernel, "--spec", "sm_90", "--signature", signature, "-D", define], capsys)


@pytest.mark.parametrize("argv, needle", [
    (["table", "--warps", "8..4"], "reversed"),
    (["table", "--warps", ","], "empty list"),
    (["table", "--stages", "1..100000000"], "the limit is 100,000"),
    (["table", "--warps", "4", "--warps", "8"], "--warps given twice"),
    (["predict", "-D", "BLOCK_T=16", "-D", "BLOCK_T=32"], "-D BLOCK_T given twice"),
    (["rank", "--points", "C=1", "--points", "C=2"], "--points C given twice"),
    (["rank", "--points", "C=1,ctx=8192"], "one NAME per flag; give --points C=... --points ctx=..."),
    (["table", "--warps", "4,3"], "1 config(s) invalid and skipped"),
    (["rank", "--warps", "4,3"], "1 config(s) invalid and skipped"),
])
def test_argument_rules(capsys, argv, needle):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_help_says_which_flags_accumulate(capsys):
    with pytest.raises(SystemExit):
        cli.main(["table", "--help"])
    assert "accumulate" in capsys.readouterr().out
