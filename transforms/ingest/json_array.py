"""One top-level JSON array, streamed element by element: the export that is not JSON lines.

Pure (no Beam): the elements come out as raw JSON text with the line each starts on, to be parsed
by the same decoder as JSON lines, so a broken element costs itself only."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator

from transforms.text import events

__all__ = ["ArrayError", "elements"]

_SPACE = re.compile(r"[ \t\r\n]*")
# A top-level element ends at a ',' or ']' outside strings and brackets: strings skipped whole.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{},]')


class ArrayError(ValueError):
    """The file is not one well-formed array at the top level (no element can be trusted)."""


def elements(source: str, handle, chunk_bytes: int) -> Iterator[tuple[int, str]]:
    """``(line, element text)`` of each element of the top-level array in ``handle`` (bytes),
    read ``chunk_bytes`` at a time; an element that cannot be split off is yielded whole, as
    text that will not parse, so it becomes a dead letter (see ``readers.array_blocks``)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    buf = ""
    pos = 0
    line = 1
    eof = False

    def more() -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        data = handle.read(chunk_bytes)
        buf = buf[pos:] + decoder.decode(data, final=not data)
        pos = 0
        eof = not data
        return True

    def skip_space() -> None:
        nonlocal pos, line
        while True:
            end = _SPACE.match(buf, pos).end()
            line += buf.count("\n", pos, end)
            pos = end
            if pos < len(buf) or not more():
                return

    more()
    skip_space()
    if buf[pos : pos + 1] != "[":
        raise ArrayError(f"{source}: expected '[' to start a JSON array")
    pos += 1
    first = True
    while True:
        skip_space()
        if pos >= len(buf):
            yield line, ""  # unterminated array: say so as one bad item
            return
        if buf[pos] == "]":
            pos += 1
            skip_space()
            if pos >= len(buf):
                return
            trusted = False  # more after the array: kept as one bad item, not dropped
        else:
            trusted = first or buf[pos] == ","  # no comma: nothing after it can be trusted
        if not trusted:
            while more():
                pass
            yield line, buf[pos:].rstrip()
            return
        if not first:
            pos += 1
            skip_space()
        first = False
        end = _element_end(buf, pos)
        while end < 0 and more():  # the element runs past the buffer: read on
            end = _element_end(buf, pos)
        if end < 0:
            end = len(buf)
        yield line, buf[pos:end].rstrip()
        line += buf.count("\n", pos, end)
        pos = end


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
