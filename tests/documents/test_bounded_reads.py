"""Reads with a bound (issue 38, item 7): a device, a FIFO or an endless pipe is refused or read up to
a cap, never waited on or read into MemoryError; `logs` never reads a referenced file that changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from docs_helpers import ends_within, receipt_png

import chainform as cf
from chainform.clients.profiles import IMAGES
from chainform.errors import AttachmentError
from chainform.models import Model
from chainform.store import Store
from chainform.testing import ScriptedClient
from chainform.types import ModelProfile

VISION = ModelProfile(name="scripted", provider="testing", supports_json_schema=True, media=IMAGES)
BOUND = 20.0  # seconds: a generous bound on what must end at once (the bug is waiting forever)


def _ends(work: Callable[[], object]) -> object:
    return ends_within(BOUND, work)


def test_a_device_path_is_refused_not_read_until_memory_runs_out() -> None:
    attachment = cf.Attachment(path="/dev/zero", type="image/png")
    with pytest.raises(AttachmentError, match="not a regular file"):
        attachment.read(10_000)
    with pytest.raises(AttachmentError, match="not a regular file"):
        cf.Attachment(path="/dev/zero").media_type()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_with_a_type_given_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "scan.png"
    os.mkfifo(fifo)
    found = _ends(lambda: cf.Attachment(path=fifo, type="image/png").read())
    assert isinstance(found, AttachmentError) and "not a regular file" in str(found)
    model = Model(ScriptedClient(["x"], VISION), name="scripted")
    found = _ends(
        lambda: model.chain("Read", attachments=[cf.Attachment(path=fifo, type="image/png")]).text()
    )
    assert isinstance(found, AttachmentError)


def test_endless_stdin_is_refused_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from chainform.cli import _prompt, cli

    client = ScriptedClient(["seen"], VISION)
    monkeypatch.setattr(_prompt, "resolve_model", lambda name, **_: Model(client, name=name))
    monkeypatch.setattr("chainform.types._attachment.MAX_READ_BYTES", 1000)
    result = CliRunner().invoke(cli, ["Read", "-a", "-"], input=b"x" * 5000)
    assert result.exit_code == 2, result.output
    assert "more than 1,000 bytes" in result.stderr and "Traceback" not in result.stderr
    assert not client.requests


def _logged_by_ref(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "receipt.png"
    receipt_png(path)
    model = Model(ScriptedClient(["seen"], VISION), name="scripted")
    response = model.chain("Extract", attachments=[cf.Attachment(path=path)], attachments_store="ref")
    response.text()
    return path, response.conversation_id


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_replay_never_waits_on_a_referenced_path_that_became_a_fifo(tmp_path: Path) -> None:
    path, _ = _logged_by_ref(tmp_path)
    path.unlink()
    os.mkfifo(path)
    records = _ends(lambda: Store().recent(1, read_refs=True))
    assert isinstance(records, list) and records[0].messages[-1].contents[1].data == b""


def test_a_replay_never_reads_a_referenced_path_that_became_a_device(tmp_path: Path) -> None:
    path, _ = _logged_by_ref(tmp_path)
    path.unlink()
    path.symlink_to("/dev/zero")
    records = _ends(lambda: Store().recent(1, read_refs=True))
    assert isinstance(records, list) and records[0].messages[-1].contents[1].data == b""


def test_a_reference_touched_since_it_was_logged_is_not_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _logged_by_ref(tmp_path)
    later = path.stat().st_mtime + 3600
    os.utime(path, (later, later))
    hashed: list[bytes] = []
    import chainform.store._attachments as stored

    real = stored.sha256
    monkeypatch.setattr(stored, "sha256", lambda data: hashed.append(data) or real(data))
    assert Store().recent(1, read_refs=True)[0].messages[-1].contents[1].data == b""
    assert hashed == []


def _logs(*args: str) -> subprocess.CompletedProcess[str]:
    """`chainform logs ARGS` in its own process, killed (failing the test) if it waits on a file."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "chainform.cli", "logs", *args],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=BOUND * 3,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"chainform logs {' '.join(args)} still running after {exc.timeout:g} s"
        ) from None


def _shows_metadata(ref: str, size: int) -> None:
    [record] = Store().recent(1)
    [attached] = record.attachments
    assert attached.stored == "ref" and attached.ref == ref and attached.bytes == size
    for args in ((), ("-n", "1")):
        done = _logs(*args)
        assert done.returncode == 0, done.stderr
        assert f"sha256 `{attached.sha256[:12]}`" in done.stdout and f"ref {attached.ref}" in done.stdout
    done = _logs("--json")
    assert done.returncode == 0, done.stderr
    [shown] = json.loads(done.stdout)[0]["attachments"]
    assert shown == {**attached.model_dump(), "media_type": "image/png"}


def test_logs_never_opens_a_referenced_file(tmp_path: Path) -> None:
    """`logs` (and `Store.recent`) show a reference's metadata without reading the file; only a
    replay that sends it again reads it."""
    from chainform.chain._history import of_conversation

    path, conversation_id = _logged_by_ref(tmp_path)
    png = path.read_bytes()
    _shows_metadata(str(path.resolve()), len(png))
    [shown] = json.loads(_logs("--json").stdout)
    assert shown["messages"][-1]["contents"][1]["data"] == ""  # not the file's bytes
    assert Store().recent(1)[0].messages[-1].contents[1].data == b""  # type: ignore[union-attr]
    replayed = of_conversation(Store(), conversation_id)
    assert any(getattr(c, "data", None) == png for m in replayed for c in m.contents)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with path.open("wb") as f:
        f.truncate(1 << 40)  # sparse: a terabyte that reads as zeros


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("became", [_fifo, _device, _huge], ids=["fifo", "device", "huge"])
def test_logs_shows_a_reference_that_became_a_fifo_device_or_huge_file_at_once(
    tmp_path: Path, became: Callable[[Path], None]
) -> None:
    path, _ = _logged_by_ref(tmp_path)
    ref, size = str(path.resolve()), path.stat().st_size
    path.unlink()
    became(path)
    _shows_metadata(ref, size)
