"""The command's own file system: a minimal, mostly read-only root in a private mount namespace.

``build_root`` runs in the command process (PID 1 of its new PID namespace, in
the mount namespace its supervisor made) before it drops privileges::

    /              a small tmpfs, read-only
    /usr /bin /sbin /lib*  the host's, bound read-only (symlinks such as bin -> usr/bin stay symlinks)
    /etc           a read-only choice of the host's (``ETC``): ld.so.cache, passwd, group,
                   nsswitch.conf, localtime, alternatives, python3*, locale.alias...; for commands
                   allowed the network also the resolver's files and CA certificates (``NETWORK_ETC``)
    /dev           null, zero, full, random, urandom and the fd/stdin/stdout/stderr links
    /dev/shm /tmp  private tmpfs of ``tmp_bytes`` each, mode 1777, gone with the command
    /proc          a fresh proc of the command's PID namespace: its own processes only
    /workspace     the command's folder, read-write, its working directory

Nothing else of the host is reachable: after ``pivot_root`` the old root is
detached. Everything the command may write (/workspace, /tmp, /dev/shm) is
nosuid, nodev and noexec. Mounts are made private first, so none of this is
seen outside; the kernel frees it all when the command and its supervisor end.

How: the new root is a tmpfs mounted over ``/tmp`` in the private namespace
(the host's /tmp is untouched), filled while the host tree is still "/" (the
workspace is bound through a descriptor opened before /tmp is covered). The
read-only part is bound first and made read-only in one recursive
``mount_setattr`` (submounts included; before Linux 5.12, one remount per
mount, keeping the flags a user namespace may not drop); the writable and
device mounts go on top. proc is mounted before the old root goes: inside a
user namespace the kernel allows it only while a full proc is visible. Then
``pivot_root(".", ".")`` and a lazy unmount of the old root.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat

WORKSPACE = "/workspace"
READ_ONLY_TREES = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime",
       "timezone", "alternatives", "locale.alias", "os-release", "debian_version", "mime.types",
       "services", "protocols", "python3*")
NETWORK_ETC = ("hosts", "host.conf", "resolv.conf", "gai.conf", "networks", "ssl/certs", "ssl/openssl.cnf",
               "ca-certificates")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
             ("stderr", "/proc/self/fd/2"))
MAX_TMP_BYTES = 64 * 1024 * 1024
TMP_INODES = 16384

_NEW = "/tmp"  # where the new root is put together, in the private namespace only
_ROOT_OPTIONS = "size=1m,nr_inodes=1024,mode=0755"

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_STRICTATIME = 0x1000000
MNT_DETACH = 0x2
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
_SAFE = MS_NOSUID | MS_NODEV | MS_NOEXEC
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000

# glibc wraps neither pivot_root nor mount_setattr: the syscalls' numbers.
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "loongarch64": 41,
               "i386": 217, "i686": 217, "s390x": 217, "armv7l": 218, "armv6l": 218,
               "ppc64le": 203, "ppc64": 203}.get(os.uname().machine)
_MOUNT_SETATTR = 442  # the same on every architecture but alpha

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class MountError(OSError):
    """A step of building the root failed; ``step`` says which (no spaces, for the status pipe)."""

    def __init__(self, number: int, step: str):
        super().__init__(number, os.strerror(number) if number else "failed")
        self.step = step


def _fail(step: str) -> MountError:
    return MountError(ctypes.get_errno(), step)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(source and os.fsencode(source), os.fsencode(target), fstype and fstype.encode(),
                   flags, data and data.encode()) != 0:
        raise _fail(f"mount:{target}")


def _umount(target: str, flags: int) -> None:
    if _libc.umount2(os.fsencode(target), flags) != 0:
        raise _fail(f"umount:{target}")


def _pivot_root(new_root: str, put_old: str) -> None:
    if _PIVOT_ROOT is None:
        raise MountError(errno.ENOSYS, f"pivot_root:unknown-architecture-{os.uname().machine}")
    if _libc.syscall(ctypes.c_long(_PIVOT_ROOT), ctypes.c_char_p(os.fsencode(new_root)),
                     ctypes.c_char_p(os.fsencode(put_old))) != 0:
        raise _fail("pivot_root")


def _mount_setattr(target: str, attr_set: int) -> None:
    """Set ``attr_set`` on the mount at ``target`` and on every mount below it."""
    attr = _MountAttr(attr_set, 0, 0, 0)
    if _libc.syscall(ctypes.c_long(_MOUNT_SETATTR), ctypes.c_long(_AT_FDCWD), ctypes.c_char_p(os.fsencode(target)),
                     ctypes.c_uint(_AT_RECURSIVE), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))) != 0:
        raise _fail(f"mount_setattr:{target}")


def _remount(target: str, flags: int) -> None:
    """Remount the mount at ``target`` adding ``flags``, keeping the source's own (locked in a user ns)."""
    have = os.statvfs(target).f_flag
    flags |= have & (os.ST_RDONLY | os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC)  # same bits as MS_*
    if have & os.ST_NOATIME:
        flags |= MS_NOATIME
    elif not have & os.ST_RELATIME:
        flags |= MS_STRICTATIME  # the kernel would switch a remount to relatime otherwise
    if have & os.ST_NODIRATIME:
        flags |= MS_NODIRATIME
    _mount(None, target, None, MS_BIND | MS_REMOUNT | flags)


