"""The sandboxed child: confine this process, then run the cell like a notebook cell.

Loaded by ``child.py``, started as ``python -I -S -u child.py CELL ISOLATION CPU_S MEMORY_B FILE_B
NPROC STATUS_FD DISK_B SECCOMP_HEX CGROUP SHARE_B`` (``-`` for no seccomp program or no cgroup;
SHARE_B, when not 0, the memory of one process where the budget is divided over NPROC): no
site-packages, no user site, ``PYTHON*`` variables ignored, so it imports only the standard library
and its sibling modules (their directory is on ``sys.path`` for the import only; a module, unlike
the script, loads from cached bytecode). Few imports: each costs every call. The cell's code is
read first (its folder is then covered by the cell's own tmpfs) and runs after every guard is
applied; which ones took hold is written to STATUS_FD as ``got=``/``missing=`` lines, and with
isolation "strict" the cell does not run at all when one is missing.
"""

import os
import sys

_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "mime.types",
    "os-release",
    "hosts",
    "ssl/certs",
    "ca-certificates",
)


def _read_only_paths(list_only: set[str]) -> list[str]:
    """The interpreter, its standard library (and site-packages when enabled), system libraries.

    A ``sys.path`` folder outside the interpreter's prefixes was put there by a ``.pth`` file (an
    editable install's project folder): only its packages and modules are readable, the folder is
    added to `list_only` (names, not contents), so a ``.env`` beside the package stays closed.
    """
    paths = {"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/dev/urandom", "/dev/random"}
    # Not all of /etc: as root, files such as /etc/shadow or SSH host keys are readable by their owner.
    paths.update("/etc/" + name for name in _ETC)
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for p in prefixes:
        if p and os.path.isdir(p):
            paths.add(p)
    roots = tuple(os.path.join(os.path.realpath(p), "") for p in prefixes if p)
    for p in sys.path:
        if not p or not os.path.isdir(p):
            continue
        if os.path.join(os.path.realpath(p), "").startswith(roots):
            paths.add(p)  # the standard library, site-packages
            for name in os.listdir(p):
                if name.startswith("__editable__") and name.endswith("finder.py"):
                    paths.update(_editable_mapping(os.path.join(p, name)))
        else:  # put there by a .pth file (an editable install): its importable entries, not its folder
            paths.update(_importable(p))
            list_only.add(p)
    for exe in (sys.executable, os.path.realpath(sys.executable)):
        paths.add(os.path.dirname(exe))
        for venv in (os.path.dirname(exe), os.path.dirname(os.path.dirname(exe))):
            paths.add(os.path.join(venv, "pyvenv.cfg"))  # read by `site` in a cell's subprocess
    return sorted(paths)


_IMPORTABLE = (".py", ".pyc", ".so", ".pyd", ".pth", ".dist-info", ".egg-info")


def _importable(folder: str) -> list[str]:
    """The packages, modules and metadata in `folder`; never its other files (a project's .env, .git)."""
    found = []
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.startswith("."):
            continue
        if name.endswith(_IMPORTABLE) or (name.isidentifier() and os.path.isdir(path)):
            found.append(path)
    return found


def _editable_mapping(finder: str) -> list[str]:
    """The package folders a setuptools editable finder maps names to (its ``MAPPING`` literal)."""
    import ast
    import re

    try:
        with open(finder, encoding="utf-8") as handle:
            match = re.search(r"^MAPPING\b[^=]*=\s*(\{.*?\})\s*$", handle.read(), re.M | re.S)
        mapping = ast.literal_eval(match.group(1)) if match else {}
    except (OSError, ValueError, SyntaxError):
        return []
    return [v for v in mapping.values() if isinstance(v, str) and os.path.exists(v)]


def _rlimits(cpu: int, memory: int, fsize: int, nproc: int) -> None:
    import resource

    limits = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_FSIZE, fsize, fsize),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_NOFILE, 256, 256),
    ]
    if nproc:
        limits.append((resource.RLIMIT_NPROC, nproc, nproc))
    for kind, soft, hard in limits:
        try:  # noqa: SIM105 - contextlib would be one more import per cell
            resource.setrlimit(kind, (soft, hard))
        except (ValueError, OSError):  # a hard limit already lower stays
            pass


