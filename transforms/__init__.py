"""The bottom layer: schema files and the table model, the schema compiler, key and time
functions, and the Beam transforms that read, build, write and roll up.

Pure (no Beam, no client; cheap to test, the hot path): ``schema`` (tables, families, key
recipes), ``schema_file`` (the YAML format), ``generic`` and ``compiler`` (the builder every job
runs), ``keys``, ``timefmt``, ``events``, ``mutations``, ``queries``, ``salted_reads``,
``rollup_core``. Beam transforms: ``ingest`` (read lines, build rows with dead letters),
``bigtable_write``, ``aggregate_write``, ``bigtable_read``, ``rollup``. Nothing here imports
``btts``, ``pipelines`` or ``btts_cli`` (tests/test_layering.py).
"""
