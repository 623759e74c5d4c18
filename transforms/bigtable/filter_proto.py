"""A data-client row filter (``google.cloud.bigtable.data.row_filters``) as the raw
``google.bigtable.v2.RowFilter`` protobuf, built from the filters' public attributes.

Why: :mod:`transforms.bigtable.rows_stream` sends ``ReadRows`` itself, so it needs the filter's
wire form; the filter classes offer no public serializer (only private ``_to_dict``/``_to_pb``).
Each builder here mirrors what the library itself sends for its class: regexes, qualifiers and
values as bytes (a ``str`` encoded as ASCII), a range's bound closed unless its inclusive flag
is false, a timestamp range's start truncated and its end rounded up to whole milliseconds
(naive datetimes taken as UTC), a condition's branches only when given, and every filter's
oneof set even when its value is false or empty. A filter of an unknown class is refused.
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Callable

from google.cloud.bigtable.data import row_filters as rf
from google.cloud.bigtable_v2.types import data as data_types

__all__ = ["filter_pb"]

RowFilterPb = data_types.RowFilter.pb()  # the raw protobuf, no proto-plus wrapper


def filter_pb(row_filter: rf.RowFilter | None) -> object | None:
    """``row_filter`` as a raw ``RowFilter`` protobuf (None stays None)."""
    if row_filter is None:
        return None
    out = RowFilterPb()
    _fill(out, row_filter)
    return out


def _fill(out, row_filter: rf.RowFilter) -> None:
    """Set ``out``'s oneof from ``row_filter``: the builder of its class or nearest base."""
    for cls in type(row_filter).__mro__:
        build = BUILDERS.get(cls)
        if build is not None:
            build(out, row_filter)
            return
    raise TypeError(
        f"cannot send a {type(row_filter).__qualname__} as a ReadRows filter: "
        "not one of google.cloud.bigtable.data.row_filters' filter classes"
    )


def _bytes(value: str | bytes) -> bytes:
    """As the library's filters store text: ASCII-encoded; anything else is refused."""
    out = value.encode("ascii") if isinstance(value, str) else value
    if not isinstance(out, bytes):
        raise TypeError(f"{value!r} could not be converted to bytes")
    return out


def micros_of(when: dt.datetime) -> int:
    """A datetime as microseconds since the epoch, as the library counts them (a naive
    datetime is UTC; the seconds go through a float, as the library's do)."""
    if not when.tzinfo:
        when = when.replace(tzinfo=dt.timezone.utc)
    when = when.astimezone(dt.timezone.utc)
    return int(calendar.timegm(when.timetuple()) * 1e6) + when.microsecond


def _timestamp_range(out, f: rf.TimestampRangeFilter) -> None:
    span = out.timestamp_range_filter
    span.SetInParent()
    if f.range_.start is not None:
        span.start_timestamp_micros = micros_of(f.range_.start) // 1000 * 1000
    if f.range_.end is not None:
        end = micros_of(f.range_.end)
        if end % 1000:  # up to the next whole millisecond, as the library rounds it
            end = end // 1000 * 1000 + 1000
        span.end_timestamp_micros = end


def _bounds(span, field: str, start, end, inclusive_start, inclusive_end) -> None:
    """A column or value range's bounds: ``start_<field>_closed`` or ``_open`` and so on."""
    if start is not None:
        setattr(span, f"start_{field}_{'closed' if inclusive_start else 'open'}", _bytes(start))
    if end is not None:
        setattr(span, f"end_{field}_{'closed' if inclusive_end else 'open'}", _bytes(end))


def _column_range(out, f: rf.ColumnRangeFilter) -> None:
    span = out.column_range_filter
    span.family_name = f.family_id
    _bounds(
        span, "qualifier", f.start_qualifier, f.end_qualifier, f.inclusive_start, f.inclusive_end
    )


def _value_range(out, f: rf.ValueRangeFilter) -> None:
    span = out.value_range_filter
    span.SetInParent()
    _bounds(span, "value", f.start_value, f.end_value, f.inclusive_start, f.inclusive_end)


def _combination(field: str) -> Callable:
    def build(out, f: rf.RowFilterChain | rf.RowFilterUnion) -> None:
        combined = getattr(out, field)
        combined.SetInParent()
        for sub in f.filters:
            _fill(combined.filters.add(), sub)

    return build


def _condition(out, f: rf.ConditionalRowFilter) -> None:
    condition = out.condition
    _fill(condition.predicate_filter, f.predicate_filter)
    if f.true_filter is not None:
        _fill(condition.true_filter, f.true_filter)
    if f.false_filter is not None:
        _fill(condition.false_filter, f.false_filter)


def _scalar(field: str, attribute: str, convert: Callable = lambda v: v) -> Callable:
    def build(out, f: rf.RowFilter) -> None:
        setattr(out, field, convert(getattr(f, attribute)))

    return build


def _bitmask(out, f: rf.ValueBitmaskFilter) -> None:
    out.value_bitmask_filter.mask = _bytes(f.mask)


BUILDERS: dict[type, Callable] = {
    rf.SinkFilter: _scalar("sink", "flag"),
    rf.PassAllFilter: _scalar("pass_all_filter", "flag"),
    rf.BlockAllFilter: _scalar("block_all_filter", "flag"),
    rf.StripValueTransformerFilter: _scalar("strip_value_transformer", "flag"),
    rf.RowKeyRegexFilter: _scalar("row_key_regex_filter", "regex", _bytes),
    rf.FamilyNameRegexFilter: _scalar("family_name_regex_filter", "regex"),
    rf.ColumnQualifierRegexFilter: _scalar("column_qualifier_regex_filter", "regex", _bytes),
    rf.ValueRegexFilter: _scalar("value_regex_filter", "regex", _bytes),  # and LiteralValue
    rf.RowSampleFilter: _scalar("row_sample_filter", "sample"),
    rf.CellsRowOffsetFilter: _scalar("cells_per_row_offset_filter", "num_cells"),
    rf.CellsRowLimitFilter: _scalar("cells_per_row_limit_filter", "num_cells"),
    rf.CellsColumnLimitFilter: _scalar("cells_per_column_limit_filter", "num_cells"),
    rf.ApplyLabelFilter: _scalar("apply_label_transformer", "label"),
    rf.TimestampRangeFilter: _timestamp_range,
    rf.ColumnRangeFilter: _column_range,
    rf.ValueRangeFilter: _value_range,
    rf.ValueBitmaskFilter: _bitmask,
    rf.RowFilterChain: _combination("chain"),
    rf.RowFilterUnion: _combination("interleave"),
    rf.ConditionalRowFilter: _condition,
}
