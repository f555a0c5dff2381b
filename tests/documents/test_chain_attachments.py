"""Attachments through the library: model.chain / prompt / conversations / Agent.run and async
models; checked against the profile before anything is sent, converted for a text-only model,
logged once by sha256 and replayed by a conversation read back from the log."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from docs_helpers import receipt_png, text_pdf

import chainform as cf
from chainform.clients.profiles import IMAGES
from chainform.errors import AttachmentError
from chainform.models import AsyncModel, Model
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call
from chainform.types import DataContent, MediaSupport, ModelProfile, TextContent

TEXT_ONLY = ModelProfile(name="scripted", provider="testing", supports_json_schema=True)
VISION = TEXT_ONLY.replace(media=IMAGES)


def _model(profile: ModelProfile, script: list[object] | None = None) -> tuple[Model, ScriptedClient]:
    client = ScriptedClient(script or ['{"merchant": "Corner Bakery", "total": 9.8}'], profile)
    return Model(client, name="scripted"), client


def _sent(client: ScriptedClient) -> list[object]:
    return list(client.requests[0][0][-1].contents)


def test_a_vision_model_gets_the_image_itself(tmp_path: Path) -> None:
    path = tmp_path / "receipt.png"
    receipt_png(path)
    model, client = _model(VISION)
    response = model.chain("Extract", attachments=[cf.Attachment(path=path)], schema="merchant, total float")
    assert response.value == {"merchant": "Corner Bakery", "total": 9.8}
    text, image = _sent(client)
    assert text == TextContent("Extract")
    assert isinstance(image, DataContent) and image.data == path.read_bytes()
    assert [c.summary() for c in response.attachments] == [
        f"receipt.png: as is, {path.stat().st_size:,} bytes"
    ]


def test_a_text_only_model_gets_ocr_text_and_the_event_says_so(tmp_path: Path) -> None:
    model, client = _model(TEXT_ONLY)
    response = model.chain(
        ["Extract", cf.Attachment(content=receipt_png(), name="receipt.png")], schema="merchant"
    )
    events = [e for e in response.events() if e.kind == "attachment"]
    assert len(events) == 1 and events[0].text.startswith("receipt.png: OCR, ")
    assert response.attachments[0].method == "OCR"
    [joined] = _sent(client)  # the question and the converted file, one paragraph each
    assert isinstance(joined, TextContent) and joined.text.startswith("Extract\n\n[receipt.png: OCR, ")
    assert "Coffee 3.20" in joined.text and "9.80" in joined.text


def test_convert_false_is_a_typed_error_and_nothing_is_sent() -> None:
    model, client = _model(TEXT_ONLY)
    response = model.prompt(
        "Extract", attachments=[cf.Attachment(content=text_pdf(), name="a.pdf")], convert=False
    )
    with pytest.raises(
        AttachmentError, match=r"testing/scripted cannot read application/pdf.*accepts text only"
    ):
        response.text()
    assert client.requests == []
    assert Store().counts()["responses"] == 0  # nothing half-logged


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: cf.Attachment(path=p / "missing.png"), "no such file"),
        (lambda p: cf.Attachment(path=p), "is a directory"),
        (lambda p: cf.Attachment(content=b"\x00\x01\x02\x03" * 10), "unknown binary content type"),
        (lambda p: cf.Attachment(content=receipt_png(), name="x.pdf"), "contradicts its extension"),
    ],
)
def test_bad_files_fail_before_any_call(tmp_path: Path, make: object, message: str) -> None:
    model, client = _model(VISION)
    with pytest.raises(AttachmentError, match=message):
        model.chain("Extract", attachments=[make(tmp_path)]).text()  # type: ignore[operator]
    assert client.requests == []


def test_more_attachments_than_the_model_takes_is_refused() -> None:
    model, client = _model(TEXT_ONLY.replace(media=IMAGES.__class__(types=IMAGES.types, max_count=1)))
    pictures = [cf.Attachment(content=receipt_png(), name=f"{i}.png") for i in range(2)]
    with pytest.raises(AttachmentError, match="at most 1"):
        model.chain("Extract", attachments=pictures).text()
    assert client.requests == []


def test_attachments_must_be_attachments() -> None:
    model, _ = _model(VISION)
    with pytest.raises(AttachmentError, match=r"takes chainform\.Attachment"):
        model.chain("Extract", attachments=["receipt.png"])  # type: ignore[list-item]


async def test_async_model_and_its_conversation() -> None:
    client = ScriptedClient(["first", "second"], VISION)
    model = AsyncModel(client, name="scripted")
    conversation = model.conversation()
    await conversation.chain("Look", attachments=[cf.Attachment(content=receipt_png(), name="r.png")])
    await conversation.chain("And again?")
    second = client.requests[1][0]
    assert any(isinstance(c, DataContent) for m in second for c in m.contents)  # the history keeps the file


def test_agent_run_takes_attachments() -> None:
    model, client = _model(TEXT_ONLY)
    agent = cf.Agent(model, name="extractor", description="Extracts fields.")
    agent.run("the receipt", attachments=[cf.Attachment(content=text_pdf(), name="inv.pdf")]).text()
    assert "INV-2041" in _sent(client)[0].text  # type: ignore[attr-defined]


def test_the_log_keeps_each_file_once_and_a_continued_conversation_resends_it() -> None:
    png = receipt_png()
    model, _ = _model(VISION, ["one", "two", "three"])
    for _ in range(2):
        model.chain("Extract", attachments=[cf.Attachment(content=png, name="receipt.png")]).text()
    store = Store()
    record = store.recent(1)[0]  # a read spreads the journal of a sync chain into the tables
    with sqlite3.connect(store.path) as db:
        files = db.execute("SELECT sha256, length(content) FROM attachments").fetchall()
        links = db.execute("SELECT COUNT(*) FROM response_attachments").fetchone()[0]
        stored = "".join(r[0] for r in db.execute("SELECT messages FROM responses"))
    assert files == [(hashlib.sha256(png).hexdigest(), len(png))]
    assert links == 2 and len(stored) < len(png)  # the messages name the file, they do not hold it
    assert record.attachments[0].name == "receipt.png" and record.attachments[0].method == "as is"
    assert record.to_dict()["attachments"][0]["sha256"] == files[0][0]
    parts = record.messages[-1].contents
    assert isinstance(parts[1], DataContent) and parts[1].data == png  # read back whole
    from chainform.chain._history import of_conversation

    history = of_conversation(store, record.conversation_id)
    assert any(isinstance(c, DataContent) and c.data == png for m in history for c in m.contents)


def test_attachments_store_ref_keeps_the_path(tmp_path: Path) -> None:
    path = tmp_path / "receipt.png"
    receipt_png(path)
    model, _ = _model(VISION)
    model.chain("Extract", attachments=[cf.Attachment(path=path)], attachments_store="ref").text()
    record = Store().recent(1)[0]
    assert record.attachments[0].stored == "ref" and record.attachments[0].ref == str(path.resolve())
    with sqlite3.connect(Store().path) as db:
        assert db.execute("SELECT content FROM attachments").fetchall() == [(None,)]
    assert record.messages[-1].contents[1].data == b""  # type: ignore[union-attr]  # read only to resend
    replay = Store().recent(1, read_refs=True)[0]
    assert replay.messages[-1].contents[1].data == path.read_bytes()  # type: ignore[union-attr]


def test_removing_the_calls_removes_the_files_no_call_uses() -> None:
    model, _ = _model(VISION, ["one", "two"])
    first = model.chain("a", attachments=[cf.Attachment(content=receipt_png(), name="r.png")])
    first.text()
    model.chain("b", attachments=[cf.Attachment(content=text_pdf(), name="a.pdf", type="text/plain")]).text()
    store = Store()
    store.remove(conversation_id=first.conversation_id)
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT media_type FROM attachments").fetchall() == [("text/plain",)]


def _receipt_tool() -> list[object]:
    """Look at the receipt."""
    return ["the receipt:", cf.Attachment(content=receipt_png(), name="receipt.png")]


def test_a_tool_returning_an_image_shows_it_to_a_vision_model() -> None:
    model, client = _model(VISION, [tool_call("_receipt_tool"), "seen"])
    response = model.chain("Check the receipt", tools=[_receipt_tool])
    assert response.text() == "seen"
    messages = client.requests[1][0]
    tool, files = messages[-2], messages[-1]
    assert tool.role == "tool" and "receipt.png (image/png): in the next message" in tool.contents[0].result
    assert files.role == "user" and isinstance(files.contents[1], DataContent)
    assert [c.method for c in response.attachments] == []  # the prompt had none; the event says it
    assert Store().recent(1)[0].messages[-1].contents[1].data == receipt_png()  # type: ignore[union-attr]


def test_a_tool_returning_an_image_gives_a_text_only_model_its_ocr_text() -> None:
    model, client = _model(TEXT_ONLY, [tool_call("_receipt_tool"), "seen"])
    response = model.chain("Check the receipt", tools=[_receipt_tool])
    events = [e.text for e in response.events() if e.kind == "attachment"]
    assert events and events[0].startswith("receipt.png: OCR, ")
    [result] = client.requests[1][0][-1].contents
    assert result.result.startswith("the receipt:\n[receipt.png: OCR, ") and "9.80" in result.result  # type: ignore[union-attr]


def test_continuing_after_a_referenced_file_is_gone_is_a_clear_error(tmp_path: Path) -> None:
    from chainform.chain._history import of_conversation

    path = tmp_path / "receipt.png"
    receipt_png(path)
    model, _ = _model(VISION)
    first = model.chain("Extract", attachments=[cf.Attachment(path=path)], attachments_store="ref")
    first.text()
    path.write_bytes(receipt_png() + b"changed")
    with pytest.raises(
        AttachmentError, match=r"receipt\.png \(.*\), logged as a reference; the file is gone or changed"
    ):
        of_conversation(Store(), first.conversation_id)


def test_a_large_file_is_held_once_from_reading_to_the_log(tmp_path: Path) -> None:
    """Read once, checked, sent and logged without a second copy (no base64 of it for the log)."""
    import os
    import tracemalloc

    path = tmp_path / "big.pdf"
    padding = os.urandom(10_000_000).replace(b"\n", b"x").replace(b"\r", b"y")  # a 10 MB comment line
    path.write_bytes(text_pdf().replace(b"%PDF-1.3", b"%PDF-1.3\n%" + padding, 1))  # a PDF that opens
    pdf = TEXT_ONLY.replace(media=MediaSupport(types=frozenset({"application/pdf"}), max_bytes=50_000_000))
    model, _ = _model(pdf, ["warm", "ok"])
    model.chain("warm up").text()
    tracemalloc.start()
    try:
        model.chain("Read", attachments=[cf.Attachment(path=path)]).text()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * path.stat().st_size
    with sqlite3.connect(Store().path) as db:
        Store().recent(1)
        assert db.execute("SELECT length(content) FROM attachments").fetchone() == (path.stat().st_size,)


def test_a_sync_conversation_and_model_map_attach_files(tmp_path: Path) -> None:
    model, client = _model(TEXT_ONLY, ["one", "two", "row a", "row b"])
    conversation = model.conversation()
    conversation.chain("Read", attachments=[cf.Attachment(content=b"Total: 9.80\n", name="note.txt")]).text()
    conversation.chain("Again?").text()
    assert "Total: 9.80" in client.requests[1][0][0].text  # the converted file is in the history
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("alpha\n")
    (tmp_path / "docs" / "b.txt").write_text("beta\n")
    rows = [{"q": "A", "file": "docs/a.txt"}, {"q": "B", "file": "docs/b.txt, docs/a.txt"}]
    results = list(
        model.map(rows, prompt="{q}", attach="file", attach_base=tmp_path, ordered=True, log=False)
    )
    assert [r.error for r in results] == [None, None]
    sent = sorted(m[-1].text for m, _ in client.requests[2:])
    assert sent[0].startswith("A\n\n[a.txt: text, 1 line]\nalpha")
    assert "[b.txt: text, 1 line]" in sent[1] and "[a.txt: text, 1 line]" in sent[1]


def test_a_fallback_model_that_cannot_read_the_file_gets_it_converted() -> None:
    from chainform.chain._fallback import FallbackPlan
    from chainform.errors import ProviderError

    down = ProviderError("overloaded", status=503, kind="server")
    first = ScriptedClient([down], VISION)
    second = ScriptedClient(['{"merchant": "Corner Bakery"}'], TEXT_ONLY.replace(name="second"))
    plan = FallbackPlan.build("first", [Model(second, name="second")], None, make=None)
    model = Model(first, name="first", fallback=plan)
    response = model.chain(
        "Extract", attachments=[cf.Attachment(content=receipt_png(), name="receipt.png")], schema="merchant"
    )
    assert response.value == {"merchant": "Corner Bakery"}
    assert isinstance(first.requests[0][0][-1].contents[1], DataContent)  # the vision model got the image
    [sent] = second.requests[0][0][-1].contents  # the text-only one its OCR text
    assert sent.text.startswith("Extract\n\n[receipt.png: OCR, ") and "9.80" in sent.text  # type: ignore[union-attr]
    shown = [e.text for e in response.events() if e.kind == "attachment"]
    assert shown[0].startswith("receipt.png: as is, ") and shown[1].startswith("receipt.png: OCR, ")
