"""Landlock (Linux >= 5.13) through its three system calls, for the python tool's sandbox.

Why our own code and not a library: the PyPI bindings are pre-releases or young 0.x projects with
little use, and this module must run inside the sandbox's bootstrap interpreter (``python -I -S``,
no site-packages) before any untrusted code. What we need is small: create a ruleset for the
access rights the running kernel knows, allow a few directory trees, restrict this process.
Standard library only (ctypes); imported both as ``chainform.tools._sandbox.landlock`` and, in
the sandboxed child, as a top-level module.

The numbers are the kernel's UAPI (``include/uapi/linux/landlock.h``); the syscall numbers are the
same in the unified table of every architecture that has Landlock.
"""

from __future__ import annotations

import ctypes
import os

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Filesystem rights, by the ABI version that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_AND_REMOVE = sum(1 << bit for bit in range(4, 13))  # remove dir/file, make char/dir/reg/sock/...
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a file rule takes
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel struct is __attribute__((packed))
    _fields_ = (("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _call(number: int, *args: object) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi_version() -> int:
    """The Landlock ABI the kernel offers; 0 when it has none or it is disabled."""
    try:
        return _call(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def handled_fs(abi: int) -> int:
    """Every filesystem right this ABI can deny."""
    rights = READ_ONLY | WRITE_FILE | _MAKE_AND_REMOVE
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(
    read_only: list[str], read_write: list[str], abi: int, list_only: tuple[str, ...] = ()
) -> list[str]:
    """Confine this process (and its future children) to the given trees; no TCP; no signals out.

    ``list_only`` folders can be listed (the import system lists a ``sys.path`` folder) but not read.
    Missing paths are skipped. The caller must have set ``PR_SET_NO_NEW_PRIVS``. Returns the
    names of what is now enforced, e.g. ``["landlock-fs", "landlock-tcp", "landlock-signal"]``.
    """
    fs = handled_fs(abi)
    attr = _RulesetAttr(fs, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0, 0)
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _call(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for paths, rights in ((list_only, READ_DIR), (read_only, READ_ONLY), (read_write, fs)):
            for path in paths:
                _allow(ruleset, path, rights & fs)
        _call(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    got = ["landlock-fs"]
    if abi >= 4:
        got.append("landlock-tcp")
    if abi >= 6:
        got.append("landlock-signal")
    return got


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this machine does not have
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        _call(
            SYS_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)