def _join_cgroup(cgroup: str, got: list[str], missing: dict[str, str]) -> None:
    """Move this process (and so all it starts) into the cell's cgroup, made by the parent."""
    try:
        fd = os.open(os.path.join(cgroup, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
        got.append("memory-cgroup")
    except OSError as exc:
        missing["memory-total"] = f"could not join the cell's cgroup ({exc.strerror})"


def _confine_linux(
    root: str,
    limits: tuple[int, int, int, int],
    status_fd: int,
    disk: int,
    seccomp: bytes,
    cgroup: str,
    share: int,
) -> tuple[list[str], dict[str, str]]:
    """Every guard the kernel offers; returns in the process that runs the cell."""
    import landlock  # type: ignore[import-not-found]  # siblings: child.py put them on sys.path
    import linux  # type: ignore[import-not-found]

    got: list[str] = []
    missing: dict[str, str] = {}
    if cgroup:
        _join_cgroup(cgroup, got, missing)
    try:
        linux.no_new_privs()
        got.append("no-new-privs")
    except OSError as exc:
        missing["no-new-privs"] = exc.strerror or str(exc)
    linux.enter_namespaces(got, missing)
    linux.die_with_parent()  # after any change of credentials, which clears it
    if "pid-ns" in got:
        linux.fork_init(status_fd)  # returns in PID 1 of the new namespace
        linux.die_with_parent()
    list_only: set[str] = set()
    read_only = _read_only_paths(list_only)
    if "mount-ns" in got:
        keep = [p for p in (*read_only, *list_only) if p.startswith("/tmp/")]  # a venv under /tmp
        linux.private_mounts(got, missing, "pid-ns" in got, root, disk, keep)
    else:
        for name in ("private-tmp", "disk-limit"):
            missing[name] = "needs a mount namespace"
    cpu, memory, fsize, nproc = limits
    if share and "user-ns" in got:  # the divided budget holds only with the process cap
        memory = share
    # RLIMIT_NPROC counts per user: only inside a user namespace does it count the sandbox alone.
    _rlimits(cpu, memory, fsize, nproc if "user-ns" in got else 0)
    got.append("rlimits")
    if "user-ns" not in got:
        missing["process-limit"] = "needs a user namespace"
    elif "process-limit" not in missing:
        got.append("process-limit")
    if "user-ns" in got:
        try:
            linux.drop_capabilities()
            got.append("no-capabilities")
        except OSError as exc:
            missing["no-capabilities"] = exc.strerror or str(exc)
    if seccomp and "no-new-privs" in got:
        try:
            linux.seccomp_filter(seccomp)
            got.append("seccomp-unix")
        except OSError as exc:
            missing["seccomp-unix"] = f"the kernel refused the filter ({exc.strerror})"
    elif seccomp:
        missing["seccomp-unix"] = "needs no-new-privs"
    abi = landlock.abi_version()
    if not abi:
        missing["landlock-fs"] = "Landlock is not enabled in this kernel"
    elif "no-new-privs" in got:
        read_only += ["/proc"] if "private-proc" in got else []
        try:
            writable = [root, "/dev/null", "/dev/zero", "/dev/full"]
            got += landlock.restrict(read_only, writable, abi, tuple(sorted(list_only)))
        except OSError as exc:
            missing["landlock-fs"] = f"Landlock refused the ruleset ({exc.strerror})"
    return got, missing


def _report(status_fd: int, got: list[str], missing: dict[str, str]) -> None:
    lines = [f"got={','.join(got)}\n"] + [f"missing={k}:{v}\n" for k, v in missing.items()]
    os.write(status_fd, "".join(lines).encode())


_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST: the `ast` module itself (enum, contextlib) costs milliseconds


def _run_cell(src: str) -> None:
    """Run the cell; print the last expression's repr, or the traceback of the cell's own frames."""
    import _ast

    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        tree = compile(src, "<cell>", "exec", _ONLY_AST)
        last = tree.body[-1] if tree.body else None
        if isinstance(last, _ast.Expr):
            tree.body.pop()
        exec(compile(tree, "<cell>", "exec"), ns)
        if isinstance(last, _ast.Expr):
            value = eval(compile(_ast.Expression(last.value), "<cell>", "eval"), ns)
            if value is not None:
                print(repr(value))
    except SystemExit as exc:
        if exc.code not in (None, 0):
            print(f"SystemExit: {exc.code}")
    except BaseException as exc:
        sys.stdout.flush()
        print(_traceback(exc, src), end="")


def _traceback(exc: BaseException, src: str) -> str:
    """The cell's frames only; imported on failure (most cells succeed), plain when the cell has
    broken what formatting needs (sys.modules, file descriptors, memory)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
        tb = tb.tb_next
    try:
        import linecache
        import traceback

        linecache.cache["<cell>"] = (len(src), None, src.splitlines(True), "<cell>")
        return "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:
        return f"{type(exc).__name__}: {exc}\n"


def main() -> None:
    sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")  # type: ignore[union-attr]
    cell, isolation = sys.argv[1], sys.argv[2]
    limits = (int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    status_fd, disk = int(sys.argv[7]), int(sys.argv[8])
    seccomp = b"" if sys.argv[9] == "-" else bytes.fromhex(sys.argv[9])
    cgroup = "" if sys.argv[10] == "-" else sys.argv[10]
    share = int(sys.argv[11])
    root = os.path.dirname(cell)
    with open(cell, encoding="utf-8") as f:
        src = f.read()
    got: list[str] = ["rlimits"]
    missing: dict[str, str] = {}
    if isolation == "process" or sys.platform != "linux":
        _rlimits(*limits[:3], 0)
    else:
        got, missing = _confine_linux(root, limits, status_fd, disk, seccomp, cgroup, share)
    _report(status_fd, got, missing)
    if isolation == "strict" and missing:
        os._exit(0)  # the parent reads the report and raises; no code runs half-confined
    if "pid-ns" in got:
        import linux  # already loaded by _confine_linux

        linux.run_as_init(status_fd)  # returns in the cell, as PID 2
    else:
        os.close(status_fd)
    sys.path.remove(os.path.dirname(os.path.abspath(__file__)))
    for name in ("confine", "landlock", "linux"):  # the cell's own `import linux` must not find ours
        sys.modules.pop(name, None)
    _run_cell(src)
