"""The bottom layer: schema files and the table model, the schema compiler, key and time
functions, and the Beam transforms that read, build, write and roll up.

Pure (no Beam, no client; cheap to test, the hot path): ``table_model`` (tables, families, key
recipes), ``builtin_tables`` (the built-in ones by name), the ``schema`` package (the YAML
format: model, checks per section, loader), ``generic``, ``field_parsers`` and ``codegen`` (the
builder every job runs), ``wire`` (request bytes), ``keys``, ``timefmt``, ``events``,
``mutations``, ``key_ranges`` (what a query reads), ``salted_reads``, ``rollup_core``. Beam
transforms: ``readers`` (input files as blocks of records), ``ingest`` (build rows with dead
letters), ``bigtable_write``, ``aggregate_write``, ``bigtable_read``, ``rollup``. Nothing here
imports ``btts``, ``pipelines`` or ``btts_cli`` (tests/test_layering.py).
"""
