"""The bottom layer, by concern, imports running bottom up:

* ``text`` — times and their formats, key segments, event records (pure);
* ``errors``, ``limits``, ``mutations``, ``table_model`` — the shared vocabulary: dead-letter
  reasons, Bigtable's limits, row mutations, tables/families/key recipes (pure);
* ``schema`` — schema files: the model, checks per section, the loader, the built-in datasets;
* ``build`` — the builder a schema compiles to and the request bytes it writes (pure);
* ``scans`` — what a query reads: key ranges, salted fan-out (pure);
* ``ingest`` — Beam steps from input files and Pub/Sub to row batches, with dead letters;
* ``bigtable`` — the Bigtable connector: writes, aggregate writes, reads;
* ``rollup`` — hourly rollups, exact under retries.

Nothing here imports ``btts``, ``pipelines`` or ``btts_cli`` (tests/house/test_layering.py).
"""
