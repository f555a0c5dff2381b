"""Attachments on the wire: each adapter's official SDK, captured by the emulator, carries every
image and document in its provider's documented shape (decoded back byte for byte), URLs go as URLs
only where the provider fetches them, and what a model cannot take is refused before sending."""

from __future__ import annotations

import os
from typing import Any

import pytest
from adapter_fixtures import bedrock_client, gemini_client, opened

from chainform.clients import anthropic, openai_chat, openai_responses
from chainform.clients._converse import DOCUMENT_TEXT
from chainform.errors import AttachmentError
from chainform.testing.emulator import Emulator, Fault, RecordedMedia
from chainform.types import DataContent, Message, TextContent, UriContent

pytestmark = pytest.mark.usefixtures("openai_isolated")

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(3000)
# over 1 MB, so the base64 is spliced in several pieces; random, so every base64 character occurs
PDF = b"%PDF-1.7\n" + os.urandom(2_000_000)


def image() -> DataContent:
    return DataContent(PNG, "image/png", name="cat.png")


def pdf(name: str = "Invoice #7.pdf") -> DataContent:
    return DataContent(PDF, "application/pdf", name=name)


def ask(*parts: Any) -> list[Message]:
    return [Message.user([TextContent("Read these."), *parts])]


def chat(emu: Emulator, model: str = "gpt-4.1", *, path: str = "/v1", **kwargs: Any) -> Any:
    """The chat adapter at the emulator, which plays OpenAI (`profile="openai"`) unless a provider is named."""
    settings = kwargs if "provider" in kwargs else {"profile": "openai", **kwargs}
    return opened(
        openai_chat.create_client(
            model, key="sk-test", base_url=emu.base_url + path, max_retries=1, **settings
        )
    )


def responses(emu: Emulator, model: str = "gpt-4.1") -> Any:
    return opened(
        openai_responses.create_client(
            model, key="sk-test", base_url=emu.base_url + "/v1", max_retries=1, profile="openai"
        )
    )


def claude(emu: Emulator, model: str = "claude-sonnet-4-5") -> Any:
    return opened(anthropic.create_client(model, key="sk-ant-test", base_url=emu.base_url, max_retries=1))


def gem(emu: Emulator, model: str = "gemini-2.5-flash") -> Any:
    return gemini_client(emu, model)


def converse(emu: Emulator, model: str = "anthropic.claude-sonnet-4-5-20250929-v1:0") -> Any:
    return opened(bedrock_client(emu, model))


def served(files: dict[str, tuple[bytes, str]], path: str, data: bytes, kind: str) -> str:
    files[path] = (data, kind)
    return files[""][1] + path


async def test_openai_chat_image_url_and_pdf_file_parts(emu: Emulator, file_server: Any) -> None:
    emu.add("ok")
    client = chat(emu)
    client.allow_private_urls = True  # the test's file server is on loopback
    url = served(file_server, "/report.pdf", PDF, "application/pdf")
    await client.get_response(
        ask(
            image(),
            pdf(),
            UriContent("https://img.test/dog.jpg", "image/jpeg"),
            UriContent(url, "application/pdf", name="report.pdf"),
        )
    )
    parts = emu.requests[0].body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "file", "image_url", "file"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert parts[3]["image_url"] == {"url": "https://img.test/dog.jpg"}  # OpenAI fetches images
    assert emu.requests[0].media == [
        RecordedMedia("image_url", "image/png", PNG),
        RecordedMedia("file", "application/pdf", PDF, name="Invoice #7.pdf"),
        RecordedMedia("image_url", None, url="https://img.test/dog.jpg"),
        # Chat Completions takes no file URL: chainform downloaded it and sent it inline
        RecordedMedia("file", "application/pdf", PDF, name="report.pdf"),
    ]


async def test_openai_responses_input_image_and_input_file(emu: Emulator) -> None:
    emu.add("ok")
    await responses(emu).get_response(
        ask(image(), pdf(), UriContent("https://docs.test/a.pdf", "application/pdf"))
    )
    content = emu.requests[0].body["input"][0]["content"]
    assert content[1]["type"] == "input_image" and content[1]["detail"] == "auto"
    assert content[3] == {"type": "input_file", "file_url": "https://docs.test/a.pdf"}
    assert emu.requests[0].media == [
        RecordedMedia("input_image", "image/png", PNG),
        RecordedMedia("input_file", "application/pdf", PDF, name="Invoice #7.pdf"),
        RecordedMedia("input_file", None, url="https://docs.test/a.pdf"),
    ]


