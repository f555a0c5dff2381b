"""Attacks a model could write into a python cell. Each probe must fail under isolation "strict" and
succeed under "process" (today's plain process), which proves the probe itself works."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainform.tools import python
from processes import running

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the probes target the Linux guards")

LEVELS = ["strict", "process"]
MARKER = "cf-planted-"


@pytest.fixture(scope="module", autouse=True)
def kernel_has_every_guard() -> None:
    """Skip the suite (saying which guard) where the kernel lacks one; CI runs on a kernel with all."""
    guards = python("", isolation="auto").guards
    if guards.isolation != "strict":
        pytest.skip(f"this kernel lacks sandbox guards: {guards.missing}")


def _leaked(out: str, secret: str) -> bool:
    """The cells print what they found reversed, so no redaction could hide a leak from the test."""
    return secret[::-1] in out


def _read_file_code(path: Path) -> str:
    return f"open({str(path)!r}).read()[::-1]"


@pytest.mark.parametrize("level", LEVELS)
def test_key_in_the_parents_environment_and_command_line(level: str) -> None:
    """The CLI's own process holds a key in its environment and (`--key`) in its argv."""
    env_key, arg_key = MARKER + "env-7c1e9a", MARKER + "arg-52bd04"
    hunt = (
        "import glob, os\n"
        "found = [v for v in os.environ.values() if v.startswith('cf-planted')]\n"
        "for p in glob.glob('/proc/[0-9]*/environ') + glob.glob('/proc/[0-9]*/cmdline'):\n"
        "    try:\n"
        "        data = open(p, 'rb').read().replace(b'=', b'\\0').split(b'\\0')\n"
        "    except OSError:\n"
        "        continue\n"
        "    found += [w.decode() for w in data if w.startswith(b'cf-planted-')]\n"
        "print(sorted({f[::-1] for f in found}))\n"
    )
    runner = (
        "import sys; from chainform.tools import python; print(python(sys.argv[1], isolation=sys.argv[2]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", runner, hunt, level, "--key", arg_key],
        env={**os.environ, "OPENAI_API_KEY": env_key},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    expected = level == "process"
    assert _leaked(done.stdout, env_key) is expected, done.stdout
    assert _leaked(done.stdout, arg_key) is expected, done.stdout


@pytest.mark.parametrize("level", LEVELS)
def test_keys_file(level: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chainform import keys

    monkeypatch.setenv("CHAINFORM_HOME", str(tmp_path / "chainform"))
    (tmp_path / "chainform").mkdir()
    secret = MARKER + "keysfile-e41f"
    keys.set_key("openai", secret)
    out = python(_read_file_code(keys.keys_path()), isolation=level)
    assert _leaked(out, secret) is (level == "process"), out


@pytest.mark.parametrize("level", LEVELS)
def test_ssh_key_in_the_home(level: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    planted = home / ".ssh" / "id_ed25519"
    planted.write_text(secret := MARKER + "ssh-90aa")
    monkeypatch.setenv("HOME", str(home))
    out = python(_read_file_code(planted), isolation=level)
    assert _leaked(out, secret) is (level == "process"), out


@pytest.mark.parametrize("level", LEVELS)
def test_write_outside_the_temporary_directory(level: str, tmp_path: Path) -> None:
    target = tmp_path / "written-by-the-cell.txt"
    out = python(f"open({str(target)!r}, 'w').write('x')", isolation=level)
    assert target.exists() is (level == "process"), out
    if level == "strict":  # Landlock refuses, or the private /tmp hides the folder
        assert "PermissionError" in out or "FileNotFoundError" in out, out


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique word for a probe's escaped processes; any still alive afterwards are killed."""
    word = f"{MARKER}escapee-{os.getpid()}-{time.monotonic_ns()}"
    yield word
    for pid in running(word):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("level", LEVELS)
def test_setsid_grandchild_outliving_the_cell(level: str, marker: str) -> None:
    code = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}],\n"
        "                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "'started'"
    )
    out = python(code, isolation=level)
    assert out == "'started'\n", out
    if level == "process":
        assert running(marker), "the escaped grandchild runs on (the probe works)"
        return
    # the sandbox's init exits with the cell; the kernel then kills and reaps every process left in its
    # PID namespace before init's parent, whom the call waits for, sees it end: no clock is needed
    assert not running(marker), "the grandchild died with the cell"


@pytest.mark.parametrize("level", LEVELS)
def test_fork_loop_past_64_processes(level: str) -> None:
    code = (
        "import os, time\n"
        "started = 0\n"
        "try:\n"
        "    for _ in range(100):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(2)\n"
        "            os._exit(0)\n"
        "        started += 1\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__)\n"
        "started"
    )
    out = python(code, isolation=level, timeout=10)
    started = int(out.split()[-1])
    if level == "process":
        assert started == 100, out
    else:
        assert started < 64 and "BlockingIOError" in out, out


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server
    server.close()


@pytest.mark.parametrize("level", LEVELS)
def test_tcp_connect_to_a_loopback_listener(level: str, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n'connected'"
    out = python(code, isolation=level)
    assert (out == "'connected'\n") is (level == "process"), out


@pytest.mark.parametrize("level", LEVELS)
def test_signal_to_the_callers_process(level: str) -> None:
    hits: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda sig, frame: hits.append(sig))
    try:
        out = python(f"import os, signal\nos.kill({os.getpid()}, signal.SIGUSR1)\n'sent'", isolation=level)
        deadline = time.monotonic() + (2 if level == "process" else 0.2)
        while not hits and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert bool(hits) is (level == "process"), out
    if level == "strict":
        assert "ProcessLookupError" in out


