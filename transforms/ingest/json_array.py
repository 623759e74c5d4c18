"""One top-level JSON array, streamed element by element: the export that is not JSON lines.

Pure (no Beam): the elements come out as raw JSON text with the line each starts on, to be parsed
by the same decoder as JSON lines, so a broken element costs itself only."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator

from transforms.errors import UserError
from transforms.text import events

__all__ = ["ArrayError", "elements"]

_SPACE = re.compile(r"[ \t\r\n]*")
# A top-level element ends at a ',' or ']' outside strings and brackets: strings skipped whole.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{},]')


class ArrayError(UserError, ValueError):
    """The file is not one well-formed array at the top level (no element can be trusted)."""


def elements(source: str, handle, chunk_bytes: int) -> Iterator[tuple[int, str]]:
    """``(line, element text)`` of each element of the top-level array in ``handle`` (bytes),
    read ``chunk_bytes`` at a time; an element that cannot be split off is yielded whole, as
    text that will not parse, so it becomes a dead letter (see ``readers.array_blocks``)."""
    cursor = _Cursor(handle, chunk_bytes)
    cursor.more()
    cursor.skip_space()
    if cursor.buf[cursor.pos : cursor.pos + 1] != "[":
        raise ArrayError(f"{source}: expected '[' to start a JSON array")
    cursor.pos += 1
    first = True
    while True:
        cursor.skip_space()
        if cursor.at_end():
            yield cursor.line, ""  # unterminated array: say so as one bad item
            return
        trusted = cursor.next_is_trusted(first)
        if trusted is None:
            return
        if not trusted:
            yield cursor.line, cursor.rest()
            return
        if not first:
            cursor.pos += 1
            cursor.skip_space()
        first = False
        line = cursor.line  # where the element starts, before its own lines are counted
        yield line, cursor.take_element()


class _Cursor:
    """A position in the decoded text of a stream read a chunk at a time, with its line number:
    the array is never held whole, only the unread tail of it."""

    def __init__(self, handle, chunk_bytes: int) -> None:
        self.handle = handle
        self.chunk_bytes = chunk_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self.buf = ""
        self.pos = 0
        self.line = 1
        self.eof = False

    def more(self) -> bool:
        """Read one more chunk (dropping what was consumed); False once the stream has ended."""
        if self.eof:
            return False
        data = self.handle.read(self.chunk_bytes)
        self.buf = self.buf[self.pos :] + self.decoder.decode(data, final=not data)
        self.pos = 0
        self.eof = not data
        return True

    def skip_space(self) -> None:
        """Move past white space, counting lines, reading on when the buffer ends in it."""
        while True:
            end = _SPACE.match(self.buf, self.pos).end()
            self.line += self.buf.count("\n", self.pos, end)
            self.pos = end
            if self.pos < len(self.buf) or not self.more():
                return

    def at_end(self) -> bool:
        return self.pos >= len(self.buf)

    def next_is_trusted(self, first: bool) -> bool | None:
        """Whether the next element can be split off: None after a clean closing ']', False
        when text follows the array or an element lacks its comma (nothing after is trusted)."""
        if self.buf[self.pos] == "]":
            self.pos += 1
            self.skip_space()
            if self.at_end():
                return None
            return False  # more after the array: kept as one bad item, not dropped
        return first or self.buf[self.pos] == ","

    def rest(self) -> str:
        """Everything left in the stream, as one untrusted item."""
        while self.more():
            pass
        return self.buf[self.pos :].rstrip()

    def take_element(self) -> str:
        """The element at the cursor, reading on while it runs past the buffer."""
        end = _element_end(self.buf, self.pos)
        while end < 0 and self.more():
            end = _element_end(self.buf, self.pos)
        if end < 0:
            end = len(self.buf)
        text = self.buf[self.pos : end].rstrip()
        self.line += self.buf.count("\n", self.pos, end)
        self.pos = end
        return text


def _element_end(buf: str, pos: int) -> int:
    """Where the element at ``pos`` ends (the index of the ',' or ']' after it), or -1 when the
    buffer ends first. The C scanner finds well-formed elements; a tokenizer finds broken ones."""
    try:
        _obj, end = events.scan_json(buf, pos)
    except (StopIteration, json.JSONDecodeError, RecursionError, ValueError):
        end = None
    if end is not None:
        after = _SPACE.match(buf, end).end()
        if after < len(buf) and buf[after] in ",]":
            return after
    depth = 0
    for token in _TOKEN.finditer(buf, pos):
        text = token.group()
        if text in "[{":
            depth += 1
        elif text in "]}":
            if depth == 0:
                return token.start()
            depth -= 1
        elif text == ",":
            if depth == 0:
                return token.start()
        elif text[-1:] != '"' or len(text) == 1 or _escaped_end(text):
            return -1  # an unterminated string: the buffer ends inside it
    return -1


def _escaped_end(text: str) -> bool:
    """Whether a string token's final quote is escaped (so the string goes on)."""
    backslashes = len(text) - 1 - len(text[:-1].rstrip("\\"))
    return backslashes % 2 == 1
