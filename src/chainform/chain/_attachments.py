"""A chain's attachments made ready for its model, before anything is sent.

The prompt a user gives may mix text, content parts and `Attachment`s (`prompt=[...]`, or
`attachments=[...]` beside it). Before the first call, each attachment is checked against the
answering model's profile (`ModelProfile.media`) and sent as it is, or converted locally
(chainform.documents: PDF text, OCR, text files) unless `convert=False`; anything that cannot be
sent is an `AttachmentError` and no call is made. The engine never sees an `Attachment`: the
chain starts from the prepared message, and the conversions ride on the chain's events (`--td`),
its result (`ChainResult.attachments`) and its log rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chainform.chain._events import ChainEvent, EventLog
from chainform.documents import Conversion, prepare_parts
from chainform.errors import AttachmentError
from chainform.types import (
    Content,
    DataContent,
    FunctionResultContent,
    Message,
    ModelProfile,
    TextContent,
    UriContent,
)
from chainform.types._attachment import Attachment

logger = logging.getLogger("chainform.attachments")


@dataclass
class PendingPrompt:
    """A prompt whose attachments are not prepared yet: its parts in order."""

    items: list[str | Attachment | Content]
    convert: bool = True
    allow_private_urls: bool = False
    store: str = "copy"  # how the log keeps the files: "copy" (their bytes) or "ref" (path or URL)

    @property
    def text(self) -> str:
        """The prompt's own text (what the log's prompt column shows, not the converted files)."""
        return "\n".join(item for item in self.items if isinstance(item, str))


@dataclass
class Prepared:
    """What the model receives, and each attachment with how it got there (for the log)."""

    message: Message
    attachments: list[tuple[Attachment, Conversion]] = field(default_factory=list)
    text: str = ""  # the prompt's own text (the log's prompt column: not the converted files)
    store: str = "copy"  # how the log keeps the files

    @property
    def conversions(self) -> list[Conversion]:
        return [conversion for _, conversion in self.attachments]


PromptInput = str | Message | Attachment | Sequence[str | Attachment | Content] | None
"""What `model.chain(prompt)` takes: text, a message, or parts (text, content, attachments)."""


def user_prompt(
    prompt: PromptInput,
    attachments: Sequence[Any] | None,
    *,
    convert: bool,
    allow_private_urls: bool = False,
    store: str = "copy",
) -> Message | PendingPrompt | None:
    """The user message as it is sent; a PendingPrompt when it holds an attachment (prepared for
    the answering model when the chain starts)."""
    if store not in ("copy", "ref"):
        raise ValueError(f"attachments_store is 'copy' or 'ref', not {store!r}")
    extra = list(attachments or ())
    for item in extra:
        if not isinstance(item, Attachment):
            raise AttachmentError(
                f"attachments= takes chainform.Attachment objects, not {type(item).__name__} "
                "(e.g. cf.Attachment(path='receipt.png'))"
            )
    if isinstance(prompt, Message):
        if extra:
            raise AttachmentError("give attachments inside the Message's contents or with a text prompt")
        return prompt
    if prompt is None:
        items: list[Any] = []
    elif isinstance(prompt, str | Attachment):
        items = [prompt]
    else:
        items = list(prompt)
    items += extra
    if not any(isinstance(item, Attachment) for item in items):
        if prompt is None:
            return None
        return Message.user(prompt if isinstance(prompt, str) else [_part(item) for item in items])
    return PendingPrompt(items, convert=convert, allow_private_urls=allow_private_urls, store=store)


def _part(item: Any) -> Content:
    return TextContent(item) if isinstance(item, str) else item


async def prepare_prompt(pending: PendingPrompt, profile: ModelProfile, events: EventLog) -> Prepared:
    """The user message `profile`'s model can take; every check and conversion (downloads, OCR)
    runs in a thread, before any call. Each conversion is an `attachment` event and a log line."""
    parts, conversions = await _in_thread(
        prepare_parts,
        pending.items,
        profile,
        convert=pending.convert,
        allow_private_urls=pending.allow_private_urls,
    )
    attachments = [item for item in pending.items if isinstance(item, Attachment)]
    conversions = [
        replace(c, sha256=None if a.is_remote else a.sha256())
        for a, c in zip(attachments, conversions, strict=True)
    ]
    for conversion in conversions:
        events.append(ChainEvent("attachment", text=conversion.summary(), value=conversion))
        if conversion.method != "as is":
            logger.info("%s (for %s/%s)", conversion.summary(), profile.provider, profile.name)
    pairs = list(zip(attachments, conversions, strict=True))
    return Prepared(Message.user(_joined(parts)), pairs, pending.text, pending.store)


async def _in_thread(
    function: Callable[..., tuple[list[Content], list[Conversion]]], *args: Any, **kwargs: Any
) -> tuple[list[Content], list[Conversion]]:
    """`prepare_parts` on a thread of its own: a cancelled chain sets its stop, and a program that
    ends (Ctrl-C) has ended its main thread by the time it waits for this one, so a download or
    an OCR of many pages ends at its next chunk or page instead of running on (chainform.documents
    checks both between pages). Not the loop's executor: the program waits for that one's threads
    before its main thread ends."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[list[Content], list[Conversion]]] = loop.create_future()
    stop = threading.Event()
    # the caller's context goes with the work, as asyncio.to_thread's does (a program's own logging
    # filters or tracing read it); chainform keeps no run data in one
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def work() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (
                context.run(function, *args, stop=stop, **kwargs),
                None,
            )
        except BaseException as exc:  # handed to the awaiting chain
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    # not a daemon (a thread started from the loop's daemon thread would be one): the program waits for
    # it at exit, and it ends at its next page; killed mid-OCR instead, onnxruntime aborts the process
    threading.Thread(target=work, name="chainform-attachments", daemon=False).start()
    try:
        return await done
    except asyncio.CancelledError:
        stop.set()
        raise


