"""The node wires by constructors only (issue 32): the modules that assemble the node give each part
what it needs when it is built and never set an attribute of another object afterwards
(``cycle.gate.spawner = ...``, ``control.web_url = ...``). A value that exists only later reaches its
user through a holder made up front (the web's bound address, the reactor the cycle's sends ask)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import trio

from meshnode.engines.cognition.tick_events import TickEvents
from meshnode.faces.web.address import WebAddress

ASSEMBLERS = ("meshnode.node.run", "meshnode.node.http", "meshnode.faces.web.server", "meshnode.engines.mcp_tools.service",
              "meshnode.engines.cognition.cycle")
FILLED_BY_ATTRIBUTE = {"cfg"}  # Hypercorn's Config (web/server.py): made, then set by attribute, as its API is


def source_of(module: str) -> str:
    """A module's text, found where it is (read, not run)."""
    return Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")


def patches(source: str) -> list[str]:
    """Each assignment to an attribute of something other than ``self`` (``a.b = ...``, ``a.b.c += ...``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for one in target.elts if isinstance(target, ast.Tuple) else [target]:
                root = one
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(one, ast.Attribute) and not (isinstance(root, ast.Name)
                                                           and root.id in ("self", *FILLED_BY_ATTRIBUTE)):
                    found.append(f"{node.lineno}: {ast.unparse(one)}")
    return found


def test_the_modules_that_assemble_the_node_patch_no_part_after_building_it():
    found = {name: patches(source_of(name)) for name in ASSEMBLERS}
    assert found == {name: [] for name in ASSEMBLERS}


def test_the_scan_finds_a_patch():
    source = ("def run(control, cycle, later):\n    cycle.gate.spawner = control.cmd_spawn\n    control.web_url = 'x'\n"
              "    later.value, n = 1, 2\n    self.ok = True\n")
    assert patches(source) == ["2: cycle.gate.spawner", "3: control.web_url", "4: later.value"]


def test_the_web_address_is_empty_until_the_server_fills_it_in():
    address = WebAddress()
    assert (address.bound, address.port, address.url) == (None, None, None)
    address.set("127.0.0.1:8471", "http://127.0.0.1:8471/")
    assert (address.bound, address.port, address.url) == ("127.0.0.1:8471", 8471, "http://127.0.0.1:8471/")


def test_each_tick_reaches_every_listener_subscribed_after_the_cycle_was_built():
    ticks, heard = TickEvents(), []
    ticks.ended({"tick": 0})  # nobody listens yet: nothing to tell
    ticks.on_ended(lambda summary: heard.append(("feed", summary["tick"])))
    ticks.on_ended(lambda summary: heard.append(("other", summary["tick"])))
    ticks.ended({"tick": 1})
    assert heard == [("feed", 1), ("other", 1)]


async def test_a_running_node_s_status_names_the_web_address_its_server_bound(tmp_path):
    """``status`` (and so ``meshnode web url``) reads the holder the control was built with."""
    from meshnode.base.config import load_config
    from meshnode.base.identity.keys import NodeKey
    from meshnode.base.metrics import Metrics
    from meshnode.node.run import _Control
    from meshnode.store import Store

    config = load_config(tmp_path)
    address = WebAddress()
    async with await Store.open(tmp_path / "db.sqlite") as store:
        mesh = _QuietMesh()
        control = _Control(config, NodeKey.generate(), store, mesh, Metrics(), web=address)
        assert (await control.handle("status", {}))["web"] is None
        address.set("127.0.0.1:9", "http://127.0.0.1:9/")
        assert (await control.handle("status", {}))["web"] == "http://127.0.0.1:9/"
        await trio.lowlevel.checkpoint()


class _QuietMesh:
    def addresses(self) -> list[str]:
        return []

    def peers_snapshot(self) -> dict:
        return {"connected": [], "liveness": {}}  # as net.mesh_liveness gives it
