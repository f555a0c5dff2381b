"""`-a/--attachment PATH|URL|-`, `--at PATH MIME`, `--no-convert`, `--attachments-store` and the
limit flags `--max-pages`, `--max-pixels`, `--ocr-timeout` (the last five shared with `map --attach
FIELD`): files for the model, checked here before any model call or log row.

A path is checked for what can be told without reading it whole (there, a file, not empty, a type
its bytes and name agree on); `-` reads stdin's bytes as one attachment (the prompt is then the
argument). What the answering model can take, and converting what it cannot, is the chain's step
(chain/_attachments.py): its errors are the same typed AttachmentError, one `Error:` line, exit 2.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from chainform.cli._options import Seconds

if TYPE_CHECKING:
    from chainform.types import Attachment, ConversionLimits

F = TypeVar("F", bound=Callable[..., Any])

STORE_HELP = "How the log keeps attached files: their bytes (once each), or only their path or URL."


def conversion_options(function: F) -> F:
    """`--no-convert`, `--attachments-store`, `--allow-private-urls`: shared by prompt and map."""
    for option in reversed(
        [
            click.option(
                "--no-convert",
                is_flag=True,
                help="Refuse a file the model cannot read instead of converting it to text locally.",
            ),
            click.option(
                "--attachments-store",
                type=click.Choice(["copy", "ref"]),
                default="copy",
                show_default=True,
                help=STORE_HELP,
            ),
            click.option(
                "--allow-private-urls",
                is_flag=True,
                help="Download attached URLs on private or loopback addresses too.",
            ),
        ]
    ):
        function = option(function)
    return function


_LIMIT_OPTIONS = (
    click.option(
        "--max-pages",
        type=click.IntRange(min=1),
        help="Refuse to convert a document of more pages (PDF pages, TIFF or GIF frames). [default: 100]",
    ),
    click.option(
        "--max-pixels",
        type=click.IntRange(min=1),
        help="Pixels of one page or image to OCR: a PDF page is rendered smaller, an image refused. "
        "[default: 25000000]",
    ),
    click.option(
        "--ocr-timeout",
        type=Seconds(min=0, min_open=True),
        metavar="SECONDS",
        help="Stop converting a document after this long (checked between pages). [default: 300]",
    ),
)


def limit_options(function: F) -> F:
    """`--max-pages`, `--max-pixels`, `--ocr-timeout` (prompt and map), handed to the command as
    one `conversion_limits` (a `ConversionLimits`, None without any; a flag left out keeps its default)."""

    @functools.wraps(function)
    def with_limits(
        *args: Any,
        max_pages: int | None = None,
        max_pixels: int | None = None,
        ocr_timeout: float | None = None,
        **kwargs: Any,
    ) -> Any:
        limits = conversion_limits(max_pages, max_pixels, ocr_timeout)
        return function(*args, conversion_limits=limits, **kwargs)

    wrapped = cast(F, with_limits)
    for option in reversed(_LIMIT_OPTIONS):
        wrapped = option(wrapped)
    return wrapped


def conversion_limits(
    max_pages: int | None, max_pixels: int | None, ocr_timeout: float | None
) -> ConversionLimits | None:
    """The limit flags as a `ConversionLimits` (its defaults, which the help says, for those left
    out); None when none is given, as everywhere: the defaults apply."""
    from chainform.types import ConversionLimits

    if max_pages is None and max_pixels is None and ocr_timeout is None:
        return None
    defaults = ConversionLimits()
    return ConversionLimits(
        defaults.max_pages if max_pages is None else max_pages,
        defaults.max_pixels if max_pixels is None else max_pixels,
        defaults.ocr_seconds if ocr_timeout is None else ocr_timeout,
    )


def attachment_options(function: F) -> F:
    """The prompt command's attachment options."""
    function = limit_options(conversion_options(function))
    function = click.option(
        "--at",
        "typed_attachments",
        type=(str, str),
        multiple=True,
        metavar="PATH MIME",
        help="Attach PATH as content type MIME (e.g. --at scan.bin application/pdf); repeatable.",
    )(function)
    return click.option(
        "-a",
        "--attachment",
        "attachment_values",
        multiple=True,
        metavar="PATH|URL|-",
        help="Attach a file, a URL or stdin's bytes (-); repeatable. See docs/attachments.md.",
    )(function)


@dataclass
class CliAttachments:
    """The attachments of one command line and how they are to be sent and logged."""

    attachments: list[Attachment] = field(default_factory=list)
    convert: bool = True
    store: str = "copy"
    allow_private_urls: bool = False
    reads_stdin: bool = False

    def chain_kwargs(self) -> dict[str, Any]:
        if not self.attachments:
            return {}
        return {
            "attachments": self.attachments,
            "convert": self.convert,
            "attachments_store": self.store,
            "allow_private_urls": self.allow_private_urls,
        }


def attachments_from_cli(
    prompt: str | None,
    *,
    attachment_values: tuple[str, ...] = (),
    typed_attachments: tuple[tuple[str, str], ...] = (),
    no_convert: bool = False,
    attachments_store: str = "copy",
    allow_private_urls: bool = False,
    conversion_limits: ConversionLimits | None = None,
) -> CliAttachments:
    """Each `-a` and `--at`, checked as far as it can be without the model (nothing is read whole),
    its conversion bounded by `conversion_limits` (the limit flags)."""
    from chainform.types import Attachment

    limits = conversion_limits

    out = CliAttachments(
        convert=not no_convert, store=attachments_store, allow_private_urls=allow_private_urls
    )
    if attachment_values.count("-") > 1:
        raise click.UsageError("-a - (stdin) can be given once")
    for value in attachment_values:
        if value == "-":
            if prompt is None:
                raise click.UsageError("with -a - the file comes on stdin: give the prompt as an argument")
            out.attachments.append(_checked(Attachment(content=_stdin_bytes(), name="stdin", limits=limits)))
            out.reads_stdin = True
        elif "://" in value or value.startswith("data:"):
            out.attachments.append(_checked(Attachment(url=value, limits=limits)))
        else:
            out.attachments.append(_checked(Attachment(path=value, limits=limits)))
    for path, mime in typed_attachments:
        if "/" not in mime:
            raise click.BadParameter(f"{mime!r} is not a content type such as image/png", param_hint="--at")
        out.attachments.append(_checked(Attachment(path=path, type=mime, limits=limits)))
    return out


def _stdin_bytes() -> bytes:
    """Stdin's bytes, at most MAX_READ_BYTES: an endless pipe is refused, never read to MemoryError."""
    from chainform.errors import AttachmentError
    from chainform.types._attachment import MAX_READ_BYTES

    stream = getattr(sys.stdin, "buffer", None)  # None: a text stream (a test runner's), read as UTF-8
    data = (
        stream.read(MAX_READ_BYTES + 1) if stream is not None else sys.stdin.read(MAX_READ_BYTES + 1).encode()
    )
    if len(data) > MAX_READ_BYTES:
        raise AttachmentError(f"stdin: more than {MAX_READ_BYTES:,} bytes (the limit of one attachment)")
    return data


def _checked(attachment: Attachment) -> Attachment:
    """Fail now on what needs no model: a missing, empty or unreadable file, a directory, an
    unknown or contradicted type (a URL's type is told once downloaded)."""
    from chainform.errors import AttachmentError

    if attachment.is_remote:
        return attachment
    if not attachment.size():
        raise AttachmentError(f"{attachment.name}: is empty")
    attachment.media_type()
    return attachment
