"""MutateRows entries as bytes, written straight from the builders' rows.

Why: turning each row into protobuf objects and serializing them costs more than building the
row. The bytes made here are exactly what the client library would send for the same row (tests
compare them with the client's own encoding), so the server cannot tell the difference.

:func:`entry` writes any row of SetCells, one formatting call per cell whenever the cell's
lengths fit one byte each (nearly always for time series). :class:`EntryEncoder` goes further
for the few column layouts a table's rows have: it generates, per layout, a function that
writes the whole framed entry in one formatting call. Schema names reach that generated code
only as bound constants, never as source text.

Wire format (protobuf, field number and type in the tag byte):
``Entry = 0x0A len row_key, (0x12 len Mutation)*``; ``Mutation = 0x0A len SetCell``;
``SetCell = 0x0A len family, 0x12 len qualifier, 0x18 varint timestamp, 0x22 len value``,
each field left out when empty or zero, as protobuf does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from transforms.codegen import SourceWriter
from transforms.mutations import AddCell

__all__ = [
    "EntryEncoder",
    "MutationSource",
    "entry",
    "framed",
    "generate",
    "request_head",
    "stamp",
    "varint",
]

_ONE_BYTE = tuple(bytes((n,)) for n in range(128))


def varint(n: int) -> bytes:
    """A protobuf varint; negative numbers as their 64-bit two's complement (int64)."""
    if 0 <= n < 128:
        return _ONE_BYTE[n]
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 127:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# A cell timestamp's varint: its two low 7-bit groups from a table, the rest (the timestamp
# shifted by 14 bits, which changes every 16 ms of microseconds) from a cache. Rows of one
# time share their stamp, but rows of distinct times (a tick each millisecond) missed a cache
# of whole stamps every time and paid a varint loop per row.
_LOW_GROUPS = tuple(bytes(((n & 0x7F) | 0x80, (n >> 7) | 0x80)) for n in range(1 << 14))
_HIGH_GROUPS: dict[int, bytes] = {}


def _high(high: int) -> bytes:
    if len(_HIGH_GROUPS) > 4096:
        _HIGH_GROUPS.clear()
    out = _HIGH_GROUPS[high] = varint(high)
    return out


def stamp(timestamp_us: int) -> bytes:
    """``varint(timestamp_us)``, fast for every timestamp past the epoch's first 16 ms. Past
    its first 268 s (every real event time), the two low 14-bit groups come from the table and
    only the rest (which changes every 268 s) from the cache: events of distinct times (ticks,
    trades) missed the cache of 16 ms groups nearly every time and paid the varint loop."""
    if timestamp_us < 1 << 28:
        if timestamp_us < 1 << 14:
            return varint(timestamp_us)
        high = timestamp_us >> 14
        return _LOW_GROUPS[timestamp_us & 0x3FFF] + (_HIGH_GROUPS.get(high) or _high(high))
    high = timestamp_us >> 28
    return (
        _LOW_GROUPS[timestamp_us & 0x3FFF]
        + _LOW_GROUPS[(timestamp_us >> 14) & 0x3FFF]
        + (_HIGH_GROUPS.get(high) or _high(high))
    )


_STAMPS: dict[int, bytes] = {}  # whole stamps: the rows of one event share its time


def _stamp(timestamp_us: int) -> bytes:
    if len(_STAMPS) > 4096:
        _STAMPS.clear()
    out = _STAMPS[timestamp_us] = stamp(timestamp_us)
    return out


def _field(tag: int, data: bytes) -> bytes:
    """A length-delimited field; nothing for empty data (proto3 leaves defaults out)."""
    return b"%c%b%b" % (tag, varint(len(data)), data) if data else b""


_HEADS: dict[tuple, bytes] = {}


