"""Routes about the node itself and its peers (protocols/web.md 4.1): status, counters, peers, ping,
find, friends, sync, and one stored container in a readable form.

Each handler calls one control command, as ``meshnode status|metrics|peers|ping|find|friend|sync|
container export`` do; DIDs may be given as the CLI takes them (a name, a short id)."""

from __future__ import annotations

import dataclasses

from meshnode.base.container import ContainerError, decode_container
from meshnode.base.errors import MeshnodeError
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint

STORED_SKEW_MS = 2**62  # a stored container was checked at arrival: re-reading it must not fail on the clock


async def status(services, args):
    return await services.call("status")


async def metrics(services, args):
    return await services.call("metrics", full=True)


async def peers(services, args):
    return await services.call("peers")


async def ping(services, args):
    return await services.call("ping", did=await ids.agent(services, args["did"]))


async def find(services, args):
    if bool(args["did"]) == bool(args["interest"]):
        raise MeshnodeError("bad_arguments", "find takes a did or an interest (one of them)")
    if args["interest"]:
        return await services.call("find", interest=args["interest"])
    return await services.call("find", did=await ids.agent(services, args["did"]))


async def friends(services, args):
    return await services.call("friends")


async def friend(services, args):
    return await services.call("friend", did=await ids.agent(services, args["did"]), on=args["on"])


async def sync(services, args):
    return await services.call("sync", did=await ids.agent(services, args["did"]))


async def container(services, args):
    """The stored bytes (hex, as ``container export`` writes them) and the container decoded for reading:
    ``{did, hex, bytes, container: {verified, hmp_container, ...} | null, problem: null | reason}``."""
    did = await ids.container(services, args["did"])
    data = bytes.fromhex((await services.call("export", did=did))["hex"])
    view, problem = None, None
    try:
        limits = dataclasses.replace(services.config.limits, clock_skew_ms=STORED_SKEW_MS)
        view = decode_container(data, now_ms=services.now(), limits=limits).to_plain()
    except ContainerError as exc:  # stored under laxer limits than today's: the bytes are still shown
        problem = f"{exc.code}: {exc.reason}"
    return {"did": did, "hex": data.hex(), "bytes": len(data), "container": view, "problem": problem}


ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/status", status, doc="who this node is, what it holds, peers connected, the mind's state"),
    Endpoint("GET", "/api/metrics.json", metrics, doc="the node's counters, histograms and gauges as JSON"),
    Endpoint("GET", "/api/peers", peers, doc="known peers with liveness and whether each is connected now"),
    Endpoint("POST", "/api/peers/ping", ping, {"did": ids.AGENT}, doc="round trip to a peer: {did, rtt_ms}"),
    Endpoint("GET", "/api/find", find,
             {"did": Arg(str, max=ids.MAX_DID, doc="a peer's DID, name or short id"),
              "interest": Arg(str, max=64, doc="an interest tag instead of a DID")},
             doc="find a peer by DID (its addresses) or peers by interest, over the network; changes nothing"),
    Endpoint("GET", "/api/friends", friends, doc="the friends' DIDs (who gets friends notes)"),
    Endpoint("POST", "/api/friends", friend,
             {"did": ids.AGENT, "on": Arg(bool, default=True, doc="true: make a friend; false: no longer")},
             doc="add or remove a friend: {did, friend}"),
    Endpoint("POST", "/api/sync", sync, {"did": ids.AGENT}, doc="sync with a peer now: {pushed, fetched, ...}"),
    Endpoint("GET", "/api/containers/{did}", container, {"did": ids.CONTAINER},
             doc="one stored container: its bytes (hex) and decoded view"),
]
