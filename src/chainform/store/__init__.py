"""The SQLite log of every model call (see docs/cli.md): a plain SQLite database, each call
committed by the chain engine as it finishes; one record shape (CallRecord) from the engine to
`logs --json`."""

from chainform._paths import default_path, logging_enabled, set_logging
from chainform.errors import StoreError
from chainform.store._fragments import Fragment, fragment_id, has_fragments, message_with, unmarked_text
from chainform.store._rows import CallRecord, ToolCallRecord, ToolResultRecord, new_id, schema_id
from chainform.store._store import LogBusy, SchemaInfo, Store

__all__ = [
    "CallRecord",
    "Fragment",
    "LogBusy",
    "SchemaInfo",
    "Store",
    "StoreError",
    "ToolCallRecord",
    "ToolResultRecord",
    "default_path",
    "fragment_id",
    "has_fragments",
    "logging_enabled",
    "message_with",
    "new_id",
    "schema_id",
    "set_logging",
    "unmarked_text",
]
