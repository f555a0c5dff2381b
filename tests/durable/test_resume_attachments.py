"""A chain whose prompt holds a file: its spec names the file by sha256 (the bytes are kept once in
the attachments table, as the calls' are), and a resume sends the same bytes again."""

from __future__ import annotations

import base64
import hashlib
import io
import random
import sqlite3
from pathlib import Path

import pytest

import chainform as cf
from chainform.chain._spec import ChainSpec
from chainform.clients.profiles import IMAGES
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call
from chainform.types import DataContent

VISION = ScriptedClient([]).profile.replace(media=IMAGES)  # the scripted model, seeing images


def png(seed: int = 7) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    noise = random.Random(seed).randbytes(96 * 96 * 3)  # does not compress: larger than the spec
    Image.frombytes("RGB", (96, 96), noise).save(buffer, format="PNG")
    return buffer.getvalue()


IMAGE = png()
KEY = hashlib.sha256(IMAGE).hexdigest()
RAN: list[int] = []


async def step(n: int) -> int:
    "Do step n (on the loop: no worker thread is left running a tool that was interrupted)."
    RAN.append(n)
    if n == 2 and not RAN.count(-1):
        raise KeyboardInterrupt  # Ctrl-C while the second tool runs
    return n * 10


def send_mail(to: str) -> str:
    "Send a mail."
    return f"sent to {to}"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


def waiting(client: ScriptedClient) -> cf.ChainResponse:
    chain = cf.Model(client).chain(
        "Mail what the picture says",
        attachments=[cf.Attachment(content=IMAGE, name="note.png")],
        tools=[send_mail],
        schema="sent bool",
        requires_approval=["send_mail"],
    )
    assert chain.status == "waiting"
    return chain


def images(messages: list[cf.Message]) -> list[bytes]:
    return [c.data for m in messages for c in m.contents if isinstance(c, DataContent)]


def test_the_spec_names_the_file_and_a_resumed_chain_sends_the_same_bytes(home: Path) -> None:
    client = ScriptedClient([tool_call("send_mail", to="bob"), '{"sent": true}'], VISION)
    chain = waiting(client)
    with sqlite3.connect(Store().path) as db:
        [(spec,)] = db.execute("SELECT spec FROM chains WHERE id = ?", (chain.chain_id,))
        assert KEY in spec and base64.b64encode(IMAGE).decode()[:40] not in spec
        assert len(spec) < len(IMAGE)
        assert list(db.execute("SELECT chain_id, sha256 FROM chain_attachments")) == [(chain.chain_id, KEY)]
        assert list(db.execute("SELECT length(content) FROM attachments")) == [(len(IMAGE),)]
    resumed = cf.resume(
        chain.chain_id, tools=[send_mail], approvals={chain.pending[0].id: True}, model=cf.Model(client)
    )
    assert resumed.value == {"sent": True}
    assert len(client.requests) == 2 and images(client.requests[1][0]) == [IMAGE]


def test_an_interrupted_chain_with_a_file_is_resumed_with_the_same_bytes(home: Path) -> None:
    client = ScriptedClient([tool_call("step", n=1), tool_call("step", n=2), '{"total": 30}'], VISION)
    model = cf.Model(client)
    with pytest.raises(cf.ChainInterruptedError):
        model.chain(
            "Do the steps", attachments=[cf.Attachment(content=IMAGE)], tools=[step], schema="total int"
        ).value
    [row] = Store().unfinished_chains()
    assert row.status == "interrupted" and KEY in row.spec
    RAN.append(-1)  # the second step runs this time
    resumed = cf.resume(row.id, tools=[step], model=model)
    assert resumed.value == {"total": 30}
    assert (
        RAN == [1, 2, -1, 2] and len(client.requests) == 3
    )  # step 1 and the first two calls came from the log
    assert images(client.requests[2][0]) == [IMAGE]


