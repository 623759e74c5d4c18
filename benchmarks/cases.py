"""One measurement per process (clean memory, comparable peak RSS). The orchestrator
(``benchmarks.run``) calls ``python -m benchmarks.cases MODE ...`` and reads the ``RESULT`` line
(a toy run, which only asks whether every case runs, calls ``MODES`` in its own process).

Modes:
  ours DATASET INPUT INSTANCE [mp|nocheck|index|noindex]...   the real job's run(), as a user
                                     runs it (mp: two worker processes; nocheck:
                                     --overwrite_check=off; index/noindex: a built-in file
                                     through the generic job, with and without its series index)
  naive DATASET INPUT INSTANCE       json.loads -> one DirectRow per event -> WriteToBigTable
  ceiling DATASET INPUT INSTANCE N   our rows, pre-built, through the data client's batcher
                                     in N processes (nothing else timed)
  wire DATASET INPUT INSTANCE N      our rows, pre-encoded as raw MutateRows requests, sent
                                     on the GAPIC stub 4 at a time in N processes: the limit
                                     of this emulator as seen from Python (nothing else timed)
  core DATASET INPUT [PASSES]        parse + validate + key + cells, no I/O, one core (the
                                     best of PASSES passes, 10)
  fold DATASET INPUT [EVENTS] [PASSES]  what the builder's series-index fold costs an event:
                                     the job's framer with and without its fold lines on the
                                     same EVENTS records (200,000), PASSES rounds (7), paired
  nightly_ours INSTANCE DATE         the nightly job for one day
  nightly_ceiling INSTANCE DATE [verify]  the same day read (server-side filter) and written with
                                     the data client directly
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import multiprocessing
import os
import resource
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore")

PROJECT = "test-project"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS = {"metrics": "server_metrics", "meters": "smart_meters", "market": "market_data"}
# A user's schema file from docs/schemas/, run by the generic job: the path users take.
USER_SCHEMAS = {"ticks": os.path.join(REPO, "docs", "schemas", "ts-cols-stock-ticks.yaml")}


def schema_of(dataset: str):
    """The schema file a dataset's job compiles (built-in, or a user's file)."""
    from transforms import schema as schema_lib

    if dataset in USER_SCHEMAS:
        return schema_lib.load(USER_SCHEMAS[dataset])
    return schema_lib.builtin(JOBS[dataset])


def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def _cpu_s() -> float:
    """CPU seconds of this process (every thread) and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class _Clock:
    """Wall and CPU seconds of what runs inside it: CPU over the events tells what the job
    costs this process, whatever the emulator on the other core does meanwhile."""

    def __enter__(self) -> _Clock:
        self._wall, self._cpu = time.perf_counter(), _cpu_s()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._wall
        self.cpu_s = round(_cpu_s() - self._cpu, 3)