async def test_anthropic_image_and_document_blocks(emu: Emulator) -> None:
    emu.add("ok")
    text = DataContent(b"line one\nline two\n", "text/plain", name="notes.txt")
    await claude(emu).get_response(
        ask(image(), pdf(), text, UriContent("https://docs.test/a.pdf", "application/pdf"))
    )
    blocks = emu.requests[0].body["messages"][0]["content"]
    assert blocks[1]["source"]["type"] == "base64" and blocks[1]["source"]["media_type"] == "image/png"
    assert blocks[2]["type"] == "document" and blocks[2]["title"] == "Invoice #7.pdf"
    assert blocks[4]["source"] == {"type": "url", "url": "https://docs.test/a.pdf"}
    assert emu.requests[0].media == [
        RecordedMedia("image", "image/png", PNG),
        RecordedMedia("document", "application/pdf", PDF, name="Invoice #7.pdf"),
        RecordedMedia("document", "text/plain", b"line one\nline two\n", name="notes.txt"),
        RecordedMedia("document", None, url="https://docs.test/a.pdf"),
    ]


async def test_gemini_inline_data_and_file_data(emu: Emulator) -> None:
    emu.add("ok")
    await gem(emu).get_response(
        ask(image(), pdf(), UriContent("https://docs.test/a.pdf"))
    )  # type from the path
    assert emu.requests[0].media == [
        RecordedMedia("inline_data", "image/png", PNG),
        RecordedMedia("inline_data", "application/pdf", PDF),
        RecordedMedia("file_data", "application/pdf", url="https://docs.test/a.pdf"),
    ]


async def test_gemini_2_0_takes_no_url_so_it_is_downloaded(emu: Emulator, file_server: Any) -> None:
    emu.add("ok")
    client = gem(emu, "gemini-2.0-flash")
    client.allow_private_urls = True
    url = served(file_server, "/scan.png", PNG, "image/png")
    await client.get_response(ask(UriContent(url, "image/png")))
    assert emu.requests[0].media == [RecordedMedia("inline_data", "image/png", PNG)]


async def test_bedrock_image_and_document_blocks_with_names_and_text(emu: Emulator, file_server: Any) -> None:
    emu.add("ok")
    client = converse(emu)
    client.allow_private_urls = True
    url = served(file_server, "/other.pdf", PDF, "application/pdf")
    # a turn of documents alone: Converse wants a text block beside them, which chainform adds
    turn = [Message.user([image(), pdf(), pdf("Invoice #7.pdf"), UriContent(url, name="Q3 report?.pdf")])]
    await client.get_response(turn)
    blocks = emu.requests[0].body["messages"][0]["content"]
    assert blocks[0]["image"]["format"] == "png"
    assert [b["document"]["name"] for b in blocks if "document" in b] == [
        "Invoice 7",
        "Invoice 7 (2)",
        "Q3 report",
    ]
    assert [b["document"]["format"] for b in blocks if "document" in b] == ["pdf", "pdf", "pdf"]
    assert {"text": DOCUMENT_TEXT} in blocks
    assert [(m.kind, m.media_type, m.data) for m in emu.requests[0].media] == [
        ("image", "image/png", PNG),
        ("document", "pdf", PDF),
        ("document", "pdf", PDF),
        ("document", "pdf", PDF),
    ]


async def test_compat_server_images_as_data_urls_and_pdfs_refused_unconverted(
    emu: Emulator, file_server: Any
) -> None:
    emu.add("ok")
    client = chat(emu, "llava", provider="ollama")
    client.allow_private_urls = True
    url = served(file_server, "/photo.png", PNG, "image/png")
    await client.get_response(ask(image(), UriContent(url, "image/png")))
    # a compatible server is not relied on to fetch a URL: downloaded, sent as a data URL
    assert emu.requests[0].media == [RecordedMedia("image_url", "image/png", PNG)] * 2
    with pytest.raises(
        AttachmentError, match=r"ollama/llava cannot read application/pdf; it accepts image/gif"
    ):
        await client.get_response(ask(pdf()))
    assert len(emu.requests) == 1  # nothing sent


async def test_azure_ai_vision_family_and_text_only_family(emu: Emulator) -> None:
    emu.add("ok")
    key = {"path": ""}  # Foundry's endpoint gets /openai/v1 added
    await chat(emu, "Llama-4-Maverick-17B-128E-Instruct-FP8", provider="azure-ai", **key).get_response(
        ask(image())
    )
    assert emu.requests[0].media == [RecordedMedia("image_url", "image/png", PNG)]
    with pytest.raises(
        AttachmentError, match="azure-ai/Mistral-Large-2411 cannot read image/png; it accepts text only"
    ):
        await chat(emu, "Mistral-Large-2411", provider="azure-ai", **key).get_response(ask(image()))