@pytest.mark.parametrize("level", LEVELS)
def test_editable_install_exposes_its_package_not_its_project_folder(
    level: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`site_packages=True` with an editable install (a .pth naming the project folder): the cell
    imports the package, but the project's .env beside it stays closed."""
    import venv

    project = tmp_path / "project"
    (project / "editpkg").mkdir(parents=True)
    (project / "editpkg" / "__init__.py").write_text("VALUE = 41 + 1\n")
    secret = MARKER + "dotenv-3e81c0"
    (project / ".env").write_text(f"API_KEY={secret}\n")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    site = next(env_dir.glob("lib/python*/site-packages"))
    (site / "__editable__.editpkg.pth").write_text(f"{project}\n")
    monkeypatch.setattr(sys, "executable", str(env_dir / "bin" / "python"))

    imported = python.with_limits(site_packages=True, isolation=level)("import editpkg\neditpkg.VALUE")
    assert imported.strip() == "42", imported
    out = python.with_limits(site_packages=True, isolation=level)(_read_file_code(project / ".env"))
    assert _leaked(out, secret) is (level == "process"), out


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[str]:
    """A unix socket server, as an ssh-agent would listen under /tmp; stopped after the test."""
    path = str(tmp_path / "agent.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    yield path
    server.close()


_CONNECT_UNIX = "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({path!r})\n'connected'"


@pytest.mark.parametrize("level", LEVELS)
def test_unix_socket_server_under_a_temporary_directory(level: str, unix_server: str) -> None:
    out = python(_CONNECT_UNIX.format(path=unix_server), isolation=level)
    assert (out == "'connected'\n") is (level == "process"), out


@pytest.mark.parametrize("level", LEVELS)
def test_unix_socket_outside_tmp_and_run(level: str) -> None:
    """A socket where no private mount hides it (/dev/shm): only the seccomp filter stops it."""
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm")
    path = f"/dev/shm/cf-probe-{os.getpid()}-{time.monotonic_ns()}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    try:
        out = python(_CONNECT_UNIX.format(path=path), isolation=level)
    finally:
        server.close()
        os.unlink(path)
    assert (out == "'connected'\n") is (level == "process"), out
    if level == "strict":
        assert "PermissionError: [Errno 1]" in out


@pytest.mark.parametrize("level", LEVELS)
def test_unix_socket_through_the_raw_system_call(level: str) -> None:
    """socket(2) called directly, AF_UNIX in the low half of a register whose high half is set:
    the kernel reads an int, so the filter must compare 32 bits; io_uring (which can open
    sockets without socket(2)) is refused too."""
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        "fd = libc.syscall(ctypes.c_long(41), ctypes.c_ulong((1 << 32) | 1), ctypes.c_long(1), ctypes.c_long(0))\n"
        "params = ctypes.create_string_buffer(120)\n"
        "ring = libc.syscall(ctypes.c_long(425), ctypes.c_long(4), params)\n"
        "(fd >= 0, ring >= 0 or os.strerror(ctypes.get_errno()))"
    )
    out = python(code, isolation=level)
    if level == "process":
        assert out.startswith("(True,"), out
    else:
        assert out == "(False, 'Operation not permitted')\n", out


@pytest.mark.parametrize("level", LEVELS)
def test_writing_past_the_disk_cap(level: str) -> None:
    """Files of 4 MB each (under the 16 MB per-file limit) until 40 MB; the cell has 8 MB."""
    code = (
        "import errno\n"
        "written = 0\n"
        "try:\n"
        "    for i in range(10):\n"
        "        with open(f'f{i}', 'wb') as f:\n"
        "            f.write(b'x' * (4 << 20))\n"
        "        written += 4\n"
        "except OSError as exc:\n"
        "    print(errno.errorcode[exc.errno])\n"
        "written"
    )
    out = python.with_limits(disk_mb=8, isolation=level)(code)
    if level == "process":
        assert out == "40\n", out
    else:
        assert out.startswith("ENOSPC\n") and int(out.split()[-1]) <= 8, out


@pytest.mark.parametrize("level", LEVELS)
def test_processes_together_within_the_memory_budget(level: str) -> None:
    """Four processes of 200 MB each under a 512 MB budget: each fits alone, together they do not.
    A process holds its memory (written, so resident) until the cell ends; once all have tried,
    the cell asks each that got its memory whether it is still there: a reply, or the end of its
    pipe for one the memory limit killed meanwhile (no clock: a kill lands before the next report)."""
    code = (
        "import os, time\n"
        "kids = []\n"
        "for _ in range(4):\n"
        "    r, w = os.pipe()\n"
        "    ask_r, ask = os.pipe()\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        os.close(1), os.close(2)  # the cell's output ends when the cell does\n"
        "        try:\n"
        "            block = b'x' * (200 << 20)\n"
        "            os.write(w, b'1')\n"
        "        except MemoryError:\n"
        "            os._exit(1)\n"
        "        os.read(ask_r, 1)\n"
        "        os.write(w, b'2')  # still here, still holding it\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    os.close(w), os.close(ask_r)\n"
        "    kids.append((r, ask, os.read(r, 1) == b'1'))\n"
        "def still_holding(r, ask):\n"
        "    try:\n"
        "        os.write(ask, b'?')\n"
        "    except OSError:\n"
        "        return False\n"
        "    return os.read(r, 1) == b'2'\n"
        "sum(held and still_holding(r, ask) for r, ask, held in kids)"
    )
    out = python.with_limits(memory_mb=512, timeout=20, isolation=level)(code)
    holding = int(out.split()[-1])
    if level == "process":
        assert holding == 4, out
    else:
        assert holding * 200 <= 512, out