def _emit(**fields) -> None:
    fields["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    print("RESULT " + json.dumps(fields), flush=True)


def _builder(dataset: str):
    """decode + the compiled schema builder: what every job runs per line."""
    from transforms.builder.builder import Builder
    from transforms.text import events

    build = Builder(schema_of(dataset)).rows  # plain (table, key, cells) tuples
    decode = events.parse_json_object
    return lambda line: build(decode(line))


def ours(dataset: str, path: str, instance: str, *modes: str) -> None:
    from pipelines import load
    from transforms.metrics import CHECK_CPU_US, INDEX_CPU_US

    argv = [
        f"--input={path}",
        f"--bigtable_project={PROJECT}",
        f"--bigtable_instance={instance}",
        f"--dead_letter={path}.dead",
    ]
    if "mp" in modes:
        argv += ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
    if "nocheck" in modes:  # the same run without the overwrite check: what the check costs
        argv.append("--overwrite_check=off")
    index = "index" in modes or "noindex" in modes
    generic = dataset in USER_SCHEMAS or index
    if dataset in USER_SCHEMAS:
        argv.append(f"--schema={USER_SCHEMAS[dataset]}")
    elif index:  # the built-in file, with and without its series index
        argv.append(f"--schema={_schema_copy(dataset, path, keep_index='index' in modes)}")
    job = load("generic" if generic else JOBS[dataset])
    with _Clock() as clock:
        result = job.run(argv)
    counters = result.counters
    index = schema_of(dataset).index
    # the data rows, as the ceiling and wire cases write them; the series index's apart
    index_counters = {f"rows_{index.table}", f"cells_{index.table}"} if index else set()
    _emit(
        seconds=clock.seconds,
        cpu_s=clock.cpu_s,
        events=counters.get("events_valid", 0),
        rows=sum(
            v for k, v in counters.items() if k.startswith("rows_") and k not in index_counters
        ),
        cells=sum(
            v for k, v in counters.items() if k.startswith("cells_") and k not in index_counters
        ),
        index_rows=counters.get(f"rows_{index.table}", 0) if index else 0,
        # the CPU of the overwrite check's own code, timed inside the job (0: no check)
        check_cpu_s=counters.get(CHECK_CPU_US, 0) / 1e6,
        # the series index's CPU beside the builder's fold, timed inside the job (0: no index)
        index_cpu_s=counters.get(INDEX_CPU_US, 0) / 1e6,
    )


def _schema_copy(dataset: str, path: str, keep_index: bool) -> str:
    """The built-in schema file of ``dataset`` beside the input, its ``index:`` kept or not
    (the series index's cost is the difference of the two runs)."""
    schema = schema_of(dataset)
    text = (
        schema.text
        if keep_index
        else schema.text.replace(f"index: {{table: {schema.index.table}}}", "")
    )
    out = f"{path}.{'index' if keep_index else 'noindex'}.yaml"
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(text)
    return out


def _naive_row(dataset: str, line: str):
    """What public samples do: one DirectRow per event, set_cell with a datetime."""
    from google.cloud.bigtable.row import DirectRow

    event = json.loads(line)
    if dataset == "metrics":
        moment = dt.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
        ms = int(moment.timestamp() * 1000)
        row = DirectRow(row_key=f"{event['hostname']}#{ms:013d}".encode())
        for name, value in event["metrics"].items():
            row.set_cell("METRIC", name.upper().encode(), str(value).encode(), timestamp=moment)
    elif dataset == "meters":
        moment = dt.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
        row = DirectRow(row_key=f"{event['meter_id']:010d}#{moment:%Y%m%d}".encode())
        row.set_cell(
            "METER", f"{moment:%H%M}".encode(), str(event["reading"]).encode(), timestamp=moment
        )
    elif dataset == "ticks":
        moment = dt.datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))
        ms = int(moment.timestamp() * 1000)
        row = DirectRow(row_key=f"{event['symbol']}#{ms:013d}".encode())
        for name in ("price", "size"):
            row.set_cell("t", name.encode(), str(event[name]).encode(), timestamp=moment)
    else:
        moment = dt.datetime.fromisoformat(event["quote_time"].replace("Z", "+00:00"))
        ms = int(moment.timestamp() * 1000)
        key = f"{event['exchange']:<6}#{event['symbol']:<5}#{ms}"
        row = DirectRow(row_key=key.encode())
        for name in ("bid", "ask", "bid_size", "ask_size"):
            row.set_cell("MD", name.upper().encode(), str(event[name]).encode(), timestamp=moment)
    return row


def naive(dataset: str, path: str, instance: str) -> None:
    import apache_beam as beam
    from apache_beam.io.gcp.bigtableio import WriteToBigTable

    table = {"metrics": "METRIC", "meters": "SENSOR", "market": "QUOTE", "ticks": "TICK"}[dataset]
    with _Clock() as clock, beam.Pipeline() as pipeline:
        (
            pipeline
            | beam.io.ReadFromText(path)
            | beam.Map(lambda line: _naive_row(dataset, line))
            | WriteToBigTable(PROJECT, instance, table)
        )
    with open(path, encoding="utf-8") as f:
        events = sum(1 for _ in f)
    _emit(seconds=clock.seconds, cpu_s=clock.cpu_s, events=events, rows=events, cells=None)


