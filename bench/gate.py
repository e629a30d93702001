"""Overheads of the action gate (issue 7), each beside a plain baseline timed in the same run.

    sudo python bench/gate.py [--reads 2000] [--ops 300] [--commits 40] [--runs 30] [--files 100]

1. Jail.read_bytes of a 4 KiB file four folders deep (a descriptor walk with
   O_NOFOLLOW per component, fstat checks) beside open(path).read().
2. drafts.draft_patch + drafts.read_through (SQLite, synchronous=FULL): a first
   draft (new session: the real file is hashed, a row inserted) and a second
   patch of the same draft (a row updated), beside one plain 4 KiB file write,
   without and with fsync.
3. drafts.commit of 10 accepted drafts (snapshot in SQLite, conflict check,
   staged + backed-up + renamed writes, fsyncs) beside writing the 10 files
   plainly, without and with fsync.
4. ``true`` through runner.run_command (namespaces, rlimits, uid 65534) beside
   trio.run_process(["/bin/true"]).
5. Gate.call("run_command", {"program": "true"}) with a workspace of 100 files of
   4 KiB: copy into a scratch folder, run, diff back into drafts, remove; and
   which part of it is the scratch copy (scratch.prepare), the diff and the removal.

Runs as root (the runner drops to uid 65534; as another user it needs
unprivileged user namespaces). Baselines alternate with the measured call, so
both see the same machine. Figures are ratios of p50s, reported, not asserted.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import trio

from meshnode.records.gate import drafts
from meshnode.engines.gate import runner, scratch
from meshnode.engines.gate.gate import Gate, GateSettings
from meshnode.engines.gate.jail import Jail
from meshnode.engines.gate.tools import risk_policy
from meshnode.store import Database, Store

KIB4 = 4096
NESTED = "a/b/c/d/data.bin"


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def stats(xs: list[float], digits: int = 4) -> dict:
    return {"p50": round(statistics.median(xs), digits), "p90": round(pct(xs, 0.9), digits), "n": len(xs)}


def alternate(rounds: int, *fns, warmup: int = 3) -> list[list[float]]:
    """Times (ms) of each fn, called in turn ``rounds`` times after ``warmup`` untimed turns."""
    out: list[list[float]] = [[] for _ in fns]
    for i in range(warmup + rounds):
        for j, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            if i >= warmup:
                out[j].append((time.perf_counter() - t) * 1000)
    return out


def ratio(a: list[float], b: list[float]) -> float:
    return round(statistics.median(a) / statistics.median(b), 2)


def plain_write(path: Path, data: bytes, sync: bool = False) -> None:
    with open(path, "wb") as f:
        f.write(data)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def text_4k(marker: str) -> bytes:
    line = "some ordinary source text, 64 bytes long, for the bench ....\n"
    body = (marker + "\n" + line * 64)[:KIB4 - 1] + "\n"
    return body.encode()


# --- 1-3: synchronous parts ---------------------------------------------------


def bench_read(ws: Path, jail: Jail, rounds: int) -> dict:
    target = ws / NESTED
    target.parent.mkdir(parents=True)
    target.write_bytes(os.urandom(KIB4))

    def plain() -> bytes:
        with open(target, "rb") as f:
            return f.read()

    jailed, base = alternate(rounds, lambda: jail.read_bytes(NESTED, 1 << 20), plain)
    assert jail.read_bytes(NESTED, 1 << 20) == plain()
    out = {"jail_ms": stats(jailed), "plain_ms": stats(base), "ratio_p50": ratio(jailed, base)}
    print(f"1. read 4 KiB, 5 components deep: Jail.read_bytes p50 {out['jail_ms']['p50'] * 1000:.1f} us"
          f" (p90 {out['jail_ms']['p90'] * 1000:.1f}), open().read() p50 {out['plain_ms']['p50'] * 1000:.1f} us"
          f" (p90 {out['plain_ms']['p90'] * 1000:.1f}); ratio {out['ratio_p50']}x", flush=True)
    return out


def bench_drafts(ws: Path, db: Database, jail: Jail, rounds: int) -> dict:
    rel = "patch/target.txt"
    (ws / "patch").mkdir()
    (ws / rel).write_bytes(text_4k("counter=0"))
    plain_target = ws / "patch" / "plain.txt"
    content = text_4k("counter=1")
    sessions = iter(range(10**9))
    counter = iter(range(10**9))

    def first() -> None:  # a new session: the real file is hashed, a draft row inserted
        s = f"first-{next(sessions)}"
        drafts.draft_patch(db, jail, s, rel, "counter=0\n", "counter=1\n")
        assert drafts.read_through(db, jail, s, rel, 1 << 20).startswith(b"counter=1\n")

    drafts.draft_patch(db, jail, "again", rel, "counter=0\n", "counter=a0\n")

    def again() -> None:  # the same session's draft, patched once more: a row updated
        i = next(counter)
        drafts.draft_patch(db, jail, "again", rel, f"counter=a{i}\n", f"counter=a{i + 1}\n")
        assert drafts.read_through(db, jail, "again", rel, 1 << 20).startswith(f"counter=a{i + 1}\n".encode())

    new, upd, base, synced = alternate(rounds, first, again, lambda: plain_write(plain_target, content),
                                       lambda: plain_write(plain_target, content, sync=True))
    assert (ws / rel).read_bytes() == text_4k("counter=0")  # drafts never touch the real file
    out = {"first_draft_ms": stats(new, 3), "patch_again_ms": stats(upd, 3), "plain_write_ms": stats(base),
           "plain_write_fsync_ms": stats(synced, 3), "ratio_first_p50": ratio(new, base),
           "ratio_again_p50": ratio(upd, base), "ratio_first_vs_fsync_p50": ratio(new, synced),
           "ratio_again_vs_fsync_p50": ratio(upd, synced)}
    print(f"2. draft_patch + read_through, per op: first draft p50 {out['first_draft_ms']['p50']:.3f} ms"
          f" (p90 {out['first_draft_ms']['p90']:.3f}), patching it again p50 {out['patch_again_ms']['p50']:.3f} ms"
          f" (p90 {out['patch_again_ms']['p90']:.3f})", flush=True)
    print(f"   plain 4 KiB write p50 {out['plain_write_ms']['p50'] * 1000:.1f} us (ratios {out['ratio_first_p50']}x,"
          f" {out['ratio_again_p50']}x); with fsync p50 {out['plain_write_fsync_ms']['p50']:.3f} ms"
          f" (ratios {out['ratio_first_vs_fsync_p50']}x, {out['ratio_again_vs_fsync_p50']}x)", flush=True)
    return out


def bench_commit(ws: Path, db: Database, jail: Jail, rounds: int, files: int = 10) -> dict:
    folder, plain_folder = ws / "commit", ws / "plain"
    folder.mkdir()
    plain_folder.mkdir()
    names = [f"f{j:02}.txt" for j in range(files)]
    for name in names:
        (folder / name).write_bytes(text_4k("v0"))
    commits, base, synced = [], [], []
    for i in range(rounds + 2):  # the first two are not counted
        content = text_4k(f"v{i + 1}")
        for name in names:
            drafts.draft_write(db, jail, "commit", f"commit/{name}", content)
            drafts.decide(db, "commit", f"commit/{name}", "accept")
        t = time.perf_counter()
        drafts.commit(db, jail, "commit", f"bench {i}")
        t1 = time.perf_counter()
        for name in names:
            plain_write(plain_folder / name, content)
        t2 = time.perf_counter()
        for name in names:
            plain_write(plain_folder / name, content, sync=True)
        fsync_dir(plain_folder)
        t3 = time.perf_counter()
        if i >= 2:
            commits.append((t1 - t) * 1000)
            base.append((t2 - t1) * 1000)
            synced.append((t3 - t2) * 1000)
        assert all((folder / n).read_bytes() == content for n in names)
    out = {"files": files, "commit_ms": stats(commits, 3), "plain_ms": stats(base),
           "plain_fsync_ms": stats(synced, 3), "ratio_p50": ratio(commits, base),
           "ratio_vs_fsync_p50": ratio(commits, synced)}
    print(f"3. commit of {files} accepted drafts: p50 {out['commit_ms']['p50']:.2f} ms"
          f" (p90 {out['commit_ms']['p90']:.2f}); {files} plain writes p50 {out['plain_ms']['p50']:.3f} ms"
          f" (ratio {out['ratio_p50']}x), with fsyncs p50 {out['plain_fsync_ms']['p50']:.2f} ms"
          f" (ratio {out['ratio_vs_fsync_p50']}x)", flush=True)
    return out


# --- 4-5: processes, in trio ----------------------------------------------------


async def atimed(fn) -> float:
    t = time.perf_counter()
    await fn()
    return (time.perf_counter() - t) * 1000


async def bench_runner(cwd: Path, rounds: int) -> dict:
    policy = runner.policy_from_config(["true"])

    async def sandboxed() -> None:
        result = await runner.run_command(["true"], cwd=cwd, policy=policy)
        assert result.exit_code == 0, result

    async def plain() -> None:
        await trio.run_process(["/bin/true"])

    ours, base = [], []
    for i in range(rounds + 3):
        a, b = await atimed(sandboxed), await atimed(plain)
        if i >= 3:
            ours.append(a)
            base.append(b)
    out = {"runner_ms": stats(ours, 3), "plain_ms": stats(base, 3), "ratio_p50": ratio(ours, base)}
    print(f"4. `true`: runner.run_command p50 {out['runner_ms']['p50']:.2f} ms (p90 {out['runner_ms']['p90']:.2f}),"
          f" trio.run_process p50 {out['plain_ms']['p50']:.2f} ms (p90 {out['plain_ms']['p90']:.2f});"
          f" ratio {out['ratio_p50']}x", flush=True)
    return out


async def bench_gate(root: Path, scratch_parent: Path, rounds: int, files: int, runner_p50: float) -> dict:
    ws = root / "gate-ws"
    for j in range(files):  # ten folders of ten files
        path = ws / f"d{j % 10}" / f"f{j:03}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text_4k(f"file {j}"))
    parts: dict[str, list[float]] = {"prepare": [], "changes": [], "remove": []}
    originals = {name: getattr(scratch, name) for name in parts}

    def timing(name):
        fn = originals[name]

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                parts[name].append((time.perf_counter() - t) * 1000)
        return wrapper

    totals = []
    async with await Store.open(root / "gate-db" / "db.sqlite") as store:
        settings = GateSettings(jail=Jail([ws]), commands=runner.policy_from_config(["true"]),
                                risk=risk_policy({}, [], []), scratch_dir=scratch_parent,
                                loop_window=20, loop_repeats=10**6, max_calls_per_task=10**6)
        gate = Gate(store, settings, lambda: time.time_ns() // 1_000_000)
        for name in parts:
            setattr(scratch, name, timing(name))
        try:
            for i in range(rounds + 3):
                t = time.perf_counter()
                out = await gate.call("run_command", {"program": "true"})
                total = (time.perf_counter() - t) * 1000
                assert out["exit_code"] == 0 and out["drafted"] == [] and not out["ignored"], out
                if i >= 3:
                    totals.append(total)
                else:
                    for xs in parts.values():
                        del xs[-1]
        finally:
            for name, fn in originals.items():
                setattr(scratch, name, fn)
    assert not list(scratch_parent.iterdir())  # every scratch copy was removed
    p50 = statistics.median
    out = {"files": files, "file_bytes": KIB4, "gate_ms": stats(totals, 3),
           "scratch_copy_ms": stats(parts["prepare"], 3), "scratch_diff_ms": stats(parts["changes"], 3),
           "scratch_remove_ms": stats(parts["remove"], 3),
           "scratch_copy_share_p50": round(p50(parts["prepare"]) / p50(totals), 3),
           "scratch_all_share_p50": round(sum(p50(xs) for xs in parts.values()) / p50(totals), 3),
           "ratio_vs_runner_p50": round(p50(totals) / runner_p50, 2)}
    print(f"5. Gate.call run_command `true`, {files} files of 4 KiB: p50 {out['gate_ms']['p50']:.2f} ms"
          f" (p90 {out['gate_ms']['p90']:.2f}); {out['ratio_vs_runner_p50']}x the runner alone", flush=True)
    print(f"   scratch copy p50 {out['scratch_copy_ms']['p50']:.2f} ms ({out['scratch_copy_share_p50']:.0%} of the"
          f" call), diff back p50 {out['scratch_diff_ms']['p50']:.2f} ms, removal p50"
          f" {out['scratch_remove_ms']['p50']:.2f} ms (scratch in all {out['scratch_all_share_p50']:.0%})", flush=True)
    return out


SMOKE = {"reads": 10, "ops": 3, "commits": 1, "runs": 1, "files": 3}  # --smoke


def main() -> None:
    from meshnode.records.gmp import store_hooks

    store_hooks.install()  # every Database here admits and draws GMP containers, as the node's does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    started = time.perf_counter()
    # Under the system temp folder and 0o755, so uid 65534 can reach the runner's cwd and the scratch copies.
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="meshnode-bench-gate-", dir=tempfile.gettempdir())))
    try:
        root.chmod(0o755)
        ws, cwd, scratch_parent = root / "ws", root / "cwd", root / "scratch"
        for folder in (ws, cwd, scratch_parent):
            folder.mkdir(mode=0o755)
            folder.chmod(0o755)
        jail = Jail([ws])
        db = Database(root / "db" / "db.sqlite")
        try:
            read = bench_read(ws, jail, args.reads)
            patch = bench_drafts(ws, db, jail, args.ops)
            commit = bench_commit(ws, db, jail, args.commits)
        finally:
            db.close()
        command = trio.run(bench_runner, cwd, args.runs)
        gate = trio.run(bench_gate, root, scratch_parent, args.runs, args.files, command["runner_ms"]["p50"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    wall = time.perf_counter() - started
    print(f"wall {wall:.1f} s, {os.cpu_count()} cores, uid {os.geteuid()}")
    print(json.dumps({"bench": "gate", "cores": os.cpu_count(), "uid": os.geteuid(), "wall_s": round(wall, 1),
                      "read_4k": read, "patch_4k": patch, "commit_10": commit, "command_true": command,
                      "gate_run_command": gate}))


if __name__ == "__main__":
    main()
