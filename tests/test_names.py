"""Names (issue 35): petnames (domain.names, store.names), the one display of an agent (petname, then
announced name, marked when two agents share it, then short id), the one resolver (short_ids.resolve_agent),
the actions, what the CLI prints (names; ``--did``; ``--json`` with whole DIDs and names), and the
reactor's escalation note (its dedupe line once, its words in names for the person)."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, strategies as st

from meshnode.app.actor import AGENT, a2a, person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.names import MAX_PETNAME, PetnameError, check_petname, looks_like_id
from meshnode.engines.reactor import escalate
from meshnode.engines.reactor.types import Escalation
from meshnode.store import Database, names, short_ids
from meshnode.store.service import Store

T = 1_800_000_000_000
KEY = NodeKey(bytes([7]) * 32)
A, B, C = (NodeKey(bytes([n]) * 32).did for n in (21, 22, 23))
CLI = person("cli")


def short(did: str) -> str:
    return short_ids.short_agent_id(did)


# --- what a petname may be ----------------------------------------------------------------------


@given(st.text(min_size=1, max_size=MAX_PETNAME + 8))
def test_a_petname_is_accepted_exactly_when_it_is_short_printable_trimmed_and_not_an_id(text):
    fine = (len(text) <= MAX_PETNAME and text == text.strip() and bool(text.strip())
            and all(ch == " " or unicodedata.category(ch)[0] not in "CZ" for ch in text) and not looks_like_id(text))
    if fine:
        assert check_petname(text) == text
    else:
        with pytest.raises(PetnameError) as info:
            check_petname(text)
        assert info.value.code == "bad_petname" and "\n" not in info.value.reason


@given(st.text(min_size=0, max_size=10), st.sampled_from(["\n", "\x00", "\x1b", "\u202e", "\u2028", "\t"]),
       st.text(min_size=0, max_size=10))
def test_a_petname_never_holds_a_control_format_or_line_break_character(before, bad, after):
    with pytest.raises(PetnameError):
        check_petname(f"a{before}{bad}{after}b")


@pytest.mark.parametrize("text", ["did:key:z6Mkabc", "DID:web:x", "key:AbCdEf12", "KEY:x", "z6MkhaXgBZDvotDkL5257",
                                  "", " bob", "bob ", "x" * (MAX_PETNAME + 1)])
def test_what_reads_as_an_id_or_is_not_trimmed_is_no_petname(text):
    with pytest.raises(PetnameError):
        check_petname(text)


def test_plain_names_in_any_script_are_petnames():
    for text in ("alice", "Bob the builder", "Ünal", "ミツキ", "o'brien-2", "x" * MAX_PETNAME):
        assert check_petname(text) == text


# --- the display and the resolver ---------------------------------------------------------------


@pytest.fixture
def db(tmp_path):
    db = Database(tmp_path / "n.db")
    yield db
    db.close()


def peers(db, **named) -> None:
    with db.transaction() as conn:
        for did, name in named.items():
            conn.execute("INSERT INTO agent_peers (id, name) VALUES (?, ?)", (did, name))


def test_a_petname_wins_a_shared_announced_name_shows_its_short_id_and_a_nameless_agent_its_short_id(db):
    peers(db, **{A: "bob", B: "Bob", C: None})
    shown = names.display(db, [A, B, C, KEY.did])
    assert shown == {A: f"bob ({short(A)})", B: f"Bob ({short(B)})", C: short(C), KEY.did: short(KEY.did)}
    names.set_petname(db, A, "builder", T)
    assert names.display(db, [A, B]) == {A: "builder", B: "Bob"}  # the other "bob" is alone now
    names.set_petname(db, C, "bob", T)  # a petname another agent announces: that one is marked again
    assert names.display(db, [B, C]) == {B: f"Bob ({short(B)})", C: "bob"}


def test_an_announced_name_that_looks_like_an_id_or_holds_control_characters_is_not_shown_as_given(db):
    peers(db, **{A: B, B: "evil\x1b[31m\nname"})
    shown = names.display(db, [A, B])
    assert shown[A] == short(A)  # a peer announcing another's DID as its name is shown by its own short id
    assert "\x1b" not in shown[B] and "\n" not in shown[B]


def test_the_resolver_takes_petnames_names_shown_names_and_short_ids(db):
    peers(db, **{A: "bob", B: "bob", C: "carol"})
    names.set_petname(db, C, "Cee", T)
    assert short_ids.resolve_agent(db, "cee") == C  # a petname, whatever its case
    assert short_ids.resolve_agent(db, "carol") == C  # the announced name still names it
    assert short_ids.resolve_agent(db, short(A)) == A
    assert short_ids.resolve_agent(db, f"bob ({short(B)})") == B  # as a listing shows a shared name
    assert short_ids.resolve_agent(db, A) == A


def test_an_ambiguous_name_is_one_line_listing_the_candidates_and_an_unknown_one_says_so(db):
    peers(db, **{A: "bob", B: "bob"})
    with pytest.raises(MeshnodeError) as info:
        short_ids.resolve_agent(db, "bob")
    assert info.value.code == "ambiguous_id" and "\n" not in info.value.reason
    assert short(A) in info.value.reason and short(B) in info.value.reason and "meshnode name set" in info.value.reason
    with pytest.raises(MeshnodeError) as info:
        short_ids.resolve_agent(db, "nobody")
    assert "names no agent" in info.value.reason and "petname" in info.value.reason


def test_a_petname_is_unique_here_whatever_its_case_and_unset_forgets_it(db):
    peers(db, **{A: "alice", B: None})
    names.set_petname(db, A, "Friend", T)
    with pytest.raises(MeshnodeError) as info:
        names.set_petname(db, B, "friend", T)
    assert info.value.code == "petname_taken" and short(A) in info.value.reason
    names.set_petname(db, A, "pal", T)  # a new one replaces the old
    assert names.display(db, [A]) == {A: "pal"}
    assert names.unset_petname(db, "pal").shown == "alice"
    with pytest.raises(MeshnodeError):
        names.unset_petname(db, A)


# --- the actions ----------------------------------------------------------------------------------


@pytest.fixture
async def app(tmp_path):
    async with await Store.open(tmp_path / "m.db") as store:
        yield App(store, KEY, clock=lambda: T)


async def test_only_the_person_sets_petnames_and_outside_parties_do_not_read_them(app):
    await app.store.write(peers, **{A: "alice"})
    for who in (AGENT, a2a("k1", "mallory")):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, who, "name_set", {"agent": "alice", "petname": "al"})
        assert info.value.code == "not_allowed"
    with pytest.raises(MeshnodeError):
        await dispatch(app, a2a("k1", "mallory"), "names", {})
    out = await dispatch(app, person("web"), "name_set", {"agent": "alice", "petname": "al"})
    assert (out["did"], out["name"], out["petname"], out["announced"]) == (A, "al", "al", "alice")
    listed = await dispatch(app, AGENT, "names", {"dids": [A, B]})
    assert [(n["did"], n["name"]) for n in listed] == [(A, "al"), (B, short(B))]


async def test_the_actions_that_take_an_agent_take_its_name(app):
    await app.store.write(peers, **{A: "alice"})
    await dispatch(app, CLI, "name_set", {"agent": A, "petname": "al"})
    assert (await dispatch(app, CLI, "friend", {"did": "al"}))["did"] == A
    assert await dispatch(app, CLI, "friends", {}) == [A]


# --- the command line -----------------------------------------------------------------------------


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def add_peers(home, **named) -> None:
    from meshnode.base.config import load_config

    db = Database(load_config(home, environ={}).db_path, create=False)
    try:
        peers(db, **named)
    finally:
        db.close()


def test_friend_list_find_and_name_commands_show_names_dids_on_ask(home, run_cli):
    add_peers(home, **{A: "alice", B: "bob", C: "bob"})
    ok(run_cli("--home", home, "friend", "add", "alice"))
    ok(run_cli("--home", home, "friend", "add", short(B)))
    assert ok(run_cli("--home", home, "friend", "list")).splitlines() == ["alice", f"bob ({short(B)})"]
    assert ok(run_cli("--home", home, "friend", "list", "--did")).splitlines() == [f"{A}  alice",
                                                                                   f"{B}  bob ({short(B)})"]
    listed = json.loads(ok(run_cli("--home", home, "friend", "list", "--json")))
    assert sorted(listed, key=lambda r: r["name"]) == [{"did": A, "name": "alice"}, {"did": B, "name": f"bob ({short(B)})"}]
    said = ok(run_cli("--home", home, "name", "set", f"bob ({short(B)})", "builder"))
    assert said.strip() == f"{B} is now 'builder' here; it calls itself 'bob'"
    assert ok(run_cli("--home", home, "friend", "list")).splitlines() == ["alice", "builder"]
    listed = ok(run_cli("--home", home, "name", "list"))
    assert "builder" in listed and "petname; announced 'bob'" in listed and "this node" in listed
    assert "meshnode name set" not in listed


def test_a_name_two_agents_share_is_refused_in_one_line_listing_both(home, run_cli):
    add_peers(home, **{A: "bob", B: "bob"})
    result = run_cli("--home", home, "friend", "add", "bob")
    assert result.returncode == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert short(A) in line and short(B) in line
    bad = run_cli("--home", home, "name", "set", "bob", "did:key:me")
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1


def test_peers_and_notes_show_the_petname(home, run_cli):
    add_peers(home, **{A: "alice"})
    ok(run_cli("--home", home, "name", "set", "alice", "Ally"))
    stopped = run_cli("--home", home, "peers")  # no node runs: as last known, exit 3
    assert stopped.returncode == 3, stopped.stderr
    lines = stopped.stdout.splitlines()
    assert lines[1].startswith("Ally ") and lines[1].endswith(A)


# --- the reactor's escalation note ---------------------------------------------------------------


def test_an_escalation_from_the_ladder_makes_a_note_with_one_dedupe_line():
    from test_reactor_core import MENTOR, T0, core, ev, run_to_check
    from meshnode.engines.reactor.types import Trace, TraceKind, TracesFound

    r = core()
    job = r.step(T0, [ev("ava", "n1")]).jobs[0]
    run_to_check(r, job, T0 + 1000)
    s = r.step(T0 + 60_000, [TracesFound(job.job_id, T0 + 60_000, (Trace("n1", TraceKind.HEARTBEAT, "x", "ava", T0),))])
    [esc] = s.escalations
    assert esc.to_id == MENTOR
    text = escalate.note_fields([esc])["text"]
    assert [line for line in text.splitlines() if line.startswith("dedupe:")] == [f"dedupe: {esc.key}"]


async def test_the_persons_escalation_note_names_agents_and_the_mentors_keeps_dids(app):
    await app.store.write(peers, **{A: "alice"})
    await dispatch(app, CLI, "name_set", {"agent": A, "petname": "Ally"})
    note = "did:hmp:container:uEi" + "A" * 44
    text = f"Reactor escalation: {KEY.did} left no trace for note.direct '{note}' from {A} and {B}"
    esc = Escalation(f"esc:operator:{KEY.did}:note:{A}", KEY.did, escalate.OPERATOR, 2, f"note:{A}", "note.direct",
                     note, text, None, T)
    did = await escalate.send(app.store, KEY, [esc], T)
    stored = await app.store.read(lambda db: db.conn.execute("SELECT text FROM notes WHERE container_did = ?",
                                                             (did,)).fetchone()[0])
    words, dedupe = stored.split("\ndedupe: ")
    assert words == (f"Reactor escalation: this node's agent left no trace for note.direct"
                     f" '{short_ids.short_container_id(note)}' from Ally and {short(B)}")
    assert dedupe.splitlines()[0] == esc.key  # the machine line keeps its DIDs
    mentor = escalate.note_fields([Escalation(esc.key, KEY.did, A, 1, esc.event_key, "note.direct", note, text,
                                              None, T)])
    assert mentor["text"].startswith(text) and "Ally" not in mentor["text"]  # a petname never leaves the node
