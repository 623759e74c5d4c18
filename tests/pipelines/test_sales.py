"""Monthly sales as aggregate cells (docs/patterns.md §3 rule 13, §5.6): AddToCell sums read back
from the
emulator equal sums computed independently here."""

from __future__ import annotations

import calendar
import datetime as dt
import json
import random
import struct
import zoneinfo
from collections import defaultdict

import apache_beam as beam
import pytest
from google.cloud.bigtable.data.mutations import AddToCell

from btts import admin, config
from btts.query import engine
from tests.support.jobs import compiled, read_dead_letters, run_job, write_lines
from transforms.bigtable.write_aggregates import WriteAggregates, to_entry
from transforms.errors import AggregateWriteError, InvalidEvent
from transforms.mutations import AddCell, Cell, RowMutation
from transforms.table_model import Family, KeyRecipe, Segment, TableDecl
from transforms.text.events import parse_json_object

MARCH_2015_US = 1425168000 * 1_000_000  # 2015-03-01T00:00:00Z


def _int64(value: bytes) -> int:
    assert len(value) == 8, value
    return struct.unpack(">q", value)[0]


def _sale(employee: str, when: str, cents: int) -> str:
    return json.dumps({"employee": employee, "timestamp": when, "amount_cents": cents})


# -- pure ------------------------------------------------------------------------------------


def test_a_sale_adds_amount_and_count_at_the_month_start():
    record = parse_json_object(_sale("Corrie", "2015-03-16T19:53:32.045Z", 1999))
    assert compiled("sales")(record) == [
        RowMutation(
            "SALES_MONTHLY",
            b"Corrie#201503",
            (
                AddCell("sum", b"AMOUNT", 1999, MARCH_2015_US),
                AddCell("sum", b"COUNT", 1, MARCH_2015_US),
            ),
        )
    ]


def test_every_sale_of_a_month_shares_one_cell_timestamp():
    first = compiled("sales")(parse_json_object(_sale("a", "2015-03-01T00:00:00Z", 1)))[0]
    last = compiled("sales")(parse_json_object(_sale("a", "2015-03-31T23:59:59.999Z", 1)))[0]
    april = compiled("sales")(parse_json_object(_sale("a", "2015-04-01T00:00:00Z", 1)))[0]
    assert first.key == last.key == b"a#201503" and april.key == b"a#201504"
    assert {c.timestamp_us for c in first.cells + last.cells} == {MARCH_2015_US}
    assert april.cells[0].timestamp_us == calendar.timegm((2015, 4, 1, 0, 0, 0)) * 1_000_000


def test_months_follow_the_configured_time_zone():
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    sale = parse_json_object(_sale("a", "2015-03-31T23:30:00Z", 5))
    (row,) = compiled("sales", tz=paris)(sale)  # 01:30 on 1 April in Paris (CEST, +2)
    assert row.key == b"a#201504"
    start = dt.datetime(2015, 4, 1, tzinfo=paris)
    assert row.cells[0].timestamp_us == int(start.timestamp()) * 1_000_000
    assert compiled("sales")(sale)[0].key == b"a#201503"


def test_refunds_are_negative_amounts():
    (row,) = compiled("sales")(parse_json_object(_sale("a", "2015-03-02T00:00:00Z", -250)))
    assert row.cells[0].amount == -250


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            '{"employee": "a", "timestamp": "2015-03-01T00:00:00Z", "amount_cents": 19.99}',
            "field 'amount_cents': expected an integer, got number '19.99'",
        ),
        (
            '{"employee": "a", "timestamp": "2015-03-01T00:00:00Z", "amount_cents": "1999"}',
            "field 'amount_cents': expected an integer, got string '1999'",
        ),
        (
            '{"employee": "a", "timestamp": "2015-03-01T00:00:00Z", "amount_cents": 1e20}',
            "field 'amount_cents': expected an integer, got number '1e20'",
        ),
        (
            '{"employee": "a", "timestamp": "2015-03-01T00:00:00Z", '
            '"amount_cents": 100000000000000}',
            "field 'amount_cents': 100000000000000 is above its maximum 10000000000000",
        ),
        (
            '{"employee": "a#b", "timestamp": "2015-03-01T00:00:00Z", "amount_cents": 1}',
            "field 'employee': contains the key delimiter '#'",
        ),
        ('{"employee": "a", "amount_cents": 1}', "missing field(s): timestamp"),
        (
            '{"employee": "a", "timestamp": 1, "amount_cents": 1, "currency": "EUR"}',
            (
                "unexpected field(s): currency (declared: amount_cents, employee, timestamp; "
                "event.extra_fields: ignore drops the others)"
            ),
        ),
    ],
)
def test_bad_sales_have_precise_reasons(line, reason):
    with pytest.raises(InvalidEvent) as err:
        compiled("sales")(parse_json_object(line))
    assert str(err.value) == reason