def test_a_file_missing_from_the_log_stops_the_resume_before_anything_is_sent(home: Path) -> None:
    client = ScriptedClient([tool_call("send_mail", to="bob"), '{"sent": true}'], VISION)
    chain = waiting(client)
    with sqlite3.connect(Store().path) as db:  # foreign keys are off here: the log is damaged by hand
        db.execute("DELETE FROM attachments")
    with pytest.raises(cf.ResumeError, match=rf"sha256 {KEY[:12]}\) is not in the log"):
        cf.resume(
            chain.chain_id, tools=[send_mail], approvals={chain.pending[0].id: True}, model=cf.Model(client)
        )
    assert len(client.requests) == 1 and Store().chains(chain.chain_id)[0].status == "waiting"


def test_a_spec_of_an_older_log_with_the_file_inline_still_resumes(home: Path) -> None:
    client = ScriptedClient([tool_call("send_mail", to="bob"), '{"sent": true}'], VISION)
    chain = waiting(client)
    [row] = Store().chains(chain.chain_id)
    inline = ChainSpec.from_json(row.spec, Store().attachment).to_json()  # the bytes as base64, as it was
    assert KEY not in inline and len(inline) > len(IMAGE)
    with sqlite3.connect(Store().path) as db:
        db.execute("UPDATE chains SET spec = ? WHERE id = ?", (inline, chain.chain_id))
        db.execute("DELETE FROM chain_attachments")
    resumed = cf.resume(
        chain.chain_id, tools=[send_mail], approvals={chain.pending[0].id: True}, model=cf.Model(client)
    )
    assert resumed.value == {"sent": True} and images(client.requests[1][0]) == [IMAGE]


def test_removing_a_waiting_chains_calls_keeps_the_file_its_spec_names(home: Path) -> None:
    client = ScriptedClient([tool_call("send_mail", to="bob"), '{"sent": true}'], VISION)
    chain = waiting(client)
    assert Store().remove(conversation_id=chain.conversation_id) == 1
    assert Store().attachment(KEY) == IMAGE  # the chain still waits: a resume sends it again
    with sqlite3.connect(Store().path) as db:
        db.execute("UPDATE chains SET status = 'done'")
    Store().remove(before=2**40)  # nothing left to remove: the done chain and its file go
    assert Store().chains(chain.chain_id) == [] and Store().attachment(KEY) is None


def test_a_file_kept_as_a_reference_is_read_again_at_resume_only_while_unchanged(
    home: Path, tmp_path: Path
) -> None:
    client = ScriptedClient([tool_call("send_mail", to="bob")] * 2 + ['{"sent": true}'], VISION)

    def start(path: Path) -> cf.ChainResponse:
        chain = cf.Model(client).chain(
            "Mail what the picture says",
            attachments=[cf.Attachment(path=path)],
            attachments_store="ref",
            tools=[send_mail],
            schema="sent bool",
            requires_approval=["send_mail"],
        )
        assert chain.status == "waiting"
        return chain

    (tmp_path / "other.png").write_bytes(png(8))
    changed = start(tmp_path / "other.png")
    with sqlite3.connect(Store().path) as db:
        assert list(db.execute("SELECT content IS NULL, ref FROM attachments")) == [
            (1, str((tmp_path / "other.png").resolve()))
        ]
    (tmp_path / "other.png").write_bytes(png(9))  # another file under the logged path
    with pytest.raises(cf.ResumeError, match="logged as a path that changed or is gone"):
        cf.resume(
            changed.chain_id,
            tools=[send_mail],
            approvals={changed.pending[0].id: True},
            model=cf.Model(client),
        )
    (tmp_path / "note.png").write_bytes(IMAGE)
    kept = start(tmp_path / "note.png")
    resumed = cf.resume(
        kept.chain_id, tools=[send_mail], approvals={kept.pending[0].id: True}, model=cf.Model(client)
    )
    assert resumed.value == {"sent": True} and images(client.requests[-1][0]) == [IMAGE]
    (tmp_path / "note.png").unlink()
    again = cf.resume(kept.chain_id, model=cf.Model(client))  # done: nothing is sent, the file is not needed
    assert again.value == {"sent": True} and len(client.requests) == 3
