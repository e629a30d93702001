"""Shared fixtures: run the ``meshnode`` CLI (in this process, or as a subprocess), and an
initialised home.

Every CLI run gets a scrubbed environment: no MESHNODE_* variable leaks in from
the developer's shell (unless a test passes it), and HOME points at a private
temporary folder, so even a test that forgot ``--home`` can never reach the
real ``~/.meshnode``. stdin is empty unless ``input`` is given, so the CLI
never sees a terminal and never prompts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clienv import cli_env  # noqa: F401 (tests import it from here too)
from meshnode.records.gmp import store_hooks


def pytest_configure(config):
    """Every Database a test opens in this process admits and draws GMP containers, as in the CLI
    and the node (a process without the hooks cannot open a store: ``store.hooks``)."""
    store_hooks.install()
    if not hasattr(config, "workerinput"):  # once, in the process that starts the xdist workers
        _compile_sources()


def _compile_sources() -> None:
    """Byte-compile meshnode and the tests' helpers before any test runs. The suite starts hundreds of
    node, CLI and helper processes; with PYTHONDONTWRITEBYTECODE set (or in a fresh clone whose first
    processes race each other) each would compile meshnode's ~57,000 lines again: ~0.4 CPU-s of a
    node's ~1.5 s start. A process only reads the caches (a stale one, of a file edited since, is
    recompiled in memory as usual)."""
    import compileall
    import re

    root = Path(__file__).resolve().parent.parent
    test_files = re.compile(r"[/\\]test_[^/\\]*\.py$")  # pytest compiles these its own way (assertions)
    for folder, depth in ((root / "meshnode", 20), (root / "tests", 0), (root / "bench", 0)):
        if folder.is_dir():
            compileall.compile_dir(folder, maxlevels=depth, rx=test_files, quiet=2, workers=1)


# Words in a test file's text that say it starts processes (nodes, CLIs, LLM stand-ins, namespaces).
STARTS_PROCESSES = ("meshharness", "webharness", "llmharness", "mcpharness", "spawnlab", "netns", "subprocess",
                    "run_cli_process", "bench/")


def pytest_collection_modifyitems(config, items):
    """Test files that start processes run first, the in-process ones after them: with a worker
    per core and one more (``make test``: pytest-xdist, a file to a worker), the long files start early and the
    many short ones even out the end, instead of two workers meeting the slow files last."""
    starts: dict[Path, bool] = {}

    def in_process(item) -> bool:
        if item.path not in starts:
            text = item.path.read_text(encoding="utf-8", errors="replace")
            starts[item.path] = any(word in text for word in STARTS_PROCESSES)
        return not starts[item.path]

    items.sort(key=in_process)  # stable: a file's tests stay together and in their order


@pytest.fixture(autouse=True)
def _umask_restored():
    """A test that runs the CLI in this process (``cli.main``) sets the node's umask 077 for the whole
    session; the next tests' folders would be unreadable to a sandbox's uid 65534."""
    mask = os.umask(0o022)
    os.umask(mask)
    yield
    os.umask(mask)


@pytest.fixture(scope="session")
def fake_user_home(tmp_path_factory) -> Path:
    """A stand-in for the user's home directory (so ~/.meshnode is never the real one)."""
    return tmp_path_factory.mktemp("user-home")


@pytest.fixture
def run_cli(fake_user_home):
    """``run_cli(*args, env=None, input=None, timeout=60)`` -> the result of ``meshnode *args`` run
    in this process (tests/cli_runner.py): ``returncode``, ``stdout``, ``stderr``, ``args``.
    ``timeout`` is accepted for the callers written for a subprocess; a command in-process ends
    or the test's own timeout catches it."""
    from cli_runner import run_cli_in_process

    def run(*args, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 60):
        return run_cli_in_process(args, fake_user_home, env=env, input=input)

    return run


