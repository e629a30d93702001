"""The gate as the cognitive core meets it: risk levels, drafts, confirmations, guards, commands
in a scratch copy, reflection; and a hostile-input suite where nothing outside the workspace changes."""

from __future__ import annotations

import http.server
import os
import threading

import pytest
import trio

from gatelab import CLOCK, clock
from meshnode.engines.gate import GateError
from meshnode.records.gate import confirm, drafts
from meshnode.engines.gate.tools import openai_tools, risk_policy

async def test_reads_see_drafts_and_the_real_file_waits_for_review(lab):
    gate = lab["make"]()
    assert (await gate.call("read_file", {"path": "notes.txt"}))["text"] == "teh quick fox\n"
    await gate.call("patch_file", {"path": "notes.txt", "search": "teh", "replace": "the"})
    assert (await gate.call("read_file", {"path": "notes.txt"}))["text"] == "the quick fox\n"
    assert (lab["ws"] / "notes.txt").read_text() == "teh quick fox\n"  # untouched until a person commits
    await gate.call("write_file", {"path": "docs/new.md", "content": "# new\n"})
    review = await lab["store"].write(drafts.review, gate.jail, "core")
    assert [(r["path"], r["status"]) for r in review] == [("docs/new.md", "pending"), ("notes.txt", "pending")]
    assert "-teh quick fox" in review[1]["diff"] and "+the quick fox" in review[1]["diff"]
    assert not (lab["ws"] / "docs").exists()


async def test_a_destructive_call_waits_for_a_person_without_blocking_and_runs_once_approved(lab):
    gate, store = lab["make"](), lab["store"]
    asked = await gate.call("delete_file", {"path": "notes.txt"})
    assert asked["status"] == "needs_confirmation" and (lab["ws"] / "notes.txt").exists()
    assert len(lab["told"]) == 1 and f"meshnode confirm approve {asked['confirmation']}" in lab["told"][0]
    # the agent goes on working meanwhile; nothing runs before the answer
    assert (await gate.call("read_file", {"path": "notes.txt"}))["size"] == 14
    assert await gate.run_approved() == []
    await store.write(confirm.decide, asked["confirmation"], True, clock(), "test")
    done = await gate.run_approved()
    assert len(done) == 1 and done[0]["ok"] and done[0]["result"]["deleted"]
    assert await gate.run_approved() == []  # once only
    review = await store.write(drafts.review, gate.jail, "core")
    assert [(r["path"], r["deleted"]) for r in review] == [("notes.txt", True)]  # a draft, still reviewed
    assert (lab["ws"] / "notes.txt").exists()


async def test_rejected_and_expired_requests_never_run(lab):
    gate, store = lab["make"](confirm_ttl_ms=1000), lab["store"]
    first = await gate.call("delete_file", {"path": "notes.txt"})
    second = await gate.call("delete_file", {"path": "src/app.py"})
    await store.write(confirm.decide, first["confirmation"], False, clock(), "test")
    CLOCK["now"] += 2000
    with pytest.raises(GateError) as info:
        await store.write(confirm.decide, second["confirmation"], True, clock(), "test")
    assert info.value.code == "already_decided" and "expired" in info.value.reason
    assert await gate.run_approved() == []
    assert await store.write(drafts.review, gate.jail, "core") == []


async def test_commands_run_in_a_scratch_copy_and_their_changes_come_back_as_drafts(lab):
    gate = lab["make"]()
    await gate.call("patch_file", {"path": "notes.txt", "search": "teh", "replace": "the"})
    out = await gate.call("run_command", {"program": "python3", "args": [
        "-c", "import pathlib; print(pathlib.Path('notes.txt').read_text(), end=''); "
              "pathlib.Path('made.txt').write_text('by a command'); pathlib.Path('src/app.py').unlink()"]})
    assert out["exit_code"] == 0 and out["stdout"] == "the quick fox\n"  # it saw the drafted content
    assert out["drafted"] == ["made.txt"]  # a new file: a draft
    # a deletion has the risk of delete_file whoever does it: a person is asked
    assert [i for i in out["ignored"] if i.startswith("src/app.py: deleting it needs a person's confirmation")]
    asked = await lab["store"].read(confirm.listing, clock())
    assert [(a["tool"], a["args"]) for a in asked] == [("delete_file", {"path": "src/app.py"})]
    assert not (lab["ws"] / "made.txt").exists() and (lab["ws"] / "src" / "app.py").exists()
    review = {r["path"]: r for r in await lab["store"].write(drafts.review, gate.jail, "core")}
    assert set(review) == {"made.txt", "notes.txt"} and not review["made.txt"]["deleted"]
    assert not list(gate.settings.scratch_dir.iterdir())  # the scratch copy is gone


