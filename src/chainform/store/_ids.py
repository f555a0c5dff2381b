"""The log's ids: ULIDs (48-bit millisecond time, 80 random bits, Crockford base32), lower case.

The rules are python-ulid's: time first, so ids sort by creation; within one millisecond (or if
the clock steps back) the last id plus one, so ids made by one process never go backwards; fresh
randomness otherwise. The randomness is the `random` module's: seeded from the OS, reseeded in a
forked child, so two processes do not share a sequence; an id names a row, it guards nothing.
"""

from __future__ import annotations

import random
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base32, lower case
_SHIFTS = range(125, -1, -5)  # 26 characters of 5 bits: 130 bits, the top two always zero
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_ms = 0
_last_random = 0


def new_id() -> str:
    """A new ULID, lower case: sorts by creation time, so the log orders rows written in the same
    millisecond or by several processes without a central counter."""
    global _last_ms, _last_random
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last_ms:  # the same millisecond, or the clock stepped back: count on
            ms, bits = _last_ms, _last_random + 1
            if bits >> _RANDOM_BITS:  # 2**80 ids in one millisecond: borrow the next one
                ms, bits = ms + 1, random.getrandbits(_RANDOM_BITS)
        else:
            bits = random.getrandbits(_RANDOM_BITS)
        _last_ms, _last_random = ms, bits
    value = ms << _RANDOM_BITS | bits
    return "".join([_ALPHABET[(value >> shift) & 31] for shift in _SHIFTS])
