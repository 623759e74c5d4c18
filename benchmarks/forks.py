"""What each fork of a library buys: the fork and its official counterpart timed on the same input
in one run, and a JSON report (benchmarks/results/forks.json; docs/forks.md reads it).

    python -m benchmarks.forks            # part of make bench
    python -m benchmarks.forks --quick    # part of make bench-quick

Components (transforms/official.py names them): ``wire`` (hand-written entry bytes against the
protobuf runtime), ``builder`` (generated source against the plain loop), ``filters`` (row
filters to protobuf against the library's own serialization), ``read`` (ReadRows merged by hand
against the data client's read_rows, on the emulator), ``mutate`` (MutateRows requests sent raw
against the data client's bulk_mutate_rows, on the emulator) and ``http`` (the asyncio front
against the standard library's threading server). Each figure is the best (CPU-bound parts) or
the median (parts that wait on a server) of a few rounds that alternate the two paths, so that a
load coming and going on a shared machine falls on both; ``speedup`` is fork over official.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from benchmarks import data
from benchmarks.run import MACHINE, ROOT
from transforms import schema as schema_lib
from transforms.text import events

SIZES = {  # (quick, full)
    "events": (3_000, 30_000),  # builder and wire: server_metrics events
    "filters": (2_000, 20_000),  # filters serialized
    "rows": (1_000, 10_000),  # read: rows of 4 cells read back
    "writes": (2_000, 20_000),  # mutate: rows written, 500 per request
    "requests": (400, 4_000),  # http: keep-alive requests, over 4 connections
    "slow": (100, 500),  # http: connections trickling their heads
}
ROUNDS = (3, 5)


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def compare(
    unit: str, count: int, fork: Callable[[], object], official: Callable[[], object], rounds: int,
    best: bool = True,
) -> dict:  # fmt: skip
    """Times ``fork()`` and ``official()`` (each does ``count`` ``unit``) alternately."""
    times: dict[str, list[float]] = {"fork": [], "official": []}
    for _ in range(rounds):
        for name, fn in (("fork", fork), ("official", official)):
            started = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - started)
    pick = min if best else statistics.median
    out = {name: {f"{unit}_per_s": _rate(count, pick(t))} for name, t in times.items()}
    out["speedup"] = round(out["fork"][f"{unit}_per_s"] / out["official"][f"{unit}_per_s"], 2)
    out["unit"], out["count"], out["rounds"] = unit, count, rounds
    out["figure"] = "best" if best else "median"
    return out


def _records(work: Path, count: int) -> list[dict]:
    path = work / "metrics.jsonl"
    data.metrics(path, count)
    return [events.parse_json_object(line) for line in path.read_bytes().splitlines()]


def bench_builder(records: list[dict], rounds: int, monkeypatch_env) -> dict:
    from transforms.builder.builder import Builder

    schema = schema_lib.builtin("server_metrics")
    fork = Builder(schema)
    with monkeypatch_env("builder"):
        plain = Builder(schema)

    def run(builder):
        rows = builder.rows
        return lambda: [rows(r) for r in records]

    return compare("events", len(records), run(fork), run(plain), rounds)


def bench_wire(records: list[dict], rounds: int) -> dict:
    from transforms.bigtable.client_entries import protobuf_entry
    from transforms.builder import wire
    from transforms.builder.builder import Builder

    builder = Builder(schema_lib.builtin("server_metrics"))
    rows = [row for r in records for row in builder.rows(r)]
    encoder = wire.EntryEncoder()

    def fork():
        return [encoder(row) for row in rows]

    def official():
        return [protobuf_entry(row) for row in rows]

    out = compare("rows", len(rows), fork, official, rounds)
    framer = builder.framer()  # the job's build step: entries made while the rows are built

    def framed_build():
        made_rows: list = []
        made_entries: list = []
        for record in records:
            framer(record, made_rows, made_entries)

    def build_then_protobuf():
        for record in records:
            for row in builder.rows(record):
                protobuf_entry(row)

    out["framed_build"] = compare("events", len(records), framed_build, build_then_protobuf, rounds)
    return out


def bench_filters(count: int, rounds: int) -> dict:
    import datetime as dt

    from google.cloud.bigtable.data import row_filters as rf
    from google.cloud.bigtable_v2.types.data import RowFilter

    from transforms.bigtable.filter_proto import filter_pb

    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    filters = [  # what btts serve sends: a column, a time range, versions
        rf.RowFilterChain(
            filters=[
                rf.FamilyNameRegexFilter("METRIC"),
                rf.ColumnQualifierRegexFilter(b"CPU_%d" % (i % 50)),
                rf.TimestampRangeFilter(start, start + dt.timedelta(hours=i % 24 + 1)),
                rf.CellsColumnLimitFilter(1),
            ]
        )
        for i in range(count)
    ]

    def fork():
        return [filter_pb(f).SerializeToString() for f in filters]

    def official():  # the library's own conversion (what its read_rows runs; private to it)
        return [RowFilter.serialize(f._to_pb()) for f in filters]

    return compare("filters", count, fork, official, rounds)


def _table(target, name: str) -> str:
    from btts import admin
    from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

    decl = TableDecl(name, (Family("f"),), KeyRecipe((Segment("text", "k"),)), "TS-COLS")
    with admin.Admin(target) as api:
        api.ensure(decl)
    return target.table_path(name)


def bench_read(target, count: int, rounds: int) -> dict:
    from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowMutationEntry
    from google.cloud.bigtable.data.mutations import SetCell

    from transforms.bigtable import rows_stream

    name = _table(target, "READS")
    client = BigtableDataClient(project=target.project)
    table = client.get_table(target.instance, "READS")
    entries = [
        RowMutationEntry(
            b"row#%06d" % i, [SetCell("f", b"q%d" % c, b"v" * 20, 1000) for c in range(4)]
        )
        for i in range(count)
    ]
    for start in range(0, count, 5000):
        table.bulk_mutate_rows(entries[start : start + 5000])
    reader = rows_stream.RowReader(rows_stream.open_channel())
    query = ReadRowsQuery()

    def fork():
        assert len(list(reader.stream(rows_stream.request_of(name, query), 120))) == count

    def official():
        request = rows_stream.ClientRequest(name, query)
        assert len(list(reader.stream(request, 120))) == count

    try:
        return compare("rows", count, fork, official, rounds, best=False)
    finally:
        reader.close()
        client.close()


def bench_mutate(target, count: int, rounds: int) -> dict:
    from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry
    from google.cloud.bigtable.data.mutations import SetCell

    from transforms.bigtable import transport
    from transforms.bigtable.channel import open_channel
    from transforms.builder import wire
    from transforms.mutations import Cell

    name = _table(target, "WRITES")
    rows = [
        ("WRITES", b"host%04d#%d" % (i % 997, i), (Cell("f", b"CPU", b"%d.5" % i, 1000 * i),))
        for i in range(count)
    ]
    chunks = [rows[s : s + 500] for s in range(0, count, 500)]  # one request each
    channel = open_channel()
    client = BigtableDataClient(project=target.project)
    table = client.get_table(target.instance, "WRITES")
    send = transport.RequestSender(transport.mutate_rows_call(channel, name), 60.0)
    head = wire.request_head(name)

    def fork():  # rows to bytes to the server, as the writer does
        encoder = wire.EntryEncoder()
        for chunk in chunks:
            batch = transport.Batch(head, [encoder(r) for r in chunk], [r[1] for r in chunk])
            assert not send(batch).errors

    def official():  # rows to the data client's entries to bulk_mutate_rows, as a user would
        for chunk in chunks:
            table.bulk_mutate_rows(
                [
                    RowMutationEntry(key, [SetCell(*cell) for cell in cells])
                    for _t, key, cells in chunk
                ]
            )

    try:
        return compare("rows", count, fork, official, rounds, best=False)
    finally:
        channel.close()
        client.close()


class _Service:
    def query(self, ts_query) -> bytes:
        return b"[]"


def _clients(address: tuple, count: int, connections: int) -> float:
    """Seconds ``connections`` keep-alive clients take for ``count`` GETs in all (run in a
    process of its own: the clients do not share the server's interpreter lock)."""

    def client():
        conn = http.client.HTTPConnection(*address, timeout=60)
        for _ in range(count // connections):
            conn.request("GET", "/api/version")
            response = conn.getresponse()
            assert response.status == 200 and response.read()
        conn.close()

    workers = [threading.Thread(target=client) for _ in range(connections)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.perf_counter() - started


def _slow_clients(address: tuple, count: int) -> tuple[list, int]:
    """``count`` connections that sent half a head and wait: the threads the server then holds."""
    before = threading.active_count()
    socks = []
    for _ in range(count):
        sock = socket.create_connection(address, timeout=10)
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: h\r\n")
        socks.append(sock)
    time.sleep(0.5)  # let the server take them
    return socks, threading.active_count() - before


def bench_http(count: int, rounds: int, slow: int) -> dict:
    """Keep-alive throughput (4 connections, clients in another process), then what ``slow``
    connections that trickle their heads cost: the server's threads, and the time of a request
    from a normal client meanwhile."""
    from concurrent.futures import ProcessPoolExecutor

    from btts.tsdb import server
    from btts.tsdb.access import Access
    from btts.tsdb.stdlib_front import StdlibServer

    fork = server.make_server(_Service(), "127.0.0.1", 0, Access(), workers=4)
    official = StdlibServer(_Service(), ("127.0.0.1", 0), Access(), None, 4096)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (fork, official)]
    for thread in threads:
        thread.start()
    pool = ProcessPoolExecutor(1)
    times: dict[str, list[float]] = {"fork": [], "official": []}
    try:
        for _ in range(rounds):
            for name, srv in (("fork", fork), ("official", official)):
                times[name].append(pool.submit(_clients, srv.server_address[:2], count, 4).result())
        out = {n: {"requests_per_s": _rate(count, statistics.median(t))} for n, t in times.items()}
        out["speedup"] = round(out["fork"]["requests_per_s"] / out["official"]["requests_per_s"], 2)
        out.update(unit="requests", count=count, rounds=rounds, figure="median")
        for name, srv in (("fork", fork), ("official", official)):
            socks, held = _slow_clients(srv.server_address[:2], slow)
            seconds = pool.submit(_clients, srv.server_address[:2], 20, 1).result()
            out[name]["slow_clients"] = slow
            out[name]["threads_held"] = held
            out[name]["request_ms_meanwhile"] = round(1000 * seconds / 20, 2)
            for sock in socks:
                sock.close()
        return out
    finally:
        pool.shutdown()
        for srv, thread in zip((fork, official), threads, strict=True):
            srv.shutdown()
            thread.join(10)
            srv.server_close()


def table(report: dict) -> str:
    lines = [f"{'fork':<9}{'unit':>10}{'fork/s':>14}{'official/s':>14}{'speedup':>9}  (figure)"]
    for name, out in report["components"].items():
        unit = out["unit"]
        lines.append(
            f"{name:<9}{unit:>10}{out['fork'][f'{unit}_per_s']:>14,.0f}"
            f"{out['official'][f'{unit}_per_s']:>14,.0f}{out['speedup']:>8.2f}x  ({out['figure']} "
            f"of {out['rounds']})"
        )
    framed = report["components"].get("wire", {}).get("framed_build")
    if framed:
        lines.append(
            f"wire inside the build step (events/s, rows and entries): "
            f"{framed['fork']['events_per_s']:,.0f} vs {framed['official']['events_per_s']:,.0f} "
            f"built then serialized by protobuf ({framed['speedup']:.2f}x)"
        )
    http = report["components"].get("http")
    if http:
        lines.append(
            f"http with {http['fork']['slow_clients']} slow clients: threads held "
            f"{http['fork']['threads_held']} (fork) vs {http['official']['threads_held']} "
            f"(official); a request meanwhile {http['fork']['request_ms_meanwhile']} ms vs "
            f"{http['official']['request_ms_meanwhile']} ms"
        )
    lines.append(f"machine: {MACHINE['cpu_model']}, {MACHINE['cpu_count']} cores")
    return "\n".join(lines)


DOC = ROOT.parent / "docs" / "forks.md"
BEGIN, END = (
    "<!-- forks figures: begin (python -m benchmarks.forks) -->",
    "<!-- forks figures: end -->",
)
WHAT = {  # what each figure times, for the doc's table
    "builder": "server_metrics events built into rows",
    "wire": "rows encoded as request entries",
    "filters": "row filters serialized (what btts serve sends)",
    "read": "rows read back from the emulator",
    "mutate": "rows written to the emulator, 500 per request",
    "http": "keep-alive GETs over 4 connections",
}


def markdown(report: dict) -> str:
    """The doc's table of one run's figures."""
    machine = report["machine"]
    lines = [
        BEGIN,
        f"One run of `python -m benchmarks.forks` on {machine['cpu_model']}, "
        f"{machine['cpu_count']} cores, Python {machine['python']}:",
        "",
        "| fork | what is timed | fork | official | fork / official |",
        "|---|---|---:|---:|---:|",
    ]
    for name, out in report["components"].items():
        unit = f"{out['unit']}_per_s"
        lines.append(
            f"| {name} | {WHAT[name]} | {out['fork'][unit]:,.0f}/s "
            f"| {out['official'][unit]:,.0f}/s | {out['speedup']:.2f}x |"
        )
    framed = report["components"].get("wire", {}).get("framed_build")
    if framed:
        lines.append(
            f"| wire | inside the build step: events built and framed | "
            f"{framed['fork']['events_per_s']:,.0f}/s "
            f"| {framed['official']['events_per_s']:,.0f}/s | {framed['speedup']:.2f}x |"
        )
    http = report["components"].get("http")
    if http:
        fork, official = http["fork"], http["official"]
        lines += [
            "",
            f"With {fork['slow_clients']} clients trickling their heads, the asyncio front held "
            f"{fork['threads_held']} threads for them and the standard library's "
            f"{official['threads_held']}; a normal request meanwhile took "
            f"{fork['request_ms_meanwhile']} ms and {official['request_ms_meanwhile']} ms.",
        ]
    return "\n".join([*lines, END])


def write_doc(report: dict, doc: Path = DOC) -> bool:
    """Replaces the figures' block of docs/forks.md with this run's (a full run's only)."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if BEGIN not in text or END not in text:
        return False
    head, rest = text.split(BEGIN, 1)
    doc.write_text(head + markdown(report) + rest.split(END, 1)[1], encoding="utf-8")
    return True


def _env_switch():
    """``with switch("builder"):`` sets BTTS_OFFICIAL for what is made inside."""
    import contextlib
    import os

    from transforms.official import ENV

    @contextlib.contextmanager
    def switch(value: str):
        before = os.environ.get(ENV)
        os.environ[ENV] = value
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(ENV)
            else:
                os.environ[ENV] = before

    return switch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.forks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    args = parser.parse_args(argv)
    pick = 0 if args.quick else 1
    size = {k: v[pick] for k, v in SIZES.items()}
    rounds = ROUNDS[pick]
    started = time.monotonic()
    report = {"machine": MACHINE, "quick": args.quick, "sizes": size, "components": {}}
    parts = report["components"]
    with tempfile.TemporaryDirectory(prefix="btts-forks-") as tmp:
        records = _records(Path(tmp), size["events"])
    print("[forks] builder, wire, filters", file=sys.stderr, flush=True)
    parts["builder"] = bench_builder(records, rounds, _env_switch())
    parts["wire"] = bench_wire(records, rounds)
    parts["filters"] = bench_filters(size["filters"], rounds)
    from btts import config, emulator

    with emulator.Emulator():
        target = config.Target("test-project", f"forks{uuid.uuid4().hex[:8]}")
        print("[forks] read, mutate (emulator)", file=sys.stderr, flush=True)
        parts["read"] = bench_read(target, size["rows"], rounds)
        parts["mutate"] = bench_mutate(target, size["writes"], rounds)
    print("[forks] http", file=sys.stderr, flush=True)
    parts["http"] = bench_http(size["requests"], rounds, size["slow"])
    report["seconds"] = round(time.monotonic() - started, 1)
    out = ROOT / "results" / ("forks-quick.json" if args.quick else "forks.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, sort_keys=True))
    print(table(report))
    print(f"report: {out} ({report['seconds']}s)")
    if not args.quick and write_doc(report):
        print(f"figures written to {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
