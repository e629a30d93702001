"""The person's blocks at the A2A face (migration 0023): a party by name, or an address or network.
A blocked party's or address's requests are refused (HTTP 403) and its held messages rejected when
the block is made. Functions run in the store's threads, except ``BlockSet``'s: the blocks in the
running node's memory, which the face checks on every request (a flood from a blocked address costs
no read of the store), filled at the start and changed by the actions as they change the table."""

from __future__ import annotations

import json

from meshnode.base.errors import MeshnodeError
from meshnode.records.a2a import held_queue
from meshnode.records.a2a.addresses import ip_of, network_of, within
from meshnode.store.database import Database

MAX_BLOCKS = 10_000
MAX_TARGET_CHARS = 200


def target_of(text: str) -> tuple[str, str]:
    """``(kind, target)`` of what a person typed: ``("address", "192.0.2.7/32")`` for an address or a
    network, else ``("party", name)`` (a known party's name, a claimed sender or a party's key)."""
    if not isinstance(text, str) or not text.strip():
        raise MeshnodeError("bad_arguments", "name the party or the address to block")
    text = text.strip()
    if len(text) > MAX_TARGET_CHARS or not text.isprintable():
        raise MeshnodeError("bad_arguments", f"a party or an address is at most {MAX_TARGET_CHARS} printable"
                                             " characters")
    net = network_of(text)
    return ("address", str(net)) if net is not None else ("party", text)


def block(db: Database, text: str, now_ms: int, by: str) -> dict:
    """Block ``text`` (a party or an address/network); its held messages waiting are rejected.
    ``{target, kind, created_ms, decided_by, rejected}`` (the ids rejected)."""
    kind, target = target_of(text)
    with db.transaction() as conn:
        if conn.execute("SELECT COUNT(*) FROM a2a_blocks").fetchone()[0] >= MAX_BLOCKS and conn.execute(
                "SELECT 1 FROM a2a_blocks WHERE target = ?", (target,)).fetchone() is None:
            raise MeshnodeError("too_many", f"{MAX_BLOCKS} blocks are kept at most: unblock some first")
        conn.execute("INSERT INTO a2a_blocks (target, kind, created_ms, decided_by) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (target) DO NOTHING", (target, kind, now_ms, by))
    rejected = held_queue.reject(db, now_ms, by, **({"address": target} if kind == "address" else {"party": target}))
    dropped = drop_queued(db, kind, target, len(rejected), by)
    return {"target": target, "kind": kind, "created_ms": now_ms, "decided_by": by, "rejected": rejected,
            "dropped": dropped}


DROPPED = "dropped: the person blocked this party or address"


def drop_queued(db: Database, kind: str, target: str, rejected: int, by: str) -> dict:
    """What the blocked party (or address) had on its way to the agent besides its held messages
    (``rejected`` of them, rejected already): its approved messages not yet delivered (failed, with
    DROPPED) and its delivered messages the agent has not read (marked read: out of context 6b, still
    in the conversation for the person). The agent is told the counts (context 4). ``{approved, unread}``."""
    one = BlockSet().fill([{"kind": kind, "target": target}])
    with db.transaction() as conn:
        approved = [i for i, a in conn.execute(
            "SELECT id, args FROM gate_confirmations WHERE session = ? AND tool = ? AND status = 'approved'",
            (held_queue.SESSION, held_queue.TOOL)).fetchall()
            if _matches(one, json.loads(a).get("party", ""), json.loads(a).get("sender", ""),
                        json.loads(a).get("client", ""))]
        for i in approved:
            conn.execute("UPDATE gate_confirmations SET status = 'failed', result = ? WHERE id = ? AND status ="
                         " 'approved'", (json.dumps({"error": DROPPED}), i))
        unread = [d for d, key, label in conn.execute(
            "SELECT n.container_did, pr.actor_id, pr.label FROM notes n JOIN provenance pr ON pr.container_did ="
            " n.container_did WHERE pr.kind = 'a2a' AND n.read = 0").fetchall()
            if _matches(one, key or "", label or "", client_of_key(key or "", label or ""))]
        for d in unread:
            conn.execute("UPDATE notes SET read = 1 WHERE container_did = ?", (d,))
        held_queue.tell_agent(conn, "a2a block", {"kind": kind, "rejected": rejected, "dropped_approved":
                                                  len(approved), "dropped_unread": len(unread)}, by)
    return {"approved": len(approved), "unread": len(unread)}


