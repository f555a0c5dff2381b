"""The log of one chain: what its calls share, and the commit of each call as it is handed over.

The engine builds each finished call's CallRecord (chain/_calls.py) once its tool results are
known, that is when the next call starts or the chain ends, and awaits `ChainLogger.log`: the call
is committed on a worker thread (the event loop goes on meanwhile) before the next call is sent.
So a chain killed midway keeps every call that finished, and a chain returns once all of its calls
are in the log's tables. Failures only warn: the log must never cost the user their answer.

A caller that runs many chains (model.map) names each chain's conversation through `naming`: the
name rides on the chain's own rows.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainform.store._attachments import Attached, url_key
from chainform.store._rows import schema_id
from chainform.store._serialize import to_jsonable

if TYPE_CHECKING:
    from chainform.store._rows import CallRecord
    from chainform.store._store import Store
    from chainform.types import ChatOptions


naming: ContextVar[tuple[str, str] | None] = ContextVar("chainform_conversation_name", default=None)
"""(conversation id, name) for the chain started in this context; a subagent's conversation
(another id) is not named by its parent's entry."""


class ChainLogger:
    """Where one chain's calls are logged, and the fields every one of its records shares."""

    def __init__(
        self,
        store: Store,
        *,
        conversation_id: str,
        chain_id: str,
        model: str,
        prompt: str | None,
        system: str | None,
        schema: dict[str, Any] | None,
        format_context_policy: str | None,
        attachments: Sequence[tuple[Any, Any]] = (),
        attachments_store: str = "copy",
    ) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self.chain_id = chain_id
        self.model = model
        self.prompt = prompt
        self.system = system
        self.schema = schema
        self.schema_id = schema_id(schema) if schema is not None else None
        self.policy = format_context_policy
        self.attached = [_attached(a, c, attachments_store) for a, c in attachments]

    def conversation_name(self) -> str | None:
        """The name a caller gave this chain's conversation in this context (`naming`), if any."""
        named = naming.get()
        return named[1] if named is not None and named[0] == self.conversation_id else None

    def options(self, options: ChatOptions) -> dict[str, Any]:
        """The options of a call as logged: tool names instead of tools; a response format names the
        chain's schema by its id (stored once) instead of repeating it in every row. Secrets are
        redacted when the row is written (`_rows`)."""
        out: dict[str, Any] = {}
        for key, value in options.set_fields().items():
            if key == "cache_key":  # the conversation's (or map run's) id again
                continue
            if key == "tools":
                out[key] = [t.name for t in value]
            elif key == "response_format":
                fmt = {name: getattr(value, name) for name in ("kind", "name", "description", "strict")}
                if value.schema is not None and value.schema == self.schema:
                    fmt["schema_id"] = self.schema_id
                elif value.schema is not None:
                    fmt["schema"] = to_jsonable(value.schema)
                out[key] = fmt
            elif key == "tool_mode":
                out[key] = {"mode": value.mode, "function_name": value.function_name}
            else:
                out[key] = to_jsonable(value)
        return out

    async def log(self, record: CallRecord) -> None:
        """Commit `record` (with the chain's attached files) on a worker thread; return once it is
        committed. A write that fails warns and is dropped."""
        try:
            await asyncio.to_thread(self.store.write_calls, [record], self.attached)
        except Exception as exc:  # never lose the chain's result because the log failed
            warnings.warn(f"chainform: could not log a model call: {exc}", stacklevel=2)


def _attached(attachment: Any, conversion: Any, store: str) -> Attached:
    """How the log keeps one attachment (chainform Attachment, documents Conversion):
    `store="ref"` keeps a file's path or URL, not its bytes."""
    if attachment.is_remote:  # a URL the provider fetched: its bytes never came here
        key, data, ref = url_key(attachment.url), None, attachment.url
    elif store == "ref" and attachment.path is not None:
        key, data, ref = attachment.sha256(), None, str(Path(attachment.path).resolve())
    else:
        key, data, ref = attachment.sha256(), attachment.read(), None
    how = (conversion.name, conversion.method, conversion.detail)
    return Attached(key, conversion.media_type, attachment.size(), *how, data, ref)

