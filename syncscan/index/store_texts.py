"""The texts of a kept store's rows (callee walks' and class analyses' states,
codec.py tables as JSON text), held after the store's JSON document rather
than in it (cache.py `write_framed`).

A run takes a few hundred of the thousands of states a store holds (vLLM
0.33.0: 9 MB of walk states, 10 MB of class analyses): loading parses the rows,
not the states, and saving writes a state kept from the last run as the bytes
it was read as, not escaped again into a JSON string. A row names its text by
[offset, length] in the blob.
"""

from __future__ import annotations

from typing import Any


class Texts:
    """The texts of a store read from the cache."""

    def __init__(self, blob: bytes = b"") -> None:
        self._blob = blob

    def holds(self, ref: Any) -> bool:
        """Whether `ref` names a text of the store (a damaged or foreign row's
        may not)."""
        return (
            isinstance(ref, list)
            and len(ref) == 2
            and all(type(n) is int and n >= 0 for n in ref)
            and ref[0] + ref[1] <= len(self._blob)
        )

    def text(self, ref: list[int]) -> bytes:
        """The text `ref` names (one `holds` accepted)."""
        return self._blob[ref[0] : ref[0] + ref[1]]


class TextsWriter:
    """The texts of a store being written, in the order they are added."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, text: bytes) -> list[int]:
        """`text` added; the reference a row names it by."""
        ref = [self._size, len(text)]
        self._parts.append(text)
        self._size += len(text)
        return ref

    def blob(self) -> bytes:
        return b"".join(self._parts)
