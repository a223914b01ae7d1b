"""The parallel phase of `make test` hands out the long test files first (tests/conftest.py LONGEST_FIRST), which
holds only while the list names real files and pytest-xdist is told to keep the collected order."""

from __future__ import annotations

import json
import subprocess
import sys

from _pytest.reports import TestReport

from tests import conftest
from tests.helpers import ROOT


def test_every_longest_first_entry_is_a_test_file():
    """A renamed or deleted file would drop out of the order silently: each entry must be a file in the suite."""
    missing = [name for name in conftest.LONGEST_FIRST if not (ROOT / "tests/integration" / name).is_file()]
    assert not missing, f"LONGEST_FIRST names files that do not exist: {missing}"
    assert len(set(conftest.LONGEST_FIRST)) == len(conftest.LONGEST_FIRST), "LONGEST_FIRST names a file twice"


def test_the_parallel_phase_keeps_the_collected_order():
    """Without --no-loadscope-reorder, pytest-xdist (3.x) sorts the files by their number of tests and the long
    files of few tests (the loop: 3, RL: 1) start last; the parallel command line must carry the flag."""
    parallel = [line for line in (ROOT / "scripts/test.sh").read_text().splitlines() if "pytest -n" in line]
    assert parallel, "scripts/test.sh has no parallel (--dist loadfile) command"
    assert all("--no-loadscope-reorder" in line for line in parallel), parallel


def test_the_timeline_has_a_line_per_phase_and_the_bench_reads_it(tmp_path, monkeypatch):
    """LORALOOP_TEST_TIMELINE: each phase's report becomes a JSON line, xdist's controller copy of a worker's report
    (it carries `node`) is not written twice, and bench/test_timeline.py turns the file into its tables."""
    timeline = tmp_path / "timeline.jsonl"
    monkeypatch.setenv("LORALOOP_TEST_TIMELINE", str(timeline))
    monkeypatch.setattr(conftest, "_worker", "")  # as in the serial phase, whichever worker runs this test
    for n, phase in enumerate(("setup", "call", "teardown")):
        report = TestReport(
            "tests/integration/x/test_a.py::test_b",
            ("x", 0, "t"),
            {},
            "passed",
            None,
            phase,
            start=100.0 + n,
            stop=101.0 + n,
        )
        conftest.pytest_runtest_logreport(report)
    copy = TestReport("tests/integration/x/test_a.py::test_b", ("x", 0, "t"), {}, "passed", None, "call")
    copy.node = "gw0"
    conftest.pytest_runtest_logreport(copy)
    lines = [json.loads(line) for line in timeline.read_text().splitlines()]
    assert [line["phase"] for line in lines] == ["setup", "call", "teardown"]
    assert lines[1].pop("cpu") >= 0  # this process's CPU between two reports
    assert lines[1] == {
        "worker": "main",
        "test": "tests/integration/x/test_a.py::test_b",
        "phase": "call",
        "start": 101.0,
        "stop": 102.0,
        "outcome": "passed",
    }
    table = subprocess.run(
        [sys.executable, str(ROOT / "bench/test_timeline.py"), str(timeline)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| main | 0 | 3 | 3 | - |" in table, table
    assert "| tests/integration/x/test_a.py | main | 0 | 3 | 3 |" in table, table
    assert "files that used the most CPU" in table, table