def _entries(dataset: str, path: str):
    from google.cloud.bigtable.data import RowMutationEntry, SetCell

    build = _builder(dataset)
    by_table: dict[str, list] = {}
    cells = 0
    with open(path, "rb") as f:
        for line in f:
            for table, key, row_cells in build(line):
                mutations = [SetCell(*cell) for cell in row_cells]
                cells += len(mutations)
                by_table.setdefault(table, []).append(RowMutationEntry(key, mutations))
    return by_table, cells


def _write_entries(instance: str, by_table: dict, start: int, step: int) -> None:
    from google.cloud.bigtable.data import BigtableDataClient

    with BigtableDataClient(project=PROJECT) as client:
        for name, entries in by_table.items():
            table = client.get_table(instance, name)
            with table.mutations_batcher() as batcher:
                for entry in entries[start::step]:
                    batcher.append(entry)


def _in_processes(procs: int, what: str, write, *args) -> None:
    """``write(*args, start, step)`` over ``procs`` forked processes (in this one if 1), each
    taking every ``procs``-th item from ``start``."""
    if procs == 1:
        write(*args, 0, 1)
        return
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=write, args=(*args, i, procs)) for i in range(procs)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        if worker.exitcode:
            raise SystemExit(f"{what} writer exited with {worker.exitcode}")


def ceiling(dataset: str, path: str, instance: str, processes: str = "1") -> None:
    procs = int(processes)
    by_table, cells = _entries(dataset, path)  # pre-built: not timed
    rows = sum(len(v) for v in by_table.values())
    with _Clock() as clock:
        _in_processes(procs, "ceiling", _write_entries, instance, by_table)
    _emit(seconds=clock.seconds, cpu_s=clock.cpu_s, events=None, rows=rows, cells=cells)


def _requests(dataset: str, path: str, instance: str, per_request: int):
    from transforms.builder.wire import entry, framed

    build = _builder(dataset)
    by_table: dict[str, list] = {}
    rows = cells = 0
    with open(path, "rb") as f:
        for line in f:
            for row in build(line):
                batches = by_table.setdefault(row[0], [])
                if not batches or len(batches[-1]) >= per_request:
                    batches.append([])
                batches[-1].append(framed(entry(row)))
                cells += len(row[2])
                rows += 1
    return (
        [
            (f"projects/{PROJECT}/instances/{instance}/tables/{table}", batch)
            for table, batches in by_table.items()
            for batch in batches
        ],
        rows,
        cells,
    )


def _send_requests(requests: list, start: int, step: int) -> None:
    """The write step's own sending path (raw bytes on a channel of its own), nothing else."""
    from concurrent import futures

    from transforms.bigtable.channel import open_channel
    from transforms.bigtable.transport import (
        MAX_IN_FLIGHT,
        all_written,
        mutate_rows_call,
        parse_response,
    )
    from transforms.builder.wire import request_head

    channel = open_channel()
    calls = {}

    def send(request) -> None:
        table_name, entries = request
        call = calls.get(table_name) or calls.setdefault(
            table_name, mutate_rows_call(channel, table_name)
        )
        for response in call(request_head(table_name) + b"".join(entries), 60):
            if response == all_written(len(entries)):  # what the write step checks first
                continue
            response = parse_response(response)
            if any(entry.status.code for entry in response.entries):
                raise SystemExit(f"wire ceiling: a row was refused: {response}")

    with futures.ThreadPoolExecutor(MAX_IN_FLIGHT) as pool:  # as many as the job has
        for done in pool.map(send, requests[start::step]):
            del done


def wire(dataset: str, path: str, instance: str, processes: str = "1") -> None:
    from transforms.bigtable.write import DEFAULT_FLUSH_COUNT

    procs = int(processes)
    requests, rows, cells = _requests(dataset, path, instance, DEFAULT_FLUSH_COUNT)  # not timed
    with _Clock() as clock:
        _in_processes(procs, "wire", _send_requests, requests)
    _emit(seconds=clock.seconds, cpu_s=clock.cpu_s, events=None, rows=rows, cells=cells)


