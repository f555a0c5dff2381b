"""The sandbox's seccomp filter: no unix socket and no io_uring for the cell, compiled by libseccomp.

Landlock does not govern ``connect()`` to a pathname unix socket, so without this filter a cell
could talk to an ssh-agent, a D-Bus or a Docker socket anywhere it can name (the private /tmp and
/run only hide the usual places). The filter refuses ``socket(AF_UNIX, ...)`` with ``EPERM``
(``socketpair``, which reaches nothing outside, stays allowed: asyncio needs it) and
``io_uring_setup`` (io_uring can open sockets without the ``socket`` system call).

The program is built once per process here, in chainform, by libseccomp through pyseccomp (the
architecture checks, syscall numbers and the ``socketcall`` multiplexer of some architectures are
its job), and handed to the child as BPF bytes: the child only loads it with one ``prctl``, so it
pays neither libseccomp's import nor ``ctypes.util.find_library`` per cell.
"""

from __future__ import annotations

import errno
import functools
import socket
import sys
import tempfile


@functools.cache
def unix_socket_filter() -> tuple[bytes, str]:
    """The BPF program (native architecture, other architectures killed), or ``b""`` and why not."""
    if sys.platform != "linux":
        return b"", "seccomp is Linux only"
    try:
        import pyseccomp
    except ImportError:
        return b"", "pyseccomp is not installed"
    except (RuntimeError, OSError) as exc:  # raised at import when libseccomp.so is missing
        return b"", f"libseccomp is not available ({exc})"
    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        # An int argument: compare its low 32 bits only, as the kernel reads it (the upper half
        # of the register is the caller's to fill with anything).
        unix = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, 0xFFFFFFFF, socket.AF_UNIX)
        rules.add_rule(pyseccomp.ERRNO(errno.EPERM), "socket", unix)
        rules.add_rule(pyseccomp.ERRNO(errno.EPERM), "io_uring_setup")
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            program = out.read()
    except (OSError, ValueError) as exc:
        return b"", f"libseccomp could not build the filter ({exc})"
    if not program or len(program) % 8:
        return b"", "libseccomp exported no filter"
    return program, ""
