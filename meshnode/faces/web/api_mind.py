"""The mind page's routes: the cycle's state, its ticks (tick_traces), held commands, tick now,
pause and resume, and the registered LLMs. Each is an action of the application layer
(meshnode.app.actions.mind and .llm), as ``meshnode mind`` and ``meshnode llm list`` call them, for
the person through the web (never an API key here: only whether one is used)."""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError
from meshnode.records.mind import held
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import INT_MAX, Arg, Endpoint

_IDS = Arg(list, max=1000, doc="held command ids (from GET /api/mind/held); null or absent: all of them")


async def mind(services, args):
    return await services.call("mind")


async def ticks(services, args):
    return await services.call("mind_ticks", limit=args["limit"], before=args["before"])


async def tick_show(services, args):
    return await services.call("mind_tick_show", tick=ids.number(args["tick"], "tick", "a tick number"))


async def held_list(services, args):
    status = None if args["status"] == "all" else args["status"]
    return await services.call("mind_held", status=status, limit=args["limit"])


def _ids(args) -> list | None:
    given = args["ids"]
    if given is not None and any(type(i) is not int or not 0 <= i <= INT_MAX for i in given):
        raise MeshnodeError("bad_arguments", "ids must be held command numbers (integers >= 0)")
    return given


async def release(services, args):
    return await services.call("mind_release", ids=_ids(args))


async def drop(services, args):
    return await services.call("mind_drop", ids=_ids(args))


async def tick_now(services, args):
    return await services.call("tick")


async def pause(services, args):
    return await services.call("mind_pause")


async def resume(services, args):
    return await services.call("mind_resume")


async def llms(services, args):
    errors = dict(getattr(services.cycle, "llm_errors", None) or {})
    return [{"id": e["id"], "model": e["model"], "base_url": e["base_url"], "priority": e["priority"],
             "validator": e["validator"], "timeout_s": e["timeout_s"], "uses_api_key": bool(e["api_key_env"]),
             "error": errors.get(e["id"])} for e in await services.call("llms")]


ROUTES = [
    Endpoint("GET", "/api/mind", mind, doc="the cycle's state (mode, ticks, paused, llms ...), validators, held"),
    Endpoint("GET", "/api/mind/ticks", ticks,
             {"limit": ids.limit("ticks"),
              "before": Arg(int, min=0, doc="the last tick number of the previous page")},
             doc="the last ticks, newest first: [{tick, started_ms, duration_ms, mode, llm_id, llm_ms, wake_job,"
                 " summary}]"),
    Endpoint("GET", "/api/mind/ticks/{tick}", tick_show, {"tick": Arg(str, required=True, max=18)},
             doc="one tick in full: the listing's fields, contexts [{title, text}], messages, answer,"
                 " commands [{name, status, value}], held [ids], response"),
    Endpoint("GET", "/api/mind/held", held_list,
             {"status": Arg(str, choices=(*held.STATUSES, "all"), default="held"),
              "limit": ids.limit("held commands", 100)},
             doc="commands the validation reflex held, newest first"),
    Endpoint("POST", "/api/mind/held/release", release, {"ids": _IDS},
             doc="release held commands (they run now, or at the resume when paused): {released, ran, ...}"),
    Endpoint("POST", "/api/mind/held/drop", drop, {"ids": _IDS}, doc="discard held commands: {dropped}"),
    Endpoint("POST", "/api/mind/tick", tick_now, doc="tick now (not while paused): the cycle's state"),
    Endpoint("POST", "/api/mind/pause", pause, doc="stop the agent until resumed (kept across restarts)"),
    Endpoint("POST", "/api/mind/resume", resume, doc="let a paused agent think again"),
    Endpoint("GET", "/api/llms", llms,
             doc="the registered LLMs (no API keys: uses_api_key says whether one is read from the environment)"),
]
