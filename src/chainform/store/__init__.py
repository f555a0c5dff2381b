"""The SQLite log of every model call (see docs/cli.md): written by the chain engine, read by the CLI."""

from chainform.store._records import (
    CallRecord,
    LoggedResponse,
    SchemaInfo,
    StoreError,
    ToolCallRecord,
    ToolResultRecord,
    new_id,
)
from chainform.store._serialize import message_from_dict, message_to_dict, redact
from chainform.store._store import Store, default_path, schema_id

__all__ = [
    "CallRecord",
    "LoggedResponse",
    "SchemaInfo",
    "Store",
    "StoreError",
    "ToolCallRecord",
    "ToolResultRecord",
    "default_path",
    "message_from_dict",
    "message_to_dict",
    "new_id",
    "redact",
    "schema_id",
]