def core(dataset: str, path: str, passes: str = "10") -> None:
    from transforms.builder.builder import Builder
    from transforms.text import events

    # What the job's BuildRows does per record of a block: lines without their newline,
    # decoded, then the compiled builder's plain rows.
    build = Builder(schema_of(dataset)).rows
    decode = events.parse_json_object
    with open(path, "rb") as f:
        lines = f.read().splitlines()
    best = None
    rows = 0
    # Best of 10 passes, timeit's convention: the fastest pass is the one the rest of the
    # machine disturbed least (this VM's neighbours make single passes vary by 1.5x).
    for _ in range(int(passes)):
        started = time.perf_counter()
        rows = 0
        for line in lines:
            rows += len(build(decode(line)))
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    _emit(seconds=best, events=len(lines), rows=rows, cells=None)


def fold(dataset: str, path: str, events: str = "200000", passes: str = "7") -> None:
    """Why apart: the fold runs per event inside the generated builder, where a clock read
    would cost more than the fold, so the job times the index's other work only
    (``series_index_cpu_us``). Here the build step's two framers, as it makes them (lean rows,
    the fold's accumulators drained between passes), build the same decoded records a block
    (256) at a time, a pass of each a round, the order turned round every other round;
    ``ns_per_event``: the median of the rounds' differences, over the records (0: the schema
    has no index). Paired, as the shares are: the best pass of each side could come from
    different moments of a noisy machine (two runs' best-of-five differed 146 and 372 ns)."""
    from transforms.builder.builder import Builder
    from transforms.ingest.index_fold import BundleIndex, IndexPlan
    from transforms.scans import series_index
    from transforms.text import events as event_text

    schema = schema_of(dataset)
    builder = Builder(schema)
    lean = frozenset(builder.tables)
    plain = builder.framer(lean)
    tables = [t.name for t in series_index.indexed_tables(schema)]
    index = BundleIndex(IndexPlan.of(schema, tables), builder, plain, lean) if tables else None
    with open(path, "rb") as f:
        records = [event_text.parse_json_object(line) for line in itertools.islice(f, int(events))]

    def one_pass(frame) -> float:
        started = time.thread_time()
        for at in range(0, len(records), 256):
            rows, entries = [], []
            for record in records[at : at + 256]:
                frame(record, rows, entries)
        return time.thread_time() - started

    diffs, plains = [], []
    for turn in range(int(passes)):
        if index is None:
            plains.append(one_pass(plain))
            continue
        first, second = (plain, index.frame) if turn % 2 == 0 else (index.frame, plain)
        took = {first: one_pass(first), second: one_pass(second)}
        index.drain()
        plains.append(took[plain])
        diffs.append(took[index.frame] - took[plain])
    spent = statistics.median(diffs) if diffs else 0.0
    _emit(
        seconds=min(plains),
        events=len(records),
        ns_per_event=round(spent / max(len(records), 1) * 1e9, 1),
    )


def nightly_ours(instance: str, date: str, *flags: str) -> None:
    from pipelines import nightly

    with _Clock() as clock:
        result = nightly.run(
            [
                f"--date={date}",
                f"--bigtable_project={PROJECT}",
                f"--bigtable_instance={instance}",
                *flags,
            ]
        )
    counters = result.counters
    read = counters.get("read_rows_SENSOR", 0)  # the copy's source scan, not the verification
    written = counters.get(f"rows_SENSOR_{date}", 0)
    _emit(
        seconds=clock.seconds,
        cpu_s=clock.cpu_s,
        events=None,
        rows=written,
        cells=None,
        rows_read_from_server=read,
        counters=counters,
    )


def nightly_ceiling(instance: str, date: str, verify: str = "") -> None:
    """The data client doing the nightly job's work for one day, timed from the same point as
    the job (after the imports): create the destination table (the job creates its own), read
    the day with a server-side key filter, write it; with ``verify``, also read the copy back
    and compare row count and checksum (the same digest as the job's). Only the DirectRunner,
    the graph and the job's flag parsing are the job's alone."""
    # What the copy uses, imported before the clock as the job's modules are.
    from google.cloud.bigtable.data import BigtableDataClient  # noqa: F401

    from btts import admin  # noqa: F401
    from pipelines.nightly.rows import row_digest  # noqa: F401
    from transforms.schema import builtin_tables  # noqa: F401

    with _Clock() as clock:
        rows = _client_copy(instance, date, f"SENSOR_CEIL{'V' if verify else ''}_{date}", verify)
    _emit(
        seconds=clock.seconds,
        cpu_s=clock.cpu_s,
        events=None,
        rows=rows,
        cells=None,
        rows_read_from_server=rows,
    )


