"""The LLMs the agent thinks with (records.mind.registry): list them, add, change, choose the main
one, remove. A running node reads the registry at every tick, so a change applies from the next.

Registering and removing an LLM, and any change to where it is, its API key variable or its
validator role, is the person's alone; the agent may choose its main LLM and change what shapes
its thinking (``registry.AGENT_SETTINGS``) of one that is not a validator, as its own commands
may. No one else may touch them.
"""

from __future__ import annotations

from dataclasses import asdict

from meshnode.app.actor import Actor, decided_by, is_person
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records.mind import registry


def _person_or_agent(actor: Actor, what: str) -> None:
    if not is_person(actor.kind) and actor.kind != "agent":
        raise MeshnodeError("not_allowed", f"only the node's person (or its agent) {what}")


async def llms(app: App, actor: Actor) -> list[dict]:
    """Every registered LLM, highest priority first (an API key's variable name, never a key)."""
    return [asdict(e) for e in await app.store.read(registry.endpoints)]


async def llm_add(app: App, actor: Actor, name: str, url: str, model: str, priority: int = 0,
                  validator: bool = False, api_key_env: str | None = None, timeout_s: float = 120.0) -> dict:
    decided_by(actor, "registers an LLM")
    endpoint = registry.Endpoint(name, url, model, priority, bool(validator), api_key_env, timeout_s)
    await app.store.write(registry.add, endpoint)
    return asdict(endpoint)


async def llm_update(app: App, actor: Actor, name: str, url: str | None = None, model: str | None = None,
                     priority: int | None = None, validator: bool | None = None, timeout_s: float | None = None,
                     api_key_env: str | None = None, no_api_key: bool = False) -> dict:
    """Change the settings given, keep the rest (``no_api_key``: forget the API key variable)."""
    changes = {k: v for k, v in (("url", url), ("model", model), ("priority", priority), ("validator", validator),
                                 ("timeout_s", timeout_s)) if v is not None}
    if api_key_env is not None or no_api_key:
        changes["api_key_env"] = None if no_api_key else api_key_env
    if not changes:
        raise MeshnodeError("bad_request", "give at least one setting to change")
    if actor.kind == "agent":
        e = await app.store.write(registry.agent_update, name, changes)
    else:
        decided_by(actor, "changes an LLM's settings")
        e = await app.store.write(lambda db: registry.update(db, name, **changes))
    return asdict(e)


async def llm_select(app: App, actor: Actor, name: str) -> dict:
    """Make ``name`` the main LLM (its priority becomes the highest)."""
    _person_or_agent(actor, "chooses the main LLM")
    await app.store.write(registry.select, name)
    return {"main": name}


async def llm_remove(app: App, actor: Actor, name: str) -> dict:
    decided_by(actor, "removes an LLM")
    await app.store.write(registry.remove, name)
    return {"removed": name}