@pytest.fixture
def run_cli_process(fake_user_home):
    """``run_cli_process(*args, env=None, input=None, timeout=60)`` -> CompletedProcess (text mode):
    ``python -m meshnode`` as a subprocess, for what only a process shows (exit through the
    interpreter, argv as bytes)."""

    def run(*args, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        kwargs = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
        return subprocess.run(
            [sys.executable, "-m", "meshnode", *map(str, args)],
            env=cli_env(fake_user_home, env),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
            **kwargs,
        )

    return run


@pytest.fixture(scope="session")
def _initialised_home(tmp_path_factory, fake_user_home) -> Path:
    """One ``meshnode init --name test`` for the session (in-process), copied by ``home``. A home
    holds no absolute path of its own, so a copy is the same as an init in place; every test gets
    its own copy (the same key: no test needs a home's key to differ from another test's)."""
    from cli_runner import run_cli_in_process

    path = tmp_path_factory.mktemp("home-template") / "node"
    result = run_cli_in_process(["--home", path, "init", "--name", "test"], fake_user_home)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def home(tmp_path, _initialised_home) -> Path:
    """An initialised node home (``meshnode --home <tmp> init --name test``): a copy of the
    session's, so each test starts from a fresh one of its own."""
    import shutil

    return Path(shutil.copytree(_initialised_home, tmp_path / "node"))


# Hypothesis: no per-example deadline. CI runs on two shared cores, and a slow
# first example (an import, a cold cache) is not a failure of the property.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("meshnode", deadline=None, print_blob=True)
_hypothesis_settings.load_profile("meshnode")


@pytest.fixture
def llms(tmp_path):
    """Start scripted LLMs: ``llms(name, answers)`` -> a ScriptedLLM (stopped after the test)."""
    from llmharness import ScriptedLLM

    made = []
    yield lambda name, answers: made.append(ScriptedLLM(tmp_path, name, answers)) or made[-1]
    for llm in made:
        llm.stop()


# --- the action gate's lab (tests/test_gate_*.py) ----------------------------


@pytest.fixture
def scratch_parent():
    """A folder for scratch copies, reachable by the unprivileged user commands run as
    (pytest's tmp_path is 0700)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="meshnode-test-scratch-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def lab(tmp_path, scratch_parent):
    """A workspace, a tree beside it that must not change (checked at the end), a store, and
    ``make(**settings)`` for gates with test settings."""
    from gatelab import clock, tree_hashes
    from meshnode.engines.gate import runner
    from meshnode.engines.gate.gate import Gate, GateSettings
    from meshnode.engines.gate.jail import Jail
    from meshnode.engines.gate.tools import risk_policy
    from meshnode.store import Store

    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "notes.txt").write_text("teh quick fox\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('hello')\n")
    (outside / "secret.txt").write_text("do not touch\n")
    told: list[str] = []
    guarded: list[str] = []

    async def tell_user(text: str) -> None:
        told.append(text)

    def make(*, spawner=None, mcp=None, **overrides) -> Gate:
        """A gate with the lab's settings (``overrides``); ``spawner`` and ``mcp`` as the node gives them."""
        settings = dict(jail=Jail([ws]), commands=runner.policy_from_config(
            ["cat", "echo", "ls", "python3", "sleep"], timeout_s=5.0, max_processes=32),
            risk=risk_policy({}, [], ["allowed.test"]), scratch_dir=scratch_parent, loop_window=10, loop_repeats=3,
            max_calls_per_task=50)
        settings.update(overrides)
        return Gate(store, GateSettings(**settings), clock, tell_user=tell_user,
                    on_guard=lambda kind, reason: guarded.append(kind), spawner=spawner, mcp=mcp)

    async with await Store.open(tmp_path / "db.sqlite") as store:
        before = tree_hashes(outside)
        yield {"ws": ws, "outside": outside, "store": store, "make": make, "told": told, "guarded": guarded}
        assert tree_hashes(outside) == before  # whatever a test did, nothing outside the workspace changed


# --- the command runner's tests ---------------------------------------------


@pytest.fixture
def workspace():
    """A folder the sandbox uid can use, removed afterwards (tests/test_gate_runner.py)."""
    import shutil

    from runnerlab import make_workspace

    path = make_workspace()
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Namespaces(list):
    """PID namespaces in the order their commands started; ``await first()`` waits for the first
    (a command can write to the test before the task that spawned it runs again to record it)."""

    def __init__(self):
        super().__init__()
        import trio

        self._recorded = trio.Event()

    def record(self, namespace: str) -> None:
        self.append(namespace)
        self._recorded.set()

    async def first(self) -> str:
        await self._recorded.wait()
        return self[0]


@pytest.fixture
def namespaces(monkeypatch):
    """The PID namespace of every command started from now on, in order, read as spawn returns."""
    from meshnode.engines.gate import runner

    seen = Namespaces()
    real = runner.spawn

    async def recording(*args, **kwargs):
        proc, leader = await real(*args, **kwargs)
        seen.record(os.readlink(f"/proc/{leader}/ns/pid"))
        return proc, leader

    monkeypatch.setattr(runner, "spawn", recording)
    return seen
