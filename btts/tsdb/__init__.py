"""An OpenTSDB 2.x-compatible read API over the tables the declared schemas describe, so that
Grafana's built-in OpenTSDB data source (and the small page in ``page/``) can chart them.

* :mod:`btts.tsdb.catalog` — metric and tag names from the schema files.
* :mod:`btts.tsdb.request` — parsing OpenTSDB requests (JSON bodies, ``m=`` expressions,
  times, downsample specs, filters), refusing bad ones with a :class:`~btts.tsdb.errors.BadRequest`.
* :mod:`btts.tsdb.errors` — the kinds of refusal; :func:`btts.tsdb.routes.error_reply` is the one
  place a kind becomes an HTTP status (a BadRequest a 400) in OpenTSDB's error shape.
* :mod:`btts.tsdb.series` — downsample, fill, rate and cross-series aggregation (pure).
* :mod:`btts.tsdb.reads` — which table and key ranges answer a query, and reading them.
* :mod:`btts.tsdb.server` — the read-only HTTP server (``btts serve``).
"""
