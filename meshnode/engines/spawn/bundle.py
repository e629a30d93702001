"""A bundle for a child on another host, and a child's home made from one (protocols/spawn.md 8).

The bundle (tar.gz, the standard library's) holds five members and no private key: the parent
signs an invitation that names the SHA-256 of the seeded store and of the config template, so a
changed store or config (or a changed invitation) is refused on the target; the child's key is
made there. Taking a bundle re-applies the kind's rules to the store, so a tampered bundle cannot
give a child more than its kind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from meshnode.base.config import CONFIG_FILE, Config, check_name, config_text, load_config
from meshnode.base.errors import ConfigError, MeshnodeError
from meshnode.store.home import init_home
from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keyfile import PASSPHRASE_ENV
from meshnode.base.identity.keys import NodeKey
from meshnode.records import family
from meshnode.engines.spawn import autostart as units, child_config, launch, ports, seed
from meshnode.engines.spawn import friends as friend_choice
from meshnode.engines.spawn.invitation import check_invitation, make_invitation, record_invitation
from meshnode.engines.spawn.model import (AUTOSTARTS, SpawnRequest, SpawnResult, SpawnSettings, check_child_name,
                                          default_name)
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn.parent import ParentSide
from meshnode.store.database import Database
from meshnode.base.config.web import is_loopback as is_loopback_host

FORMAT = 1
MANIFEST, SEED, TEMPLATE, BOOTSTRAP, INVITATION = (
    "meshnode-bundle.json", "seed.db", "config.template.toml", "bootstrap.txt", "invitation.cbor")
# the only members a bundle may hold, each at most this many bytes (a clone's store may be large)
MEMBERS = {MANIFEST: 1 << 20, SEED: 8 << 30, TEMPLATE: 1 << 20, BOOTSTRAP: 1 << 20, INVITATION: 16 << 10}
CHUNK = 1 << 20
WILDCARD = {"ip4": "0.0.0.0", "ip6": "::"}  # the child's host is another one: it listens on all its addresses


def write_bundle(config: Config, key: NodeKey, req: SpawnRequest, parent: ParentSide, *, now_ms: int,
                 friends: "friend_choice.Choice | None" = None) -> SpawnResult:
    """Write ``req.bundle`` (never over an existing file) and record its invitation at the parent;
    the seeded store holds the Friend tags ``friends`` keeps (the child takes them as they are)."""
    path = Path(req.bundle).absolute()
    if path.exists() or path.is_symlink():
        raise SpawnError("bundle_exists", f"{path} exists already; name a new file")
    if not path.parent.is_dir():
        raise SpawnError("bad_bundle", f"{path.parent} is not a folder")
    hours = req.expires_hours if req.expires_hours is not None else SpawnSettings.from_config(config).invitation_hours
    if not 0 < hours <= 168:
        raise SpawnError("bad_invitation", "an invitation lasts more than 0 and at most 168 hours (7 days)")
    name = req.name or _default_name(parent, req.kind)
    check_child_name(name)
    depth = parent.read(family.depth_of) + 1
    addresses = child_config.bootstrap_lines([a for a in parent.addresses() if not child_config.is_loopback(a)],
                                             parent.peer_id)
    if not addresses:
        raise SpawnError("no_public_address", "the parent listens on loopback addresses only; another host could not"
                         " reach it (listen on a public address, or set [net] announce)")
    try:
        return _write(config, key, req, parent, path, name, depth, addresses, hours, now_ms,
                      friends or friend_choice.parse(None, req.kind))
    except OSError as exc:  # the folder is not writable, the disk is full, ...
        raise SpawnError("bad_bundle", f"cannot write {path}: {exc.strerror or exc}") from None


def _write(config: Config, key: NodeKey, req: SpawnRequest, parent: ParentSide, path: Path, name: str, depth: int,
           addresses: list[str], hours: float, now_ms: int, friends: "friend_choice.Choice") -> SpawnResult:
    with tempfile.TemporaryDirectory(prefix=".meshnode-bundle-", dir=path.parent) as tmp:
        work = Path(tmp)
        try:
            report = seed.seed_bundle_store(parent.db_path, work / SEED, req.kind, parent_did=key.did, now_ms=now_ms)
            db = Database(work / SEED, create=False)
            try:
                friend_choice.keep(db, friends, now_ms=now_ms)
            finally:
                db.close()
        except MeshnodeError as exc:
            raise SpawnError("seed_failed", f"seeding the bundle's store failed: {exc.reason}") from None
        (work / TEMPLATE).write_text(template_text(config, name=name, kind=req.kind, parent_did=key.did), encoding="utf-8")
        inv = make_invitation(key, kind=req.kind, name=name, depth=depth, expires_ms=now_ms + int(hours * 3_600_000),
                              bundle_hash=file_sha256(work / SEED), addresses=addresses, now_ms=now_ms,
                              config_hash=file_sha256(work / TEMPLATE))
        (work / INVITATION).write_bytes(inv.to_bytes())
        (work / BOOTSTRAP).write_text("".join(a + "\n" for a in addresses), encoding="utf-8")
        files = {m: file_sha256(work / m) for m in (SEED, TEMPLATE, BOOTSTRAP, INVITATION)}
        manifest = {"format": FORMAT, "kind": req.kind, "name": name, "parent": key.did, "parent_name": parent.name,
                    "depth": depth, "invitation": inv.payload["id"], "expires": inv.payload["expires"],
                    "files": files}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _write_tar(path, work, now_ms)
    try:
        parent.write(lambda db: record_invitation(db, inv, now_ms))
    except BaseException:
        path.unlink(missing_ok=True)  # a bundle whose invitation the parent does not hold is of no use
        raise
    return SpawnResult(did=None, name=name, kind=req.kind, depth=depth, bootstrap=addresses, seed=report.to_dict(),
                       bundle=str(path), invitation=inv.payload["id"])


def template_text(config: Config, *, name: str, kind: str, parent_did: str) -> str:
    """The child's config: the parent's effective values, the child's name and paths, every port 0
    and every listen host a wildcard (chosen on the target: ``init_from_bundle``), the web on
    loopback without the parent's TLS files."""
    values = child_config.child_values(config, name=name, kind=kind, listen_port=0, web_port=0, parent_did=parent_did)
    values["net"]["listen"] = [_wildcard(a) for a in values["net"]["listen"]]
    web = values["web"]  # the parent's certificate files are on its host (and its TLS key its own):
    for key in child_config.TLS_FILES:  # the child's web serves on loopback until its person sets it up
        web[key] = ""
    if not is_loopback_host(child_config.web_host(config)):
        web["listen"] = "127.0.0.1:0"
    return config_text(values)


