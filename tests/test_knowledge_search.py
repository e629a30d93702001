"""The notebook's reads for the web and the CLI: ``knowledge.search`` over notes, diary and
concepts; ``Database.recent_notes`` paging and filters; ``knowledge.show_note`` (which, unlike
``read_note``, marks nothing read)."""

from __future__ import annotations

import json

import pytest

from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.knowledge import make_concept, make_diary_entry
from meshnode.records.knowledge import read_note, search, show_note
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_800_000_000_000
KEY = NodeKey(bytes(32))
OTHER = NodeKey(bytes([7]) * 32)


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "search.db")
    yield database
    database.close()


def put(db: Database, c, **local) -> str:
    db.put_container(c, received_at_ms=T0, local=local or None)
    return c.did


def note(db: Database, text: str, at: int, key: NodeKey = KEY, **kw) -> str:
    return put(db, make_note(key, text, now_ms=at, **kw))


def test_search_finds_each_kind_newest_first(db):
    n = note(db, "Lunch with the mesh people", T0 + 1)
    d = put(db, make_diary_entry(KEY, "the mesh held all day", now_ms=T0 + 2))
    c = put(db, make_concept(KEY, "Meshwork", now_ms=T0 + 3))
    a = put(db, make_concept(KEY, "network", now_ms=T0 + 4, aliases=["сетка", "mesh net"]))
    note(db, "nothing to see", T0 + 5)
    rows = search(db, "MESH")
    assert [(r["kind"], r["did"]) for r in rows] == [("concept", a), ("concept", c), ("diary", d), ("note", n)]
    assert rows[0]["aliases"] == ["mesh net", "сетка"] and rows[3]["read"] is False
    assert [r["did"] for r in search(db, "mesh", ["notes", "diary"])] == [d, n]
    assert [r["did"] for r in search(db, "сетк")] == [a]  # an alias that JSON would escape
    assert [r["did"] for r in search(db, "mesh", limit=2)] == [a, c]


def test_search_takes_percent_and_underscore_literally(db):
    hit = note(db, "50% off", T0 + 1)
    note(db, "500 off", T0 + 2)
    under = note(db, "snake_case", T0 + 3)
    note(db, "snakeXcase", T0 + 4)
    slash = note(db, r"a\b", T0 + 5)
    assert [r["did"] for r in search(db, "0%")] == [hit]
    assert [r["did"] for r in search(db, "e_c")] == [under]
    assert [r["did"] for r in search(db, "\\")] == [slash]
    assert [r["did"] for r in search(db, "%")] == [hit]


def test_search_refuses_a_blank_query_and_an_unknown_kind(db):
    for q, kinds, code in (("  ", None, "bad_query"), ("x" * 257, None, "bad_query"), ("x", ["files"], "bad_kind")):
        with pytest.raises(MeshnodeError) as err:
            search(db, q, kinds)
        assert err.value.code == code and err.value.reason


def test_hidden_notes_are_not_found(db):
    old = note(db, "meet at 8", T0 + 1)
    new = put(db, make_note(KEY, "meet at 9", now_ms=T0 + 2, replaces=[old]))
    assert [r["did"] for r in search(db, "meet")] == [new]


def test_pages_of_notes_follow_the_before_cursor_with_ties_on_time(db):
    dids = [note(db, f"n{i}", T0 + i // 3) for i in range(10)]  # three notes per millisecond
    seen, before = [], None
    while True:
        page = db.recent_notes(4, before=before)
        if not page:
            break
        seen += [r["container_did"] for r in page]
        before = page[-1]["container_did"]
    assert sorted(seen) == sorted(dids) and len(seen) == len(set(seen)) == 10
    times = [r["timestamp"] for r in db.recent_notes(100)]
    assert times == sorted(times, reverse=True)
    with pytest.raises(MeshnodeError) as err:
        db.recent_notes(4, before="did:hmp:container:uEiAnope")
    assert err.value.code == "bad_before"


def test_note_filters(db):
    a = note(db, "buy 100% milk", T0 + 1, topic="shop", source="user")
    b = note(db, "buy 1000 eggs", T0 + 2, topic="shop", source="cli")
    c = note(db, "from a peer", T0 + 3, key=OTHER, source="llm")
    read_note(db, b)
    dids = lambda **kw: [r["container_did"] for r in db.recent_notes(50, **kw)]  # noqa: E731
    assert dids(query="100%") == [a]
    assert dids(query="SHOP") == [b, a]  # the topic too, case-insensitive
    assert dids(unread=True) == [c, a] and dids(unread=False) == [b]
    assert dids(source="user") == [a] and dids(topic="shop", unread=True) == [a]
    assert db.recent_notes(1)[0]["source"] == "llm"


def test_show_note_does_not_mark_read(db):
    did = note(db, "<script>alert(1)</script>", T0)
    assert show_note(db, did)["read"] is False
    assert show_note(db, did)["text"] == "<script>alert(1)</script>"
    assert read_note(db, did)["read"] is False  # as it was before this read
    assert show_note(db, did)["read"] is True
    with pytest.raises(MeshnodeError) as err:
        show_note(db, "did:hmp:container:uEiAnope")
    assert err.value.code == "not_found"


def test_the_cli_pages_filters_shows_and_searches(run_cli, home):
    def cli(*args):
        result = run_cli("--home", home, *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    dids = [cli("note", "add", f"errand {i}", "--topic", "errands").strip() for i in range(3)]
    first = json.loads(cli("note", "list", "--limit", "2", "--json"))
    assert [r["container_did"] for r in first] == dids[:0:-1]
    short = first[-1]["container_did"][len("did:hmp:container:uEi"):][:10]
    assert [r["container_did"] for r in json.loads(cli("note", "list", "--before", short, "--json"))] == [dids[0]]
    assert json.loads(cli("note", "list", "--search", "errand 1", "--json"))[0]["container_did"] == dids[1]
    assert json.loads(cli("note", "list", "--read", "--json")) == []
    assert json.loads(cli("note", "show", dids[0], "--json"))["read"] is False
    assert len(json.loads(cli("note", "list", "--unread", "--topic", "errands", "--source", "cli", "--json"))) == 3
    found = json.loads(cli("search", "errand", "--kind", "notes", "--limit", "2", "--json"))
    assert [r["did"] for r in found] == dids[:0:-1]
    assert "errand 2" in cli("search", "errand")
