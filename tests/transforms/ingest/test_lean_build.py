"""The build step's lean rows (transforms/mutations.py) against its whole ones: the same blocks
built both ways give the same entries, rows that tell the same table, key, cell count and stamp,
the same dead letters and the same series index (folded by the builder, from the rows it leaves
to the index, and from records built apart for the limits check); through Beam, the step hands
on batches whose every row lands what the plain builder's row encoded by the writer lands."""

from __future__ import annotations

import json
import random

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from btts.samples import data as samples
from tests.support.lean_rows import PROBES, market_records, probe_records, same_rows
from transforms import schema as schema_lib
from transforms.builder import wire
from transforms.builder.builder import Builder
from transforms.ingest import block_rows
from transforms.ingest.block_rows import EventSpans
from transforms.ingest.build_rows import INDEX, ROWS, BuildRows, OverwriteCheck
from transforms.ingest.fingerprints import RowPrints
from transforms.ingest.index_fold import BundleIndex, IndexPlan
from transforms.ingest.readers import Block
from transforms.mutations import cell_count, first_stamps, is_lean, without_empty_rows
from transforms.scans import series_index as layout
from transforms.text import events

CASES = {
    "server_metrics": lambda rng: list(samples.metric_records(hosts=4, seconds=3600)),
    "market_data": market_records,
    "lean_probes": probe_records,
    "weather_balloons": lambda rng: list(samples.balloon_records(balloons=3, minutes=60)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lean_rows_fold_the_same_index_and_land_what_whole_rows_do(name):
    schema = schema_lib.loads(PROBES) if name == "lean_probes" else schema_lib.builtin(name)
    builder = Builder(schema)
    indexed = [t.name for t in layout.indexed_tables(schema) if t.name in builder.tables]
    lean = frozenset(builder.tables)
    rng = random.Random(name)
    records = CASES[name](rng)
    lines = [json.dumps(r) for r in records]
    plan = IndexPlan.of(schema, indexed)
    whole = BundleIndex(plan, builder, builder.framer())
    slim = BundleIndex(plan, builder, builder.framer(lean), lean)
    built = [t for t in indexed if layout.TableSeries(schema, schema.table(t)).built]
    apart = set(indexed) - {f.table for f in builder.folding_framer(built, lean)[1]}
    made = bad = 0
    for at in range(0, len(lines), 7):
        block = lines[at : at + 7]
        full, thin = (
            block_rows.build_block(
                "f", "jsonl", block, events.parse_json_object, None, i.frame, checked=i.checked
            )
            for i in (whole, slim)
        )
        assert thin.bad == full.bad and thin.entries == full.entries
        made += same_rows(thin.batch, thin.entries, full.batch)
        bad += len(thin.bad)
        assert not any(is_lean(row) for row in thin.batch if row[0] in apart)
        assert slim.add(thin.batch) == whole.add(full.batch) == 0
    assert made > 0 and (bad > 0) == (name in ("lean_probes", "market_data"))
    assert bool(apart) == (name == "weather_balloons")  # (whose blobs and unpivoted rows)
    got, want = slim.drain(), whole.drain()
    assert got is not None and list(got) == list(want) and got.entries == want.entries


def test_spans_and_fingerprints_read_lean_rows_as_whole_ones():
    """The event-time spans and the overwrite check's fingerprints of a block are the same
    from its lean rows as from its whole ones."""
    schema = schema_lib.builtin("server_metrics")
    builder = Builder(schema)
    lines = [json.dumps(r) for r in samples.metric_records(hosts=5, seconds=600)]
    event_ms = {t: schema.decls()[t].event_ms for t in builder.tables}
    checked = dict.fromkeys(builder.tables, False)  # every stamp read, as a table keyed without
    outs = []
    for frame in (builder.framer(), builder.framer(builder.tables)):
        out = block_rows.build_block(
            "f", "jsonl", lines, events.parse_json_object, builder.rows, frame
        )
        batch = without_empty_rows(out.batch)  # as the step hands them on
        spans, prints = EventSpans(event_ms), RowPrints(checked)
        spans.track(batch)
        prints.add(batch, "f", "jsonl", 0)
        shards = [
            (shard, {t: sorted(a.tolist()) for t, a in (*p.ids.items(), *p.keys.items())})
            for shard, p in prints.drain()
        ]
        outs.append((spans.rows, spans.drain(), prints.rows, shards))
    assert outs[0] == outs[1] and outs[0][0] > 0


def _landed(batch) -> list[tuple]:
    """Per row of a batch: table, key, cell count, stamp, its entry and whether it is lean."""
    return [
        (row[0], row[1], cell_count(row), first_stamps([row])[0], entry, is_lean(row))
        for row, entry in zip(batch, batch.entries, strict=True)
    ]


@pytest.mark.parametrize("lean", [False, True], ids=["whole", "lean"])
def test_the_build_step_hands_on_batches_that_land_what_the_plain_rows_do(lean):
    """Through Beam (the step finds the builder's own framer, makes it lean and folding): every
    row lands the plain row's bytes and tells its count and stamp; the index is the same."""
    schema = schema_lib.builtin("server_metrics")
    builder = Builder(schema)
    records = list(samples.metric_records(hosts=3, seconds=300))
    lines = [json.dumps(r) for r in records]
    want = [
        (row[0], row[1], len(row[2]), row[2][0][3], wire.framed(wire.entry(row)), lean)
        for record in records
        for row in builder.rows(events.parse_json_object(json.dumps(record)))
        if row[2]
    ]
    plan = IndexPlan.of(schema, ["METRIC"])
    alone = BundleIndex(plan, builder, builder.framer())
    block_rows.build_block("f", "jsonl", lines, events.parse_json_object, None, alone.frame)
    index_keys = sorted({row[1] for row in alone.drain()})
    blocks = [Block("f", "jsonl", lines[at : at + 10]) for at in range(0, len(lines), 10)]
    step = BuildRows(
        builder.rows,
        "p",
        framed=builder.frame_into,
        check=OverwriteCheck(dict.fromkeys(builder.tables, False)),
        index=plan,
        lean=builder.tables if lean else (),
    )
    with TestPipeline() as pipeline:
        built = pipeline | beam.Create(blocks) | step
        assert_that(built[ROWS] | beam.FlatMap(_landed), equal_to(want))
        keys = built[INDEX] | "IndexRows" >> beam.FlatMap(list) | beam.Map(lambda r: r[1])
        assert_that(keys | beam.Distinct(), equal_to(index_keys), label="index")
