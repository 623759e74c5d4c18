"""The nightly SENSOR → SENSOR_YYYYMMDD job (docs/patterns.md §5.3): exact copies of one day, safe
re-runs,
backfills, retention, the table guard, verification, and the single-table layout."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import random
import re
import zoneinfo

import pytest
from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell
from google.cloud.bigtable.data.mutations import DeleteAllFromRow
from hypothesis import given, settings
from hypothesis import strategies as st

from btts import admin, config, errors
from btts.query import engine
from pipelines import common, nightly
from pipelines.nightly import dates as nightly_dates
from pipelines.nightly import rows as nightly_rows
from tests.support import REPO
from tests.support.jobs import compiled, dump, parsed_flags, run_job, write_lines
from transforms.bigtable import write
from transforms.mutations import Cell, RowMutation
from transforms.schema import builtin_tables
from transforms.text import events

SENSOR = builtin_tables.get("SENSOR")
SENSOR_DAILY = builtin_tables.get("SENSOR_DAILY")

DAYS = ("20170724", "20170725", "20170726", "20170727")
DAY = "20170726"
# Meter ids whose zero-padded key contains a day, though not as its #YYYYMMDD suffix.
DECOY_METERS = (20170726, 2017072, 201707260)


def _lines() -> list[str]:
    """Readings of ~1,000 meters over four days (most meters on most days), three per day row."""
    rng = random.Random(20170726)
    meters = sorted(rng.sample(range(1, 10**10), 1000)) + list(DECOY_METERS)
    out = []
    for meter in meters:
        for index, day in enumerate(DAYS):
            if (meter + index) % 5 == 0 and meter not in DECOY_METERS:
                continue
            for hhmm in ("0000", "1215", "2345"):
                stamp = f"{day[:4]}-{day[4:6]}-{day[6:]}T{hhmm[:2]}:{hhmm[2:]}:00Z"
                value = f"{rng.randint(0, 99999) / 100:.2f}"
                out.append(f'{{"meter_id": {meter}, "timestamp": "{stamp}", "reading": {value}}}')
    return out


LINES = _lines()


def _sensor_rows() -> dict[bytes, list]:
    merged: dict[bytes, list] = {}
    for line in LINES:
        for row in compiled("smart_meters")(events.parse_json_object(line)):
            merged.setdefault(row.key, []).extend(row.cells)
    return merged


def _load_sensor(target: config.Target) -> None:
    """SENSOR as the smart-meters job writes it, loaded directly (fast) with the same builder."""
    with admin.Admin(target) as api:
        api.ensure(SENSOR)
    rows = list(_sensor_rows().items())
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, "SENSOR")
        for at in range(0, len(rows), 500):
            table.bulk_mutate_rows(
                [
                    RowMutationEntry(
                        key,
                        [SetCell(c.family, c.qualifier, c.value, c.timestamp_us) for c in cells],
                    )
                    for key, cells in rows[at : at + 500]
                ]
            )


def _live(target: config.Target, table: str, day: str | None = None) -> list[tuple]:
    """Every live cell (METER keeps one version; the emulator collects older ones lazily)."""
    return [
        (row.key, c.family, c.qualifier, c.value, c.timestamp_us)
        for row in engine.read_rows(target, table, latest_only=True)
        for c in row.cells
        if day is None or row.key.endswith(b"#" + day.encode())
    ]


def _rekeyed(cells: list[tuple]) -> list[tuple]:
    return sorted((nightly_rows.single_table_key(c[0]), *c[1:]) for c in cells)


def _tables(target: config.Target) -> list[str]:
    with admin.Admin(target) as api:
        return api.list_tables()


def _make_tables(target: config.Target, *names: str) -> None:
    with admin.Admin(target) as api:
        for name in names:
            api.ensure(dataclasses.replace(SENSOR, name=name))


def _nightly(target: config.Target, *flags: str):
    return nightly.run(
        [
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            *flags,
        ]
    )


def _keys(cells: list[tuple]) -> set[bytes]:
    return {c[0] for c in cells}


# -- pure ---------------------------------------------------------------------------------------


def test_expired_tables_only_well_formed_daily_tables_before_the_cutoff():
    names = [
        "SENSOR",
        "SENSOR_20170719",  # 7 days before the run date: expired with --keep_days 7
        "SENSOR_20170720",  # 6 days before: the oldest kept
        "SENSOR_20170601",
        "SENSOR_2017072",  # malformed
        "SENSOR_201707190",  # malformed
        "SENSOR_20171301",  # not a date
        "SENSOR_20170101_old",
        "SENSOR_DAILY",
        "OTHER_20170101",
        "SENSORX_20170101",
        "XSENSOR_20170101",
        "SENSOR_20170727",  # after the run date (a later day's table)
    ]
    run_day = dt.date(2017, 7, 26)
    assert nightly_dates.expired_tables(names, "SENSOR", run_day, 7) == [
        "SENSOR_20170601",
        "SENSOR_20170719",
    ]
    assert nightly_dates.expired_tables(names, "SENSOR", run_day, 1) == [
        "SENSOR_20170601",
        "SENSOR_20170719",
        "SENSOR_20170720",
    ]
    protected = nightly_dates.expired_tables(
        names, "SENSOR", run_day, 1, protect=["SENSOR_20170720"]
    )
    assert "SENSOR_20170720" not in protected
    with pytest.raises(errors.ConfigError, match="at least 1"):
        nightly_dates.expired_tables(names, "SENSOR", run_day, 0)


def test_keys_days_and_filters():
    key = SENSOR.key.build({"meter": 987654, "date": 1501027200000})
    assert key == b"0000987654#20170726"
    assert nightly_rows.key_day(key) == "20170726"
    assert nightly_rows.single_table_key(key) == b"20170726#0000987654"
    assert nightly_rows.single_table_key(key) == SENSOR_DAILY.key.build(
        {"meter": 987654, "date": 1501027200000}
    )
    with pytest.raises(ValueError, match="YYYYMMDD"):
        nightly_rows.key_day(b"0000987654#2017072")
    assert nightly_rows.day_filter(["20170726"]).regex == b"\\C*(?:\\x2320170726)"
    assert [f.name for f in SENSOR_DAILY.families] == [f.name for f in SENSOR.families]


def test_digest_changes_with_any_cell_and_ignores_order():
    def digest_rows(rows) -> nightly_rows.Digest:  # as the job combines them (CombinePerKey)
        return nightly_rows.add_digests(map(nightly_rows.row_digest, rows))

    rows = [
        RowMutation("T", b"a#20170726", (Cell("METER", b"ID", b"1", 1000),)),
        RowMutation("T", b"b#20170726", (Cell("METER", b"ID", b"2", 1000),)),
    ]
    base = digest_rows(rows)
    assert base == digest_rows(reversed(rows)) and base.rows == 2
    cell = rows[1].cells[0]
    for changed in (
        cell._replace(value=b"3"),
        cell._replace(timestamp_us=2000),
        cell._replace(qualifier=b"IE"),
        cell._replace(family="METEr"),
    ):
        assert digest_rows([rows[0], rows[1]._replace(cells=(changed,))]) != base
    assert digest_rows([rows[0], rows[0]]) != digest_rows(rows)
    assert digest_rows([]) == nightly_rows.EMPTY


_CELLS = st.lists(
    st.builds(
        Cell,
        st.sampled_from(["METER", "m", "é"]),
        st.binary(max_size=6),
        st.binary(max_size=8),
        st.integers(-(2**63), 2**63 - 1),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(key=st.binary(min_size=1, max_size=20), cells=_CELLS)
def test_a_row_digest_is_sha256_of_its_documented_encoding(key, cells):
    """The digest, field by field as its docstring says: the key, then each cell (family,
    qualifier, newest first, then value) with every field length-prefixed; any order of the
    same cells gives the same digest."""
    plain = hashlib.sha256(len(key).to_bytes(4, "big") + key)
    for c in sorted(cells, key=lambda c: (c.family, c.qualifier, -c.timestamp_us, c.value)):
        family = c.family.encode("utf-8")
        plain.update(len(family).to_bytes(2, "big") + family)
        plain.update(len(c.qualifier).to_bytes(4, "big") + c.qualifier)
        plain.update(c.timestamp_us.to_bytes(8, "big", signed=True))
        plain.update(len(c.value).to_bytes(4, "big") + c.value)
    expected = nightly_rows.Digest(1, int.from_bytes(plain.digest(), "big"))
    assert nightly_rows.row_digest(RowMutation("T", key, tuple(cells))) == expected
    assert nightly_rows.row_digest(RowMutation("T", key, tuple(reversed(cells)))) == expected


def _plan(monkeypatch, *flags: str, today=dt.date(2017, 7, 27)):
    seen = []
    monkeypatch.setattr(nightly.dates, "today", lambda tz: seen.append(tz) or today)
    options = common.parse_args(
        ["--bigtable_project=p", "--bigtable_instance=i", *flags],
        "nightly",
        "",
        nightly.OPTION_CLASSES,
    )
    return nightly.make_plan(options), seen


def test_default_date_is_yesterday_in_the_configured_zone(monkeypatch):
    plan, seen = _plan(monkeypatch)
    assert plan.days == ("20170726",) and seen == [dt.timezone.utc]
    assert plan.destinations == ("SENSOR_20170726",)
    assert plan.verify and plan.layout == "per_day_table" and plan.keep_days is None
    plan, seen = _plan(monkeypatch, "--timezone=Asia/Kolkata")
    assert seen == [zoneinfo.ZoneInfo("Asia/Kolkata")]
    plan, _ = _plan(monkeypatch, "--dates=20170630..20170702", "--no_verify")
    assert plan.days == ("20170630", "20170701", "20170702") and not plan.verify
    plan, _ = _plan(monkeypatch, "--verify=false", "--layout=single_table")
    assert not plan.verify and plan.destinations == ("SENSOR_DAILY",)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--date=2017072"], "expected a day as YYYYMMDD"),
        (["--date=20170230"], "not a calendar day"),
        (["--date=20170726", "--dates=20170701..20170702"], "either --date or --dates"),
        (["--dates=20170702..20170701"], "is before"),
        (["--dates=20170702"], "START..END"),
        (["--dates=20150101..20170101"], "more than 366"),
        (["--date=20170728"], "after today"),
        (["--keep_days=0"], "at least 1"),
        (["--source_table=NOPE"], "no table declaration named 'NOPE'"),
        (["--source_table=METRIC"], "does not end with #YYYYMMDD"),
        (["--timezone=Mars/Olympus"], "unknown time zone"),
        (["--nightly_typo=1"], "unknown option"),
    ],
)
def test_bad_flags_stop_before_anything_runs(monkeypatch, flags, message):
    monkeypatch.setattr(nightly.dates, "today", lambda tz: dt.date(2017, 7, 27))
    with pytest.raises(SystemExit) as stop:
        nightly.run(["--bigtable_project=p", "--bigtable_instance=i", *flags])
    assert message in str(stop.value) and str(stop.value).startswith("nightly: error:")


def test_help_lists_the_jobs_flags(capsys):
    with pytest.raises(SystemExit) as stop:
        nightly.run(["--help"])
    assert stop.value.code == 0
    shown = capsys.readouterr().out
    for flag in ("--date", "--dates", "--keep_days", "--layout", "--source_table", "--verify"):
        assert flag in shown
    assert "--no_verify" in shown and "--timezone" in shown and "--bigtable_instance" in shown


def test_scheduler_definition_launches_the_nightly_flex_template():
    job = json.loads((REPO / "templates" / "nightly" / "cloud-scheduler.json").read_text())
    target = job["httpTarget"]
    assert target["httpMethod"] == "POST"
    assert re.fullmatch(
        r"https://dataflow\.googleapis\.com/v1b3/projects/\$\{PROJECT\}/locations/"
        r"\$\{REGION\}/flexTemplates:launch",
        target["uri"],
    )
    assert target["oauthToken"]["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    minute, hour, *rest = job["schedule"].split()
    assert minute.isdigit() and 1 <= int(hour) <= 5  # at a quiet hour
    assert rest == ["*", "*", "*"]  # every day
    launch = target["body"]["launchParameter"]
    assert launch["containerSpecGcsPath"].endswith("nightly.json")
    flags = {action.dest for action in parsed_flags(nightly.OPTION_CLASSES).values()}
    assert set(launch["parameters"]) <= flags, set(launch["parameters"]) - flags
    assert "date" not in launch["parameters"]  # each run copies its own yesterday


# -- on the emulator ----------------------------------------------------------------------------


def test_one_day_copied_exactly_and_rerun_gives_the_same_table(target, tmp_path):
    # SENSOR written by the real smart-meters job
    source = write_lines(tmp_path / "readings.jsonl", LINES)
    run_job("smart_meters", target, source, tmp_path / "dead")
    everything = _live(target, "SENSOR")
    expected = _live(target, "SENSOR", DAY)
    assert len(_keys(everything)) > 2500 and len(_keys(expected)) > 600

    result = _nightly(target, f"--date={DAY}")

    copied = dump(target, f"SENSOR_{DAY}")
    assert copied == expected  # same keys, families, qualifiers, values and timestamps
    assert _tables(target) == ["SENSOR", f"SENSOR_{DAY}"]
    assert b"0020170726#20170724" in _keys(everything)  # a decoy: the day, but not as suffix
    assert all(k.endswith(b"#20170726") for k in _keys(copied))
    with admin.Admin(target) as api:
        assert api.get_families(f"SENSOR_{DAY}") == api.get_families("SENSOR")
    c = result.counters
    day_rows = len(_keys(expected))
    assert c["read_rows_SENSOR"] == day_rows  # the key filter ran on the server
    assert c[f"rows_SENSOR_{DAY}"] == c["verified_rows"] == day_rows
    assert c[f"cells_SENSOR_{DAY}"] == len(expected)
    assert c["verified_days"] == 1

    _nightly(target, f"--date={DAY}")
    assert dump(target, f"SENSOR_{DAY}") == copied

    # SENSOR changed since (a row deleted, a late reading): the re-run reflects it, nothing stale
    gone, late = sorted(_keys(expected))[:2]
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, "SENSOR")
        table.bulk_mutate_rows(
            [
                RowMutationEntry(gone, [DeleteAllFromRow()]),
                RowMutationEntry(late, [SetCell("METER", b"0600", b"1.00", 1501048800000000)]),
            ]
        )
    _nightly(target, f"--date={DAY}")
    again = dump(target, f"SENSOR_{DAY}")
    assert again == _live(target, "SENSOR", DAY)
    assert gone not in _keys(again) and (late, "METER", b"0600", b"1.00", 1501048800000000) in again


def test_backfill_copies_each_day_to_its_table_in_one_scan(target):
    _load_sensor(target)
    result = _nightly(target, "--dates=20170723..20170726")
    assert _tables(target) == [
        "SENSOR",
        "SENSOR_20170723",
        "SENSOR_20170724",
        "SENSOR_20170725",
        "SENSOR_20170726",
    ]
    assert dump(target, "SENSOR_20170723") == []  # a day without readings: an empty table
    for day in DAYS[:3]:
        assert dump(target, f"SENSOR_{day}") == _live(target, "SENSOR", day)
    c = result.counters
    assert c["read_rows_SENSOR"] == sum(len(_keys(_live(target, "SENSOR", d))) for d in DAYS[:3])
    assert c["verified_days"] == 4


def test_retention_drops_only_expired_daily_tables(target):
    _load_sensor(target)
    decoys = [
        "SENSOR_20170701",
        "SENSOR_20170719",
        "SENSOR_20170720",
        "SENSOR_2017072",
        "SENSOR_20171301",
        "SENSOR_20170101_old",
        "OTHER_20170101",
        "SENSORX_20170101",
    ]
    _make_tables(target, *decoys)
    _nightly(target, f"--date={DAY}", "--keep_days=7")
    assert _tables(target) == sorted(
        [
            "SENSOR",
            f"SENSOR_{DAY}",
            *(d for d in decoys if d not in ("SENSOR_20170701", "SENSOR_20170719")),
        ]
    )
    assert dump(target, f"SENSOR_{DAY}") == _live(target, "SENSOR", DAY)


def test_refuses_to_create_a_table_near_the_instance_limit(target, monkeypatch):
    _load_sensor(target)
    monkeypatch.setattr(nightly.admin_steps, "TABLE_GUARD", 4)
    _make_tables(target, "OTHER_1", "OTHER_2", "SENSOR_20170701")
    with pytest.raises(SystemExit) as stop:
        _nightly(target, f"--date={DAY}")
    message = str(stop.value)
    assert "holds 4 tables" in message and "Refusing to create" in message
    assert f"SENSOR_{DAY}" in message and "1,000" in message and "--keep_days" in message
    assert f"SENSOR_{DAY}" not in _tables(target)
    # retention first frees a slot, then the table is created (4 tables: the guard itself)
    _nightly(target, f"--date={DAY}", "--keep_days=3")
    assert _tables(target) == ["OTHER_1", "OTHER_2", "SENSOR", f"SENSOR_{DAY}"]
    # a re-run at the guard creates nothing, so it runs
    _nightly(target, f"--date={DAY}")
    assert dump(target, f"SENSOR_{DAY}") == _live(target, "SENSOR", DAY)


def test_a_row_lost_before_the_write_fails_verification_loudly(target, monkeypatch):
    _load_sensor(target)
    victim = sorted(_keys(_live(target, "SENSOR", DAY)))[7]
    original = write._SplitByTableFn.process

    def losing(self, batch):
        yield from original(self, [row for row in batch if row.key != victim])

    monkeypatch.setattr(write._SplitByTableFn, "process", losing)
    with pytest.raises(Exception, match=f"verification failed for {DAY}") as failure:
        _nightly(target, f"--date={DAY}")
    day_rows = len(_keys(_live(target, "SENSOR", DAY)))
    assert f"{day_rows:,} rows" in str(failure.value) and f"{day_rows - 1:,} rows" in str(
        failure.value
    )
    # without verification the same loss goes unnoticed: the check is what catches it
    _nightly(target, f"--date={DAY}", "--no_verify")
    assert victim not in _keys(dump(target, f"SENSOR_{DAY}"))


def test_an_altered_value_fails_verification(target, monkeypatch):
    _load_sensor(target)
    victim = sorted(_keys(_live(target, "SENSOR", DAY)))[-1]
    original = write._LeanBatcher.add

    def altering(self, row):
        if row.key == victim:
            first = row.cells[0]
            row = row._replace(cells=(first._replace(value=first.value + b"0"), *row.cells[1:]))
        return original(self, row)

    monkeypatch.setattr(write._LeanBatcher, "add", altering)
    with pytest.raises(Exception, match=f"verification failed for {DAY}"):
        _nightly(target, f"--date={DAY}")


def test_single_table_layout(target):
    _load_sensor(target)
    result = _nightly(target, "--layout=single_table", "--dates=20170725..20170726")
    assert _tables(target) == ["SENSOR", "SENSOR_DAILY"]
    two_days = _live(target, "SENSOR", "20170725") + _live(target, "SENSOR", DAY)
    copied = dump(target, "SENSOR_DAILY")
    assert copied == _rekeyed(two_days)
    assert all(re.fullmatch(rb"2017072[56]#[0-9]{10}", c[0]) for c in copied)
    assert result.counters["verified_days"] == 2
    assert result.counters["verified_rows"] == len(_keys(two_days))

    _nightly(target, "--layout=single_table", "--dates=20170725..20170726")
    assert dump(target, "SENSOR_DAILY") == copied

    # retention in one table: day prefixes older than the kept days go, the rest stays
    _nightly(target, "--layout=single_table", "--date=20170727", "--keep_days=2")
    kept = _live(target, "SENSOR", DAY) + _live(target, "SENSOR", "20170727")
    assert dump(target, "SENSOR_DAILY") == _rekeyed(kept)
    assert _tables(target) == ["SENSOR", "SENSOR_DAILY"]