async def test_the_loop_detector_and_the_iteration_limit_stop_the_agent_and_say_why(lab):
    gate = lab["make"](max_calls_per_task=5)
    for _ in range(3):
        await gate.call("read_file", {"path": "notes.txt"})
    with pytest.raises(GateError) as info:
        await gate.call("read_file", {"path": "notes.txt"})  # the same call a fourth time in the window
    assert info.value.code == "loop" and "another approach" in info.value.reason
    await gate.call("read_file", {"path": "src/app.py"})  # calls 4 and 5 (a refused call does not count)
    await gate.call("list_dir", {"path": "src"})
    with pytest.raises(GateError) as info:
        await gate.call("list_dir", {"path": "."})
    assert info.value.code == "iteration_limit"
    assert await gate.call("list_dir", {"path": "."}, task="another task")  # the limit is per task
    assert lab["guarded"] == ["loop", "iteration_limit"]  # both told
    assert (gate.take_guarded(), gate.take_guarded()) == (2, 0)  # the cycle's reflex takes each once


async def test_configuration_raises_risk_per_tool_and_per_argument_pattern(lab):
    gate = lab["make"](risk=risk_policy({"write_file": "destructive"}, ["run_command destructive \"-c\""], []))
    assert (await gate.call("write_file", {"path": "a", "content": "x"}))["status"] == "needs_confirmation"
    assert (await gate.call("run_command", {"program": "python3", "args": ["-c", "1"]}))["status"] == \
        "needs_confirmation"
    assert (await gate.call("run_command", {"program": "echo", "args": ["hi"]}))["stdout"] == "hi\n"
    with pytest.raises(GateError):
        risk_policy({"write_file": "harmless"}, [], [])
    with pytest.raises(GateError):
        risk_policy({}, ["run_command destructive ("], [])


async def test_http_fetch_outside_the_allowed_hosts_needs_a_person(lab):
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"page body")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/x"
        assert (await lab["make"]().call("http_fetch", {"url": url}))["status"] == "needs_confirmation"
        gate = lab["make"](risk=risk_policy({}, [], ["127.0.0.1"]))
        got = await gate.call("http_fetch", {"url": url})
        assert got["status"] == 200 and got["text"] == "page body"
        with pytest.raises(GateError) as info:
            await gate.call("http_fetch", {"url": "file:///etc/passwd"})
        assert info.value.code == "bad_url"
    finally:
        server.shutdown()


async def test_reflection_before_review(lab):
    gate = lab["make"]()
    with pytest.raises(GateError) as info:
        await gate.submit("nothing yet", lambda prompt: trio.sleep(0))
    assert info.value.code == "nothing_to_review"
    await gate.call("patch_file", {"path": "notes.txt", "search": "teh", "replace": "the"})
    prompts = []

    async def doubtful(prompt: str) -> str:
        prompts.append(prompt)
        return "NOT READY -- the title still has the typo"

    async def satisfied(prompt: str) -> str:
        return "READY -- one typo fixed, nothing else touched"

    out = await gate.submit("fixed the typo", doubtful)
    assert not out["ready"] and "REFLECTION" in prompts[0] and "+the quick fox" in prompts[0]
    assert lab["told"] == []  # not handed to a person
    out = await gate.submit("fixed the typo", satisfied)
    assert out["ready"] and "wait for your review" in lab["told"][0]


