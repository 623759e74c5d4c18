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

from transforms.builder.source import SourceWriter
from transforms.mutations import AddCell

__all__ = ["EntryEncoder", "MutationSource", "framed", "marks_entry", "request_head"]

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


def marks_entry(key: bytes, family: str, marks: Sequence[tuple[bytes, int]]) -> bytes:
    """``framed(entry(row))`` of a row whose cells of ``family`` hold no value, each only its
    qualifier and timestamp (``marks``: ``(qualifier, timestamp_us)``): the series index's
    rows, one formatting call per cell instead of the general path's three (an index row is
    made once per series and bundle, and those are a twentieth of a job's rows)."""
    if not key:
        cells = [(family, qualifier, b"", stamp_us) for qualifier, stamp_us in marks]
        return framed(entry((None, key, cells)))
    size = len(key)
    parts = [b"\x0a%b%b" % (_ONE_BYTE[size] if size < 128 else varint(size), key)]
    for qualifier, stamp_us in marks:
        head = _HEADS.get((family, qualifier)) or _head(family, qualifier)
        if stamp_us:
            head += b"\x18" + (_STAMPS.get(stamp_us) or _stamp(stamp_us))
        size = len(head)
        if size < 126:  # every length one byte (nearly always): one formatting call
            parts.append(b"\x12%b\x0a%b%b" % (_ONE_BYTE[size + 2], _ONE_BYTE[size], head))
        else:
            parts.append(_field(0x12, _field(0x0A, head)))
    body = b"".join(parts)
    size = len(body)
    return b"\x12%b%b" % (_ONE_BYTE[size] if size < 128 else varint(size), body)


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
    heads = _layout_heads(layout)
    if heads is None:
        return None
    src = SourceWriter({"V": varint, "B": _ONE_BYTE, "A": AddCell, "TS": _STAMPS, "T": _stamp})
    count = len(layout)
    _add_row_guards(src, layout)
    args, fits, fmt = _add_cell_sizes(src, heads, layout)
    src.add(f"if not ({' and '.join(fits)}):")
    src.add("return None", 2)
    src.add(f"size = len(key) + {2 + 4 * count} + {' + '.join(f'b{i}' for i in range(count))}")
    src.add(f"return {src.const(fmt, 'FMT')} % ({', '.join(args)})")
    return src.function("encode", "<btts entry encoder>")  # names are constants


def _layout_heads(layout: Sequence[tuple[str, bytes | None] | None]) -> list[bytes] | None:
    """Each cell's fields before its timestamp: the whole head when the qualifier is known, else
    the family field and the qualifier's tag, its length and bytes following from the row. None
    for a layout no encoder can be written for (a malformed cell, a head too long)."""
    if not layout or any(
        c is None
        or len(c) != 2
        or type(c[0]) is not str
        or (c[1] is not None and type(c[1]) is not bytes)
        for c in layout
    ):
        return None
    heads = [
        _head(family, qualifier)
        if qualifier is not None
        else _field(0x0A, family.encode()) + b"\x12"
        for family, qualifier in layout
    ]
    if any(len(head) > 100 for head in heads):
        return None
    return heads


def _add_row_guards(src: SourceWriter, layout: Sequence[tuple[str, bytes | None]]) -> None:
    """The encoder's opening: None for a row whose cells are not exactly ``layout`` or do not
    share one positive timestamp; else ``t``, that timestamp's field, and its length ``lt``."""
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


def _add_cell_sizes(
    src: SourceWriter, heads: list[bytes], layout: Sequence[tuple[str, bytes | None]]
) -> tuple[list[str], list[str], bytes]:
    """Each cell's SetCell length ``b{i}``: returns the format's arguments, the conditions for
    every length to fit one byte, and the ``%`` format that lays the entry out."""
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
    return args, fits, fmt


_SIZES = tuple(varint(n) for n in range(1 << 14))  # an entry's length: two bytes at most here

# -- the builder's fast path (MutationSource): every length one byte, timestamps of 8 bytes --
#
# A cell's Mutation is ``0x12 b+2 0x0A b``, its head (family and qualifier fields), the
# timestamp field (``0x18`` and an 8-byte varint), ``0x22 n`` and the value's n bytes, where b
# (SetCell's length) is the head's length + 11 + n. Every varying length is a table lookup,
# and a row's Mutations are one ``b"".join``: a lookup that does not fit one byte fails (an
# IndexError past a table's end, a TypeError on its None), and the writer encodes that row.