def _make_read_only(top: str) -> None:
    """``top`` and every mount below it read-only, nosuid and nodev."""
    try:
        _mount_setattr(top, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
        return
    except MountError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EPERM):  # EPERM: a seccomp filter older than the call
            raise
    for point in _mounts_below(top):  # before Linux 5.12: one remount per mount
        _remount(point, MS_RDONLY | MS_NOSUID | MS_NODEV)


def _mounts_below(top: str) -> list[str]:
    """Mount points of the mount last mounted at ``top`` and of all the mounts beneath it."""
    with open("/proc/self/mountinfo", "rb") as file:
        rows = [line.split()[:5] for line in file.read().decode("utf-8", "surrogateescape").splitlines()]
    point_of = {row[0]: re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), row[4]) for row in rows}
    found = [row[0] for row in rows if point_of[row[0]] == top][-1:]
    for mount_id, parent, *_ in rows:  # a mount is listed after its parent
        if parent in found and mount_id not in found:
            found.append(mount_id)
    return [point_of[mount_id] for mount_id in found]


def _touch(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))


def _within_trees(path: str) -> bool:
    return any(path == f"/{tree}" or path.startswith(f"/{tree}/") for tree in READ_ONLY_TREES)


def _reproduce(source: str, target: str) -> None:
    """``source`` of the host at ``target``: a symlink stays one if it ends in the read-only trees
    (so it resolves the same inside), any other is bound as what it points to; missing: skipped."""
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        resolved = os.path.realpath(source)
        if _within_trees(resolved) or not os.path.exists(resolved):
            os.symlink(os.readlink(source), target)
            return
        source, info = resolved, os.stat(resolved)
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(target, 0o755)
    elif stat.S_ISREG(info.st_mode):
        _touch(target)
    else:
        return
    _mount(source, target, None, MS_BIND | MS_REC)


def _etc_names(entries: tuple[str, ...]) -> list[str]:
    """``entries`` with each ``prefix*`` replaced by the names in /etc that start with prefix."""
    names = []
    for entry in entries:
        if entry.endswith("*"):
            names += sorted(name for name in os.listdir("/etc") if name.startswith(entry[:-1]))
        else:
            names.append(entry)
    return names


