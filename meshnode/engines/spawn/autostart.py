"""How a child node comes back after a reboot: a systemd unit, two shell scripts, or nothing.

Theory of operation: the texts are pure functions of the home, the DID, the name and the
Python that runs meshnode (golden-tested); ``install`` writes them and, only where systemd
really runs (PID 1 is systemd and ``systemctl`` answers), enables the unit. Elsewhere (a
container, CI) the unit is written, ``enabled`` is False and the hint gives the exact
commands to run on a host with systemd. Nothing here starts a node: ``launch`` does.

``install`` records what it wrote in ``<home>/autostart.json`` so ``launch`` and ``stop``
know which unit belongs to a home without reading its key or database.

Quoting: scripts quote every path with ``shlex.quote``. Unit files follow systemd's own
rules: ``%`` is a specifier (written ``%%``), ``$`` expands variables in ``ExecStart``
(written ``$$``), and a word with spaces, quotes or backslashes is double-quoted with C
escapes; ``WorkingDirectory`` and ``EnvironmentFile`` take the whole rest of the line.
A newline cannot be written in a unit at all: such a home is refused.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

from meshnode.base import node_log
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn.model import AUTOSTARTS
from meshnode.store.home.running import PID_FILE
RECORD_FILE = "autostart.json"
ENV_FILE = "autostart.env"  # optional: MESHNODE_KEY_PASSPHRASE=... for an encrypted key (0600)
RESTART_SEC = 5  # a crash loop costs one start every 5 s, and a brief fault heals without a person
STOP_SECONDS = 10  # the node records its stop and closes the store well within this
NOT_RUNNING_EXIT = 3  # `meshnode stop`'s "nothing to do" (faces/cli/lifecycle.py NOTHING_TO_DO)
SYSTEMCTL_TIMEOUT = 10.0
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")


def unit_name(did: str) -> str:
    """``meshnode-<first 16 characters after did:key:>.service`` (base58: valid in unit names)."""
    return f"meshnode-{did.removeprefix('did:key:')[:16]}.service"


def user_unit_dir(environ=os.environ) -> Path:
    """Where the user's systemd manager looks for units: $XDG_CONFIG_HOME/systemd/user."""
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "systemd" / "user"


def systemd_unit_text(home: Path, did: str, name: str, *, system: bool, user: str | None = None,
                      python: str = sys.executable) -> str:
    """The unit that runs ``<python> -m meshnode --home <home> run``, sandboxed: the whole file
    system read-only except the home (ProtectSystem=strict, ProtectHome=read-only and
    ReadWritePaths=<home>: the more specific path wins, so a home under /home or /root stays
    writable and the interpreter, wherever it lives, stays readable). A system unit runs as
    ``user`` (default: the home's owner) and waits for the network; a user unit has no
    network-online.target to wait for."""
    home = _absolute(home)
    for value in (str(home), python, name):
        _no_newline(value)
    exec_start = " ".join(_exec_word(w) for w in (python, "-m", "meshnode", "--home", str(home), "run"))
    lines = ["[Unit]", f"Description=meshnode child {_specifiers(name)} ({_specifiers(did)})"]
    if system:
        lines += ["After=network-online.target", "Wants=network-online.target"]
    lines += ["", "[Service]", "Type=simple"]
    if system:
        lines.append(f"User={_specifiers(user or _owner(home))}")
    lines += [
        f"WorkingDirectory={_specifiers(str(home))}",
        f"EnvironmentFile=-{_specifiers(str(home / ENV_FILE))}",
        f"ExecStart={exec_start}",
        "Restart=on-failure",
        f"RestartSec={RESTART_SEC}",
        f"TimeoutStopSec={STOP_SECONDS}",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=read-only",
        f"ReadWritePaths={_quoted_word(_specifiers(str(home)))}",
        "PrivateTmp=yes",
        "ProtectKernelTunables=yes",
        "ProtectControlGroups=yes",
        "RestrictSUIDSGID=yes",
        "LockPersonality=yes",
        "",
        "[Install]",
        f"WantedBy={'multi-user.target' if system else 'default.target'}",
    ]
    return "\n".join(lines) + "\n"


