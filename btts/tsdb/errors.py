"""What ``btts serve`` refuses, by kind: the request (:class:`BadRequest` and its kinds), and
from :mod:`transforms.errors` the storage (``Unavailable``, ``Timeout``). None carries an HTTP
status: :func:`btts.tsdb.routes.error_reply` is the one place a kind becomes a status and
OpenTSDB's error shape (as Prometheus' API maps its errors in ``returnAPIError``)."""

from __future__ import annotations

from transforms.errors import Unavailable, UserError

__all__ = ["BadRequest", "NotFound", "TooLarge", "UnknownName", "Unlisted"]


class BadRequest(UserError, ValueError):
    """A request the server refuses, the client's to fix; ``details`` is OpenTSDB's optional
    second line of the error."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


class TooLarge(BadRequest):
    """A request over a limit (points, series, key ranges, queries, body size): narrow it."""


class NotFound(BadRequest):
    """What a request names does not exist where OpenTSDB answers "not found" (a lookup's
    metric or tag value, an endpoint)."""


class UnknownName(BadRequest, LookupError):
    """A metric (or tag) name the catalog does not hold, as OpenTSDB's NoSuchUniqueName."""


class Unlisted(Unavailable):
    """A table whose data is not all in its series index yet (``btts index rebuild`` ends it):
    never remembered as a failure, since a rebuild may end it any moment."""
