"""Schema error texts and loaded schemas stay as they are: a fixed sample of the mutation oracle
(tests/schema_oracle.py) against the digests committed in tests/data/schema_oracle_digest.json.

A deliberate change of an error text or of what a file loads as: rewrite the digests with
``python -m tests.schema_oracle digest`` and say why in the commit."""

from __future__ import annotations

import json

from tests import schema_oracle


def test_the_oracle_mutates_every_schema_file_thousands_of_ways():
    ids = [case_id for case_id, _ in schema_oracle.lazy_cases()]
    assert len(ids) == len(set(ids)) > 20_000
    files = {case_id.split(" | ")[0] for case_id in ids}
    assert any(f.startswith("docs/schemas/") for f in files)
    assert any(f.startswith("transforms/declarations/") for f in files)


def test_a_sample_of_the_oracle_has_the_committed_outcomes():
    committed = json.loads(schema_oracle.DIGEST.read_text(encoding="utf-8"))
    got = schema_oracle.sample_digests()
    assert sorted(got) == sorted(committed), "the oracle's cases changed: rewrite the digests"
    changed = sorted(case_id for case_id in got if got[case_id] != committed[case_id])
    assert not changed, (
        f"{len(changed)} schema outcome(s) changed, e.g. {changed[:5]} "
        "(python -m tests.schema_oracle digest rewrites them after a deliberate change)"
    )