def script_texts(home: Path, python: str = sys.executable) -> dict[str, str]:
    """``start.sh`` (``run --detached`` as ``meshnode start`` runs a node: setsid and nohup, stdin
    closed, its output in ``logs/console.log``, its records in the rotating ``logs/node.log``; the
    node writes its own pid file; refuses a second copy) and ``stop.sh`` (``meshnode stop``: the one
    way to stop a home's node, by its lock; exit 0 when it was not running either). A pid is the
    node's only if /proc shows it runs ``meshnode`` with this home: a stale pid file that a new
    process reused is never taken for it."""
    home = _absolute(home)
    head = "\n".join([
        "#!/bin/sh",
        "# Written by meshnode spawn: {what} the meshnode child in this folder.",
        "set -u",
        f"HOME_DIR={shlex.quote(str(home))}",
        f"PYTHON={shlex.quote(python)}",
        "# the child's settings come from its config.toml alone: no MESHNODE_* but the key passphrase",
        "for var in $(env | sed -n 's/^\\(MESHNODE_[A-Za-z0-9_]*\\)=.*/\\1/p'); do",
        '    [ "$var" = MESHNODE_KEY_PASSPHRASE ] || unset "$var"',
        "done",
        "",
    ])
    start = head.replace("{what}", "start") + "\n".join([
        f'PID_FILE="$HOME_DIR"/{shlex.quote(str(PID_FILE))}',
        f'LOG_FILE="$HOME_DIR"/{shlex.quote(str(node_log.LOG_FILE))}',
        f'CONSOLE_FILE="$HOME_DIR"/{shlex.quote(str(node_log.CONSOLE_FILE))}',
        "ours() {  # is pid $1 alive and a meshnode run of this home? (a zombie has an empty cmdline)",
        '    [ -n "$1" ] || return 1',
        '    if [ -r "/proc/$1/cmdline" ]; then',
        """        tr '\\000' '\\n' < "/proc/$1/cmdline" 2>/dev/null | grep -qxF -- "$HOME_DIR" &&""",
        """        tr '\\000' '\\n' < "/proc/$1/cmdline" 2>/dev/null | grep -qxF -- run""",
        "    else",
        '        kill -0 "$1" 2>/dev/null',
        "    fi",
        "}",
        'pid=$(cat "$PID_FILE" 2>/dev/null || true)',
        'if ours "$pid"; then',
        '    echo "meshnode in $HOME_DIR already runs (pid $pid); not starting a second copy" >&2',
        "    exit 1",
        "fi",
        'mkdir -p "$(dirname "$CONSOLE_FILE")" || exit 1',
        'cd "$HOME_DIR" || exit 1',
        "if command -v setsid >/dev/null 2>&1; then DETACH=setsid; else DETACH=; fi",
        "# a non-interactive sh has no job control: setsid does not fork, so $! is the node itself,",
        "# which writes its pid file once it holds its home",
        'nohup $DETACH "$PYTHON" -m meshnode --home "$HOME_DIR" run --detached </dev/null >"$CONSOLE_FILE" 2>&1 &',
        "pid=$!",
        "sleep 1",
        'if ! ours "$pid"; then',
        '    echo "meshnode in $HOME_DIR stopped at once; the end of $CONSOLE_FILE:" >&2',
        '    tail -n 20 "$CONSOLE_FILE" >&2',
        "    exit 1",
        "fi",
        'echo "started meshnode in $HOME_DIR (pid $pid, log $LOG_FILE)"',
        "",
    ])
    stop = head.replace("{what}", "stop") + "\n".join([
        f'"$PYTHON" -m meshnode --home "$HOME_DIR" stop --timeout {STOP_SECONDS}',
        "code=$?",
        f'[ "$code" -eq {NOT_RUNNING_EXIT} ] && exit 0  # it was not running: nothing to do',
        'exit "$code"',
        "",
    ])
    return {"start.sh": start, "stop.sh": stop}


def install(home: Path, did: str, name: str, autostart: str) -> dict:
    """Write what ``autostart`` asks for and return ``{"kind", "files", "enabled", "hint"}`` (and
    ``unit`` for systemd); a record of it goes in the home (``installed``). ``none`` writes nothing."""
    if autostart not in AUTOSTARTS:
        raise SpawnError("bad_autostart", f"autostart must be one of {', '.join(AUTOSTARTS)}, not {autostart!r}")
    home = _absolute(home)
    if autostart == "none":
        return {"kind": "none", "files": [], "enabled": False, "hint": ""}
    if autostart == "script":
        result = _install_scripts(home)
    else:
        result = _install_unit(home, did, name, autostart == "systemd-system")
    _write(home / RECORD_FILE, json.dumps({**result, "unit": result.get("unit")}, indent=1) + "\n", 0o600)
    return result


