"""Every benchmark still runs: each bench/*.py with ``--smoke`` (tiny sizes, no settle or idle windows),
its last line one JSON object naming the bench (as runs are compared by it). A new script is covered
as soon as it is in bench/. The figures themselves are not judged here; `make bench` prints them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py"))


def test_there_are_benches_to_run():
    assert "mesh.py" in SCRIPTS and "consensus.py" in SCRIPTS, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_runs_and_ends_with_one_json_object(script):
    # the timeout only means "hung": a smoke run takes seconds
    result = subprocess.run([sys.executable, str(BENCH / script), "--smoke"], capture_output=True, text=True,
                            timeout=240, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-2000:]
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["bench"] == script.removesuffix(".py")
