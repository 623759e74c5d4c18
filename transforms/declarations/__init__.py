"""The built-in datasets, one schema file each (``*.yaml``): the only place their tables, keys,
columns, queries and workloads are written down (``transforms.builtin_tables`` finds them; a new
file is a new dataset). The small modules beside them only name a file's tables for Python
callers."""
