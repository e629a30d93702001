"""The notebook and knowledge routes over HTTP (meshnode/faces/web/api_notes.py), on one node: what the web
writes is what the CLI reads back, pages follow the ``before`` cursor, looking marks nothing read."""

from __future__ import annotations


import pytest

from webharness import refused, web_node


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("webnotes"), name="notes") as node:
        yield node


def test_a_note_added_on_the_web_is_the_persons_and_stored_verbatim(web):
    text = "<script>alert('x')</script> & <b>bold</b>"
    did = web.post("/api/notes", {"text": text, "topic": "xss", "tags": ["web"], "priority": 3})["did"]
    row = web.get("/api/notes", topic="xss")[0]
    assert row["container_did"] == did and row["text"] == text and row["source"] == "user"
    assert (row["asked_kind"], row["asked_via"]) == ("person", "web")  # who asked: the person, on the web
    refused(web.raw_post("/api/notes", {"text": "as someone else", "source": "llm"}), 400, "bad_arguments")
    assert row["tags"] == ["web"] and row["read"] is False
    assert web.cli_json("note", "show", did)["text"] == text  # the CLI reads the same row
    assert web.get(f"/api/containers/{did}")["container"]["hmp_container"]["payload"]["text"] == text


def test_show_does_not_mark_read_and_read_does(web):
    did = web.post("/api/notes", {"text": "unread until read"})["did"]
    for _ in range(2):
        assert web.get(f"/api/notes/{did}")["read"] is False
    assert did in [r["container_did"] for r in web.get("/api/notes", unread="true")]
    assert web.post(f"/api/notes/{did}/read")["read"] is False  # as it was before this read
    assert web.get(f"/api/notes/{did}")["read"] is True
    assert did not in [r["container_did"] for r in web.get("/api/notes", unread="true")]
    assert did in [r["container_did"] for r in web.get("/api/notes", unread="false")]
    assert web.post(f"/api/notes/{did}/tags", {"add": ["b", "a"]}) == ["a", "b"]
    assert web.post(f"/api/notes/{did}/tags", {"remove": ["a"]}) == ["b"]


def test_pages_follow_the_before_cursor(web):
    made = [web.post("/api/notes", {"text": f"page note {i}", "topic": "paging"})["did"] for i in range(7)]
    seen, before = [], None
    for _ in range(10):
        page = web.get("/api/notes", topic="paging", limit=3, **({"before": before} if before else {}))
        if not page:
            break
        assert len(page) <= 3
        seen += [r["container_did"] for r in page]
        before = page[-1]["container_did"]
    assert seen == made[::-1]  # newest first, each once
    assert [r["container_did"] for r in web.cli_json("note", "list", "--topic", "paging", "--limit", "3")] \
        == made[:-4:-1]
    r = web.raw_get("/api/notes", before="did:hmp:container:uEi" + "A" * 44)
    refused(r, 400, "bad_before")


def test_search_over_notes_diary_and_concepts(web):
    note = web.post("/api/notes", {"text": "the kettle is 100% broken"})["did"]
    diary = web.post("/api/diary", {"text": "bought a new kettle", "topics": ["home"]})["did"]
    concept = web.post("/api/concepts", {"label": "appliance", "aliases": ["kettle"]})["did"]
    found = web.get("/api/search", q="KETTLE")
    assert [(r["kind"], r["did"]) for r in found] == [("concept", concept), ("diary", diary), ("note", note)]
    assert [r["did"] for r in web.get("/api/search", q="kettle", kinds="notes,diary", limit=1)] == [diary]
    assert [r["did"] for r in web.get("/api/search", q="100%")] == [note]  # % is a plain character
    assert [r["did"] for r in web.cli_json("search", "kettle", "--kind", "notes")] == [note]
    r = web.raw_get("/api/search", q="kettle", kinds="files")
    refused(r, 400, "bad_kind")


def test_knowledge_is_written_and_listed_as_the_cli_does(web):
    cat = web.post("/api/concepts", {"label": "cat", "description": "a small feline", "tags": ["animals"]})["did"]
    animal = web.post("/api/concepts", {"label": "animal"})["did"]
    link = web.post("/api/links", {"source": cat[:30], "relation": "is-a", "targets": [animal],
                                   "inverse": "has-kind"})["did"]
    assert web.get("/api/links")[0]["container_did"] == link
    cli = web.cli_json("link", "list")
    shown = web.get("/api/links")
    assert [{k: r[k] for k in c} for r, c in zip(shown, cli)] == cli and len(shown) == len(cli)  # the CLI's rows,
    assert {"author", "at_ms", "html"} <= set(shown[0]) and shown[0]["author"] == "the person (web)"  # and words
    assert web.get("/api/concepts", limit=2)[1]["container_did"] == cat
    dangling = web.raw_post("/api/links", {"source": cat, "relation": "is-a", "targets": [link]})
    refused(dangling, 400, "dangling_reference")
    first = web.post("/api/diary", {"text": "first draft"})["did"]
    second = web.post("/api/diary", {"text": "second draft", "previous": [first]})["did"]
    assert [(r["lineage"], r["container_did"]) for r in web.get("/api/diary")][0] == (first, second)


def test_edits(web):
    concept = web.post("/api/concepts", {"label": "kettel"})["did"]
    fixed = web.post("/api/edits", {"op": "concept_update", "id": concept, "label": "kettle"})["did"]
    assert web.get("/api/concepts")[0]["container_did"] == fixed
    note = web.post("/api/notes", {"text": "meet at 8", "topic": "edits"})["did"]
    new = web.post("/api/edits", {"op": "note_update", "id": note, "text": "meet at 9"})["did"]
    assert [r["container_did"] for r in web.get("/api/notes", topic="edits")] == [new]
    nothing = web.raw_post("/api/edits", {"op": "concept_update", "id": fixed})
    refused(nothing, 400, "nothing_to_change")
