"""The web notebook's login token in the home (``[web] token_path``, by default ``<home>/web.token``):
32 random bytes, mode 0600 (refused when others may read it), swapped in atomically on a rotation.

The home's data, apart from the web server: ``meshnode web url`` reads or rotates it with the node
stopped, and the web's Auth (web/auth.py) re-reads it when the file changes.
"""

from __future__ import annotations

import base64
import os
import secrets
import stat
import tempfile
from pathlib import Path

from meshnode.base.errors import MeshnodeError

TOKEN_BYTES = 32
MAX_TOKEN_FILE = 1024


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(TOKEN_BYTES)).rstrip(b"=").decode()


def write_token(path: Path, *, replace: bool = True) -> str:
    """A new token, written owner-only to a temporary file of its own (mkstemp: 0600) and swapped
    in atomically. ``replace`` False (a first creation): a token another process created meanwhile
    is kept and returned instead, so two first starts agree on one token."""
    token = new_token()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".new")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        os.chmod(tmp, 0o600)
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails when the file exists: never overwrites
            except FileExistsError:
                return read_token(path, create=False)
    finally:
        tmp.unlink(missing_ok=True)
    return token


def read_token(path: Path, *, create: bool = True) -> str:
    """The token in ``path`` (created when missing and ``create``); a file others may read is refused."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not create:
            raise MeshnodeError("web_token_missing", f"no web token at {path}; `meshnode web url` creates one")
        return write_token(path, replace=False)
    if not stat.S_ISREG(st.st_mode):
        raise MeshnodeError("web_token_mode", f"the web token {path} is not a regular file")
    if st.st_mode & 0o077:
        raise MeshnodeError("web_token_mode", f"the web token {path} has mode {stat.S_IMODE(st.st_mode):04o};"
                            f" others may read it: `chmod 600 {path}` or delete it for a new one")
    raw = path.read_bytes()[:MAX_TOKEN_FILE].decode("ascii", "replace").strip()
    if len(raw) < 32:
        raise MeshnodeError("web_token_bad", f"the web token {path} is too short; delete it for a new one")
    return raw