STAMP_LOW, STAMP_HIGH = 1 << 49, 1 << 56  # µs timestamps (1987 to 4253) of 8-byte varints
# The timestamp field: its tag and low 14-bit group from a table, the next 14 bits from
# another, the rest (the timestamp shifted by 28 bits, which changes every 268 s) from a cache.
_TAGGED_LOW = tuple(b"\x18" + group for group in _LOW_GROUPS)


# A Mutation's opening for SetCell length b (None where b would not fit one byte)
_OPEN = tuple(bytes((0x12, b + 2, 0x0A, b)) if b < 126 else None for b in range(128))
_VALUE_TAGS = (None, *(bytes((0x22, n)) for n in range(1, 128)))  # 0x22 n; none for empty
_SOME_BYTE = (None, *_ONE_BYTE[1:])  # a length that must not be 0
_FRAMES = tuple(b"\x12" + size for size in _SIZES)  # field 2 of the request and its length
_KEYS = (None, *(bytes((0x0A, n)) for n in range(1, 128)))  # an entry's key field's tag, length


def _prefixes(head: bytes, extra: int) -> tuple[bytes | None, ...]:
    """Per value length n (or qualifier + value length): opening and ``head``, for a SetCell
    of ``len(head) + extra + n`` bytes (None past one-byte lengths, and for n = 0)."""
    out: list[bytes | None] = [None]
    for n in range(1, 128):
        opening = _OPEN[min(len(head) + extra + n, 127)]
        out.append(None if opening is None else opening + head)
    return tuple(out)


class _MapOpenings:
    """A map family's Mutation openings per qualifier: for value length n, the Mutation's
    opening and ``family field, 0x12, len(q), q`` (what :func:`_prefixes` makes for a constant
    qualifier), each made the first time a cell of that qualifier and length is seen (a map
    has few keys and its values few lengths; past ``limit`` distinct qualifiers the cache
    starts again). A cell then costs one lookup for all it holds before its timestamp."""

    def __init__(self, family: str, limit: int = 4096) -> None:
        self._family = _field(0x0A, family.encode("utf-8")) + b"\x12"
        self._limit = limit
        self.openings: dict[bytes, list[bytes | None]] = {}

    def __call__(self, qualifier: bytes) -> list[bytes | None]:
        """A new qualifier's openings, none made yet; TypeError (the writer then encodes the
        row) for one that is not bytes of a one-byte length."""
        if type(qualifier) is not bytes or not 0 < len(qualifier) < 128:
            raise TypeError("not a one-byte-length qualifier")  # the writer encodes the row
        if len(self.openings) >= self._limit:
            self.openings.clear()
        made = self.openings[qualifier] = [None] * 128
        return made

    def opening(self, made: list[bytes | None], qualifier: bytes, n: int) -> bytes:
        """The opening for a value of n bytes, kept in ``made`` (the qualifier's openings);
        TypeError past one-byte lengths, IndexError past 127 (the writer encodes the row)."""
        head = self._family + _ONE_BYTE[len(qualifier)] + qualifier
        out = made[n] = _OPEN[len(head) + 11 + n] + head
        return out