def test_the_aggregate_writer_takes_add_cells_only():
    entry = to_entry(RowMutation("T", b"k", (AddCell("sum", b"A", 3, 1000),)))
    assert entry.row_key == b"k"
    (add,) = entry.mutations
    assert isinstance(add, AddToCell)
    assert (add.family, add.qualifier, add.value, add.timestamp) == ("sum", b"A", 3, 1000)
    with pytest.raises(TypeError, match="AddCell only, got Cell"):
        to_entry(RowMutation("T", b"k", (Cell("sum", b"A", b"3", 1000),)))


# -- on the emulator ---------------------------------------------------------------------------


def _read_sums(target: config.Target) -> dict[str, dict[bytes, tuple[int, int]]]:
    """{row key: {qualifier: (value, cell timestamp)}}, requiring one cell per column."""
    out: dict[str, dict[bytes, tuple[int, int]]] = {}
    for row in engine.read_rows(target, "SALES_MONTHLY"):
        columns: dict[bytes, tuple[int, int]] = {}
        for cell in row.cells:
            assert cell.family == "sum"
            assert cell.qualifier not in columns, f"{row.key!r}: more than one cell per column"
            columns[cell.qualifier] = (_int64(cell.value), cell.timestamp_us)
        out[row.key.decode()] = columns
    return out


def test_sums_and_counts_read_back_equal_independent_sums(target, tmp_path):
    rng = random.Random(11)
    lines, amount, count = [], defaultdict(int), defaultdict(int)
    for _ in range(300):
        employee = rng.choice(["Corrie", "Jose", "Ana", "Li"])
        moment = dt.datetime(2015, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
            seconds=rng.randrange(0, 150 * 86400)
        )
        cents = rng.randrange(-5_000, 500_000)
        lines.append(_sale(employee, moment.isoformat().replace("+00:00", "Z"), cents))
        month = (employee, moment.year, moment.month)
        amount[month] += cents
        count[month] += 1
    source = write_lines(tmp_path / "sales.jsonl", lines)

    result = run_job("sales", target, source, tmp_path / "d")

    want = {
        f"{e}#{y:04d}{m:02d}": {
            b"AMOUNT": (amount[(e, y, m)], calendar.timegm((y, m, 1, 0, 0, 0)) * 1_000_000),
            b"COUNT": (count[(e, y, m)], calendar.timegm((y, m, 1, 0, 0, 0)) * 1_000_000),
        }
        for (e, y, m) in amount
    }
    assert _read_sums(target) == want
    assert len(want) >= 4 * 5
    c = result.counters
    assert c["lines_read"] == c["events_valid"] == 300
    assert c["rows_SALES_MONTHLY"] == 300 and c["cells_SALES_MONTHLY"] == 600
    assert c.get("write_failures_SALES_MONTHLY", 0) == 0


def test_the_family_is_declared_as_an_int64_sum(target, tmp_path):
    run_job("sales", target, write_lines(tmp_path / "s.jsonl", []), tmp_path / "d")
    with admin.Admin(target) as client:
        family = client.get_families("SALES_MONTHLY")["sum"]
    assert "int64_type" in family.value_type.aggregate_type.input_type
    assert "sum" in family.value_type.aggregate_type


def test_csv_input(target, tmp_path):
    source = write_lines(
        tmp_path / "sales.csv",
        [
            "employee,timestamp,amount_cents",
            "Corrie,2015-03-16T19:53:32.045Z,1999",
            "Corrie,1425600000000,-500",
            "Jose,2015-03-01T00:00:00Z,100",
        ],
    )
    run_job("sales", target, source, tmp_path / "d")
    assert _read_sums(target) == {
        "Corrie#201503": {b"AMOUNT": (1499, MARCH_2015_US), b"COUNT": (2, MARCH_2015_US)},
        "Jose#201503": {b"AMOUNT": (100, MARCH_2015_US), b"COUNT": (1, MARCH_2015_US)},
    }


def test_good_and_bad_lines_reconcile(target, tmp_path):
    good = [_sale("Corrie", f"2015-03-{d:02d}T10:00:00Z", 100 * d) for d in range(1, 11)]
    bad = {
        '{"employee": "Corrie", "timestamp": "2015-03-01T10:00:00Z", "amount_cents": 1.5}': (
            "field 'amount_cents': expected an integer, got number '1.5'"
        ),
        '{"employee": "Corrie", "timestamp": "last tuesday", "amount_cents": 1}': (
            "field 'timestamp': not an RFC 3339 time: 'last tuesday'"
        ),
        '{"employee": "Corrie", "amount_cents": 1}': "missing field(s): timestamp",
        "[1, 2]": "expected a JSON object, got array",
    }
    lines = good[:5] + list(bad) + good[5:]
    dead = tmp_path / "dead" / "sales"

    result = run_job("sales", target, write_lines(tmp_path / "in.jsonl", lines), dead)

    assert _read_sums(target) == {
        "Corrie#201503": {b"AMOUNT": (5500, MARCH_2015_US), b"COUNT": (10, MARCH_2015_US)}
    }
    assert {d["raw"]: d["reason"] for d in read_dead_letters(dead)} == bad
    c = result.counters
    assert c["lines_read"] == len(lines) == c["events_valid"] + c["dead_letters"]
    assert c["events_valid"] == len(good) and c["dead_letters"] == len(bad)
    assert c["rows_SALES_MONTHLY"] == len(good)


