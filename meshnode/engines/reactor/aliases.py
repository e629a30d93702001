"""Canonical agent identities: every name an addressee may go by -> one canonical id (design 5).

The registry is a TOML file (``reactor/aliases.toml`` under the node home)::

    [agents.self]                 # the local core; rewritten to the node's DID
    aliases = ["ductor", "nodus"]
    [agents."did:key:z6Mk..."]    # a peer node
    aliases = ["isaac", "did:key:z6MkOLD..."]
    [agents.scout]                # an external agent on this node
    aliases = ["murr"]

Resolution is exact on a canonical id, then on an alias after case-folding and stripping a leading
``@``; a valid-looking ``did:key`` not in the registry resolves to itself. Anything else is unknown
(None): the core never guesses. An alias naming two agents is a load error naming the file and
both agents, so the caller keeps its old registry.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping

_DID = re.compile(r"^did:key:z[1-9A-HJ-NP-Za-km-z]{8,120}$")
_NAME = re.compile(r"^[a-z0-9_-]{1,32}$")


class AliasError(ValueError):
    """The alias file cannot be used; ``reason`` says why (file, alias, both agents)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _fold(name: str) -> str:
    return name.strip().lstrip("@").casefold()


def is_did(name: str) -> bool:
    return bool(_DID.match(name))


class AliasRegistry:
    """Immutable after construction; rebuild it to reload (the core swaps it with set_aliases)."""

    __slots__ = ("self_id", "_canon", "_alias", "_of", "source")

    def __init__(self, agents: Mapping[str, Iterable[str]] = {}, *, self_id: str, source: str = "aliases") -> None:
        self.self_id = self_id
        self.source = source
        self._canon: set[str] = set()
        self._alias: dict[str, str] = {}
        self._of: dict[str, list[str]] = {}
        for raw_id, aliases in agents.items():
            cid = self_id if raw_id == "self" else raw_id
            if not (cid == self_id or is_did(cid) or _NAME.match(cid)):
                raise AliasError(f"{source}: agent id {raw_id!r} is not a did:key, 'self' or a name [a-z0-9_-]{{1,32}}")
            self._canon.add(cid)
            self._of.setdefault(cid, [])
            for alias in ([] if raw_id == "self" else [raw_id]) + list(aliases):
                if not isinstance(alias, str) or not alias.strip():
                    raise AliasError(f"{source}: agent {raw_id!r} has an empty or non-string alias")
                self._add(_fold(alias), cid, alias)
        for cid in list(self._canon):  # a canonical name is also its own folded alias
            self._add(_fold(cid), cid, cid, own=True)
        self._add("self", self_id, "self", own=True)

    def _add(self, key: str, cid: str, alias: str, own: bool = False) -> None:
        other = self._alias.get(key)
        if other is not None and other != cid:
            raise AliasError(f"{self.source}: alias {alias!r} names two agents: {other!r} and {cid!r}")
        self._alias[key] = cid
        if not own and alias != cid and alias not in self._of[cid]:
            self._of[cid].append(alias)

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any], *, self_id: str, source: str = "aliases") -> "AliasRegistry":
        """``d`` is the parsed TOML: ``{"agents": {id: {"aliases": [...]}}}``."""
        agents = d.get("agents", {})
        if not isinstance(agents, Mapping):
            raise AliasError(f"{source}: [agents] must be a table")
        out: dict[str, list[str]] = {}
        for aid, spec in agents.items():
            if not isinstance(spec, Mapping):
                raise AliasError(f"{source}: [agents.{aid}] must be a table")
            aliases = spec.get("aliases", [])
            if not isinstance(aliases, list):
                raise AliasError(f"{source}: agents.{aid}.aliases must be a list of strings")
            out[str(aid)] = aliases
        return cls(out, self_id=self_id, source=source)

    @classmethod
    def load(cls, path: Path, *, self_id: str) -> "AliasRegistry":
        """A missing file is an empty registry; a malformed one raises AliasError naming the file."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls({}, self_id=self_id, source=str(path))
        except OSError as exc:
            raise AliasError(f"{path}: cannot read: {exc}") from None
        except UnicodeDecodeError as exc:
            raise AliasError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AliasError(f"{path}: not valid TOML: {exc}") from None
        return cls.from_mapping(data, self_id=self_id, source=str(path))

    def resolve(self, name: str) -> str | None:
        """The canonical id for ``name``, or None when unknown."""
        if name in self._canon:
            return name
        cid = self._alias.get(_fold(name))
        if cid is not None:
            return cid
        return name if is_did(name) else None

    def canonical_ids(self) -> list[str]:
        return sorted(self._canon | {self.self_id})

    def aliases_of(self, cid: str) -> list[str]:
        return list(self._of.get(cid, ()))
