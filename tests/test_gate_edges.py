"""The gate's edges found by review: what a command leaves in its scratch copy, odd names,
bugs that must not wedge the queue, what a person accepts, risk rules and spellings, slow
servers. Each attempt is refused or contained with a reason; nothing outside the workspace
changes (the ``lab`` fixture checks it)."""

from __future__ import annotations

import http.server
import os
import threading

import pytest
import trio

from gatelab import clock
from meshnode.engines.gate import GateError, scratch
from meshnode.records.gate import confirm, drafts
from meshnode.engines.gate.tools import risk_policy


def test_what_a_command_leaves_behind_is_read_without_following_links(tmp_path):
    folder = tmp_path / "scratch"
    (folder / "d").mkdir(parents=True)
    (folder / "kept.txt").write_text("same")
    manifest = {"kept.txt": scratch._sha(b"same"), "gone.txt": scratch._sha(b"x")}
    (folder / "new.txt").write_text("new")
    (folder / "link.txt").symlink_to("/etc/passwd")
    (folder / "etc").symlink_to("/etc")  # a folder link: never walked into
    os.mkfifo(folder / "fifo")  # would block a reader that opened it
    (folder / "d" / "hard.txt").write_text("two names")
    os.link(folder / "d" / "hard.txt", folder / "hard2.txt")
    os.close(os.open(os.fsencode(folder) + b"/bad\xffname", os.O_CREAT | os.O_WRONLY, 0o644))
    changed, ignored = scratch.changes(folder, manifest)
    assert changed == {"new.txt": b"new", "gone.txt": None}
    text = " ".join(ignored)
    for name in ("link.txt", "fifo", "hard.txt", "hard2.txt", "not UTF-8"):
        assert name in text, (name, ignored)
    assert "passwd" not in str(changed)


async def test_odd_names_and_a_file_folder_clash_are_refused_not_crashes(lab):
    gate = lab["make"]()
    out = await gate.call("run_command", {"program": "python3", "args": [
        "-c", "import os; os.close(os.open(b'odd\\xffname', os.O_CREAT | os.O_WRONLY)); print('made')"]})
    assert out["stdout"] == "made\n" and out["drafted"] == [] and any("not UTF-8" in i for i in out["ignored"])
    with pytest.raises(GateError) as info:
        await gate.call("read_file", {"path": "bad\udcffname"})
    assert info.value.code == "bad_args"
    await gate.call("write_file", {"path": "d", "content": "a file"})
    await gate.call("write_file", {"path": "d/f", "content": "and a folder"})
    with pytest.raises(GateError) as info:
        await gate.call("run_command", {"program": "echo"})
    assert info.value.code == "bad_drafts" and "file and a folder" in info.value.reason
    assert not list(gate.settings.scratch_dir.iterdir())


async def test_an_approved_call_that_fails_badly_does_not_wedge_the_queue(lab, monkeypatch):
    gate, store = lab["make"](), lab["store"]
    first = await gate.call("delete_file", {"path": "notes.txt"})
    second = await gate.call("delete_file", {"path": "src/app.py"})
    for req in (first, second):
        await store.write(confirm.decide, req["confirmation"], True, clock(), "test")
    real = gate._run
    calls = []

    async def flaky(tool, args):
        calls.append(args["path"])
        if args["path"] == "notes.txt":
            raise RuntimeError("a bug")
        return await real(tool, args)

    monkeypatch.setattr(gate, "_run", flaky)
    done = await gate.run_approved()
    assert [(d["confirmation"], d["ok"]) for d in done] == [(first["confirmation"], False),
                                                          (second["confirmation"], True)]
    assert await gate.run_approved() == [] and calls == ["notes.txt", "src/app.py"]  # each ran once
    states = {r["id"]: r["status"] for r in await store.read(confirm.listing, clock(), None)}
    assert states == {first["confirmation"]: "failed", second["confirmation"]: "done"}


async def test_a_person_accepts_only_what_they_were_shown(lab):
    gate, store = lab["make"](), lab["store"]
    await gate.call("write_file", {"path": "plan.md", "content": "harmless change"})
    with pytest.raises(GateError) as info:  # never listed
        await store.write(drafts.decide, "core", "plan.md", "accept", shown_only=True)
    assert info.value.code == "not_shown"
    await store.write(drafts.review, gate.jail, "core", shown_to_person=True)
    await gate.call("write_file", {"path": "plan.md", "content": "EVIL change nobody saw"})  # in between
    with pytest.raises(GateError) as info:
        await store.write(drafts.decide, "core", "plan.md", "accept", shown_only=True)
    assert info.value.code == "not_shown"
    await store.write(drafts.review, gate.jail, "core", shown_to_person=True)
    await store.write(drafts.decide, "core", "plan.md", "accept", shown_only=True)  # seen now: accepted


async def test_risk_rules_see_one_spelling_of_a_path(lab):
    gate = lab["make"](risk=risk_policy({}, ['write_file destructive "path": "secrets/'], []), loop_repeats=100)
    for spelling in ("secrets/k", "./secrets/k", "x/../secrets/k", str(lab["ws"] / "secrets" / "k")):
        out = await gate.call("write_file", {"path": spelling, "content": "x"})
        assert out["status"] == "needs_confirmation", spelling
    asked = await lab["store"].read(confirm.listing, clock())
    assert [a["args"]["path"] for a in asked] == ["secrets/k"]  # one request, however it was spelled


async def test_urls_are_parsed_once_and_a_slow_server_is_cut_off(lab):
    stop = threading.Event()

    class Drip(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            while not stop.is_set():
                self.wfile.write(b"x")
                self.wfile.flush()
                stop.wait(0.2)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        gate = lab["make"](risk=risk_policy({}, [], ["127.0.0.1"]), http_timeout_s=0.5)
        for bad in ("http://127.0.0.1\t/", "http://example.com:0x50/", "http:///nohost", "ftp://127.0.0.1/"):
            with pytest.raises(GateError) as info:
                await gate.call("http_fetch", {"url": bad})
            assert info.value.code == "bad_url", bad
        with trio.fail_after(60), pytest.raises(GateError) as info:  # the drip never ends: 60 s means hung
            await gate.call("http_fetch", {"url": f"http://127.0.0.1:{server.server_port}/drip"})
        assert info.value.code == "fetch_failed" and "longer than" in info.value.reason  # cut off by its timeout
    finally:
        stop.set()
        server.shutdown()


async def test_attached_short_options_cannot_name_paths_outside(lab):
    gate = lab["make"]()
    for args in (["-f/etc/passwd"], ["-C/root"], ["--file=../x"]):
        with pytest.raises(GateError) as info:
            await gate.call("run_command", {"program": "grep", "args": args})
        assert info.value.code == "outside_jail", args


async def test_open_drafts_of_a_session_are_bounded_in_bytes(lab, monkeypatch):
    monkeypatch.setattr(drafts, "MAX_SESSION_BYTES", 1000)
    gate = lab["make"]()
    await gate.call("write_file", {"path": "a", "content": "x" * 600})
    await gate.call("write_file", {"path": "a", "content": "y" * 900})  # replacing a draft frees its bytes
    with pytest.raises(GateError) as info:
        await gate.call("write_file", {"path": "b", "content": "z" * 200})
    assert info.value.code == "too_large" and "commit or reject" in info.value.reason
