"""The python tool's sandbox: model-written code confined by the operating system, not by Python.

Levels (`Isolation`): "process" is a fresh interpreter with resource limits and an allow-listed
environment; "auto" adds every OS guard this machine offers (Linux: user/PID/network/IPC/mount
namespaces, a private /proc, /run and /tmp, the cell's folder as a size-limited tmpfs, Landlock,
a seccomp filter against unix sockets, no capabilities, ``PR_SET_NO_NEW_PRIVS``, a process cap and
total memory by a cgroup v2 or a divided budget; macOS: a ``sandbox-exec`` profile); "strict" is
"auto" that refuses to run
(`SandboxUnavailableError`) unless all of them hold. Each result says what it ran under
(`CellOutput.guards`). The modules ``child``, ``linux`` and ``landlock`` run inside the child and
import nothing but the standard library.
"""

from chainform.tools._sandbox._run import ISOLATION_LEVELS, CellOutput, Guards, Isolation, run_cell

__all__ = ["ISOLATION_LEVELS", "CellOutput", "Guards", "Isolation", "run_cell"]
