"""The layers of the tree (issue 32): the import-linter contracts in pyproject.toml hold, and the
import graph of meshnode/ has no circle beyond the known ones still being removed.

Each check is also run on a small package built here that breaks it, so a check that could no
longer fail (a contract that matches nothing, a circle finder that finds nothing) fails the suite.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def lint_imports(config: Path, cwd: Path) -> subprocess.CompletedProcess:
    """import-linter's command run on ``config``, with the package under ``cwd`` first on the path
    (this tree's meshnode, not an installed one)."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "COLUMNS": "200", "NO_COLOR": "1"}
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo", str(config)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layer_contracts_hold():
    result = lint_imports(ROOT / "pyproject.toml", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_an_upward_import_breaks_the_layers(tmp_path):
    _write_package(tmp_path, {
        "layered/__init__.py": "", "layered/high.py": "", "layered/low.py": "import layered.high\n",
        "contracts.toml": '[tool.importlinter]\nroot_package = "layered"\n\n[[tool.importlinter.contracts]]\n'
                          'name = "high over low"\ntype = "layers"\ncontainers = ["layered"]\n'
                          'layers = ["high", "low"]\n',
    })
    result = lint_imports(tmp_path / "contracts.toml", tmp_path)
    assert result.returncode != 0
    assert "layered.low -> layered.high" in result.stdout


def import_circles(package: Path) -> list[set[str]]:
    """The circles (strongly connected groups of more than one module) of the import graph of the
    package folder ``package``: every import statement counts, at module level or in a function,
    relative ones resolved; a module importing its own package (or a parent) does not."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        base = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                prefix = ".".join(base[:len(base) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                targets = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                found = known(target) if target.split(".")[0] == package.name else None
                if found and found != name and not (modules[found][1] and name.startswith(found + ".")):
                    edges[name].add(found)
    return _strongly_connected(edges)


def _strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm without recursion: the groups of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return groups


def test_meshnode_has_no_import_circle():
    assert [sorted(c) for c in import_circles(ROOT / "meshnode")] == []


def test_the_circle_finder_finds_a_circle(tmp_path):
    _write_package(tmp_path, {
        "ring/__init__.py": "from ring import a\n",  # a package importing its module: no circle
        "ring/a.py": "from . import b\nimport ring\n",
        "ring/b.py": "def later():\n    from ring.sub.c import x\n",
        "ring/sub/__init__.py": "", "ring/sub/c.py": "from ..a import y\n", "ring/d.py": "import ring.a\n",
    })
    assert import_circles(tmp_path / "ring") == [{"ring.a", "ring.b", "ring.sub.c"}]