def _head(family: str, qualifier: bytes) -> bytes:
    """SetCell's family and qualifier fields, cached: a table has few columns."""
    head = _HEADS.get((family, qualifier))
    if head is None:
        if type(family) is not str:
            raise TypeError(f"a column family is text, not {type(family).__name__}")
        if not isinstance(qualifier, bytes):
            raise TypeError(f"a qualifier is bytes, not {type(qualifier).__name__}")
        head = _field(0x0A, family.encode("utf-8")) + _field(0x12, qualifier)
        if len(_HEADS) < 65_536:
            _HEADS[(family, qualifier)] = head
    return head


def entry(row) -> bytes:
    """``MutateRowsRequest.Entry`` bytes for ``(table, key, cells)`` of SetCells."""
    _table, key, cells = row
    parts = [_field(0x0A, key)]
    append = parts.append
    heads = _HEADS
    last_ts = tagged = None
    for cell in cells:
        if type(cell) is AddCell:
            raise TypeError("AddToCell rows go through WriteAggregates, not WriteToBigTable")
        family, qualifier, value, timestamp_us = cell
        head = heads.get((family, qualifier)) or _head(family, qualifier)
        if timestamp_us != last_ts:
            tagged = (
                b"\x18" + (_STAMPS.get(timestamp_us) or _stamp(timestamp_us))
                if timestamp_us
                else b""
            )
            last_ts = timestamp_us
        n = len(value)
        body = len(head) + len(tagged) + n + 2
        if 0 < n < 128 and body < 126:  # every length one byte: one formatting call
            append(
                b"\x12%b\x0a%b%b%b\x22%b%b"
                % (_ONE_BYTE[body + 2], _ONE_BYTE[body], head, tagged, _ONE_BYTE[n], value)
            )
        else:
            append(_field(0x12, _field(0x0A, head + tagged + _field(0x22, value)) or b"\x0a\x00"))
    return b"".join(parts)


def request_head(table_name: str, app_profile_id: str = "") -> bytes:
    """The request's fields before its entries (``0x12 len Entry`` each, see :func:`framed`)."""
    return _field(0x0A, table_name.encode("utf-8")) + _field(0x1A, app_profile_id.encode("utf-8"))


def framed(entry_bytes: bytes) -> bytes:
    """An entry as field 2 of ``MutateRowsRequest``."""
    return b"\x12%b%b" % (varint(len(entry_bytes)), entry_bytes)


class EntryEncoder:
    """``framed(entry(row))``, through a generated function per column layout.

    A layout is a row's ``(family, qualifier)`` sequence, every cell at one timestamp. The first
    ``max_layouts`` seen are learnt as they are; past them, a table whose qualifiers change from
    row to row (a time of day, a metric name) gets one function per family sequence that takes
    each qualifier from the row. Rows the generated code does not cover (a long key or value,
    an empty value, several timestamps) take :func:`entry`; when most rows miss anyway, it stops
    trying.
    """

    def __init__(self, max_layouts: int = 4) -> None:
        self._max = max_layouts
        self._fast: list[tuple[tuple, Callable]] = []  # (layout, its function), tried in order
        self._seen: set[tuple] = set()
        self._rows = self._misses = 0

    def __call__(self, row) -> bytes:
        self._rows += 1
        for _layout, encode in self._fast:
            out = encode(row)
            if out is not None:
                return out
        return self._miss(row)

    def _miss(self, row) -> bytes:
        self._misses += 1
        cells = row[2]
        layout = tuple((c[0], c[1]) if type(c) is not AddCell else None for c in cells)
        exact = len(self._seen) < self._max
        if not exact and None not in layout:
            layout = tuple((family, None) for family, _qualifier in layout)  # qualifiers vary
        if layout not in self._seen and len(self._seen) < 2 * self._max:
            self._seen.add(layout)
            encode = generate(layout)
            if encode is not None:
                if exact:
                    self._fast.insert(0, (layout, encode))
                else:  # it covers this family sequence's exact layouts: try it instead
                    families = [f for f, _ in layout]
                    self._fast = [
                        (known, fn) for known, fn in self._fast if [f for f, _ in known] != families
                    ]
                    self._fast.append((layout, encode))
                out = encode(row)
                if out is not None:
                    return out
        elif self._fast and self._misses > 1000 and 2 * self._misses > self._rows:
            self._fast = []  # most rows miss every generated encoder: entry() alone is cheaper
        return framed(entry(row))