class MutationSource:
    """Writes, into a generated builder (:mod:`transforms.builder.codegen`), the source that makes a
    row's framed ``MutateRowsRequest`` entry while the row is built: the same bytes
    :class:`EntryEncoder` makes from the finished row (tests compare them), without walking
    the row's cells again. Anything but the common case (a timestamp before 1987, an empty or
    long value or qualifier, a long key) gives None, and the writer encodes that row itself.

    Cells are described with :meth:`cell` and :meth:`each` in column order, then
    :meth:`mutations` writes them; :meth:`framed` frames one table's key with them."""

    def __init__(self, src) -> None:
        self._src = src
        self._parts: list[tuple] = []

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
        if any(len(_head(p[1], p[2])) > 100 for p in parts if p[0] == "cell" and p[2] is not None):
            src.add(f"{name} = None")  # heads this long never fit one-byte lengths
            return
        c = {k: src.const(v, k) for k, v in _FAST_NAMESPACE.items()}
        t = f"{name}t"
        src.add(f"{name} = None")
        src.add(f"if {c['SL']} <= {us} < {c['SH']}:")
        src.add(
            f"{t} = {c['TL']}[{us} & 16383] + {c['LG']}[{us} >> 14 & 16383] + "
            f"({c['HG']}.get({us} >> 28) or {c['HF']}({us} >> 28))",
            2,
        )
        src.add("try:", 2)
        items: list[str] = []
        for i, part in enumerate(parts):
            if part[0] == "each":
                items.append(self._map_cells(c, name, i, t, part[1], part[2]))
            else:
                items += self._one_cell(c, name, i, t, *part[1:])
        src.add(f"{name} = {c['J']}({self._joined(items)})", 3)
        src.add("except (IndexError, TypeError):  # a length past one byte, or empty", 2)
        src.add("pass", 3)

    def _map_cells(self, c: dict, name: str, i: int, t: str, family: str, pairs: str) -> str:
        """A map's Mutations, one per entry, gathered into a list; returns it starred."""
        src = self._src
        heads = _MapOpenings(family)
        known, make = src.const(heads.openings.get, "QG"), src.const(heads, "QM")
        fill = src.const(heads.opening, "QF")
        e, q, x, n, o = (f"{name}{k}{i}" for k in "eqxno")
        src.add(f"{e} = []", 3)
        src.add(f"for {q}, {x} in {pairs}:", 3)
        src.add(f"{n} = len({x})", 4)
        src.add(f"{o} = {known}({q}) or {make}({q})", 4)
        src.add(f"{e} += ({o}[{n}] or {fill}({o}, {q}, {n}), {t}, {c['VT']}[{n}], {x})", 4)
        return f"*{e}"

    def _one_cell(
        self,
        c: dict,
        name: str,
        i: int,
        t: str,
        family: str,
        qualifier: bytes | None,
        qual: str,
        value: str,
        opt: str | None,
    ) -> list[str]:
        """One cell's Mutation as the pieces to join (one starred, conditional piece when the
        cell is optional)."""
        src = self._src
        x = f"{name}x{i}"
        if opt is None:
            src.add(f"{x} = {value}", 3)
        else:
            src.add(f"{x} = {value} if {opt} is not None else None", 3)
        if qualifier is not None:
            table = src.const(_prefixes(_head(family, qualifier), 11), "P")
            cell = [f"{table}[len({x})]", t, f"{c['VT']}[len({x})]", x]
        else:
            q = f"{name}q{i}"
            src.add(f"{q} = {qual}", 3)
            family_head = _field(0x0A, family.encode("utf-8")) + b"\x12"
            table = src.const(_prefixes(family_head, 12), "P")
            cell = [f"{table}[len({q}) + len({x})]", f"{c['SB']}[len({q})]", q, t]
            cell += [f"{c['VT']}[len({x})]", x]
        if opt is None:
            return cell
        return [f"*(({', '.join(cell)}) if {x} is not None else ())"]

    def _joined(self, items: list[str]) -> str:
        """The argument of the join: a tuple of the pieces (a lone starred list as itself)."""
        if not items:
            return f"{self._src.const((), 'Z')}"
        if len(items) == 1 and items[0][0] == "*":
            return items[0][1:]
        return f"({', '.join(items)},)"

    def framed(self, mutations: str, key: str, name: str) -> str:
        """Sets local ``name`` to the framed entry of row key ``key`` with ``mutations`` (or
        None) and returns it."""
        src = self._src
        c = {k: src.const(v, k) for k, v in _FAST_NAMESPACE.items() if k in ("FS", "KT", "J", "V")}
        src.add(f"if {mutations} is not None and 0 < len({key}) < 128:")
        src.add(f"{name}s = len({key}) + 2 + len({mutations})", 2)
        src.add(
            f"{name} = {c['J']}(({c['FS']}[{name}s] if {name}s < 16384 else "
            f"{c['V']}({name}s), {c['KT']}[len({key})], {key}, {mutations}))",
            2,
        )
        src.add("else:")
        src.add(f"{name} = None", 2)
        return name


def _frame_size(size: int) -> bytes:
    return b"\x12" + varint(size)


_FAST_NAMESPACE = {  # what MutationSource's generated lines use, bound under made-up names
    "SL": STAMP_LOW,
    "SH": STAMP_HIGH,
    "TL": _TAGGED_LOW,
    "LG": _LOW_GROUPS,
    "HG": _HIGH_GROUPS,
    "HF": _high,
    "OP": _OPEN,
    "VT": _VALUE_TAGS,
    "SB": _SOME_BYTE,
    "J": b"".join,
    "FS": _FRAMES,
    "KT": _KEYS,
    "V": _frame_size,
}
