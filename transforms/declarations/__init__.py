"""The built-in datasets, one schema file each (``*.yaml``): the only place their tables, keys,
columns, queries and workloads are written down. ``transforms.schema.builtin_tables.get(NAME)``
finds a table; a new file is a new dataset."""