async def test_limits_checked_before_anything_is_sent(emu: Emulator) -> None:
    big = DataContent(b"\x89PNG" + bytes(5_000_000), "image/png", name="huge.png")
    with pytest.raises(
        AttachmentError,
        match=r"huge.png: 5,000,004 bytes of image/png is over anthropic/claude-sonnet-4-5's limit of 5,000,000",
    ):
        await claude(emu).get_response(ask(big))
    six = [pdf(f"doc{n}.pdf") for n in range(6)]
    with pytest.raises(AttachmentError, match=r"6 attachments of .*takes at most 5 in one request"):
        await converse(emu).get_response(ask(*six))
    with pytest.raises(AttachmentError, match="private, loopback or reserved"):
        await converse(emu).get_response(ask(UriContent("http://127.0.0.1:9/x.png", "image/png")))
    assert emu.requests == []


async def test_retried_request_resends_the_whole_spliced_body(emu: Emulator) -> None:
    emu.add(Fault(500), "ok")
    await chat(emu).get_response(ask(pdf()))
    assert [r.media for r in emu.requests] == [
        [RecordedMedia("file", "application/pdf", PDF, name="Invoice #7.pdf")]
    ] * 2


async def test_emulator_refuses_what_converse_refuses(emu: Emulator) -> None:
    """The emulator plays Converse's own checks: a document name with other characters is a 400."""
    sdk = converse(emu).sdk
    document = {"document": {"format": "pdf", "name": "bad/name", "source": {"bytes": PDF}}}
    with pytest.raises(Exception, match=r"ValidationException.*document\.name"):
        sdk.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "x"}, document]}])
    document["document"]["name"] = "fine name"
    with pytest.raises(Exception, match="needs a text block"):
        sdk.converse(modelId="m", messages=[{"role": "user", "content": [document]}])


async def test_one_content_to_two_providers_gets_each_ones_base64(emu: Emulator) -> None:
    """Gemini's SDK writes URL-safe base64 and OpenAI wants the standard alphabet: a content sent
    to both gets each its own (the random PDF has both + and / in its base64)."""
    emu.add("ok", "ok")
    document = pdf()
    await gem(emu).get_response(ask(document))
    await chat(emu).get_response(ask(document))
    assert [r.media[0].data for r in emu.requests] == [PDF, PDF]


def test_profiles_say_what_each_provider_takes() -> None:
    """The MediaSupport data behind the table in docs/providers.md."""
    from chainform.clients.profiles.anthropic import KNOWN_MODELS as CLAUDE
    from chainform.clients.profiles.bedrock import KNOWN_MODELS as BEDROCK
    from chainform.clients.profiles.gemini import KNOWN_MODELS as GEMINI
    from chainform.clients.profiles.openai import openai_profile, responses_profile

    pdf_type = "application/pdf"
    chat, azure = openai_profile("gpt-4.1").media, openai_profile("gpt-4.1", "azure").media
    assert chat.accepts(pdf_type) and not chat.fetches(pdf_type) and chat.fetches("image/png")
    assert responses_profile(openai_profile("gpt-4.1")).media.fetches(pdf_type)
    assert not azure.accepts(pdf_type) and responses_profile(
        openai_profile("gpt-4.1", "azure")
    ).media.accepts(pdf_type)
    assert CLAUDE["claude-sonnet-4-5"].media.limit("image/png") == 5_000_000
    assert GEMINI["gemini-2.5-flash"].media.fetches(pdf_type) and not GEMINI[
        "gemini-2.0-flash"
    ].media.fetches(pdf_type)
    claude = BEDROCK["anthropic.claude-sonnet-4-5-20250929-v1:0"].media
    assert not claude.url_types and sorted(n for _, n in claude.count_limits) == [5, 20]
    assert not BEDROCK["amazon.nova-micro-v1:0"].media.types


@pytest.mark.unit
def test_each_sdk_client_splices_its_own_tokens_until_the_content_is_gone() -> None:
    """The token table lives on the splicer of the SDK client that sends it (no module global): a
    token means nothing to another client's splicer, and it is forgotten with its content."""
    import base64
    import gc

    from chainform.clients._splice import Splicer

    mine, other = Splicer(), Splicer()
    document = pdf()
    body = b'{"data": "' + mine.token(document).encode() + b'"}'
    assert mine.splice_bytes(body) == b'{"data": "' + base64.b64encode(PDF) + b'"}'
    with pytest.raises(AttachmentError, match="released before its request was sent"):
        other.splice_bytes(body)
    del document
    gc.collect()
    with pytest.raises(AttachmentError, match="released before its request was sent"):
        mine.splice_bytes(body)


async def test_two_adapters_sending_at_once_each_splice_their_own_files(emu: Emulator) -> None:
    import asyncio

    emu.add("ok", "ok")
    other = PDF[::-1]
    await asyncio.gather(
        chat(emu).get_response(ask(pdf())),
        claude(emu).get_response(ask(DataContent(other, "application/pdf", name="b.pdf"))),
    )
    assert sorted(r.media[0].data for r in emu.requests) == sorted([PDF, other])
