"""Versions and forks: every node shows the same version of a lineage, whatever the arrival order."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.base.container import build_container
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database
from meshnode.domain.sync.versions import choose, lineage_root

KEYS = [NodeKey(bytes([i]) * 32) for i in range(10, 13)]
T0 = 1_800_000_000_000


def entry(key, text, t, previous=None, cls="diary_entry"):
    payload = {"content": text, "topics": ["t"]} if cls == "diary_entry" else {"label": text}
    return build_container(key, cls, payload, timestamp_ms=T0 + t,
                           related={"previous_version": previous} if previous else None)


VIEW = {"diary_entry": "diary_entries", "semantic_node": "concepts"}


# a version tree: each new version names 0..2 earlier versions as previous ones
trees = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5_000), st.lists(st.integers(0, 50), max_size=2)),
                 min_size=1, max_size=12)


def build(spec, cls="diary_entry"):
    made = []
    for i, (author, t, parents) in enumerate(spec):
        prev = sorted({made[p % len(made)].did for p in parents}) if made and parents else None
        made.append(entry(KEYS[author], f"v{i}", t, prev, cls))
    return made


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(trees, st.randoms(), st.sampled_from(sorted(VIEW)))
def test_the_view_is_the_same_in_any_arrival_order(tmp_path_factory, spec, rnd, cls):
    made = build(spec, cls)
    shown = []
    for trial in range(2):
        order = list(made)
        rnd.shuffle(order)
        db = Database(tmp_path_factory.mktemp("v") / "x.db")
        try:
            for c in order:
                db.put_container(c, received_at_ms=T0)
            shown.append(sorted(db.conn.execute(f"SELECT lineage, container_did, forks FROM {VIEW[cls]}")))
            # the incremental lineage index agrees with a walk over every version at once
            previous = {c.did: [p for p in c.related.get("previous_version", [])] for c in made}
            index = dict(db.conn.execute("SELECT did, root FROM container_versions"))
            roots = {c.did: lineage_root(c.did, previous) for c in made}
            assert index == roots
            # and the view shows, per lineage, what choose() picks from all its versions at once
            expected = []
            for root in set(roots.values()):
                best, forks = choose([c for c in made if roots[c.did] == root])
                expected.append((root, best.did, forks))
            assert shown[-1] == sorted(expected)
        finally:
            db.close()
    assert shown[0] == shown[1]
    # a single lineage when every later version names an earlier one
    if all(parents for _, _, parents in spec[1:]):
        assert len(shown[0]) == 1
        best, forks = choose(made)
        assert shown[0][0][1] == best.did and shown[0][0][2] == forks


def test_a_fork_keeps_both_heads_and_shows_the_later(tmp_path):
    root = entry(KEYS[0], "first", 0)
    left = entry(KEYS[0], "left", 10, [root.did])
    right = entry(KEYS[1], "right", 20, [root.did])
    db = Database(tmp_path / "x.db")
    try:
        for c in (right, root, left):
            db.put_container(c, received_at_ms=T0)
        rows = db.conn.execute("SELECT lineage, container_did, text, forks FROM diary_entries").fetchall()
        assert rows == [(root.did, right.did, "right", 1)]
        assert db.conn.execute("SELECT count(*) FROM containers WHERE class = 'diary_entry'").fetchone() == (3,)
        db.conn.execute("DELETE FROM diary_entries")
        db.rebuild_views()  # the view is derived: rebuilt from containers, the same
        assert db.conn.execute("SELECT lineage, container_did, text, forks FROM diary_entries").fetchall() == rows
    finally:
        db.close()


def concept(key, label, t, previous=None):
    return build_container(key, "semantic_node", {"label": label}, timestamp_ms=T0 + t,
                           related={"previous_version": previous} if previous else None)


def edges(key, t, source, targets, relation="is_a", previous=None):
    return build_container(key, "semantic_edges",
                           {"domain": "test", "edges": {source: [{"targets": targets, "relation": relation}]}},
                           timestamp_ms=T0 + t, related={"previous_version": previous} if previous else None)


def test_links_name_concepts_that_arrive_later_and_follow_their_new_versions(tmp_path):
    cat, animal = concept(KEYS[0], "cat", 0), concept(KEYS[0], "animal", 1)
    link = edges(KEYS[1], 2, cat.did, [animal.did])
    cat2 = concept(KEYS[0], "cat (felis catus)", 3, [cat.did])
    link2 = edges(KEYS[1], 4, cat.did, [animal.did], relation="kind_of", previous=[link.did])
    db = Database(tmp_path / "x.db")
    try:
        db.put_container(link, received_at_ms=T0)  # before the concepts it names
        row = db.conn.execute("SELECT from_concept_id, to_concept_id, relation_type FROM links").fetchall()
        assert row == [(None, None, "is_a")]
        for c in (animal, cat2, cat):  # a later version of cat arrives before the first one
            db.put_container(c, received_at_ms=T0)
        ids = dict(db.conn.execute("SELECT lineage, id FROM concepts"))
        assert sorted(db.conn.execute("SELECT name FROM concepts")) == [("animal",), ("cat (felis catus)",)]
        expected = [(ids[cat.did], ids[animal.did], "is_a", cat.did, animal.did)]
        query = "SELECT from_concept_id, to_concept_id, relation_type, from_did, to_did FROM links"
        assert db.conn.execute(query).fetchall() == expected
        db.put_container(link2, received_at_ms=T0)  # a new version of the edges replaces the rows
        assert db.conn.execute(query).fetchall() == [(ids[cat.did], ids[animal.did], "kind_of", cat.did, animal.did)]
        before = db.conn.execute(query).fetchall()
        db.conn.execute("DELETE FROM links")
        db.rebuild_views()
        assert db.conn.execute(query).fetchall() == before
    finally:
        db.close()


def test_a_database_from_before_the_lineage_index_gets_it_at_open(tmp_path):
    root = entry(KEYS[0], "first", 0)
    later = entry(KEYS[0], "second", 5, [root.did])
    db = Database(tmp_path / "x.db")
    for c in (root, later):
        db.put_container(c, received_at_ms=T0)
    db.conn.execute("DELETE FROM container_versions")  # as 0006 leaves an older database
    db.close()
    db = Database(tmp_path / "x.db")
    try:
        assert dict(db.conn.execute("SELECT did, root FROM container_versions")) == {root.did: root.did,
                                                                                     later.did: root.did}
        assert db.conn.execute("SELECT container_did FROM diary_entries").fetchall() == [(later.did,)]
    finally:
        db.close()


def test_malformed_edges_are_refused_with_a_reason():
    from meshnode.base.container import ContainerError
    import pytest

    for bad in ({}, {"not-a-did": [{"targets": [KEYS[0].did], "relation": "r"}]},
                {KEYS[0].did: [{"targets": [], "relation": "r"}]}, {KEYS[0].did: [{"targets": [KEYS[0].did]}]}):
        with pytest.raises(ContainerError) as info:
            build_container(KEYS[0], "semantic_edges", {"edges": bad}, timestamp_ms=T0)
        assert "edges" in info.value.reason


def test_the_shown_version_ignores_what_this_node_thinks_of_the_authors(tmp_path):
    """The partition test's fork: two nodes version one concept apart; every node that holds the same
    containers shows the same head, whatever reputation it has recorded for the authors and whether
    that was recorded before or after the versions arrived (trust is local, the view is not)."""
    from meshnode.domain.reputation import Evidence
    from meshnode.records.reputation.records import record_evidence

    first = concept(KEYS[0], "mesh", 0)
    left = concept(KEYS[1], "mesh (left)", 10, [first.did])
    right = concept(KEYS[2], "mesh (right)", 20, [first.did])
    shown = []
    for n, (liked, before) in enumerate([(None, True), (KEYS[1], True), (KEYS[1], False), (KEYS[2], True)]):
        db = Database(tmp_path / f"{n}.db")
        try:
            if liked and before:
                record_evidence(db, liked.did, [Evidence("task_success", T0, 20)], now_ms=T0)
            for c in (first, left, right):
                db.put_container(c, received_at_ms=T0)
            if liked and not before:
                record_evidence(db, liked.did, [Evidence("task_success", T0, 20)], now_ms=T0)
            db.rebuild_views() if n == 2 else None
            shown.append(db.conn.execute("SELECT lineage, container_did, forks FROM concepts").fetchall())
        finally:
            db.close()
    assert shown == [[(first.did, right.did, 1)]] * 4
