"""The whole-file check of a draft (btts/draft/check.py) finds the same refusals, overwrites
and offenders whether one process builds every record or several share them; a time made from
parts is read without strptime yet exactly as strptime reads it."""

from __future__ import annotations

import datetime as dt

import pytest

from btts.draft import check as check_mod
from btts.draft.sample import read_sample
from transforms.errors import InvalidEvent
from transforms.text import timefmt

SCHEMA = """\
dataset: probes
event:
  time: ts
  fields:
    ts: {type: time, format: epoch_ms}
    probe: {type: text, max_length: 8}
    reading: {type: number}
tables:
  - name: PROBES
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{epoch_ms: ts}]
    columns: [{family: m, qualifier: reading, value: reading}]
"""


def _file(tmp_path):
    """30,000 records past the sample's reach: a stretch where a second probe reports at the
    same times (overwrites under a key of time alone) and readings no float takes."""
    lines = ["ts,probe,reading"]
    for i in range(30_000):
        lines.append(f"{1714557600000 + 1000 * i},a,{i % 997}.5")
        if 20_000 <= i < 20_012:
            lines.append(f"{1714557600000 + 1000 * i},b,{i}.25")
        if i % 5_000 == 4_999:
            lines.append(f"{1714557600000 + 1000 * i + 1},a,n/a")
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    sample = read_sample(str(path))
    sample.complete = False  # (as a file past the sample's bound: the check reads it whole)
    sample.records = sample.records[:100]
    return sample


def test_processes_sharing_the_check_find_what_one_finds(tmp_path, monkeypatch):
    sample = _file(tmp_path)
    monkeypatch.setattr(check_mod, "_shares", lambda samples, whole: 1)
    one = check_mod.check(SCHEMA, [sample])
    monkeypatch.setattr(check_mod, "_shares", lambda samples, whole: 2)
    monkeypatch.setattr(check_mod, "_BLOCK", 64)
    two = check_mod.check(SCHEMA, [sample])
    assert one.whole and one.records == 30_018
    assert (one.dead, one.clashes) == (6, 12)
    assert "reading" in one.reason and one.clash
    assert len(one.offenders) == 6 + 24
    assert (two.records, two.dead, two.reason, two.clashes, two.clash) == (
        one.records, one.dead, one.reason, one.clashes, one.clash,
    )  # fmt: skip
    assert two.offenders == one.offenders


@pytest.mark.parametrize(
    "text",
    ["2013-01-01T05:15:00.000000", "1999-12-31T23:59:59.999999", "2013-1-1T5:15:0.0",
     "2013-02-29T05:15:00.000000", "2013-01-01T05:15:60.000000", "2013-01-01T24:00:00.000000",
     "2013-13-01T00:00:00.000000", "0000-01-01T00:00:00.000000", "2013-01-01T05:15:00.000000Z"],
)  # fmt: skip
def test_a_made_time_is_read_as_strptime_reads_it(text):
    parse = timefmt.make_parser("%Y-%m-%dT%H:%M:%S.%f", "t", earliest=-(10**15))
    try:
        moment = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f")
    except ValueError:
        with pytest.raises(InvalidEvent):
            parse(text)
    else:
        assert parse(text) == (
            moment.replace(tzinfo=dt.timezone.utc) - timefmt.EPOCH
        ) // dt.timedelta(milliseconds=1)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_check_that_is_not_final_stops_at_its_first_overwrite(tmp_path, monkeypatch, processes):
    """A round whose draft is made again anyway need not build the rest of the file; the
    overwrite it stopped at is among its offenders."""
    sample = _file(tmp_path)
    monkeypatch.setattr(check_mod, "_shares", lambda samples, whole: processes)
    monkeypatch.setattr(check_mod, "_BLOCK", 64)
    monkeypatch.setattr(check_mod, "_PROBE", 1024)
    early = check_mod.check(SCHEMA, [sample], final=False)
    assert early.partial and early.clashes >= 1 and early.records < 30_018
    assert any(r.get("probe") == "b" for r in early.offenders)
    full = check_mod.check(SCHEMA, [sample])
    assert not full.partial and (full.records, full.clashes) == (30_018, 12)


def _check_in_this_process(path: str, queue) -> None:
    sample = read_sample(path)
    sample.complete = False
    check_mod._PARALLEL_BYTES = 0  # (the file counts as large: one process per core)
    try:
        found = check_mod.check(SCHEMA, [sample])
    except Exception as err:  # (reported to the test, which fails naming it)
        queue.put(repr(err))
    else:
        queue.put((found.records, found.clashes))


def test_a_daemonic_process_checks_a_large_file_itself(tmp_path):
    """A pool's worker may have no children of its own (``daemonic processes are not allowed
    to have children``): the check there builds every record in the one process."""
    import multiprocessing

    _file(tmp_path)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    worker = context.Process(
        target=_check_in_this_process, args=(str(tmp_path / "p.csv"), queue), daemon=True
    )
    worker.start()
    found = queue.get(timeout=120)
    worker.join(timeout=30)
    assert worker.exitcode == 0
    assert found == (30_018, 12)
