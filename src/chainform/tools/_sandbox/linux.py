"""Linux confinement of the python tool's child: namespaces, a private /proc, no capabilities.

Runs inside the sandbox's bootstrap interpreter (``python -I -S``: standard library only, so no
chainform import) before any untrusted code. Python 3.11 has no ``os.unshare``, so the system calls
go through ctypes to the C library (glibc and musl both export ``unshare``, ``mount``, ``prctl`` and
``capset``). Nothing here needs root or a setuid helper: an unprivileged user namespace gives the
rights to make the others.

Process tree: the bootstrap (stage 0) enters new user, network, IPC, UTS and mount namespaces and
creates a PID namespace; its child is PID 1 there (``init``), mounts a fresh /proc that shows only
the sandbox's processes, and runs the cell as PID 2. When the cell ends, init exits and the kernel
kills every process left in the namespace (a ``setsid`` or double-forked grandchild included).
The mount namespace gets a private /proc, /run and /tmp, and the cell's folder becomes a
size-limited tmpfs; a seccomp filter (`seccomp_filter`) refuses unix sockets.
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x1000, 0x4000, 0x40000
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_INODES = 16384  # files in the cell's tmpfs: each costs kernel memory that `size=` does not count
_CAP_VERSION_3 = 0x20080522
_SIGKILL = 9  # not `signal.SIGKILL`: importing signal (and enum) costs milliseconds per cell
NOBODY = 65534

# Namespace guards, in the order they are made; the user namespace comes first (it grants the rest).
NAMESPACES = (
    ("pid-ns", CLONE_NEWPID),
    ("net-ns", CLONE_NEWNET),
    ("ipc-ns", CLONE_NEWIPC),
    ("uts-ns", CLONE_NEWUTS),
    ("mount-ns", CLONE_NEWNS),
)

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def no_new_privs() -> None:
    """Neither this process nor its children may gain privileges through exec (setuid, file caps)."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))


def die_with_parent() -> None:
    """SIGKILL when the parent ends, so a killed chainform takes its sandbox with it."""
    parent = os.getppid()
    _check(_libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0))
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespaces(got: list[str], missing: dict[str, str]) -> None:
    """Unshare every namespace the kernel allows; record which ones in ``got``/``missing``."""
    uid, gid = os.geteuid(), os.getegid()
    if os.getuid() == 0:
        # The kernel never applies RLIMIT_NPROC to a real uid 0; a real uid of "nobody" (unmapped
        # inside, so it has no rights there) makes the process limit bind. Files stay reachable as euid 0.
        try:
            os.setresuid(NOBODY, 0, 0)
        except OSError as exc:
            missing["process-limit"] = (
                f"uid 0 is exempt from RLIMIT_NPROC and could not change ({exc.strerror})"
            )
    try:
        _check(_libc.unshare(CLONE_NEWUSER))
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as exc:
        for name in ("user-ns", *(n for n, _ in NAMESPACES)):
            missing[name] = f"unprivileged user namespaces unavailable ({exc.strerror})"
        return
    got.append("user-ns")
    for name, flag in NAMESPACES:
        try:
            _check(_libc.unshare(flag))
            got.append(name)
        except OSError as exc:
            missing[name] = f"unshare failed ({exc.strerror})"


def private_mounts(
    got: list[str], missing: dict[str, str], fresh_proc: bool, root: str, disk: int, keep: list[str]
) -> None:
    """In the new mount namespace: nothing propagates out, /proc shows only the sandbox's processes,
    /run and /tmp (service and agent sockets: D-Bus, Docker, ssh-agent, X11) are empty but for the
    ``keep`` paths under /tmp (an interpreter or packages there), bound back, and the cell's own
    folder ``root`` is a fresh tmpfs of ``disk`` bytes (its writable space), holding an empty
    ``work`` folder that becomes the current directory."""
    kept = _open_paths(keep)
    steps: list[tuple[str, bytes | None, str, bytes | None, int, bytes | None]] = [
        ("private-mounts", None, "/", None, _MS_REC | _MS_PRIVATE, None)
    ]
    if fresh_proc:
        steps.append(("private-proc", b"proc", "/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None))
    for name, target in (("private-run", "/run"), ("private-tmp", "/tmp")):
        if os.path.isdir(target):
            steps.append((name, b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"size=1m,mode=755"))
    size = f"size={disk},nr_inodes={_INODES},mode=700".encode()
    steps.append(("disk-limit", b"tmpfs", root, b"tmpfs", _MS_NOSUID | _MS_NODEV, size))
    for name, source, target, kind, flags, options in steps:
        try:
            if name == "disk-limit":
                os.makedirs(root, 0o700, exist_ok=True)  # hidden by the private /tmp: made again
            _check(_libc.mount(source, target.encode(), kind, flags, options))
            got.append(name)
            if name == "private-tmp":
                _bind_back(kept)
        except OSError as exc:
            missing[name] = f"mount failed ({exc.strerror})"
            if name == "private-mounts":
                return  # a mount made now could propagate to the caller's namespace
    for fd in kept.values():
        os.close(fd)
    work = os.path.join(root, "work")
    os.makedirs(work, 0o700, exist_ok=True)
    os.chdir(work)  # the old current directory lies under the mounts


def _open_paths(paths: list[str]) -> dict[str, int]:
    """``O_PATH`` descriptors of the outermost of ``paths`` (a folder's entries come with it)."""
    kept: dict[str, int] = {}
    for path in sorted(paths):
        if any(path.startswith(os.path.join(k, "")) for k in kept):
            continue
        try:
            kept[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
    return kept


def _bind_back(kept: dict[str, int]) -> None:
    """Bind each kept path (by its descriptor, from before /tmp was covered) to its old place."""
    for path, fd in kept.items():
        try:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            source = f"/proc/self/fd/{fd}".encode()
            _check(_libc.mount(source, path.encode(), None, _MS_BIND | _MS_REC, None))
        except OSError:
            continue  # a path the cell then cannot read: its import fails, nothing more


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))


def seccomp_filter(program: bytes) -> None:
    """Load a seccomp BPF program (built by libseccomp in chainform, `_seccomp`) on this process
    and every process it starts; needs ``PR_SET_NO_NEW_PRIVS``."""
    prog = _SockFprog(len(program) // 8, program)
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0))


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_capabilities() -> None:
    """Give up every capability the user namespace granted (bounding set first, then the rest)."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last: ignored
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data))


def fork_init(status_fd: int) -> None:
    """Become PID 1 of the new PID namespace and run the cell as PID 2; returns only in the cell.

    Stage 0 waits for init and exits. Init reaps orphans until the cell ends, reports the cell's
    wait status on ``status_fd`` and exits, which kills whatever the cell left running.
    """
    init = os.fork()
    if init:
        os.close(status_fd)
        os.waitpid(init, 0)
        os._exit(0)


def run_as_init(status_fd: int) -> None:
    """In PID 1: fork the cell (which returns), reap until it ends, report, exit."""
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # the cell cannot reach init's fds via /proc/1/fd
    cell = os.fork()
    if cell == 0:
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        os.close(status_fd)
        return
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
        if pid == cell:
            break
    os.write(status_fd, f"status={status}\n".encode())
    os._exit(0)
