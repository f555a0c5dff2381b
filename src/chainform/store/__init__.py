"""The SQLite log of every model call (see docs/cli.md): a plain SQLite database, each call
committed by the chain engine as it finishes; one record shape (CallRecord) from the engine to
`logs --json`."""

from chainform._paths import default_path, logging_enabled, set_logging
from chainform.errors import StoreError
from chainform.store._advice import LogDamagedError, LogFullError, LogLockedError
from chainform.store._chains import STATUSES, ChainRow, ChainStatus
from chainform.store._fragments import Fragment, fragment_id, has_fragments, message_with, unmarked_text
from chainform.store._repair import Repaired, repair
from chainform.store._rows import CallRecord, ToolCallRecord, ToolResultRecord, new_id, schema_id
from chainform.store._store import LogBusy, SchemaInfo, Store, lock_timeout

__all__ = [
    "STATUSES",
    "CallRecord",
    "ChainRow",
    "ChainStatus",
    "Fragment",
    "LogBusy",
    "LogDamagedError",
    "LogFullError",
    "LogLockedError",
    "Repaired",
    "SchemaInfo",
    "Store",
    "StoreError",
    "ToolCallRecord",
    "ToolResultRecord",
    "default_path",
    "fragment_id",
    "has_fragments",
    "lock_timeout",
    "logging_enabled",
    "message_with",
    "new_id",
    "repair",
    "schema_id",
    "set_logging",
    "unmarked_text",
]
