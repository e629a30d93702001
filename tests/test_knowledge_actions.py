"""Reading the notebook and knowledge as actions (note_show, search, references): the same rows
records.knowledge reads, what ``meshnode note show|search`` prints, and the references a person
typed resolved and checked as the CLI and the web both check them."""

from __future__ import annotations

import json

import pytest

from meshnode.app.actor import AGENT, person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.records import knowledge
from meshnode.store.service import Store
from meshnode.store.short_ids import short_container_id

KEY = NodeKey(bytes([5]) * 32)
T = 1_800_000_000_000
WEB = person("web")


@pytest.fixture
async def app(tmp_path):
    async with await Store.open(tmp_path / "m.db") as store:
        yield App(store, KEY, clock=lambda: T)


async def test_a_note_shown_is_not_marked_read_and_search_finds_what_was_written(app):
    note = (await dispatch(app, AGENT, "note_add", {"text": "lunch at noon", "topic": "plans"}))["did"]
    entry = (await dispatch(app, WEB, "diary_add", {"text": "lunch was late"}))["did"]
    shown = await dispatch(app, WEB, "note_show", {"did": note})
    assert shown == await app.store.read(knowledge.show_note, note) and shown["text"] == "lunch at noon"
    assert (await dispatch(app, WEB, "note_show", {"did": note}))["read"] == shown["read"]  # not marked
    found = await dispatch(app, WEB, "search", {"q": "lunch"})
    assert {r["did"] for r in found} == {note, entry}
    assert found == await app.store.read(knowledge.search, "lunch", None, 50)
    assert [r["did"] for r in await dispatch(app, WEB, "search", {"q": "lunch", "kinds": ["diary"]})] == [entry]
    with pytest.raises(MeshnodeError) as info:
        await dispatch(app, WEB, "search", {"q": "  "})
    assert info.value.code == "bad_query"


async def test_references_are_resolved_from_short_ids_and_a_dangling_one_is_refused(app):
    concept = (await dispatch(app, WEB, "concept_add", {"label": "cat"}))["did"]
    args = {"cls": "semantic_node", "what": "--target", "option": "--allow-dangling"}
    assert await dispatch(app, WEB, "references", {"texts": [short_container_id(concept)], **args}) == [concept]
    entry = (await dispatch(app, WEB, "diary_add", {"text": "a cat"}))["did"]
    with pytest.raises(MeshnodeError) as info:  # of another class
        await dispatch(app, WEB, "references", {"texts": [entry], **args})
    assert info.value.code == "dangling_reference" and "(--allow-dangling refers to it anyway)" in info.value.reason
    assert await dispatch(app, WEB, "references", {"texts": [entry], **args, "allow_dangling": True}) == [entry]
    with pytest.raises(MeshnodeError) as info:
        await dispatch(app, WEB, "references", {"texts": [entry], "cls": "nothing", "what": "x"})
    assert info.value.code == "bad_request"


def test_the_cli_prints_what_the_actions_return(run_cli, home):
    did = run_cli("--home", home, "note", "add", "lunch at noon").stdout.strip()
    out = run_cli("--home", home, "search", "lunch", "--json")
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    assert row["did"] == did and row["kind"] == "note"
    shown = json.loads(run_cli("--home", home, "note", "show", did, "--json").stdout)
    assert shown["container_did"] == did and not shown["read"]
    assert not json.loads(run_cli("--home", home, "note", "show", did, "--json").stdout)["read"]
    out = run_cli("--home", home, "diary", "add", "again", "--replaces", short_container_id(did))
    assert out.returncode == 1 and "(--allow-dangling refers to it anyway)" in out.stderr
