"""protocols/vectors/gmp.json against the implementation: every container decodes (or fails step 7
as expected), admission in the given order gives the expected outcome on arrival and in the end
(pending ones re-run when what they miss arrives), and the task view is the expected one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from make_gmp_vectors import KEYS, task_view
from meshnode.base.container import ContainerError, decode_container, parse_ms
from meshnode.domain.gmp.rules import CODES, MemoryHeld, admit

ROOT = Path(__file__).resolve().parent.parent
DOC = json.loads((ROOT / "protocols" / "vectors" / "gmp.json").read_text(encoding="utf-8"))
CASES = DOC["cases"]


def test_vector_file_is_what_the_generator_writes():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "make_gmp_vectors.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_keys_come_from_the_seeds():
    for name, k in DOC["keys"].items():
        assert KEYS[name].did == k["did"] and KEYS[name].seed().hex() == k["seed"]


def test_vectors_cover_every_code_and_counting_reason():
    outcomes = {x["expect"]["outcome"] for c in CASES for x in c["containers"]}
    assert set(CODES) | {"admitted", "pending", "class_schema"} <= outcomes
    reasons = {r[1] for c in CASES if "view" in c for r in c["view"]["entries"].values()}
    assert {"not_assignee", "no_version", "not_delegator", "not_candidate", "offer_expired", "not_recipient",
            "not_owner", "nomination", "extension_kind", "not_participant", "not_offer"} <= reasons
    dues = {c["view"]["due"] for c in CASES if "view" in c}
    assert {"holder_dead", "unassigned", "needs_decision", "fork", None} <= dues


@pytest.mark.parametrize("case", CASES, ids=[c["description"][:60] for c in CASES])
def test_case(case):
    now = parse_ms(case["now"])
    held, waiting, final = MemoryHeld(), {}, {}

    def run(c):
        out = admit(c, held)
        final[c.did] = out.kind if out.kind != "refused" else out.code
        if out.kind == "pending":
            waiting.setdefault(out.missing[0], []).append(c)
        elif out.kind == "admitted":
            held.add(c)
            for again in waiting.pop(c.did, []):
                run(again)
        return out

    for item in case["containers"]:
        data = bytes.fromhex(item["hex"])
        expect = item["expect"]
        if expect["outcome"] == "class_schema":
            with pytest.raises(ContainerError) as err:
                decode_container(data, now_ms=now)
            assert err.value.code == "class_schema"
            final[item["did"]] = "class_schema"
            continue
        c = decode_container(data, now_ms=now)
        assert c.did == item["did"] and c.sender_did == DOC["keys"][item["signer"]]["did"]
        out = run(c)
        assert (out.kind if out.kind != "refused" else out.code) == expect["outcome"], item["name"]
        assert list(out.missing) == expect.get("missing", [])
    assert final == case["final"]
    if "view" in case:
        assert task_view(held, case["view"]["lineage"], case["liveness"], now) == case["view"]


def test_arrival_orders_give_one_view():
    views = [json.dumps(c["view"], sort_keys=True) for c in CASES if c["description"].startswith("the lifecycle")
             or c["description"].startswith("the whole lifecycle")]
    assert len(views) == 3 and len(set(views)) == 1
