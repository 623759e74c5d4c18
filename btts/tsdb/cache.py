"""A small thread-safe cache with a size bound (least recently used out) and an age bound.

``btts serve`` caches what clients can make it compute again and again (the series of a
lookup, the values of a key field enumerated from the keys); the keys come from client
requests, so the cache must not grow with them, and the data changes, so entries expire.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["TtlLru"]


class TtlLru:
    """At most ``entries`` values, each served for ``seconds`` after it was put."""

    def __init__(self, entries: int, seconds: float) -> None:
        self.entries = entries
        self.seconds = seconds
        self._data: OrderedDict[Hashable, tuple[float, object]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> object | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            if time.monotonic() - hit[0] >= self.seconds:
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return hit[1]

    def put(self, key: Hashable, value: object) -> None:
        with self._lock:
            self._data[key] = (time.monotonic(), value)
            self._data.move_to_end(key)
            while len(self._data) > self.entries:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
