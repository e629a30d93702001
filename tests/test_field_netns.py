"""The field run (tests/fieldrun.py) as a soak: three nodes on three network namespaces driven
through the command line for ``MESHNODE_FIELD_MINUTES`` (default 60) with kills, stops, cut links,
renames and notes; every event does what a person expects, and no node logs a WARNING or ERROR
that the log classification table does not explain. ``make soak`` runs it."""

from __future__ import annotations

import os

import pytest

import netns
from fieldrun import field_run

REASON = netns.available()


@pytest.mark.soak
@pytest.mark.netns
@pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")
def test_an_hour_on_three_hosts_as_their_person_runs_them():
    result = field_run(float(os.environ.get("MESHNODE_FIELD_MINUTES", "60")))
    assert result["events"] > 0
    assert result["failures"] == [], result["failures"]
    assert result["findings"] == [], "\n".join(result["findings"])