def build_root(workspace: str, tmp_bytes: int, network: bool = False, read_only: tuple[str, ...] = ()) -> None:
    """Give this process (and its supervisor, in the same mount namespace) the root described
    above, ``workspace`` at WORKSPACE. Needs CAP_SYS_ADMIN in the mount namespace's owner; call
    it as PID 1 of the command's PID namespace. MountError if any step fails."""
    tmp_bytes = max(1 << 20, min(tmp_bytes, MAX_TMP_BYTES))
    tmp_options = f"size={tmp_bytes},nr_inodes={TMP_INODES},mode=1777"
    workspace_fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # before /tmp is covered
    shared = {folder: os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # likewise (one may be in /tmp)
              for folder in dict.fromkeys(read_only) if os.path.isdir(folder)}
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("tmpfs", _NEW, "tmpfs", MS_NOSUID | MS_NODEV, _ROOT_OPTIONS)
        for tree in READ_ONLY_TREES:
            _reproduce(f"/{tree}", f"{_NEW}/{tree}")
        for folder, fd in shared.items():  # more of the host, read-only at the same path (``sandbox.spawn``)
            if not _in_tmp(folder) and not os.path.exists(_NEW + folder):
                _bind_shared(fd, _NEW + folder)
        os.mkdir(f"{_NEW}/etc", 0o755)
        for name in _etc_names(ETC + (NETWORK_ETC if network else ())):
            if "/" in name:
                os.makedirs(os.path.dirname(f"{_NEW}/etc/{name}"), 0o755, exist_ok=True)
            _reproduce(f"/etc/{name}", f"{_NEW}/etc/{name}")
        # Where the rest goes, made while the root can still be written.
        os.mkdir(f"{_NEW}/dev", 0o755)
        devices = [name for name in DEVICES if os.path.exists(f"/dev/{name}")]
        for name in devices:
            _touch(f"{_NEW}/dev/{name}")
        for name, points_to in DEV_LINKS:
            os.symlink(points_to, f"{_NEW}/dev/{name}")
        for folder in ("/dev/shm", "/tmp", WORKSPACE):
            os.mkdir(_NEW + folder, 0o755)
        os.mkdir(f"{_NEW}/proc", 0o555)
        _make_read_only(_NEW)  # the root and everything bound so far
        for name in devices:
            _mount(f"/dev/{name}", f"{_NEW}/dev/{name}", None, MS_BIND)
        for folder in ("/dev/shm", "/tmp"):
            _mount("tmpfs", _NEW + folder, "tmpfs", _SAFE, tmp_options)
        for folder, fd in shared.items():  # a shared folder in /tmp goes into the command's own /tmp
            if _in_tmp(folder) and not os.path.exists(_NEW + folder):
                _bind_shared(fd, _NEW + folder)
                _make_read_only(_NEW + folder)
        _mount(f"/proc/self/fd/{workspace_fd}", _NEW + WORKSPACE, None, MS_BIND | MS_REC)
        _remount(_NEW + WORKSPACE, _SAFE)
        _mount("proc", f"{_NEW}/proc", "proc", _SAFE)  # while a full proc is still visible (user ns)
        os.chdir(_NEW)
        _pivot_root(".", ".")  # the old root now lies on top of the new one at "/" ...
        _umount(".", MNT_DETACH)  # ... and goes, with every host mount below it
        os.chdir("/")
    except MountError:
        raise
    except OSError as exc:
        raise MountError(exc.errno or 0, f"{exc.strerror or exc}:{exc.filename or ''}".replace(" ", "_")) from None
    finally:
        for fd in (workspace_fd, *shared.values()):
            os.close(fd)


def _in_tmp(folder: str) -> bool:
    return folder.startswith("/tmp/")


def _bind_shared(fd: int, target: str) -> None:
    """The host folder open as ``fd`` at ``target`` (its path made walkable by the unprivileged uid,
    whatever the node's umask)."""
    mask = os.umask(0o022)
    try:
        os.makedirs(target, 0o755)
    finally:
        os.umask(mask)
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
