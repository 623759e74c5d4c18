"""The write step's conversions: byte-exact mutations, whatever shortcut builds them."""

from __future__ import annotations

from google.cloud.bigtable.data.mutations import SetCell

from transforms.bigtable_write import to_direct_row
from transforms.mutations import Cell, RowMutation


def test_direct_row_mutations_equal_the_clients_own_construction():
    row = RowMutation(
        "METRIC",
        b"server1.bbb.com#1426535612045",
        (
            Cell("METRIC", b"CPU/CPU1_USR", b"0.02", 1426535612045000),
            Cell("METRIC", b"IO/BLK_READ", b"253453634", 1426535612045000),
        ),
    )
    direct = to_direct_row(row)
    assert direct.row_key == row.key
    expected = [SetCell(c.family, c.qualifier, c.value, c.timestamp_us)._to_pb() for c in row.cells]
    assert direct._get_mutation_pbs() == expected
    assert [m._to_dict() for m in direct._get_mutations()] == [
        SetCell(c.family, c.qualifier, c.value, c.timestamp_us)._to_dict() for c in row.cells
    ]
