"""Many inputs, one call: `model.map(rows, prompt="... {field} ...")` and `await`-free `amap`.

Rows are read lazily and run by a pool of `concurrency` workers sharing one rate gate (requests
and tokens per minute; a 429 pauses every worker). Each row ends as a `MapResult` holding either
its value or a typed error, so one bad row never stops the other 49,999. See docs/map.md.

The public face of `_map/`: the pieces live there (`_api`, `_results`, ...).
"""

from __future__ import annotations

from chainform._map._api import amap, map_sync
from chainform._map._inputs import MapInputError
from chainform._map._results import MapResult, RowError

__all__ = ["MapInputError", "MapResult", "RowError", "amap", "map_sync"]