def test_add_to_cell_is_not_idempotent_a_rerun_adds_again(target, tmp_path):
    """Documented behaviour (module docstrings): running the same input twice doubles it."""
    source = write_lines(tmp_path / "in.jsonl", [_sale("a", "2015-03-02T00:00:00Z", 7)])
    run_job("sales", target, source, tmp_path / "d1")
    run_job("sales", target, source, tmp_path / "d2")
    assert _read_sums(target)["a#201503"] == {
        b"AMOUNT": (14, MARCH_2015_US),
        b"COUNT": (2, MARCH_2015_US),
    }


def test_a_failed_entry_fails_the_write_and_names_the_key(target):
    key = KeyRecipe((Segment("text", "k"),))
    decl = TableDecl("AGG_CHECK", (Family("ok", aggregate="sum"),), key, "AGGREGATE")
    with admin.Admin(target) as client:
        client.ensure(decl)
    rows = [
        RowMutation("AGG_CHECK", b"good1", (AddCell("ok", b"N", 2, 1000),)),
        RowMutation("AGG_CHECK", b"bad", (AddCell("nosuchfamily", b"N", 1, 1000),)),
        RowMutation("AGG_CHECK", b"good2", (AddCell("ok", b"N", 3, 1000),)),
    ]
    with pytest.raises(Exception) as err, beam.Pipeline() as pipeline:
        _ = (
            pipeline
            | beam.Create(rows)
            | WriteAggregates(target.project, target.instance, "AGG_CHECK")
        )
    chain, exc = [], err.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    message = "\n".join(str(e) for e in chain)
    assert "1 of 3 AddToCell entries to AGG_CHECK failed: b'bad'" in message
    assert "nosuchfamily" in message
    assert "The other 2 were applied; AddToCell is not idempotent" in message
    assert any(isinstance(e, AggregateWriteError) for e in chain), chain
    # the other entries of the batch were applied (which is why a retry would add them again)
    stored = {r.key: _int64(r.cells[0].value) for r in engine.read_rows(target, "AGG_CHECK")}
    assert stored == {b"good1": 2, b"good2": 3}


def test_help_lists_the_time_zone_flag(capsys):
    from pipelines import sales as job

    with pytest.raises(SystemExit) as done:
        job.run(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--timezone", "--input", "--dead_letter", "--create_tables"):
        assert flag in out


def test_an_unknown_time_zone_stops_the_job(target, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [_sale("a", "2015-03-02T00:00:00Z", 7)])
    with pytest.raises(SystemExit, match="unknown time zone 'Mars/Base'"):
        run_job("sales", target, source, tmp_path / "d", ["--timezone=Mars/Base"])


def test_multi_processing_runner_pickles_the_writer_and_a_zoned_builder(target, tmp_path):
    """Like a distributed runner: DoFns and builders cross process boundaries pickled."""
    lines = [_sale("a", "2015-03-31T22:30:00Z", i) for i in range(1, 41)]  # 00:30 1 April, Paris
    flags = [
        "--direct_running_mode=multi_processing",
        "--direct_num_workers=2",
        "--timezone=Europe/Paris",
    ]
    run_job("sales", target, write_lines(tmp_path / "in.jsonl", lines), tmp_path / "d", flags)
    april_paris_us = (
        int(dt.datetime(2015, 4, 1, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")).timestamp())
        * 1_000_000
    )
    assert _read_sums(target) == {
        "a#201504": {b"AMOUNT": (820, april_paris_us), b"COUNT": (40, april_paris_us)}
    }


def test_replace_months_holds_with_a_time_format(tmp_path):
    """--time_format rebuilds the job's builder; the --replace_months check must survive it
    (it once raised AttributeError, and must never be dropped silently)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import common, sales

    source = write_lines(tmp_path / "in.jsonl", [])
    time_format = "--time_format=timestamp=%d/%m/%Y %H:%M"
    # the job as a check reads it (--validate_only): no Bigtable
    options = PipelineOptions(
        ["--replace_months=201501", time_format, f"--input={source}", "--validate_only"]
    )
    job = common.job_config(options, sales.job_for(options)).job
    build = job.rows_fn()
    good = parse_json_object(
        '{"employee": "Ann", "timestamp": "05/01/2015 10:00", "amount_cents": 350}'
    )
    assert [row[0] for row in build(good)] == ["SALES_MONTHLY"]
    with pytest.raises(InvalidEvent, match="201502 is not in --replace_months"):
        build({**good, "timestamp": "05/02/2015 10:00"})