def _wildcard(address: str) -> str:
    parts = address.split("/")  # /ip4/HOST/tcp/PORT
    return "/".join([*parts[:2], WILDCARD.get(parts[1], parts[2]), *parts[3:]]) if len(parts) > 3 else address


def _write_tar(path: Path, work: Path, now_ms: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never over a file made meanwhile
    except FileExistsError:
        raise SpawnError("bundle_exists", f"{path} exists already; name a new file") from None
    except OSError as exc:
        raise SpawnError("bad_bundle", f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            for member in MEMBERS:
                info = tarfile.TarInfo(member)
                info.size, info.mode, info.mtime = (work / member).stat().st_size, 0o600, now_ms // 1000
                with open(work / member, "rb") as data:
                    tar.addfile(info, data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


# --- the target's side ---------------------------------------------------------------------------


def read_bundle(bundle: Path, into: Path) -> dict:
    """Extract the five members into the folder ``into`` and check them; returns the manifest.
    Only the five names, regular files within their size limits, each once; anything else
    (a link, a folder, ``../x``, a sixth member) refuses the whole bundle (``bad_bundle``)."""
    seen: set[str] = set()
    try:
        with tarfile.open(bundle, mode="r:gz") as tar:
            while (member := tar.next()) is not None:
                if member.name not in MEMBERS or member.name in seen:
                    raise SpawnError("bad_bundle", f"the bundle holds {member.name[:80]!r}, which is not one of its"
                                     f" members {', '.join(MEMBERS)} (or holds it twice)")
                if not member.isreg() or member.size > MEMBERS[member.name]:
                    raise SpawnError("bad_bundle", f"the bundle's {member.name} is not a regular file of at most"
                                     f" {MEMBERS[member.name]} bytes")
                seen.add(member.name)
                source = tar.extractfile(member)
                with open(into / member.name, "xb") as out:  # a fixed name in our own folder: no traversal
                    shutil.copyfileobj(source, out, CHUNK)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise SpawnError("bad_bundle", f"{bundle} is not a readable bundle: {exc}") from None
    missing = [m for m in MEMBERS if m not in seen]
    if missing:
        raise SpawnError("bad_bundle", f"the bundle lacks {', '.join(missing)}")
    try:
        manifest = json.loads((into / MANIFEST).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpawnError("bad_bundle", f"the bundle's {MANIFEST} is not JSON: {exc}") from None
    if type(manifest) is not dict or manifest.get("format") != FORMAT or type(manifest.get("files")) is not dict:
        raise SpawnError("bad_bundle", f"the bundle's {MANIFEST} is not format {FORMAT}")
    for member in (SEED, TEMPLATE, BOOTSTRAP, INVITATION):
        if manifest["files"].get(member) != file_sha256(into / member):
            raise SpawnError("bad_bundle", f"the bundle's {member} does not match its hash in {MANIFEST}")
    return manifest


def init_from_bundle(bundle: Path, home: Path, *, name: str | None = None, autostart: str = "none",
                     start: bool = False, now_ms: int, skew_ms: int | None = None) -> dict:
    """Make a child's home from a bundle: checks, the key made here, the store seeded under the
    invitation's kind, free ports, the tie to the parent with the hello pending; then autostart
    and start when asked. Nothing is left behind when a step fails (before the start)."""
    if autostart not in AUTOSTARTS:
        raise SpawnError("bad_autostart", f"autostart must be one of {', '.join(AUTOSTARTS)}")
    home = Path(home).absolute()
    if home.exists() and (not home.is_dir() or any(home.iterdir())):
        raise SpawnError("home_exists", f"{home} exists and is not an empty folder; name a new --home")
    with tempfile.TemporaryDirectory(prefix=".meshnode-bundle-") as tmp:
        work = Path(tmp)
        manifest = read_bundle(Path(bundle), work)
        raw = (work / INVITATION).read_bytes()
        inv = check_invitation(raw, now_ms=now_ms, **({} if skew_ms is None else {"skew_ms": skew_ms}))
        p = inv.payload
        if p["bundle_hash"] != manifest["files"][SEED]:
            raise SpawnError("bad_bundle", "the bundle's store is not the one the parent signed the invitation for")
        if p.get("config_hash") != manifest["files"][TEMPLATE]:  # the child's whole config comes from it
            raise SpawnError("bad_bundle", f"the bundle's {TEMPLATE} is not the one the parent signed the invitation for")
        if [manifest.get(k) for k in ("parent", "kind", "depth")] != [p["parent"], p["kind"], p["depth"]]:
            raise SpawnError("bad_bundle", f"the bundle's {MANIFEST} does not match its signed invitation")
        child_name = name or p["name"]
        if name:
            check_child_name(name)
        else:
            _check_name(child_name)  # the invitation's: a bundle written before names were checked may hold any
        made = not home.exists()
        try:
            return _make_home(home, work, inv, raw, manifest, child_name, autostart, start, now_ms)
        except BaseException as exc:
            if made:
                shutil.rmtree(home, ignore_errors=True)
            elif home.is_dir():
                for child in home.iterdir():
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            if isinstance(exc, OSError):
                raise SpawnError("bad_home", f"cannot set up {home}: {exc.strerror or exc}") from None
            raise


def _make_home(home: Path, work: Path, inv, raw: bytes, manifest: dict, name: str, autostart: str, start: bool,
               now_ms: int) -> dict:
    p = inv.payload
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    template_home = work / "template"
    template_home.mkdir()
    (template_home / CONFIG_FILE).write_bytes((work / TEMPLATE).read_bytes())
    try:
        template = load_config(template_home, environ={})
    except ConfigError as exc:
        raise SpawnError("bad_bundle", f"the bundle's {TEMPLATE} does not load: {exc.reason}") from None
    listen_port = ports.free_port(child_config.listen_host(template))
    web_port = ports.free_port(child_config.web_host(template), avoid={listen_port})
    child_config.write(home, template, name=name, kind=p["kind"], listen_port=listen_port, web_port=web_port, parent_did=p["parent"])
    parent_name = _shown_name(manifest.get("parent_name"))  # unsigned: a name, or none at all
    parent_peer = did_to_peer_id(p["parent"])
    child_config.write_bootstrap(home, p["addresses"], parent_peer_id=parent_peer, parent_did=p["parent"],
                                 parent_name=parent_name)
    config, result = init_home(home, name=name, passphrase=os.environ.get(PASSPHRASE_ENV) or None, exist_ok=False)
    db = Database(config.db_path)
    try:
        try:
            report = seed.seed_child_store(work / SEED, db, p["kind"], parent_did=p["parent"], now_ms=now_ms)
        except MeshnodeError as exc:
            raise SpawnError("seed_failed", f"seeding the child's store from the bundle failed: {exc.reason}") from None
        family.tie_parent(db, parent_did=p["parent"], parent_peer_id=parent_peer, parent_name=parent_name,
                          addresses=p["addresses"], kind=p["kind"], depth=p["depth"], now_ms=now_ms,
                          invitation_id=p["id"], invitation=raw, hello_state="pending")
    finally:
        db.close()
    out = {"did": result.key.did, "home": str(home), "name": name, "kind": p["kind"], "depth": p["depth"],
           "parent": p["parent"], "invitation": p["id"], "expires": p["expires"],
           "listen": list(config.get("net", "listen")), "web_listen": config.get("web", "listen"),
           "seed": report.to_dict(), "autostart": {}, "started": False}
    out["autostart"] = units.install(home, result.key.did, name, autostart)
    if start:
        try:
            out["launch"] = launch.launch(home, autostart)
        except BaseException:
            units.uninstall(home)  # a unit outside the home (systemd) goes with it
            raise
        out["started"] = True
    return out


def _default_name(parent: ParentSide, kind: str) -> str:
    """As for a local child (``<parent>-<kind>-<n>``), n past the names of children and invitations."""
    def names(db: Database) -> set[str]:
        rows = db.conn.execute("SELECT name FROM children UNION SELECT name FROM spawn_invitations").fetchall()
        return {r[0] for r in rows}

    return default_name(parent.name, kind, parent.read(names))


def _shown_name(name) -> str:
    """The manifest's parent name when it is a valid node name (one line: it goes in bootstrap.txt), else "parent"."""
    try:
        check_name(name if type(name) is str else "")
    except ConfigError:
        return "parent"
    return name


def _check_name(name: str) -> None:
    try:
        check_name(name)
    except ConfigError as exc:
        raise SpawnError("bad_name", exc.reason) from None
