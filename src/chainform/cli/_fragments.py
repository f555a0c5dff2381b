"""Fragments (as llm's `-f`): text attached to a prompt from a file, a URL or the log, kept once in
the log by the sha256 of its text (store/_fragments.py); `chainform fragments list/show`.

`-f PATH|URL|ID` adds the text before the prompt, `--sf` to the system prompt. A path must be a
regular file of UTF-8 text of at most MAX_FRAGMENT_BYTES (a directory, a FIFO or a device is
refused without being opened for reading); a URL is downloaded with the attachment downloader's
guards (documents/_fetch.py: http(s) only, the size cap read as it streams, every redirect checked
again, private and loopback addresses refused unless `--allow-private-urls`); an ID is a logged
fragment's sha256 or a prefix of it (at least 4 hex digits).
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

import click

from chainform.cli._group import InputError
from chainform.cli._output import echo_json, echo_untrusted

if TYPE_CHECKING:
    from chainform.store import Fragment, Store

MAX_FRAGMENT_BYTES = 1_000_000
"""The most bytes one fragment may have (a file's size, a download's body)."""

_ID = re.compile(r"[0-9a-fA-F]{4,64}")


class FragmentError(InputError):
    """A fragment that cannot be used: one `Error:` line, exit 2, before any call."""


def resolve_fragment(value: str, store: Store | None, *, allow_private_urls: bool = False) -> Fragment:
    """The fragment `value` names: a file, an http(s) URL, or the id (prefix) of a logged one."""
    from chainform.errors import AttachmentError
    from chainform.keys import redact
    from chainform.store import Fragment, StoreError, fragment_id

    try:
        if value.startswith(("http://", "https://")):
            data, source = _download(value, allow_private_urls), value
        elif os.path.lexists(os.path.expanduser(value)):
            data, source = _read_file(value), os.path.abspath(os.path.expanduser(value))
        elif _ID.fullmatch(value):
            found = store.get_fragment(value) if store is not None else None
            if found is None:
                raise FragmentError(
                    f"no fragment {value!r}: no such file, and no logged fragment has that id"
                )
            return found
        else:
            raise FragmentError(
                f"no fragment {value!r}: not a file, an http(s) URL or the id of a logged fragment "
                "(`chainform fragments list`)"
            )
    except (AttachmentError, StoreError) as exc:
        raise FragmentError(f"fragment {exc}") from None
    shown = redact(value)  # a URL's user:password never reaches an error line
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FragmentError(f"fragment {shown}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise FragmentError(f"fragment {shown}: it is empty")
    return Fragment(fragment_id(text), text, source)


def fragment_value(value: str) -> str:
    """A `-f` value as a template keeps it: a file by its absolute path, a URL or an id as it is."""
    path = os.path.expanduser(value)
    if not value.startswith(("http://", "https://")) and os.path.lexists(path):
        return os.path.abspath(path)
    return value


def _read_file(value: str) -> bytes:
    from chainform.types._attachment import read_regular

    path = os.path.expanduser(value)
    try:
        found = os.stat(path)
    except OSError as exc:
        raise FragmentError(f"fragment {value}: cannot read it ({exc.strerror})") from None
    if stat.S_ISDIR(found.st_mode):
        raise FragmentError(f"fragment {value}: is a directory; give a file")
    if not stat.S_ISREG(found.st_mode):
        raise FragmentError(
            f"fragment {value}: is not a regular file (a FIFO, device or socket); give a file"
        )
    if found.st_size > MAX_FRAGMENT_BYTES:
        raise FragmentError(
            f"fragment {value}: {found.st_size:,} bytes is over the limit of {MAX_FRAGMENT_BYTES:,}"
        )
    return read_regular(path, MAX_FRAGMENT_BYTES, value)  # checked again on the open handle


def _download(url: str, allow_private_urls: bool) -> bytes:
    from chainform.documents import fetch
    from chainform.types import Attachment

    fetched = fetch(Attachment(url=url), max_bytes=MAX_FRAGMENT_BYTES, allow_private=allow_private_urls)
    return fetched.read(MAX_FRAGMENT_BYTES)


@click.group(name="fragments", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Output every fragment as JSON.")
@click.pass_context
def fragments_command(ctx: click.Context, as_json: bool) -> None:
    """Fragments logged so far (`-f`/`--sf`), newest first; also `fragments list`."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(fragments_list, as_json=as_json)


@fragments_command.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Output every fragment as JSON.")
def fragments_list(as_json: bool = False) -> None:
    """List logged fragments: id, source, size, how many calls sent it."""
    from chainform.store import Store

    found = Store().list_fragments()
    if as_json:
        echo_json(
            [
                {
                    "id": f.sha256,
                    "source": f.source,
                    "chars": len(f.text),
                    "calls": calls,
                    "created_at": f.created_at,
                }
                for f, calls in found
            ]
        )
        return
    for fragment, calls in found:
        echo_untrusted(  # a source is a path or URL as given: it may come from a document
            f"{fragment.sha256[:12]}  {fragment.source or '-'}  {len(fragment.text):,} chars  {calls} call(s)"
        )


@fragments_command.command(name="show")
@click.argument("fragment_id")
def fragments_show(fragment_id: str) -> None:
    """Print the text of the fragment FRAGMENT_ID (its sha256 or a prefix of at least 4 hex digits)."""
    from chainform.store import Store, StoreError

    if not _ID.fullmatch(fragment_id):
        raise FragmentError(f"{fragment_id!r} is not a fragment id (4 to 64 hex digits)")
    try:
        found = Store().get_fragment(fragment_id)
    except StoreError as exc:
        raise FragmentError(str(exc)) from None
    if found is None:
        raise FragmentError(f"no logged fragment has the id {fragment_id!r} (`chainform fragments list`)")
    echo_untrusted(found.text, nl=not found.text.endswith("\n"))
