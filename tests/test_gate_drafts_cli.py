"""The person's review of drafts through the CLI (issue 12, item 18): `accept --all` never takes
back a rejection, rejected drafts leave the listing (and are discarded by the next commit), and
the agent's "submitted as ready" header goes once what it submitted is committed."""

from __future__ import annotations

import json
import time

from meshnode.records.gate.drafts import draft_write
from meshnode.engines.gate.gate import _record_submission
from meshnode.engines.gate.jail import Jail
from meshnode.store import Database

SESSION = "core"  # the session the node's agent drafts in, and the CLI reviews


def _agent_drafts(home, files: dict[str, str], summary: str) -> None:
    """What the agent's drafts and its READY submission leave in the node's database."""
    workspace = home / "workspace"
    workspace.mkdir(exist_ok=True)
    db = Database(home / "data" / "meshnode.db")
    try:
        jail = Jail([workspace.resolve()])
        for path, text in files.items():
            draft_write(db, jail, SESSION, path, text.encode())
        _record_submission(db, SESSION, summary, "READY -- checked", True, sorted(files), time.time_ns() // 1_000_000)
    finally:
        db.close()


def test_accept_all_rejected_drafts_and_the_submission_header(home, run_cli):
    def cli(*args: str, code: int = 0) -> str:
        result = run_cli("--home", home, "drafts", *args)
        assert result.returncode == code, result.stderr
        return result.stdout

    _agent_drafts(home, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"}, "three new files")
    assert "submitted these as ready: three new files" in cli("list")
    assert cli("reject", "b.txt") == "rejected: b.txt\n"
    assert cli("accept", "--all") == "accepted: a.txt, c.txt\n"  # not b.txt, which the person rejected

    listed = cli("list")
    assert "b.txt" not in listed and "1 rejected, not shown" in listed
    assert "rejected  change b.txt" in cli("list", "--all")
    assert [d["path"] for d in json.loads(cli("list", "--json"))["drafts"]] == ["a.txt", "c.txt"]

    assert "committed; snapshot" in cli("commit", "-m", "reviewed")
    assert sorted(p.name for p in (home / "workspace").iterdir()) == ["a.txt", "c.txt"]
    after = cli("list", "--all")
    assert after == "(no open drafts)\n"  # no header of a submission already committed, no rejected draft
    assert json.loads(cli("list", "--json")) == {"drafts": [], "rejected_hidden": 0, "submission": None}


def test_a_commit_of_nothing_still_discards_the_rejected_drafts(home, run_cli):
    _agent_drafts(home, {"x.txt": "x\n"}, "one file")
    assert run_cli("--home", home, "drafts", "reject", "--all").stdout == "rejected: x.txt\n"
    refused = run_cli("--home", home, "drafts", "commit")
    assert refused.returncode != 0 and "1 rejected draft(s) were discarded" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert run_cli("--home", home, "drafts", "list", "--all").stdout == "(no open drafts)\n"
    bad = run_cli("--home", home, "drafts", "accept")
    assert bad.returncode != 0 and "--all" in bad.stderr and "Traceback" not in bad.stderr
