"""``meshnode spawn``: make a child node of this one (protocols/spawn.md).

With the parent node running, the node does it (the action ``spawn``, meshnode.app.actions.children:
its store, its addresses, and it pings the started child); otherwise the CLI does it on the
parent's database (spawn.parent.LocalParent: a spawn there is the spawn engine's, not an action's).
"""

from __future__ import annotations

from meshnode.faces.cli.common import _ask_node, _config, print_json, terminal_safe
from meshnode.net.control import HANDLER_TIMEOUT
from meshnode.engines.spawn.jobs import ANSWER_SECONDS
from meshnode.base.errors import MeshnodeError
from meshnode.store.home import open_identity
from meshnode.engines.spawn.model import SpawnRequest, SpawnResult

# the node answers within its handler limit (a longer spawn: "pending", asked again): a little longer
CONTROL_TIMEOUT = HANDLER_TIMEOUT + 10.0


def cmd_spawn(args) -> int:
    config = _config(args)
    home = args.child_home.expanduser().absolute() if args.child_home else None
    bundle = args.bundle.expanduser().absolute() if args.bundle else None
    req = SpawnRequest(kind=args.kind, name=args.name, home=home, start=args.start, autostart=args.autostart,
                       bundle=bundle, expires_hours=args.expires, by="cli", friends=args.friends)
    try:
        result = _ask_node(config, "spawn", {**req.to_ask(), "answer_seconds": ANSWER_SECONDS}, required=False,
                           timeout=CONTROL_TIMEOUT)
        while isinstance(result, dict) and "pending" in result:  # the node still works on it
            result = _ask_node(config, "spawn_wait", {"job": result["pending"]}, timeout=CONTROL_TIMEOUT)
        if result is None:
            result = _spawn_here(config, req).to_dict()
    except MeshnodeError as exc:  # the code first: scripts and people both see why
        raise MeshnodeError(exc.code, f"spawn refused ({exc.code}): {exc.reason}") from None
    if args.json:
        print_json(result)
    else:
        print(terminal_safe("\n".join(result_lines(result)), keep_newlines=True))
    return 0


def _spawn_here(config, req: SpawnRequest) -> SpawnResult:
    """No node runs: the parent is its database (the same spawn_child the node runs)."""
    from meshnode.engines.spawn.parent import LocalParent
    from meshnode.engines.spawn.service import spawn_child

    key = open_identity(config)
    parent = LocalParent(config, key)
    try:
        return spawn_child(config, key, req, parent)
    finally:
        parent.close()


def result_lines(r: dict) -> list[str]:
    """A spawn's result for a person."""
    if r.get("bundle"):
        return [f"bundle:     {r['bundle']}", f"kind:       {r['kind']} (depth {r['depth']})",
                f"name:       {r['name']}", f"invitation: {r.get('invitation') or '-'}", *_seed_lines(r),
                "next:       copy it to the other host, then there: meshnode init --from-bundle FILE --start"]
    lines = [f"did:        {r['did']}", f"name:       {r['name']}", f"kind:       {r['kind']} (depth {r['depth']})",
             f"home:       {r['home']}"]
    lines += [f"listen:     {a}" for a in r.get("listen") or []]
    lines.append(f"web:        {r.get('web_listen') or '-'}")
    lines += [f"bootstrap:  {a}" for a in r.get("bootstrap") or []]
    lines += _seed_lines(r)
    auto = r.get("autostart") or {}
    lines.append(f"autostart:  {auto.get('kind', 'none')}" + (f" ({auto['hint']})" if auto.get("hint") else ""))
    if r.get("started"):
        lines.append(f"started:    reachable after {r.get('reachable_seconds')} s")
    else:
        lines.append(f"started:    no (start it: meshnode --home {r['home']} start, or meshnode children start {r['did']})")
    return lines


def _seed_lines(r: dict) -> list[str]:
    seed = r.get("seed") or {}
    copied, refused = seed.get("copied") or {}, seed.get("refused") or {}
    line = f"seed:       {sum(copied.values())} copied in {len(copied)} tables/classes, {sum(refused.values())} refused"
    return [line] + [f"            refused: {why}" for why in (seed.get("reasons") or [])[:5]]
