"""The fixture the row-filter tests share (tests/support/row_filters.py holds its server)."""

import pytest

from tests.support.row_filters import data_client_sender


@pytest.fixture(scope="module")
def sent():
    """``sent(filter)``: the ReadRows request the data client sends for a query with it."""
    with data_client_sender() as send:
        yield send
