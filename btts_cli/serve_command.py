"""``btts serve``: the OpenTSDB-compatible read API and chart page (:mod:`btts.tsdb.server`)
over the declared schemas, on the emulator or a Cloud Bigtable instance."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from btts import config, emulator, errors
from btts.lazy import lazy_module
from btts.tsdb import access  # credentials and TLS: no client, read when the flags are built

COMMAND = "btts serve"  # the name its errors are said under

# Loaded when the server starts: `btts serve --help` imports no client.
answer = lazy_module("btts.tsdb.answer")
catalog = lazy_module("btts.tsdb.catalog")
series_index = lazy_module("transforms.scans.series_index")
server = lazy_module("btts.tsdb.server")
service_lib = lazy_module("btts.tsdb.service")
schema_lib = lazy_module("transforms.schema")

__all__ = []


# How long a thread holds the GIL before another may take it (Python's default: 5 ms). A *
# over many series reads in a few threads that each wait on gRPC between messages while the
# request's thread turns rows into points: at 5 ms each thread waited behind the others after
# every message (a 10k-series * took 1.5x the data client's read of the same cells, 1.25x at
# 1 ms, same CPU; benchmarks/read_scale.py).
SWITCH_INTERVAL_S = 0.001


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``serve`` to a ``btts`` subparser set."""
    serve = subparsers.add_parser(
        "serve",
        help="read-only OpenTSDB-compatible HTTP API (Grafana) and a chart page",
        description="Serve the tables of the declared schemas over the OpenTSDB 2.x HTTP API "
        "Grafana's built-in OpenTSDB data source speaks (/api/query, /api/suggest, "
        "/api/search/lookup, /api/aggregators, /api/config/filters, /api/version), and a chart "
        "page at /. Metrics are DATASET.FIELD (map entries DATASET.FIELD.ENTRY); tags are the "
        "key's fields. Read-only; loopback unless --bind says otherwise; beyond loopback it "
        "needs credentials (--auth_file, --token_file or $" + access.ENV_TOKEN + ").",
        epilog="example: btts serve --schema my_schema.yaml --port 4242  (then add an OpenTSDB "
        "data source at http://localhost:4242 in Grafana); beyond this machine: btts serve "
        "--bind 0.0.0.0 --auth_file users.txt --tls_cert cert.pem --tls_key key.pem",
    )
    serve.add_argument(
        "--schema",
        action="append",
        metavar="FILE",
        help="a schema file or a built-in dataset's name to serve (repeatable; default: every "
        "built-in dataset); --schema prometheus adds Prometheus' remote write and read at "
        "/api/v1/write and /api/v1/read (docs/prometheus.md)",
    )
    serve.add_argument("--project", help="Google Cloud project of the Bigtable instance")
    serve.add_argument("--instance", help="Bigtable instance ID (default on the emulator: its own)")
    serve.add_argument(
        "--bind", default="127.0.0.1", help="address to listen on (default: loopback)"
    )
    serve.add_argument(
        "--port", type=int, default=4242, help="TCP port (default: 4242, OpenTSDB's)"
    )
    serve.add_argument(
        "--max_points",
        type=int,
        default=100_000,
        help="most data points one answer may hold (413 beyond)",
    )
    serve.add_argument(
        "--deadline", type=float, default=30.0, help="seconds one request may read for (504 beyond)"
    )
    serve.add_argument(
        "--tenant",
        help="serve only the tables whose key starts with a tenant, pinned to this tenant's rows",
    )
    serve.add_argument(
        "--remote_write_topic",
        metavar="projects/P/topics/T",
        help="Prometheus remote write publishes to this Pub/Sub topic (answered once Pub/Sub has "
        "taken it) for the streaming job `btts ingest --schema prometheus` to land, instead of "
        "writing to Bigtable itself (docs/prometheus.md)",
    )
    _add_access_flags(serve)
    serve.add_argument(
        "--list", action="store_true", help="print the metrics and their tags, then exit"
    )
    serve.set_defaults(func=run)
    return serve


def _add_access_flags(serve: argparse.ArgumentParser) -> None:
    """Who may connect, over what, and how many at once."""
    serve.add_argument(
        "--auth_file",
        metavar="FILE",
        help="basic-auth users, one USER:PASSWORD a line; requests then need credentials",
    )
    serve.add_argument(
        "--token_file",
        metavar="FILE",
        help=f"a bearer token (its first line), also taken from ${access.ENV_TOKEN}",
    )
    serve.add_argument("--tls_cert", metavar="PEM", help="serve HTTPS with this certificate")
    serve.add_argument("--tls_key", metavar="PEM", help="the private key of --tls_cert")
    serve.add_argument(
        "--max_connections",
        type=int,
        default=access.MAX_CONNECTIONS,
        help=f"open connections at once; beyond, a 503 (default: {access.MAX_CONNECTIONS})",
    )
    serve.add_argument(
        "--workers",
        type=int,
        help="threads answering requests (default: 4 per core, at most 32); open connections "
        "cost no thread",
    )


