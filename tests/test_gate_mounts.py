"""The command sandbox's file system: a private, mostly read-only root where the command's
folder is /workspace; host files, sockets, processes and other commands' folders are out of
reach, also for a node that is not root."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import trio

import meshnode
from meshnode.engines.gate import GateError
from meshnode.engines.gate import mounts, runner
from meshnode.store.database import Database
from runnerlab import (ATTEMPT, OUTSIDE_TMP, attempts, fifo_line,
                       make_workspace, needs_root, policy, python)
from meshnode.engines.gate.runner import run_command


@pytest.fixture
def host_secrets():
    """Host things a command must not reach, all open to everyone by their modes: a 0644 file in
    a 0755 folder, a node home (0755) with its database and key made 0644, a listening unix socket."""
    base = Path(tempfile.mkdtemp(prefix="meshnode-host-", dir=OUTSIDE_TMP))
    base.chmod(0o755)
    (base / "notes.txt").write_text("host secret\n")
    (base / "notes.txt").chmod(0o644)
    db_path = base / "home" / "data" / "meshnode.db"
    Database(db_path).close()
    key = base / "home" / "keys" / "node.key"
    key.parent.mkdir(parents=True)
    key.write_bytes(b"private key bytes")
    for path in (base / "home", db_path.parent, key.parent):
        path.chmod(0o755)
    for path in (db_path, key):
        path.chmod(0o644)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(base / "node.sock"))
    listener.listen(1)
    (base / "node.sock").chmod(0o777)
    yield {"file": base / "notes.txt", "db": db_path, "key": key, "socket": base / "node.sock"}
    listener.close()
    shutil.rmtree(base, ignore_errors=True)


async def test_host_files_and_sockets_are_out_of_reach(workspace, host_secrets):
    code = ATTEMPT + textwrap.dedent(f"""\
        attempt('file', lambda: open({str(host_secrets["file"])!r}).read())
        attempt('db', lambda: open({str(host_secrets["db"])!r}, 'rb').read())
        attempt('key', lambda: open({str(host_secrets["key"])!r}, 'rb').read())
        attempt('key_write', lambda: open({str(host_secrets["key"])!r}, 'ab').write(b'x'))
        attempt('socket', lambda: socket.socket(socket.AF_UNIX).connect({str(host_secrets["socket"])!r}))
        attempt('root', lambda: os.listdir('/root'))
        attempt('var', lambda: os.listdir('/var'))
        attempt('home', lambda: os.listdir('/home'))
        attempt('shadow', lambda: open('/etc/shadow').read())
        print('top', *sorted(os.listdir('/')))
        """)
    result = await python(code, workspace)
    seen = attempts(result.stdout)
    top = seen.pop("top", None)
    assert seen == {name: "ENOENT" for name in
                    ("file", "db", "key", "key_write", "socket", "root", "var", "home", "shadow")}, result.stderr
    trees = [tree for tree in mounts.READ_ONLY_TREES if os.path.isdir(f"/{tree}")]
    assert top == " ".join(sorted([*trees, "dev", "etc", "proc", "tmp", "workspace"]))
    assert host_secrets["key"].read_bytes() == b"private key bytes"
    # the same file, passed by name to cat, is not there either
    result = await run_command(["cat", str(host_secrets["file"])], cwd=workspace, policy=policy())
    assert result.exit_code == 1 and b"No such file or directory" in result.stderr and result.stdout == b""


async def test_proc_shows_only_the_commands_own_processes(workspace):
    result = await run_command(["ls", "/proc"], cwd=workspace, policy=policy())
    assert [entry for entry in result.stdout.decode().split() if entry.isdigit()] == ["1"]
    code = textwrap.dedent("""\
        import os
        r, w = os.pipe()
        if os.fork() == 0:
            os.read(r, 1)
            os._exit(0)
        pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
        print(pids, os.readlink('/proc/1/cwd'), os.readlink('/proc/1/root'))
        os.write(w, b'x')
        """)
    result = await python(code, workspace)
    assert result.stdout == b"[1, 2] /workspace /\n", result.stderr


async def test_tmp_and_shm_are_private_bounded_and_gone_afterwards(workspace):
    name = f"marker-{os.getpid()}-{time.monotonic_ns()}"
    write = ATTEMPT + textwrap.dedent(f"""\
        for folder in ('/tmp', '/dev/shm'):
            attempt(folder, lambda: open(f'{{folder}}/{name}', 'w').write('left behind'))
        print('listing', sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))
        """)
    first = await python(write, workspace)
    assert first.stdout.decode().splitlines() == ["/tmp ok", "/dev/shm ok", f"listing ['{name}'] ['{name}']"]
    assert not os.path.lexists(f"/tmp/{name}") and not os.path.lexists(f"/dev/shm/{name}")
    look = "import os; print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))"
    second = await python(look, workspace)
    assert second.stdout == b"[] []\n"
    # each is a tmpfs of at most min(memory limit, 64 MiB): filling it fails, it does not eat the host
    fill = ATTEMPT + textwrap.dedent("""\
        def fill(path):
            with open(path, 'wb') as file:
                for _ in range(80):
                    file.write(b'x' * (1 << 20))
        attempt('tmp', lambda: fill('/tmp/big'))
        attempt('shm', lambda: fill('/dev/shm/big'))
        """)
    full = await python(fill, workspace, memory_bytes=256 << 20, max_file_bytes=128 << 20)
    assert attempts(full.stdout) == {"tmp": "ENOSPC", "shm": "ENOSPC"}, full.stderr


@pytest.mark.parametrize("setattr_call", [True, False], ids=["mount_setattr", "remounts"])
async def test_the_system_trees_are_read_only(workspace, monkeypatch, setattr_call):
    if not setattr_call:  # as on kernels before 5.12: one remount per mount
        def missing(*args) -> None:
            raise mounts.MountError(errno.ENOSYS, "mount_setattr")

        monkeypatch.setattr(mounts, "_mount_setattr", missing)
    code = ATTEMPT + textwrap.dedent("""\
        attempt('usr', lambda: os.mkdir('/usr/x'))
        attempt('usr_bin', lambda: open('/usr/bin/x', 'w'))
        attempt('bin', lambda: open('/bin/x', 'w'))
        attempt('etc', lambda: open('/etc/x', 'w'))
        attempt('etc_python', lambda: open('/etc/python3/x', 'w'))
        attempt('root', lambda: open('/x', 'w'))
        attempt('dev', lambda: os.mkdir('/dev/x'))
        attempt('rename', lambda: os.rename('/etc/passwd', '/etc/passwd2'))
        attempt('dev_null', lambda: open('/dev/null', 'w').write('discarded'))
        """)
    result = await python(code, workspace)
    expected = {name: "EROFS" for name in ("usr", "usr_bin", "bin", "etc", "etc_python", "root", "dev", "rename")}
    assert attempts(result.stdout) == {**expected, "dev_null": "ok"}, result.stderr


async def test_files_a_command_writes_cannot_be_executed(workspace):
    code = ATTEMPT + textwrap.dedent("""\
        import shutil
        for folder in ('/workspace', '/tmp', '/dev/shm'):
            shutil.copy('/usr/bin/true', f'{folder}/mytrue')
            os.chmod(f'{folder}/mytrue', 0o755)
            attempt(folder, lambda: os.execv(f'{folder}/mytrue', ['mytrue']))
        """)
    result = await python(code, workspace)
    assert attempts(result.stdout) == {"/workspace": "EACCES", "/tmp": "EACCES", "/dev/shm": "EACCES"}


async def test_the_folder_is_the_writable_workspace(workspace):
    (workspace / "in.txt").write_text("from the host\n")
    result = await python("import json, os; print(os.getcwd())", workspace)
    assert (result.exit_code, result.stdout) == (0, b"/workspace\n")
    code = textwrap.dedent("""\
        import os
        os.makedirs('sub', exist_ok=True)
        open('sub/relative.txt', 'w').write('relative\\n')
        open('/workspace/absolute.txt', 'w').write(open('/workspace/in.txt').read())
        """)
    result = await python(code, workspace)
    assert result.exit_code == 0, result.stderr
    assert (workspace / "sub" / "relative.txt").read_text() == "relative\n"
    assert (workspace / "absolute.txt").read_text() == "from the host\n"


async def test_the_allowed_tools_work_inside(workspace):
    (workspace / "a.txt").write_text("pear\napple\napple\nfig\n")
    (workspace / "b.txt").write_text("pear\napple\n")
    expected = {
        ("ls", "-l"): lambda out: "a.txt" in out and "b.txt" in out,
        ("cat", "b.txt"): lambda out: out == "pear\napple\n",
        ("grep", "-n", "apple", "a.txt"): lambda out: out == "2:apple\n3:apple\n",
        ("find", ".", "-name", "*.txt"): lambda out: sorted(out.split()) == ["./a.txt", "./b.txt"],
        ("wc", "-l", "a.txt"): lambda out: out == "4 a.txt\n",
        ("sort", "a.txt"): lambda out: out == "apple\napple\nfig\npear\n",
        ("uniq", "-c", "a.txt"): lambda out: out.split() == ["1", "pear", "2", "apple", "1", "fig"],
        ("head", "-n1", "a.txt"): lambda out: out == "pear\n",
        ("tail", "-n1", "a.txt"): lambda out: out == "fig\n",
        ("diff", "b.txt", "a.txt"): lambda out: out == "2a3,4\n> apple\n> fig\n",
        ("python3", "-c", "import json, locale, ssl, sqlite3, time; print(time.localtime().tm_year > 2000)"):
            lambda out: out == "True\n",
    }
    for argv, check in expected.items():
        result = await run_command(list(argv), cwd=workspace, policy=policy())
        assert result.exit_code in (0, 1) and result.stderr == b"", (argv, result.stderr)
        assert check(result.stdout.decode()), (argv, result.stdout)


async def test_concurrent_commands_cannot_see_each_others_folders(workspace):
    other = make_workspace()
    try:
        (workspace / "secret.txt").write_text("A's\n")
        (other / "mine.txt").write_text("B's\n")
        holder = "import time; open('ready', 'w').write('up\\n'); time.sleep(1000)"
        snoop = ATTEMPT + textwrap.dedent(f"""\
            pids = sorted(p for p in os.listdir('/proc') if p.isdigit())
            print('pids', *pids)
            print('cwds', *(os.readlink(f'/proc/{{p}}/cwd') for p in pids))
            print('here', *sorted(os.listdir('.')))
            attempt('read', lambda: open({str(workspace / "secret.txt")!r}).read())
            attempt('write', lambda: open({str(workspace / "secret.txt")!r}, 'w').write('tampered'))
            attempt('list', lambda: os.listdir({str(workspace)!r}))
            """)
        with trio.fail_after(30):
            async with fifo_line(workspace / "ready") as line, trio.open_nursery() as nursery:
                nursery.start_soon(python, holder, workspace)
                assert await line() == b"up\n"
                seen = await python(snoop, other)  # while the first one runs in its folder
                nursery.cancel_scope.cancel()
        assert attempts(seen.stdout) == {"pids": "1", "cwds": "/workspace", "here": "mine.txt",
                                         "read": "ENOENT", "write": "ENOENT", "list": "ENOENT"}, seen.stderr
        assert (workspace / "secret.txt").read_text() == "A's\n"
        assert sorted(p.name for p in other.iterdir()) == ["mine.txt"]
    finally:
        shutil.rmtree(other, ignore_errors=True)


@pytest.mark.parametrize("step", ["_pivot_root", "_mount"])
async def test_a_root_that_cannot_be_built_means_no_run(workspace, monkeypatch, step):
    def refuse(*args) -> None:
        raise mounts.MountError(errno.EPERM, f"{step}:test")

    monkeypatch.setattr(mounts, step, refuse)  # as where a kernel or container forbids it
    with pytest.raises(GateError) as caught:
        await python("open('ran', 'w')", workspace)
    assert caught.value.code == "no_isolation"
    assert f"{step}:test" in caught.value.reason and "Operation not permitted" in caught.value.reason
    assert not (workspace / "ran").exists()


# --- output ----------------------------------------------------------------------------


def as_unprivileged_node(workspace: Path, script: str) -> str:
    """Run ``script`` (it may use trio and meshnode) as a node of uid 65534; its stdout."""
    system_python = "/usr/bin/python3"
    probe = subprocess.run([system_python, "-c", "import sys; print(sys.version_info[:2])"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != str(tuple(sys.version_info[:2])):
        pytest.skip("no system python3 of this version for an unprivileged node")
    site = str(Path(trio.__file__).resolve().parents[1])
    repo = str(Path(meshnode.__file__).resolve().parents[1])  # the tree these tests run
    done = subprocess.run([system_python, "-c", script], user=65534, group=65534, extra_groups=[],
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{repo}:{site}"},
                          cwd=workspace, capture_output=True, text=True, timeout=60)
    if "cannot create the namespaces" in done.stderr:
        pytest.skip("this kernel forbids unprivileged user namespaces")
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_root
def test_without_root_a_user_namespace_isolates(workspace):
    """The node itself as uid 65534: the namespaces then come from a user namespace."""
    script = textwrap.dedent(f"""\
        import json, os, socket, trio
        from meshnode.engines.gate.runner import DEFAULT_PROGRAMS, policy_from_config, run_command
        async def main():
            with socket.socket() as listener:
                listener.bind(('127.0.0.1', 0))
                listener.listen(8)
                port = listener.getsockname()[1]
                code = ("import os, socket; print(os.getuid(), os.getpid(), os.getcwd(), flush=True); "
                        f"socket.create_connection(('127.0.0.1', {{port}}), timeout=5); print('connected')")
                out = {{}}
                for network in (False, True):
                    policy = policy_from_config(DEFAULT_PROGRAMS, network=network, timeout_s=10)
                    result = await run_command(['python3', '-c', code], cwd={str(workspace)!r}, policy=policy)
                    out[str(network)] = result.stdout.decode()
                print(json.dumps(out))
        trio.run(main)
        """)
    out = json.loads(as_unprivileged_node(workspace, script))
    assert out == {"False": "65534 1 /workspace\n", "True": "65534 1 /workspace\nconnected\n"}


@needs_root
def test_without_root_the_nodes_own_files_are_out_of_reach(workspace):
    """A node that is not root runs its commands under its own uid, which owns the node's key and
    database: only the command's own root keeps them out of reach."""
    home = Path(tempfile.mkdtemp(prefix="meshnode-home-", dir=OUTSIDE_TMP))
    try:
        db_path = home / "data" / "meshnode.db"
        Database(db_path).close()
        key = home / "keys" / "node.key"
        key.parent.mkdir(mode=0o700)
        key.write_bytes(b"private key bytes")
        key.chmod(0o600)
        for dirpath, _, filenames in os.walk(home):
            os.chown(dirpath, 65534, 65534)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), 65534, 65534)
        code = ATTEMPT + textwrap.dedent(f"""\
            attempt('key', lambda: open({str(key)!r}, 'rb').read())
            attempt('key_write', lambda: open({str(key)!r}, 'ab').write(b'x'))
            attempt('db', lambda: open({str(db_path)!r}, 'rb').read())
            attempt('home', lambda: os.listdir({str(home)!r}))
            print('uid', os.getuid())
            """)
        script = textwrap.dedent(f"""\
            import json, trio
            from meshnode.engines.gate.runner import DEFAULT_PROGRAMS, policy_from_config, run_command
            async def main():
                own = open({str(key)!r}, 'rb').read().decode()  # the node itself can
                result = await run_command(['python3', '-c', {code!r}], cwd={str(workspace)!r},
                                           policy=policy_from_config(DEFAULT_PROGRAMS))
                print(json.dumps([own, result.stdout.decode(), result.stderr.decode()]))
            trio.run(main)
            """)
        own, stdout, stderr = json.loads(as_unprivileged_node(workspace, script))
        assert own == "private key bytes"
        assert attempts(stdout.encode()) == {"key": "ENOENT", "key_write": "ENOENT", "db": "ENOENT",
                                             "home": "ENOENT", "uid": "65534"}, stderr
        assert key.read_bytes() == b"private key bytes"
    finally:
        shutil.rmtree(home, ignore_errors=True)