def _joined(parts: list[Content]) -> list[Content]:
    """Neighbouring text parts as one, a blank line between them: a model that reads text only
    gets the question and each converted file as paragraphs, not run together."""
    out: list[Content] = []
    for part in parts:
        if isinstance(part, TextContent) and out and isinstance(out[-1], TextContent):
            out[-1] = TextContent(f"{out[-1].text.rstrip()}\n\n{part.text.lstrip()}")
        else:
            out.append(part)
    return out


async def prepare_request(
    pending: PendingPrompt | None, profile: ModelProfile, events: EventLog
) -> Prepared | None:
    """Prepare a chain's pending prompt (when it has one): its message becomes the spec's prompt.
    On failure the chain's events are closed (no call was made) and the error raised."""
    if pending is None:
        return None
    try:
        return await prepare_prompt(pending, profile, events)
    except BaseException:
        events.close()
        raise


async def tool_files(
    results: list[FunctionResultContent], profile: ModelProfile, events: EventLog
) -> Message | None:
    """Tool results that hold Attachments (`cf.Attachment`, or a list of text and Attachments):
    a file the model reads is sent in a user message after the tool turn (tool results are text
    on most wires), its result saying so; any other is converted locally into the result's text.
    A file that cannot be sent at all becomes a note in the result: the chain goes on."""
    shown: list[Content] = []
    for result in results:
        items = _files_in(result.result)
        if items is None:
            continue
        texts: list[str] = []
        for item in items:
            if not isinstance(item, Attachment):
                texts.append(
                    item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str)
                )
                continue
            try:
                parts, conversions = await _in_thread(prepare_parts, [item], profile)
            except AttachmentError as exc:
                texts.append(f"[{item.name}: not sent: {exc}]")
                continue
            events.append(ChainEvent("attachment", text=conversions[0].summary(), value=conversions[0]))
            if isinstance(parts[0], TextContent):
                texts.append(parts[0].text)
            else:
                texts.append(f"[{item.name} ({conversions[0].media_type}): in the next message]")
                shown.append(parts[0])
        result.result = "\n".join(texts)
    return Message.user([TextContent("Files the tools returned:"), *shown]) if shown else None


def _files_in(value: Any) -> list[Any] | None:
    if isinstance(value, Attachment):
        return [value]
    if isinstance(value, list | tuple) and any(isinstance(v, Attachment) for v in value):
        return list(value)
    return None


async def for_profile(transcript: list[Message], profile: ModelProfile, events: EventLog) -> None:
    """Files in the transcript's user messages that `profile`'s model cannot read, converted in
    place: a fallback model (chain/_fallback.py) may read less than the model the prompt was
    prepared for. AttachmentError when one cannot be converted (nothing is sent)."""
    for index, message in enumerate(transcript):
        if message.role != "user" or not any(_unreadable(c, profile) for c in message.contents):
            continue
        parts: list[Content] = []
        for content in message.contents:
            if not _unreadable(content, profile):
                parts.append(content)
                continue
            attachment = _as_attachment(content)
            converted, conversions = await _in_thread(prepare_parts, [attachment], profile)
            events.append(ChainEvent("attachment", text=conversions[0].summary(), value=conversions[0]))
            parts.extend(converted)
        transcript[index] = copy.copy(message)  # the calls made before keep what they sent
        transcript[index].contents = _joined(parts)


def _unreadable(content: Content, profile: ModelProfile) -> bool:
    if not isinstance(content, DataContent | UriContent) or content.media_type is None:
        return False
    return not profile.media.accepts(content.media_type)


def _as_attachment(content: Content) -> Attachment:
    name = getattr(content, "name", None)  # the file name the part carries (clients' wire side)
    if isinstance(content, DataContent):
        return Attachment(content=content.data, type=content.media_type, name=name)
    assert isinstance(content, UriContent)
    return Attachment(url=content.uri, type=content.media_type, name=name)