def generate(layout: Sequence[tuple[str, bytes | None] | None]) -> Callable | None:
    """``(row) -> bytes | None``: the framed entry of a row whose cells are exactly ``layout``
    (a qualifier of None: any qualifier, taken from the row), sharing one positive timestamp,
    short enough for one-byte lengths; None for any other row (and no function for a layout it
    cannot write)."""
    if not layout or any(
        c is None
        or len(c) != 2
        or type(c[0]) is not str
        or (c[1] is not None and type(c[1]) is not bytes)
        for c in layout
    ):
        return None
    # A cell's fields before its timestamp: the whole head when the qualifier is known, else
    # the family field and the qualifier's tag, its length and bytes following from the row.
    heads = [
        _head(family, qualifier)
        if qualifier is not None
        else _field(0x0A, family.encode()) + b"\x12"
        for family, qualifier in layout
    ]
    if any(len(head) > 100 for head in heads):
        return None
    src = SourceWriter({"V": varint, "B": _ONE_BYTE, "A": AddCell, "TS": _STAMPS, "T": _stamp})
    count = len(layout)
    src.add("def encode(row):", 0)
    src.add("_t, key, cells = row")
    src.add(f"if len(cells) != {count} or not 0 < len(key) < 128:")
    src.add("return None", 2)
    src.add(f"{', '.join(f'c{i}' for i in range(count))}, = cells")
    checks = []
    for i, (family, qualifier) in enumerate(layout):
        checks += [f"type(c{i}) is A", f"c{i}[0] != {src.const(family, 'F')}"]
        if qualifier is None:
            checks.append(f"type(c{i}[1]) is not bytes")
        else:
            checks.append(f"c{i}[1] != {src.const(qualifier, 'Q')}")
    src.add(f"if {' or '.join(checks)}:")
    src.add("return None", 2)
    src.add("ts = c0[3]")
    same = "".join(f" or c{i}[3] != ts" for i in range(1, count))
    src.add(f"if type(ts) is not int or ts <= 0{same}:")
    src.add("return None", 2)
    src.add("t = TS.get(ts) or T(ts)")
    src.add("lt = len(t)")
    args = ["B[size] if size < 128 else V(size)", "B[len(key)]", "key"]
    fits = []
    fmt = b"\x12%b\x0a%b%b"
    for i, (head, (_family, qualifier)) in enumerate(zip(heads, layout, strict=True)):
        src.add(f"x{i} = c{i}[2]")
        src.add(f"n{i} = len(x{i})")
        # SetCell = head, 0x18 t, 0x22 n value; its Mutation adds two bytes: all under 128
        if qualifier is None:  # head + qualifier length + qualifier; an empty one is left out
            src.add(f"q{i} = c{i}[1]")
            src.add(f"b{i} = {len(head) + 4} + len(q{i}) + lt + n{i}")
            fits.append(f"0 < n{i} and 0 < len(q{i}) and b{i} < 126")
            args += [f"B[b{i} + 2]", f"B[b{i}]", src.const(head, "H"), f"B[len(q{i})]", f"q{i}"]
            fmt += b"\x12%b\x0a%b%b%b%b"
        else:
            src.add(f"b{i} = {len(head) + 3} + lt + n{i}")
            fits.append(f"0 < n{i} and b{i} < 126")
            args += [f"B[b{i} + 2]", f"B[b{i}]", src.const(head, "H")]
            fmt += b"\x12%b\x0a%b%b"
        args += ["t", f"B[n{i}]", f"x{i}"]
        fmt += b"\x18%b\x22%b%b"
    src.add(f"if not ({' and '.join(fits)}):")
    src.add("return None", 2)
    src.add(f"size = len(key) + {2 + 4 * count} + {' + '.join(f'b{i}' for i in range(count))}")
    src.add(f"return {src.const(fmt, 'FMT')} % ({', '.join(args)})")
    return src.function("encode", "<btts entry encoder>")  # names are constants


