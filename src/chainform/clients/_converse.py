"""Bedrock Converse's pieces beside its wire mapping (bedrock.py), kept apart so each module stays
small: the boto3 client (`boto3_client`), and image and document blocks: formats by media type,
and document names in the characters Converse allows (letters, digits, single spaces, hyphens,
parentheses, square brackets), unique in a request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chainform import types
from chainform.clients._hooks import SdkHooks, attach
from chainform.clients.profiles.bedrock import PROVIDER
from chainform.errors import MissingKeyError, UnsupportedOptionError

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_OOXML = "application/vnd.openxmlformats-officedocument."
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/markdown": "md",
    "text/html": "html",
    "application/msword": "doc",
    _OOXML + "wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    _OOXML + "spreadsheetml.sheet": "xlsx",
}
_NAME_REFUSED = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
DOCUMENT_TEXT = "The attached document."
"""The text block Converse wants beside a document, for a turn that has none."""


def media_block(
    content: types.DataContent, media: Callable[[types.DataContent], bytes], names: set[str]
) -> dict[str, Any]:
    """An image or document block; `media` gives the bytes (a placeholder spliced when signed),
    `names` the document names the request already uses."""
    kind, source = content.media_type, {"bytes": media(content)}
    if kind in IMAGE_FORMATS:
        return {"image": {"format": IMAGE_FORMATS[kind], "source": source}}
    if kind not in DOCUMENT_FORMATS:
        raise UnsupportedOptionError(f"Bedrock Converse cannot take {kind!r} data", provider=PROVIDER)
    name = document_name(content.name, names)
    return {"document": {"format": DOCUMENT_FORMATS[kind], "name": name, "source": source}}


def document_name(name: str | None, taken: set[str]) -> str:
    """The file name without its extension in the characters Converse allows, unique in `taken`."""
    stem = (name or "").rsplit(".", 1)[0]
    base = " ".join(_NAME_REFUSED.sub(" ", stem).split())[:180] or "document"
    chosen, n = base, 1
    while chosen in taken:
        n += 1
        chosen = f"{base} ({n})"
    taken.add(chosen)
    return chosen


def boto3_client(
    boto3: Any,
    key: str | None,
    base_url: str | None,
    max_retries: int,
    timeout: types.Timeout,
    *,
    region: str | None = None,
    **client_kwargs: Any,
) -> Any:
    """A boto3 `bedrock-runtime` client. `key` may be "ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]"; other
    keyword arguments (aws_access_key_id, profile_name, ...) go to boto3."""
    from botocore.config import Config

    session_kwargs = {k: client_kwargs.pop(k) for k in ("profile_name",) if k in client_kwargs}
    if key:
        parts = key.split(":")
        if len(parts) not in (2, 3):
            raise MissingKeyError(
                "a Bedrock key is 'ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]'; for a Bedrock API "
                "key set AWS_BEARER_TOKEN_BEDROCK instead"
            )
        client_kwargs.setdefault("aws_access_key_id", parts[0])
        client_kwargs.setdefault("aws_secret_access_key", parts[1])
        if len(parts) == 3:
            client_kwargs.setdefault("aws_session_token", parts[2])
    from chainform.keys import remember

    remember(client_kwargs.get("aws_secret_access_key"), client_kwargs.get("aws_session_token"))
    session = boto3.Session(**session_kwargs)
    config = Config(
        retries={"total_max_attempts": max_retries + 1, "mode": "standard"},
        connect_timeout=timeout.connect,
        read_timeout=timeout.read,
    )
    client = session.client(
        "bedrock-runtime",
        region_name=region or session.region_name or "us-east-1",
        endpoint_url=base_url,
        config=config,
        **client_kwargs,
    )
    # inline data spliced into the body before it is signed (clients/_splice.py)
    hooks = SdkHooks()
    client.meta.events.register("before-sign.bedrock-runtime", hooks.splicer.botocore_hook)
    hooks.clocks.botocore(client.meta.events, "bedrock-runtime")  # each attempt: the call's idle clock
    return attach(client, hooks)
