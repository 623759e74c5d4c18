"""Monthly sales per employee as aggregate cells (docs/patterns.md §3 rule 13, §5.6), declared in
``sales.yaml``."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

SALES_MONTHLY = builtin_tables("sales")["SALES_MONTHLY"]