def installed(home: Path) -> dict:
    """What ``install`` wrote for this home (``{"kind": "none", ...}`` when nothing)."""
    try:
        record = json.loads((Path(home) / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    return record if isinstance(record, dict) else {"kind": "none", "files": [], "enabled": False, "unit": None}


def uninstall(home: Path) -> list[str]:
    """Undo ``install``: disable the unit where systemd runs, remove the files written. Returns
    the files removed (an undone spawn, or ``children remove``)."""
    record = installed(home)
    system = record.get("kind") == "systemd-system"
    if record.get("unit") and record.get("enabled") and systemd_usable(system=system):
        systemctl(system, "disable", record["unit"])
    removed = []
    for path in record.get("files", []):
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    if record.get("unit") and removed and systemd_usable(system=system):
        systemctl(system, "daemon-reload")
    (Path(home) / RECORD_FILE).unlink(missing_ok=True)
    return removed


def systemd_usable(*, system: bool) -> bool:
    """True only where systemd is PID 1 and its manager (the user's, or the system's) answers."""
    if not Path("/run/systemd/system").is_dir():
        return False
    try:
        out = systemctl(system, "show", "--property=Version", "--value")
    except SpawnError:
        return False
    return bool(out.strip())


def systemctl(system: bool, *args: str) -> str:
    """Run ``systemctl [--user] ARGS``; its output, or SpawnError start_failed with its reason."""
    argv = ["systemctl", *([] if system else ["--user"]), *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpawnError("start_failed", f"{' '.join(argv)}: {exc}"[:300]) from None
    if done.returncode != 0:
        raise SpawnError("start_failed", f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}"[:300])
    return done.stdout


def _install_scripts(home: Path) -> dict:
    files = []
    for file_name, text in script_texts(home).items():
        _write(home / file_name, text, 0o755)
        files.append(str(home / file_name))
    start = shlex.quote(str(home / "start.sh"))
    return {"kind": "script", "files": files, "enabled": False,
            "hint": f"start with {start}, stop with {shlex.quote(str(home / 'stop.sh'))}; to start it at boot,"
                    f" add this line to your crontab (crontab -e): @reboot {start}"}


def _install_unit(home: Path, did: str, name: str, system: bool) -> dict:
    kind = "systemd-system" if system else "systemd-user"
    if system and os.geteuid() != 0:
        raise SpawnError("bad_autostart", "a systemd-system unit goes in /etc/systemd/system and needs root:"
                         " run spawn as root, or use --autostart systemd-user")
    unit = unit_name(did)
    folder = SYSTEM_UNIT_DIR if system else user_unit_dir()
    path = folder / unit
    text = systemd_unit_text(home, did, name, system=system)
    folder.mkdir(parents=True, exist_ok=True)
    _write(path, text, 0o644)
    ctl = "systemctl" if system else "systemctl --user"
    commands = [f"{ctl} daemon-reload", f"{ctl} enable --now {unit}"]
    linger = "" if system else f"; so it also runs while you are logged out: loginctl enable-linger {_login()}"
    enabled = False
    if systemd_usable(system=system):
        systemctl(system, "daemon-reload")
        systemctl(system, "enable", unit)
        enabled = True
        hint = f"{unit} is enabled and starts at boot; start it now with {ctl} start {unit}{linger}"
    else:
        hint = (f"systemd does not run here, so {path} was written but not enabled; on a host with systemd run:"
                f" {' && '.join(commands)}{linger}")
    return {"kind": kind, "files": [str(path)], "enabled": enabled, "hint": hint, "unit": unit}


def _write(path: Path, text: str, mode: int) -> None:
    """Whole or not at all: a temporary file beside, then a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)  # the umask may have taken bits away
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _absolute(home: Path) -> Path:
    return Path(os.path.abspath(os.fspath(home)))


def _no_newline(value: str) -> None:
    if "\n" in value or "\r" in value:
        raise SpawnError("bad_autostart", f"{value[:80]!r} holds a line break, which a unit file cannot hold;"
                         " use another home")


def _specifiers(value: str) -> str:
    """systemd expands %x specifiers in almost every setting: a literal % is %%."""
    return value.replace("%", "%%")


def _quoted_word(value: str) -> str:
    """One word for a setting that splits on spaces: double quotes and C escapes when needed."""
    if value and not any(c in value for c in ' \t"\'\\;'):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _exec_word(value: str) -> str:
    """One ExecStart word: % and $ escaped ($$ is a literal $), then quoted as a word."""
    return _quoted_word(_specifiers(value).replace("$", "$$"))


def _owner(home: Path) -> str:
    try:
        return pwd.getpwuid(home.stat().st_uid).pw_name
    except (OSError, KeyError):
        return pwd.getpwuid(os.geteuid()).pw_name


def _login() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return "$USER"