def _matches(one: "BlockSet", key: str, name: str, client: str) -> bool:
    return one.match((name, key), client) is not None


def client_of_key(key: str, name: str) -> str:
    """The address in the key ``unknown:<address>:<name>`` of the unknown party ``name`` ("" for a known
    party's, or a key that is not that party's)."""
    prefix, suffix = "unknown:", f":{name}"
    if not (key.startswith(prefix) and key.endswith(suffix)):
        return ""
    client = key[len(prefix):len(key) - len(suffix)]
    return client if ip_of(client) is not None else ""


def unblock(db: Database, text: str) -> bool:
    """Lift the block of ``text`` (as ``block`` was given it); False: there was none."""
    _, target = target_of(text)
    with db.transaction() as conn:
        return conn.execute("DELETE FROM a2a_blocks WHERE target = ?", (target,)).rowcount == 1


def listing(db: Database) -> list[dict]:
    rows = db.conn.execute("SELECT target, kind, created_ms, decided_by FROM a2a_blocks ORDER BY created_ms,"
                           " target").fetchall()
    return [dict(zip(("target", "kind", "created_ms", "decided_by"), r)) for r in rows]


def blocked(db: Database, names: tuple[str, ...], client: str) -> str | None:
    """The block that applies to a request of the party known by any of ``names`` (its name, its key)
    from ``client`` (None: none does)."""
    marks = ",".join("?" * len(names))
    found = db.conn.execute(f"SELECT target FROM a2a_blocks WHERE kind = 'party' AND target IN ({marks}) LIMIT 1",
                            names).fetchone() if names else None
    if found:
        return found[0]
    for (target,) in db.conn.execute("SELECT target FROM a2a_blocks WHERE kind = 'address'"):
        net = network_of(target)
        if net is not None and within(client, net):
            return target
    return None


class BlockSet:
    """The blocks as the running node keeps them: parties by name or key, single addresses, networks.
    ``loaded`` False until ``fill`` gave it the table (a face with none of its own loads it once)."""

    def __init__(self):
        self.loaded = False
        self._parties: set[str] = set()
        self._hosts: dict = {}  # ip_address -> target ("192.0.2.7/32")
        self._networks: dict = {}  # target -> ip_network (wider than one address)

    def fill(self, rows: list[dict]) -> "BlockSet":
        """The blocks of ``listing`` (the table), replacing what was kept."""
        self._parties, self._hosts, self._networks = set(), {}, {}
        for r in rows:
            self.add(r["kind"], r["target"])
        self.loaded = True
        return self

    def add(self, kind: str, target: str) -> None:
        if kind == "party":
            self._parties.add(target)
            return
        net = network_of(target)
        if net is None:
            return
        if net.num_addresses == 1:
            self._hosts[net.network_address] = target
        else:
            self._networks[target] = net

    def remove(self, target: str) -> None:
        self._parties.discard(target)
        self._networks.pop(target, None)
        net = network_of(target)
        if net is not None and net.num_addresses == 1:
            self._hosts.pop(net.network_address, None)

    def match(self, names: tuple[str, ...], client: str) -> str | None:
        """The block that applies to the party known by any of ``names`` from ``client`` (None: none),
        as ``blocked`` finds it in the table."""
        for name in names:
            if name in self._parties:
                return name
        ip = ip_of(client)
        if ip is None:
            return None
        if ip in self._hosts:
            return self._hosts[ip]
        for target, net in self._networks.items():
            if ip.version == net.version and ip in net:
                return target
        return None

    def __len__(self) -> int:
        return len(self._parties) + len(self._hosts) + len(self._networks)