_SIZES = tuple(varint(n) for n in range(1 << 14))  # an entry's length: two bytes at most here


_SOME_BYTE = (None, *_ONE_BYTE[1:])  # a length of 0 fails formatting: an empty field
# A SetCell's Mutation starts with its length + 2, SetCell's tag and its length: one lookup
_OPENINGS = tuple(bytes((n + 2, 0x0A, n)) for n in range(126))


def _template(head: bytes, qualifier_from_row: bool) -> bytes:
    """One cell's Mutation as a formatting template, its constant ``head`` (family and
    qualifier fields, or the family field and the qualifier's tag) written in (``%`` doubled):
    the arguments are the opening (:data:`_OPENINGS`), [the qualifier's length and bytes,] the
    timestamp field, the value's length and bytes."""
    middle = b"%b%b" if qualifier_from_row else b""
    return b"\x12%b" + head.replace(b"%", b"%%") + middle + b"\x18%b\x22%b%b"


def _each_mutations(template: bytes, fixed: int, pairs, t: bytes) -> bytes | None:
    """The Mutations of a map's ``(qualifier, value)`` cells (``template``: see
    :func:`_template`; ``fixed``: the SetCell's length but the qualifier and value) at timestamp
    field ``t``; None unless every length fits one byte and none is empty (what :func:`entry`
    writes otherwise). One comprehension: a length past one byte fails the table lookup, an
    empty one the formatting."""
    fixed += len(t)
    openings, some = _OPENINGS, _SOME_BYTE
    try:
        return b"".join(
            [
                template % (openings[fixed + len(q) + len(x)], some[len(q)], q, t, some[len(x)], x)
                for q, x in pairs
            ]
        )
    except (IndexError, TypeError):  # long or empty, or not bytes: entry() writes the row
        return None


