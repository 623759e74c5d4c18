"""The switch to the libraries' own paths (transforms/official.py, ``BTTS_OFFICIAL``): read in
one place, a typo refused, and each component of the product taking the path it names.

``make test`` runs this file twice: in the whole suite (the forks' paths, unless the caller set
``BTTS_OFFICIAL``) and in the second pass with ``BTTS_OFFICIAL=all`` (every official path), so
the pass that claims to test the official paths shows it took them."""

from __future__ import annotations

import pytest
from google.cloud.bigtable.data import ReadRowsQuery
from google.cloud.bigtable.data import row_filters as rf

from transforms import official
from transforms.bigtable import client_entries, rows_stream, transport
from transforms.builder import builder, codegen, interpreted
from transforms.schema import builtin

SWITCHED = official.components()  # what this run of the suite was started with


def test_components_are_read_from_the_environment_and_a_typo_is_refused(monkeypatch):
    assert official.components("") == frozenset()
    assert official.components(" Read, filters ,") == {"read", "filters"}
    assert official.components("all") == set(official.COMPONENTS)
    with pytest.raises(ValueError, match=r"no component wires; use all or some of wire, mutate"):
        official.components("wires")
    with pytest.raises(ValueError, match="no fork named"):
        official.uses("everything")
    monkeypatch.setenv(official.ENV, "builder")
    assert official.uses("builder") and not official.uses("wire")
    monkeypatch.setenv(official.ENV, "bulider")
    with pytest.raises(ValueError, match="BTTS_OFFICIAL='bulider'"):
        official.uses("builder")


def test_each_component_takes_the_path_this_run_names():
    """In the whole suite: the forks (unless switched); in the official pass: every library's
    own path. What each component makes shows which path it is on."""
    schema = builtin("server_metrics")
    made = builder.Builder(schema)
    assert made._compiler is (interpreted if "builder" in SWITCHED else codegen)
    encoder, head = client_entries.encoding("projects/p/instances/i/tables/t")
    assert head == client_entries.protobuf_head("projects/p/instances/i/tables/t")
    assert (encoder is client_entries.protobuf_entry) == ("wire" in SWITCHED)
    query = ReadRowsQuery(row_filter=rf.PassAllFilter(True))
    request = rows_stream.request_of("projects/p/instances/i/tables/t", query)
    client_side = bool({"read", "filters"} & SWITCHED)
    assert isinstance(request, rows_stream.ClientRequest) == client_side


def test_the_writer_and_the_server_take_the_path_this_run_names(bigtable_emulator):
    from btts.tsdb import server
    from btts.tsdb.stdlib_front import StdlibServer

    sender, opened = transport.open_sender(
        "p", "i", "t", "projects/p/instances/i/tables/t", 5, None
    )
    try:
        assert isinstance(sender, transport.RequestSender) == ("mutate" not in SWITCHED)
    finally:
        opened.close()
    srv = server.make_server(object(), "127.0.0.1", 0)
    try:
        assert isinstance(srv, StdlibServer) == ("http" in SWITCHED)
    finally:
        srv.server_close()