def _client_copy(instance: str, date: str, destination: str, verify: str) -> int:
    """The ceiling's work (see :func:`nightly_ceiling`): the rows copied."""
    import dataclasses

    from google.cloud.bigtable.data import (
        BigtableDataClient,
        ReadRowsQuery,
        RowMutationEntry,
        SetCell,
        row_filters,
    )

    from btts import admin, config
    from pipelines.nightly.rows import add_digests, row_digest
    from transforms.mutations import Cell, RowMutation
    from transforms.schema import builtin_tables

    def cells_of(row) -> list:
        return [Cell(c.family, c.qualifier, c.value, c.timestamp_micros) for c in row.cells]

    with admin.Admin(config.Target(PROJECT, instance)) as api:
        api.ensure(dataclasses.replace(builtin_tables.get("SENSOR"), name=destination))
    copied, rows = [], 0
    with BigtableDataClient(project=PROJECT) as client:
        source = client.get_table(instance, "SENSOR")
        sink = client.get_table(instance, destination)
        query = ReadRowsQuery(row_filter=row_filters.RowKeyRegexFilter(f".*#{date}".encode()))
        with sink.mutations_batcher() as batcher:
            for row in source.read_rows_stream(query):
                cells = cells_of(row)
                batcher.append(RowMutationEntry(row.row_key, [SetCell(*c) for c in cells]))
                rows += 1
                if verify:
                    copied.append(row_digest(RowMutation(destination, row.row_key, cells)))
        if verify:
            stored = add_digests(
                row_digest(RowMutation(destination, row.row_key, cells_of(row)))
                for row in sink.read_rows_stream(ReadRowsQuery())
            )
            if stored != add_digests(copied):
                raise SystemExit(f"ceiling: {destination} does not hold the rows copied")
    return rows


def load_sensor(instance: str, meters: str, days: str) -> None:
    """SENSOR with ``days`` full days (96 readings) for ``meters`` meters, written directly:
    the nightly job's input, not a measurement."""
    from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell

    from benchmarks.data import START_MS
    from transforms.schema.builtin_tables import get
    from transforms.text.timefmt import time_of_day

    SENSOR = get("SENSOR")

    started = time.perf_counter()
    rows = 0
    with BigtableDataClient(project=PROJECT) as client:
        table = client.get_table(instance, "SENSOR")
        with table.mutations_batcher() as batcher:
            for day in range(int(days)):
                day_ms = START_MS + day * 86_400_000
                for meter in range(int(meters)):
                    key = SENSOR.key.build({"meter": 100000 + meter, "date": day_ms})
                    cells = [SetCell("METER", b"ID", str(100000 + meter).encode(), day_ms * 1000)]
                    for slot in range(96):
                        ts = day_ms + slot * 900_000
                        value = f"{(meter * 7 + slot) % 5000 / 100:.2f}".encode()
                        cells.append(SetCell("METER", time_of_day(ts).encode(), value, ts * 1000))
                    batcher.append(RowMutationEntry(key, cells))
                    rows += 1
    _emit(seconds=time.perf_counter() - started, events=None, rows=rows, cells=rows * 97)


MODES = {
    "load_sensor": load_sensor,
    "ours": ours,
    "naive": naive,
    "ceiling": ceiling,
    "wire": wire,
    "core": core,
    "fold": fold,
    "nightly_ours": nightly_ours,
    "nightly_ceiling": nightly_ceiling,
}

if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # a job's own log lines are not the measurement
    if sys.argv[1] == "core":
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says
    MODES[sys.argv[1]](*sys.argv[2:])
