"""A loopback provider emulator for tests: official SDKs talk to it through `base_url`.

```python
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Fault

with Emulator(["Hello!", tool_call("get_weather", city="Paris"), Fault(429, retry_after=1)]) as emu:
    client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="test")
    ...
    emu.requests[0].body  # what the SDK sent
    emu.requests[0].media  # its images and documents, decoded (RecordedMedia)
```

Wire formats are plugins (one private module each); `_server.py` documents the interface.
"""

from chainform.testing.emulator._batches import BatchService, Expired
from chainform.testing.emulator._media import MediaRefused, RecordedMedia
from chainform.testing.emulator._quirks import LLAMA_CPP_PYTHON, STREAMS_ALWAYS, Quirks
from chainform.testing.emulator._script import (
    CutStream,
    DropConnection,
    Fault,
    MalformedEvent,
    RawResponse,
    Reply,
    ScriptItem,
    Stall,
    Usage,
)
from chainform.testing.emulator._server import Emulator
from chainform.testing.emulator._wire import (
    RecordedRequest,
    StreamEvent,
    WireFormat,
    discover_formats,
)

__all__ = [
    "LLAMA_CPP_PYTHON",
    "STREAMS_ALWAYS",
    "BatchService",
    "CutStream",
    "DropConnection",
    "Emulator",
    "Expired",
    "Fault",
    "MalformedEvent",
    "MediaRefused",
    "Quirks",
    "RawResponse",
    "RecordedMedia",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "Stall",
    "StreamEvent",
    "Usage",
    "WireFormat",
    "discover_formats",
]
