"""Parquet and Avro records as a JSON line would have given them, so that one builder reads
every format: the readers convert each record before it is parsed, and ``btts init`` samples
columnar files through the same conversion."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from decimal import Decimal

from transforms.errors import DataError
from transforms.text import events

__all__ = ["columnar_names", "columnar_record", "columnar_rows"]


def columnar_record(record: dict) -> dict:
    """A Parquet/Avro record as a JSON line would have given it: numbers as their decimal text
    (:class:`~transforms.text.events.Num`), times as RFC 3339 text in UTC, bytes as UTF-8 text, and
    no field for a null (an absent optional field)."""
    return {str(k): _json_like(v) for k, v in record.items() if v is not None}


def _json_like(value: object) -> object:
    if value is None or type(value) is bool or isinstance(value, str):
        return value
    if isinstance(value, int | Decimal):
        return events.Num(value)
    if isinstance(value, float):
        return events.Num(repr(value)) if math.isfinite(value) else repr(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:  # Parquet/Avro timestamps without a zone are UTC instants
            value = value.replace(tzinfo=dt.timezone.utc)
        text = value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")
        return text.replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if isinstance(value, dict):
        return {str(k): _json_like(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_json_like(v) for v in value]
    return str(value)


class RepeatedColumn(DataError, ValueError):
    """A Parquet or Avro file naming two columns alike: read as records, one would be lost."""


def columnar_names(path: str, kind: str) -> tuple[str, ...]:
    """The column names of a Parquet file (its footer) or an Avro file (its header's schema),
    or :class:`RepeatedColumn` naming two that are alike: a record holds one value per name, so
    the reader would keep one column's values and drop the other's in silence."""
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as handle:
        if kind == "parquet":
            import pyarrow.parquet as pq

            names = tuple(pq.read_schema(handle).names)
        else:
            import fastavro

            schema = fastavro.reader(handle).writer_schema
            names = tuple(f["name"] for f in schema.get("fields", ()))
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise RepeatedColumn(
                f"{path}: columns {seen[name]} and {position} are both named {name!r}: one "
                "would be lost; rename one in the file"
            )
        seen[name] = position
    return names


def columnar_rows(source: str, fmt: str) -> Iterator[dict]:
    """A Parquet or Avro file's records in the file's order, as Beam's readers make them
    (``to_pydict`` of each row group; fastavro's records)."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        if fmt == "avro":
            import fastavro

            yield from fastavro.reader(handle)
            return
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(handle)
        for index in range(parquet.num_row_groups):
            table = parquet.read_row_group(index)
            columns = table.to_pydict().items()
            for n in range(table.num_rows):
                yield {column: values[n] for column, values in columns}