def _schema(path: str):
    """A schema file, or a built-in dataset by its name (``--schema prometheus``) when no file
    of that name exists."""
    if not os.path.exists(path) and (schema_lib.DECLARATIONS / f"{path}.yaml").is_file():
        return schema_lib.builtin(path)
    return schema_lib.load(path)


def load_service(args: argparse.Namespace, target: config.Target | None):
    """The served schemas' catalog, and (with an instance to ask) the service answering over
    it, its map entries found in the series indexes (sampled from the data for a schema
    without one)."""
    schemas = [_schema(p) for p in args.schema] if args.schema else catalog.builtin_schemas()
    bare = catalog.Catalog(schemas, tenant=args.tenant)
    if target is None:
        return bare, None
    limits = answer.Limits(args.max_points, args.deadline)
    service = service_lib.Service(bare, target, limits, args.tenant)
    service.remote_write_topic = getattr(args, "remote_write_topic", None)  # btts.prom
    service.refresh_catalog(0)
    return service.catalog, service


def run(args: argparse.Namespace) -> int:
    """Serve; a schema, a credentials file or an address that cannot be used is a ConfigError
    said as ``btts serve: error: …`` (exit status 2, :mod:`btts.exits`)."""
    target = None  # --list without an instance: the names the schemas give (no map entries)
    if not args.list or args.project or args.instance or os.environ.get(emulator.ENV_HOST):
        target = config.resolve_target(args.project, args.instance)
    try:
        cat, service = load_service(args, target)
    except (OSError, schema_lib.SchemaError) as err:
        raise errors.ConfigError.because(err, command=COMMAND) from err
    if args.tenant and not cat.metrics:
        why = "--tenant: no served table's key starts with a tenant"
        raise errors.ConfigError(why, command=COMMAND)
    if args.list:
        print(list_text(cat))
        return 0
    try:
        guard = _access(args)
        tls = access.tls_context(args.tls_cert, args.tls_key) if args.tls_cert else None
    except ValueError as err:  # a credentials or certificate file, --bind
        raise errors.ConfigError.because(err, command=COMMAND) from err
    workers = args.workers if args.workers and args.workers > 0 else server.WORKERS
    try:
        httpd = server.make_server(
            service, args.bind, args.port, guard, tls, max(1, args.max_connections), workers
        )
    except OSError as err:
        why = f"cannot listen on {args.bind}:{args.port}: {err}"
        raise errors.ConfigError(why, command=COMMAND) from err
    host, port = httpd.server_address[:2]
    scheme = "https" if tls else "http"
    print(
        f"btts serve: {len(cat.metrics)} metrics of {target.describe()} on {scheme}://{host}:"
        f"{port}/ (OpenTSDB API; Ctrl-C stops)",
        flush=True,
    )
    return _serve(httpd)


def _access(args: argparse.Namespace) -> access.Access:
    """The credentials requests need; beyond loopback, some are required."""
    if args.tls_key and not args.tls_cert:
        raise ValueError("--tls_key needs --tls_cert")
    guard = access.load_access(args.auth_file, args.token_file)
    if not guard.required and not access.is_loopback(args.bind):
        raise ValueError(
            f"--bind {args.bind} is reachable beyond this machine: give --auth_file, "
            f"--token_file or ${access.ENV_TOKEN} so that only clients with credentials read"
        )
    return guard


def _serve(httpd: server.Server) -> int:
    """Serve until Ctrl-C or SIGTERM; then stop accepting and let requests in flight finish."""

    def stop(_signum, _frame) -> None:
        httpd.shutdown()

    signal.signal(signal.SIGTERM, stop)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.drain(server.GRACE_S)
        httpd.server_close()
    return 0


def list_text(cat: catalog.Catalog) -> str:
    """The served metrics, one per line, with the tables that answer them and their tags."""
    rows = []
    for name, metric in cat.metrics.items():
        tables = [s.name for s in metric.points] + [f"{s.name} (1h rollup)" for s in metric.rollups]
        rows.append((name, metric.tags, tables))
    found = {(m.dataset, m.field) for m in cat.metrics.values() if m.entry}
    for schema, table, field_name in cat.map_tables():  # entries not seen in the data (yet)
        if (schema.dataset, field_name) not in found:
            rollups = [
                f"{t.name} (1h rollup)"
                for t in schema.tables
                if t.rollup and t.rollup.source == table.name
            ]
            name = f"{schema.dataset}.{field_name}.<ENTRY>"
            rows.append((name, list(series_index.tag_fields(table)), [table.name, *rollups]))
    return "\n".join(
        f"{name}\ttags: {', '.join(tags) or '-'}\ttables: {', '.join(tables)}"
        for name, tags, tables in sorted(rows)
    )