class MutationSource:
    """Writes, into a generated builder (:mod:`transforms.codegen`), the source that makes a
    row's framed ``MutateRowsRequest`` entry while the row is built: the same bytes
    :class:`EntryEncoder` makes from the finished row (tests compare them), without walking
    the row's cells again. Anything but the common case (a timestamp not past the epoch, an
    empty or long value or qualifier, a long key) gives None, and the writer encodes that row
    itself.

    Cells are described with :meth:`cell` and :meth:`each` in column order, then
    :meth:`mutations` writes them; :meth:`framed` frames one table's key with them."""

    def __init__(self, src) -> None:
        self._src = src
        self._parts: list[tuple] = []
        self._stamps = {"TS": _STAMPS, "T": _stamp}

    def cell(self, family: str, qualifier: bytes | None, qual: str, value: str, opt: str | None):
        """A cell: ``qualifier`` constant (or None: the expression ``qual`` of bytes), the value
        expression ``value`` (bytes), left out when the local ``opt`` is None."""
        self._parts.append(("cell", family, qualifier, qual, value, opt))

    def each(self, family: str, pairs: str) -> None:
        """A map's cells: ``pairs`` an expression of ``(qualifier, value)`` bytes pairs."""
        self._parts.append(("each", family, pairs))

    def mutations(self, name: str, us: str) -> None:
        """Sets local ``name`` to the cells' Mutations bytes (or None), stamped ``us`` µs."""
        src, parts = self._src, self._parts
        self._parts = []
        ts, stamp = (src.const(v, k) for k, v in self._stamps.items())
        b = src.const(_ONE_BYTE, "B")
        empty = src.const(b"", "Z")  # no literal in generated source but the templates
        openings = src.const(_OPENINGS, "O")
        src.add(f"{name} = None")
        src.add(f"if {us} > 0:")
        src.add(f"{name}t = {ts}.get({us}) or {stamp}({us})", 2)
        src.add(f"{name}l = len({name}t)", 2)
        checks, segments = [], []
        fmt, args = b"", []  # the current run of always-present cells: one formatting call
        for i, part in enumerate(parts):
            x = f"{name}x{i}"
            if part[0] == "each":
                head = _field(0x0A, part[1].encode("utf-8")) + b"\x12"
                template = src.const(_template(head, True), "M")
                each = src.const(_each_mutations, "E")
                src.add(f"{x} = {each}({template}, {len(head) + 4}, {part[2]}, {name}t)", 2)
                checks.append(f"{x} is not None")
                if fmt:
                    segments.append((src.const(fmt, "M"), args))
                    fmt, args = b"", []
                segments.append((None, x))
                continue
            _kind, family, qualifier, qual, value, opt = part
            n, size = f"{name}n{i}", f"{name}b{i}"
            if opt is None:
                src.add(f"{x} = {value}", 2)
            else:
                src.add(f"{x} = {value} if {opt} is not None else {empty}", 2)
            src.add(f"{n} = len({x})", 2)
            if qualifier is not None:
                head = _head(family, qualifier)
                src.add(f"{size} = {len(head) + 3} + {name}l + {n}", 2)
                cell_fmt = _template(head, False)
                cell_args = [f"{openings}[{size}]"]
            else:
                head = _field(0x0A, family.encode("utf-8")) + b"\x12"
                q = f"{name}q{i}"
                src.add(f"{q} = {qual}", 2)
                src.add(f"{size} = {len(head) + 4} + len({q}) + {name}l + {n}", 2)
                cell_fmt = _template(head, True)
                cell_args = [f"{openings}[{size}]", f"{b}[len({q})]", q]
            cell_args += [f"{name}t", f"{b}[{n}]", x]
            fits = f"0 < {n} and {size} < 126"
            if qualifier is None:
                fits += f" and type({q}) is bytes and 0 < len({q})"
            if opt is None:
                checks.append(fits)
                fmt += cell_fmt
                args += cell_args
            else:
                checks.append(f"({opt} is None or ({fits}))")
                if fmt:
                    segments.append((src.const(fmt, "M"), args))
                    fmt, args = b"", []
                cell = f"{src.const(cell_fmt, 'M')} % ({', '.join(cell_args)})"
                segments.append((None, f"({cell} if {opt} is not None else {empty})"))
        if fmt:
            segments.append((src.const(fmt, "M"), args))
        if any(len(_head(p[1], p[2])) > 100 for p in parts if p[0] == "cell" and p[2] is not None):
            return  # heads this long never fit one-byte lengths: the writer encodes
        joined = " + ".join(
            expr if fmt_name is None else f"{fmt_name} % ({', '.join(expr)})"
            for fmt_name, expr in segments
        )
        src.add(f"if {' and '.join(checks) or 'True'}:", 2)
        src.add(f"{name} = {joined or empty}", 3)

    def framed(self, mutations: str, key: str, name: str) -> str:
        """Sets local ``name`` to the framed entry of row key ``key`` with ``mutations`` (or
        None) and returns it."""
        src = self._src
        sizes, v = src.const(_SIZES, "VS"), src.const(varint, "V")
        src.add(f"if {mutations} is not None and 0 < len({key}) < 128:")
        src.add(f"{name}s = len({key}) + 2 + len({mutations})", 2)
        frame = src.const(b"\x12%b\x0a%b%b%b", "FR")
        b = src.const(_ONE_BYTE, "B")
        src.add(
            f"{name} = {frame} % ({sizes}[{name}s] if {name}s < 16384 else "
            f"{v}({name}s), {b}[len({key})], {key}, {mutations})",
            2,
        )
        src.add("else:")
        src.add(f"{name} = None", 2)
        return name
