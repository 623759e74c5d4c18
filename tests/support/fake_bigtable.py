"""An in-process gRPC ``google.bigtable.v2.Bigtable`` service that answers MutateRows only.

The emulator never sends ``RateLimitInfo`` nor ``RESOURCE_EXHAUSTED``; this server does, from
a script the test sets (:attr:`FakeBigtable.answer`), and records what it saw: every request's
arrival time, metadata and entries, the peak number of calls in flight, and how many times each
row was applied. Point a client at it with ``BIGTABLE_EMULATOR_HOST`` (:attr:`endpoint`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from google.cloud.bigtable_v2.types import bigtable as bigtable_types

Request = bigtable_types.MutateRowsRequest.pb()
Response = bigtable_types.MutateRowsResponse.pb()


@dataclass
class Call:
    """One MutateRows call as the server saw it."""

    at: float
    metadata: dict
    keys: list[bytes]
    request: object = None


@dataclass
class Answer:
    """What to do with one call: an error for the whole call (a ``grpc.StatusCode``), or a
    code per entry (missing: OK), optionally with a ``RateLimitInfo`` factor and period."""

    error: grpc.StatusCode | None = None
    codes: dict[int, int] = field(default_factory=dict)
    factor: float | None = None
    period_s: int = 1
    delay_s: float = 0.0


class FakeBigtable:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.applied: Counter = Counter()  # row key -> times written with status OK
        self.answer = lambda call, n: Answer()  # (call, its index) -> Answer; tests replace it
        self._lock = threading.Lock()
        self._in_flight = 0
        self.peak_in_flight = 0
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
        handler = grpc.method_handlers_generic_handler(
            "google.bigtable.v2.Bigtable",
            {
                "MutateRows": grpc.unary_stream_rpc_method_handler(
                    self._mutate_rows,
                    request_deserializer=Request.FromString,
                    response_serializer=Response.SerializeToString,
                )
            },
        )
        self._server.add_generic_rpc_handlers((handler,))
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"127.0.0.1:{port}"

    def __enter__(self) -> FakeBigtable:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)

    def rate(self, start: float, end: float) -> float:
        """Calls per second that arrived in ``[start, end)`` (monotonic clock)."""
        with self._lock:
            count = sum(1 for c in self.calls if start <= c.at < end)
        return count / (end - start)

    def _mutate_rows(self, request, context):
        call = Call(
            time.monotonic(),
            dict(context.invocation_metadata()),
            [e.row_key for e in request.entries],
            request,
        )
        with self._lock:
            index = len(self.calls)
            self.calls.append(call)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            if any(not e.mutations for e in request.entries):  # as Cloud Bigtable answers
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "No mutations provided")
            answer = self.answer(call, index)
            if answer.delay_s:
                time.sleep(answer.delay_s)
            if answer.error is not None:
                context.abort(answer.error, "the fake server says so")
            response = Response()
            for i, key in enumerate(call.keys):
                entry = response.entries.add()
                entry.index = i
                code = answer.codes.get(i, 0)
                entry.status.code = code
                if code:
                    entry.status.message = f"fake code {code}"
                else:
                    with self._lock:
                        self.applied[key] += 1
            if answer.factor is not None:
                response.rate_limit_info.factor = answer.factor
                response.rate_limit_info.period.seconds = answer.period_s
            yield response
        finally:
            with self._lock:
                self._in_flight -= 1
