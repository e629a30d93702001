"""What each kind of child gets (meshnode.engines.spawn.kinds) and the seeding that does it (spawn.seed).

A parent store is filled by the real functions (notes of every audience and a chat, diary,
concepts, links, GMP goals and tasks, a gate draft and confirmation, LLMs, an account with a
secret, peers with reputation, an agent table), a child is seeded for each kind in-process, and
the child is compared table by table with KIND_RULES; the parent's secrets must not appear
anywhere in the child's files.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from meshnode.store import chat
from meshnode.domain import knowledge
from meshnode.app.actions import chat as chat_actions
from meshnode.app.actor import person
from meshnode.records.mind import registry
from meshnode.records.mind.registry import Endpoint
from meshnode.base.container.schema import known_classes
from meshnode.records.gate import confirm, drafts
from meshnode.engines.gate.jail import Jail
from meshnode.records.gmp import service as gmp
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.domain.reputation.model import Evidence
from meshnode.records.reputation.records import publish_trust, record_evidence
from meshnode.engines.spawn import kinds, seed, seed_rows
from meshnode.engines.spawn.model import KINDS
from meshnode.base.errors import SpawnError
from meshnode.store.database import Database
from meshnode.store.peers import save_standing, set_liveness
from meshnode.store.sharing import set_friend, shareable

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000_000
PRIVATE_TEXT = "the person's private diary: PRIVATE-7f3a"
CHAT_TEXT = "a chat message to the agent: CHAT-91c2"
DRAFT_TEXT = b"draft content DRAFT-5e0d\n"
SECRET = "hunter2-ACCOUNT-SECRET-b7"
CONFIRM_ARG = "CONFIRM-ARG-4411"


# --- (a) the rules cover everything -------------------------------------------------------------------


def _fresh_tables(tmp_path: Path) -> set[str]:
    db = Database(tmp_path / "fresh.db")
    try:
        return {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        db.close()


def test_rules_cover_every_table_of_every_migration(tmp_path):
    tables = _fresh_tables(tmp_path)
    sql_tables = set()
    for f in (ROOT / "meshnode/store/migrations").glob("*.sql"):
        sql_tables |= set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", f.read_text()))
    assert tables <= sql_tables | {"sqlite_sequence"}
    missing = sorted(t for t in tables if t not in kinds.TABLES)
    assert not missing, f"tables without a spawn decision in kinds.TABLES: {missing}"
    for rule in kinds.TABLES.values():
        assert {rule.clone, rule.trained, rule.newborn} <= set(kinds.RULES) and rule.why
    assert all(r.newborn in ("never", "parent") for r in kinds.TABLES.values())


def test_rules_cover_every_registered_class():
    for cls, version in known_classes():
        if cls == "note":
            keys = [kinds.class_key(cls, version, a) for a in ("public", "friends", "private")]
        else:
            keys = [kinds.class_key(cls, version)]
        assert all(k is not None and k != kinds.UNKNOWN_CLASS for k in keys), (cls, version)
    for name in ("spawn_invitation", "spawn_hello"):
        assert kinds.rule("clone", cls=name) == "never"
    assert kinds.rule("clone", cls="some_new_class", version="1.0") == "copy"
    assert kinds.rule("clone", cls="note", version="2.0", audience="public") == "never"  # cannot be judged
    assert kinds.rule("clone", cls="note", version="1.0", audience="public") == "copy"
    assert kinds.rule("clone", cls="note", version="1.0", audience="private") == "never"
    assert kinds.rule("clone", cls="goal", version="9.9") == "never"  # an unknown version of a named class
    assert kinds.rule("trained", table="agent_t_whatever") == "never"
    assert kinds.rule("clone", table="a_table_from_the_future") == "never"
    with pytest.raises(ValueError):
        kinds.rule("twin", table="notes")


def test_every_row_table_has_its_columns(tmp_path):
    db = Database(tmp_path / "fresh.db")
    try:
        for table, rule in kinds.TABLES.items():
            if "row" in rule[:3] and table != kinds.AGENT_TABLES:
                assert table in seed_rows.COLUMNS, table
                have = set(seed_rows.columns_of(db.conn, table))
                assert set(seed_rows.COLUMNS[table]) <= have, table
        assert set(seed_rows.COLUMNS) <= {t for t, r in kinds.TABLES.items() if "row" in r[:3]}
    finally:
        db.close()


def _readme_rows(heading: str) -> dict[str, tuple[str, ...]]:
    text = (ROOT / "README.md").read_text()
    start = text.index(heading)
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = tuple(cells[1:5])
    return rows


def test_readme_tables_agree_with_kind_rules():
    for heading, rules in (("#### Container classes a child gets", kinds.CLASSES),
                           ("#### Local tables a child gets", kinds.TABLES)):
        rows = _readme_rows(heading)
        assert rows == {name: (r.clone, r.trained, r.newborn, r.why) for name, r in rules.items()}, heading


# --- (b) a parent with real content, and a child of each kind --------------------------------------


def _admin(db: Database, key: NodeKey, kind: str, args: dict):
    from meshnode.engines.cognition import executor
    from meshnode.engines.cognition.commands import extract

    answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}) + "\n# End of commands\n"
    result = executor.run(db, key, T0, extract(answer).commands[0])
    assert result["status"] == "ok", result
    return result["result"]


class Parent:
    """A parent store with one of everything spawn must decide about; what a child must get is kept."""

    def __init__(self, tmp_path: Path):
        self.key, self.friend, self.stranger = NodeKey.generate(), NodeKey.generate(), NodeKey.generate()
        self.path = tmp_path / "parent.db"
        db = self.db = Database(self.path)
        k, t = self.key, T0
        with db.transaction() as conn:
            conn.execute("INSERT INTO identity (id, name, pubkey) VALUES (?, 'parent', ?)", (k.did, k.public_key.hex()))
        set_friend(db, self.friend.did, self.friend.peer_id, t)
        put = self.put
        self.public = put(make_note(k, "a public note PUBLIC-0001", now_ms=t, audience="public"))
        self.friends_closed = put(make_note(k, "friends only FRIENDS-CLOSED", now_ms=t + 1, audience="friends",
                                            recipients=[self.friend.did]))
        self.friends_open = put(make_note(k, "friends, may travel FRIENDS-OPEN", now_ms=t + 2, audience="friends",
                                          recipients=[self.friend.did], forward=1))
        self.private = put(make_note(k, PRIVATE_TEXT, now_ms=t + 3))
        self.chat = chat_actions.compose(db, k, person("web"), CHAT_TEXT, None, t + 4)
        self.their_public = put(make_note(self.stranger, "a stranger's public note", now_ms=t + 5, audience="public"),
                                self.stranger.did)
        self.diary = put(knowledge.make_diary_entry(k, "what I learned DIARY-1", now_ms=t + 6))
        self.diary2 = put(knowledge.make_diary_entry(k, "and more DIARY-2", now_ms=t + 6))
        c1 = put(knowledge.make_concept(k, "mesh", now_ms=t + 7))
        c2 = put(knowledge.make_concept(k, "node", now_ms=t + 8))
        self.link = put(knowledge.make_link(k, c1, "has_part", [c2], now_ms=t + 9))
        self.their_closed = put(knowledge.make_diary_entry(self.friend, "a friend's, no further FRIEND-CLOSED",
                                                           now_ms=t + 10, forward=0), self.friend.did)
        self.their_open = put(knowledge.make_concept(self.friend, "friend concept", now_ms=t + 11, forward=1),
                              self.friend.did)
        from meshnode.base.container import build_container
        self.heartbeat = put(build_container(k, "heartbeat", {"seq": 1}, timestamp_ms=t + 12))
        self.unknown = put(build_container(k, "x_custom_record", {"v": 1}, timestamp_ms=t + 13))
        self.goal = gmp.goal_add(db, k, t + 14, title="grow a family")
        self.task = gmp.task_add(db, k, t + 15, goal=self.goal["lineage"], title="spawn a child")
        # reputation of a known agent, and a trust statement about it
        record_evidence(db, self.stranger.did, [Evidence("valid_container", t, count=3, ref=self.their_public)],
                        now_ms=t + 16)
        save_standing(db, self.stranger.did, {"valid": 3, "invalid": 0, "invalid_by_code": {}, "rate_limited": 0,
                                              "banned_until_ms": 0}, t + 16)
        set_liveness(db, self.stranger.did, state="ok", last_heard_ms=t, last_seq=1, now_ms=t + 16)
        self.trust = publish_trust(db, k, self.stranger.did, now_ms=t + 17).did
        # the gate: a draft and a pending confirmation
        ws = tmp_path / "ws"
        ws.mkdir()
        drafts.draft_write(db, Jail([ws]), "s1", "plan.txt", DRAFT_TEXT)
        confirm.request(db, "s1", "spawn", {"kind": "clone", "why": CONFIRM_ARG}, "destructive", "asked", t + 18)
        # LLMs and settings, an account with a secret, the agent's own table
        registry.add(db, Endpoint("main", "http://127.0.0.1:9/v1", "m1", priority=5, api_key_env="LLM_KEY"))
        with db.transaction() as conn:  # a row written by hand, with a key where none belongs
            conn.execute("INSERT INTO llm_registry (id, name, config_json) VALUES ('odd', 'm2', ?)",
                         (json.dumps({"base_url": "https://u:LLM-PW-77@llm.example/v1?api_key=LLM-QS-88&v=2",
                                      "model": "m2", "api_key": "sk-LEAK-12"}),))
            conn.execute("INSERT INTO config (key, value) VALUES ('cycle.checkpoint', '{\"tick\": 5}'),"
                         " ('agent.api_token', '\"CFG-TOKEN-3\"'), ('reactor.last_scan', '1')")
            conn.execute("INSERT INTO tasks (name, description) VALUES ('local fact check', 'LOCAL-TASK-1')")
            conn.execute("INSERT INTO llm_recent_responses (role, content) VALUES ('user', ?)", (PRIVATE_TEXT,))
            conn.execute("INSERT INTO llm_memory (content) VALUES ('remember MEMORY-1')")
            conn.execute("UPDATE agent_peers SET status = 'online' WHERE id = ?", (self.friend.did,))
            conn.execute("UPDATE agent_peers SET status = 'untrusted' WHERE id = ?", (self.stranger.did,))
            conn.execute("INSERT INTO abstracts (title, summary) VALUES ('t', 'ABSTRACT-1')")
            conn.execute("INSERT INTO system_prompts (id, name, type, content)"
                         " VALUES ('p1', 'main', 'full', 'be kind')")
            conn.execute("INSERT INTO ethics_policies (id, version, principles_json) VALUES ('default', '1', '[]')")
            conn.execute("INSERT INTO thinking_methods (name, description) VALUES ('analogy', 'd')")
            conn.execute("INSERT INTO stagnation_strategies (name, description) VALUES ('walk', 'd')")
            conn.execute("INSERT INTO ratings (agent_id, target_type, target_id, rating) VALUES ('m1',"
                         " 'thinking_method', 1, 0.5)")
            conn.execute("INSERT INTO agent_scripts (name, version, code) VALUES ('s', '1', 'print(1)')")
            task_id = conn.execute("SELECT id FROM tasks WHERE container_did IS NULL").fetchone()[0]
            conn.execute("INSERT INTO unverified_facts (id, context_msg_id, claim, assigned_task_id) VALUES"
                         " ('f1', 1, 'water is wet', ?)", (task_id,))
            entries = dict(conn.execute("SELECT container_did, id FROM diary_entries"))
            conn.execute("INSERT INTO ethics_cases (thought_id, verdict, reason) VALUES (?, 'ok', 'fine')",
                         (entries[self.diary],))
            conn.execute("INSERT INTO diary_graph_index (source_entry_id, target_entry_id, relation) VALUES"
                         " (?, ?, 'refers_to'), (?, ?, 'refers_to')",
                         (entries[self.diary], entries[self.diary2], entries[self.diary], entries[self.their_closed]))
            notes = dict(conn.execute("SELECT container_did, id FROM notes"))
            conn.execute("INSERT INTO attachments (message_id, filename, \"binary\") VALUES (?, 'p.txt', ?)",
                         (notes[self.public], b"ATTACH-PUBLIC"))
            conn.execute("INSERT INTO attachments (message_id, filename, \"binary\") VALUES (?, 's.txt', ?)",
                         (notes[self.private], b"ATTACH-PRIVATE-9"))
        _admin(db, k, "config_update", {"key": "agent.mood", "value": "curious"})
        _admin(db, k, "service_add", {"name": "forge", "type": "git", "base_url": "https://svc.example/api"})
        _admin(db, k, "account_add", {"service_id": 1, "login": "me", "password": SECRET})
        _admin(db, k, "table_add", {"name": "plants", "columns": {"species": "text", "height": "real"}})
        _admin(db, k, "table_insert", {"name": "plants", "row": {"species": "fern", "height": 0.4}})

    def put(self, c, received_from: str | None = None) -> str:
        self.db.put_container(c, received_at_ms=T0, received_from=received_from)
        return c.did

    def close(self) -> None:
        self.db.close()


@pytest.fixture(scope="module")
def parent(tmp_path_factory):
    p = Parent(tmp_path_factory.mktemp("parent"))
    yield p
    p.close()


def _seed(parent: Parent, tmp_path: Path, kind: str, source: Path | None = None):
    child = Database(tmp_path / f"{kind}.db")
    report = seed.seed_child_store(source or parent.path, child, kind, parent_did=parent.key.did, now_ms=T0 + 100)
    return child, report


def _count(db, table: str) -> int:
    return db.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


def _dids(db) -> set[str]:
    return {r[0] for r in db.conn.execute("SELECT did FROM containers")}


VIEWS = ("notes", "diary_entries", "concepts", "links", "goals", "tasks", "gmp_members", "container_versions",
         "author_usage")


@pytest.mark.parametrize("kind", KINDS)
def test_child_gets_what_the_rules_say(parent, tmp_path, kind):
    fresh = Database(tmp_path / "fresh.db")
    child, report = _seed(parent, tmp_path, kind)
    try:
        assert report.refused == {} and report.kind == kind
        for table, rule in kinds.TABLES.items():
            if table == kinds.AGENT_TABLES:
                continue
            has = _count(child, table)
            if getattr(rule, kind) in ("never", "parent"):  # as in a fresh store (store_usage has its row)
                assert has == _count(fresh, table), f"{kind}: {table} should be as new, has {has} rows"
            elif getattr(rule, kind) == "row" or (
                    getattr(rule, kind) == "rebuilt" and table in VIEWS):
                assert has, f"{kind}: {table} should have rows"
        got = _dids(child)
        copy = {parent.public, parent.their_public, parent.friends_open, parent.unknown}
        always = {parent.diary, parent.link, parent.their_open, parent.trust}
        never = {parent.private, parent.chat["did"], parent.friends_closed, parent.their_closed, parent.heartbeat}
        goals = {parent.goal["did"], parent.task["did"]}
        if kind == "clone":
            assert copy | always | goals <= got
        elif kind == "trained":
            assert always <= got and not (copy | goals) & got
        else:
            assert got == set()
        assert not never & got
        if kind != "newborn":
            assert report.copied["containers"] == len(got)
            assert report.withheld["note (private)"] == 2  # the private note and the chat message
        strangers = "SELECT count(*) FROM author_usage WHERE author NOT IN (SELECT sender_did FROM containers)"
        assert child.conn.execute(strangers).fetchone()[0] == 0  # the child's DID has no row: authorship at 0
    finally:
        child.close()
        fresh.close()


def test_clone_rows_are_filtered(parent, tmp_path):
    child, report = _seed(parent, tmp_path, "clone")
    try:
        q = child.conn.execute
        assert dict(q("SELECT key, value FROM config")) == {"agent.mood": '"curious"'}
        cfg = {i: json.loads(c) for i, c in q("SELECT id, config_json FROM llm_registry")}
        assert cfg["main"]["api_key_env"] == "LLM_KEY"
        assert cfg["odd"] == {"base_url": "https://llm.example/v1?v=2", "model": "m2"}
        peers = {i: (json.loads(t) if t else []) for i, t in q("SELECT id, tags FROM agent_peers")}
        assert parent.stranger.did in peers and "Friend" in peers[parent.friend.did]  # still a known author
        status = dict(q("SELECT id, status FROM agent_peers"))
        assert status == {parent.friend.did: "unknown", parent.stranger.did: "untrusted"}  # judgements stay
        assert q("SELECT count(*) FROM agent_reputation WHERE agent_id = ?", (parent.stranger.did,)).fetchone()[0]
        assert q("SELECT filename FROM attachments").fetchall() == [("p.txt",)]
        assert q("SELECT species FROM agent_t_plants").fetchall() == [("fern",)]
        assert q("SELECT name FROM tasks WHERE container_did IS NULL").fetchall() == []
        assert q("SELECT count(*) FROM notes WHERE read = 0").fetchone()[0] == 0  # history, not mail
        assert q("SELECT count(*) FROM external_services").fetchone()[0] == 1
        assert report.copied["agent_t_plants"] == 1 and report.copied["diary_graph_index"] == 1
        assert q("SELECT context_msg_id, assigned_task_id FROM unverified_facts").fetchall() == [(None, None)]
        thought = q("SELECT d.container_did FROM ethics_cases e JOIN diary_entries d ON d.id = e.thought_id")
        assert thought.fetchall() == [(parent.diary,)]
    finally:
        child.close()


@pytest.mark.parametrize("kind", KINDS)
def test_no_secret_reaches_the_child_file(parent, tmp_path, kind):
    child, _ = _seed(parent, tmp_path, kind)
    child.close()
    data = b"".join(p.read_bytes() for p in tmp_path.glob(f"{kind}.db*"))
    secrets = [parent.key.seed(), PRIVATE_TEXT.encode(), CHAT_TEXT.encode(), DRAFT_TEXT, SECRET.encode(),
               CONFIRM_ARG.encode(), b"sk-LEAK-12", b"LLM-PW-77", b"LLM-QS-88", b"CFG-TOKEN-3", b"ATTACH-PRIVATE-9",
               b"FRIENDS-CLOSED", b"FRIEND-CLOSED", b"LOCAL-TASK-1"]
    assert [s for s in secrets if s in data] == []
    if kind == "clone":  # the grep can find what is there
        assert b"PUBLIC-0001" in data and b"ATTACH-PUBLIC" in data and b"MEMORY-1" in data


# --- (c) a tampered container is refused, counted and named; the rest is copied ------------------------


def test_tampered_container_is_refused_and_counted(parent, tmp_path):
    source = tmp_path / "tampered.db"
    with sqlite3.connect(parent.path) as src, sqlite3.connect(source) as dst:
        src.backup(dst)
    with sqlite3.connect(source) as conn:
        core = conn.execute("SELECT core FROM containers WHERE did = ?", (parent.diary,)).fetchone()[0]
        at = core.index(b"DIARY-1")
        bad = core[:at] + bytes([core[at] ^ 0x01]) + core[at + 1:]
        conn.execute("UPDATE containers SET core = ? WHERE did = ?", (bad, parent.diary))
        conn.execute("UPDATE notes SET audience = 'public' WHERE container_did = ?", (parent.private,))  # a lying view
    for kind in ("trained", "clone"):
        child, report = _seed(parent, tmp_path, kind, source)
        try:
            assert sum(report.refused.values()) == 1 and len(report.reasons) == 1
            assert report.refused == {"bad_signature": 1} or report.refused == {"payload_hash_mismatch": 1}
            assert parent.diary[:40] in report.reasons[0]
            got = _dids(child)
            assert parent.diary not in got and {parent.link, parent.trust, parent.their_open} <= got
            assert parent.private not in got  # the signed payload decides, not the parent's view of it
        finally:
            child.close()


def test_bundle_store_is_new_and_has_no_identity(parent, tmp_path):
    target = tmp_path / "seed.db"
    report = seed.seed_bundle_store(parent.path, target, "trained", parent_did=parent.key.did, now_ms=T0)
    assert report.copied["containers"] > 0
    db = Database(target)
    try:
        assert _count(db, "identity") == 0 and parent.diary in _dids(db)
    finally:
        db.close()
    with pytest.raises(SpawnError):
        seed.seed_bundle_store(parent.path, target, "trained", parent_did=parent.key.did, now_ms=T0)
    with pytest.raises(SpawnError):
        seed.seed_child_store(tmp_path / "nothing.db", Database(tmp_path / "c.db"), "clone",
                              parent_did=parent.key.did, now_ms=T0)


# --- Database.put_containers ----------------------------------------------------------------------------


def test_put_containers_releases_pending_gmp_and_keeps_order(parent, tmp_path):
    src = parent.db
    goal = src.load_container(parent.goal["did"], now_ms=T0)
    task = src.load_container(parent.task["did"], now_ms=T0)
    note = src.load_container(parent.public, now_ms=T0)
    db = Database(tmp_path / "batch.db")
    try:
        # the task names its goal: held pending until the goal arrives in the same call, then released
        assert db.put_containers([task, note, goal, note], received_at_ms=T0, received_from="did:key:zX",
                                 batch=2) == [False, True, True, False]
        assert _dids(db) == {goal.did, task.did, note.did}
        assert _count(db, "gmp_pending") == 0 and _count(db, "tasks") == 1
        assert db.conn.execute("SELECT DISTINCT received_from FROM containers").fetchall() == [("did:key:zX",)]
    finally:
        db.close()


def test_seed_from_a_closed_parent_file(tmp_path):
    key = NodeKey.generate()
    db = Database(tmp_path / "stopped.db")
    db.put_container(knowledge.make_diary_entry(key, "kept", now_ms=T0), received_at_ms=T0)
    db.close()  # no node runs: the file is read read-only, with no -wal beside it
    child = Database(tmp_path / "child.db")
    try:
        report = seed.seed_child_store(tmp_path / "stopped.db", child, "trained", parent_did=key.did, now_ms=T0)
        assert report.copied["containers"] == 1 and report.copied["diary_entry"] == 1
    finally:
        child.close()


# --- (d) the "shared" rule is the parent's own sharing rule (store.sharing), for any mix ------------------

_KEYS = [NodeKey.generate() for _ in range(3)]  # 0: the parent, 1: its friend, 2: a stranger
_item = st.tuples(st.sampled_from(["note", "diary_entry", "semantic_node"]), st.integers(0, 2),
                  st.sampled_from(["public", "friends", "private"]), st.sampled_from([None, 0, 1, 2]),
                  st.integers(0, 2), st.booleans())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_item, min_size=1, max_size=12))
def test_shared_rule_matches_store_sharing(tmp_path_factory, items):
    me, friend, stranger = _KEYS
    root = tmp_path_factory.mktemp("mix")
    db = Database(root / "parent.db")
    newcomer = NodeKey.generate()  # stands for the child: a friend of the parent, named by no note
    set_friend(db, friend.did, friend.peer_id, T0)
    set_friend(db, newcomer.did, newcomer.peer_id, T0)
    made = []
    for i, (cls, author, audience, forward, via, to_me) in enumerate(items):
        key = _KEYS[author]
        if cls == "note":
            fwd = (forward or 0) if audience == "friends" else 0
            recipients = [friend.did] + ([me.did] if to_me else [])
            c = make_note(key, f"n{i}", now_ms=T0 + i, audience=audience, forward=fwd,
                          recipients=recipients if audience == "friends" else None)
        else:
            make = knowledge.make_diary_entry if cls == "diary_entry" else knowledge.make_concept
            c = make(key, f"k{i}", now_ms=T0 + i, forward=None if forward is None else min(forward, 1))
        if cls == "note" and audience == "private" and author != 0:
            continue  # a peer's private note never reaches the parent
        db.put_container(c, received_at_ms=T0, received_from=None if author == 0 else _KEYS[via].did)
        made.append(c.did)
    expected = {did for _, did, cls, _ in shareable(db, newcomer.did, me.did) if cls in ("note", "diary_entry",
                                                                                       "semantic_node")}
    db.close()
    child = Database(root / "child.db")
    try:
        seed.seed_child_store(root / "parent.db", child, "clone", parent_did=me.did, now_ms=T0 + 100)
        assert _dids(child) == expected
    finally:
        child.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_child_seeded_through_a_bundle_gets_the_same(parent, tmp_path, kind):
    direct, _ = _seed(parent, tmp_path, kind)
    seed.seed_bundle_store(parent.path, tmp_path / "seed.db", kind, parent_did=parent.key.did, now_ms=T0)
    via = Database(tmp_path / "via.db")
    try:
        seed.seed_child_store(tmp_path / "seed.db", via, kind, parent_did=parent.key.did, now_ms=T0 + 100)
        assert _dids(via) == _dids(direct)
        assert via.conn.execute("SELECT DISTINCT received_from FROM containers").fetchall() in ([],
                                                                                                [(parent.key.did,)])
    finally:
        via.close()
        direct.close()


def test_put_containers_reports_a_gmp_refusal_and_stores_the_rest(tmp_path):
    from gmp_fixtures import M, Story  # tests/ is on the path (rootdir without __init__.py)

    s = Story()
    db = Database(tmp_path / "refusal.db")
    try:
        stranger = s.by(M, [s.t3], progress=0.9)  # a version by someone the task does not allow
        out = db.put_containers([s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3, stranger, s.t3],
                                received_at_ms=T0, batch=4)
        assert out[:7] == [True] * 7 and out[8] is False
        assert getattr(out[7], "code", None) == "gmp_not_authorized"
        assert stranger.did not in _dids(db) and s.t3.did in _dids(db)
    finally:
        db.close()