HOSTILE_CALLS = [
    ("read_file", {"path": "../outside/secret.txt"}, "outside_jail"),
    ("read_file", {"path": "/etc/passwd"}, "outside_jail"),
    ("read_file", {"path": "/proc/self/environ"}, "outside_jail"),
    ("write_file", {"path": "../outside/secret.txt", "content": "x"}, "outside_jail"),
    ("write_file", {"path": "/etc/cron.d/evil", "content": "x"}, "outside_jail"),
    ("patch_file", {"path": "link/secret.txt", "search": "do", "replace": "did"}, "symlink"),
    ("write_file", {"path": "link/new.txt", "content": "x"}, "symlink"),
    ("read_file", {"path": "etc_link/passwd"}, "symlink"),
    ("write_file", {"path": "hard.txt", "content": "x"}, "hard_link"),
    ("read_file", {"path": "hard.txt"}, "hard_link"),
    ("run_command", {"program": "/bin/sh", "args": ["-c", "echo x > ../outside/secret.txt"]}, "not_allowed"),
    ("run_command", {"program": "sh", "args": ["-c", "id"]}, "not_allowed"),
    ("run_command", {"program": "cat", "args": ["/etc/shadow"]}, "outside_jail"),
    ("run_command", {"program": "cat", "args": ["../outside/secret.txt"]}, "outside_jail"),
    ("run_command", {"program": "ls", "args": ["--directory=/root"]}, "outside_jail"),
    ("run_command", {"program": "cat", "args": ["~/.ssh/id_rsa"]}, "outside_jail"),
    ("read_file", {"path": "notes.txt", "extra": 1}, "bad_args"),
    ("read_file", {"path": "notes\x00.txt"}, "bad_args"),
    ("nuke", {}, "unknown_tool"),
]


async def test_hostile_calls_are_refused_with_a_reason_and_change_nothing_outside(lab):
    ws, outside = lab["ws"], lab["outside"]
    (ws / "link").symlink_to(outside)
    (ws / "etc_link").symlink_to("/etc")
    os.link(outside / "secret.txt", ws / "hard.txt")
    gate = lab["make"](loop_repeats=100)
    for tool, args, code in HOSTILE_CALLS:
        with pytest.raises(GateError) as info:
            await gate.call(tool, args)
        assert info.value.code == code, (tool, args, info.value)
        assert info.value.reason  # readable, for the LLM's next tick
    # shell metacharacters are just bytes in an argument: nothing is interpreted
    out = await gate.call("run_command", {"program": "echo", "args": ["a; cat ../outside/secret.txt | tee x $(id)"]})
    assert out["stdout"] == "a; cat ../outside/secret.txt | tee x $(id)\n" and out["drafted"] == []
    # a command cannot reach the real workspace or the tree around it: it runs in a copy, as nobody
    out = await gate.call("run_command", {"program": "python3", "args": ["-c", (
        "import os, pathlib\n"  # paths built at run time: the argument filter cannot see them
        "for p in [os.path.join(os.pardir, 'outside', 'secret.txt'), os.path.join(os.getcwd(), os.pardir, 'x')]:\n"
        "    try: pathlib.Path(p).write_text('pwned')\n"
        "    except OSError as e: print(type(e).__name__)\n")]})
    assert out["exit_code"] == 0 and (outside / "secret.txt").read_text() == "do not touch\n"


async def test_a_symlink_swapped_in_after_the_draft_is_refused_at_commit(lab):
    gate, store, ws = lab["make"](), lab["store"], lab["ws"]
    await gate.call("write_file", {"path": "sub/target.txt", "content": "agent text"})
    await store.write(drafts.decide, "core", "sub/target.txt", "accept")
    (ws / "sub").symlink_to(lab["outside"])  # the folder becomes a link out between review and commit
    with pytest.raises(GateError) as info:
        await store.write(drafts.commit, gate.jail, "core", "race")
    assert info.value.code == "symlink"
    assert not (lab["outside"] / "target.txt").exists()


async def test_a_second_commit_racing_a_file_change_is_refused_whole(lab):
    gate, store, ws = lab["make"](), lab["store"], lab["ws"]
    await gate.call("patch_file", {"path": "notes.txt", "search": "teh", "replace": "the"})
    await gate.call("write_file", {"path": "src/app.py", "content": "print('bye')\n"})
    for path in ("notes.txt", "src/app.py"):
        await store.write(drafts.decide, "core", path, "accept")
    (ws / "notes.txt").write_text("someone else edited this\n")  # the real file moved on
    with pytest.raises(GateError) as info:
        await store.write(drafts.commit, gate.jail, "core", "racing")
    assert info.value.code == "conflict" and "notes.txt" in info.value.reason
    assert (ws / "src" / "app.py").read_text() == "print('hello')\n"  # all or nothing


def test_the_tools_are_offered_in_the_openai_format():
    tools = openai_tools()
    names = [t["function"]["name"] for t in tools]
    assert names[:3] == ["read_file", "list_dir", "search_files"]
    read = tools[0]["function"]["parameters"]
    assert read["required"] == ["path"] and read["additionalProperties"] is False
