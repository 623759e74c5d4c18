"""Which of the project's forks of a library take the library's own path instead: the switch,
read in this one place.

Six parts of the product re-implement a library for speed (docs/forks.md lists them, what each
buys and the library internals each relies on). Each has an official counterpart, and the
``BTTS_OFFICIAL`` environment variable sends the product through it, one component at a time:

* ``wire``: request entries serialized by the protobuf runtime, not written by hand;
* ``mutate``: each MutateRows request sent by the data client's ``bulk_mutate_rows`` (its
  retries, its channel), not by the raw-bytes sender;
* ``read``: rows read by the data client's ``read_rows``, not merged from raw chunks;
* ``filters``: a filtered read's filter serialized by the data client itself (it offers no
  public serializer, so such a read goes through its ``read_rows``);
* ``builder``: the schema's rules run by a plain loop over its closures, not generated source;
* ``http``: ``btts serve`` on the standard library's threading HTTP server, not the asyncio front.

``BTTS_OFFICIAL=all`` (or a comma-separated subset, e.g. ``read,filters``) is for diagnosis (is
a wrong answer the fork's?) and for CI, which runs part of the suite with every component on
(``make test``). Components read the setting when they are made (a writer's setup, a builder, a
server), never per row; each value of it is parsed once, and ``btts`` reads it first of all, so
a typo ends the command with one line (:class:`UnknownComponent`) before anything runs. Pure:
the standard library and the error tree only.
"""

from __future__ import annotations

import functools
import os

from transforms.errors import UserError

__all__ = ["components", "uses"]

ENV = "BTTS_OFFICIAL"
COMPONENTS = ("wire", "mutate", "read", "filters", "builder", "http")


class UnknownComponent(UserError, ValueError):
    """``BTTS_OFFICIAL`` (or a component asked about) names no component: the user's to fix, in
    one line naming the ones there are. A ValueError too, as it was."""


def components(value: str | None = None) -> frozenset[str]:
    """The components on the official path: those named in ``value`` (default: the
    ``BTTS_OFFICIAL`` environment variable), ``all`` for every one. A name that is not a
    component is an :class:`UnknownComponent` (a UserError) naming the ones there are: a typo
    must not test the fork."""
    return _parsed(os.environ.get(ENV, "") if value is None else value)


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> frozenset[str]:
    """:func:`components` of one value, parsed once (components made per bundle ask again)."""
    names = {part.strip().lower() for part in text.split(",")} - {""}
    if "all" in names:
        return frozenset(COMPONENTS)
    unknown = sorted(names - set(COMPONENTS))
    if unknown:
        raise UnknownComponent(
            f"{ENV}={text!r}: no component {', '.join(unknown)}; "
            f"use all or some of {', '.join(COMPONENTS)}"
        )
    return frozenset(names)


def uses(component: str) -> bool:
    """Whether ``component`` takes the library's own path (see the module docstring).
    Raises UnknownComponent (a UserError)."""
    if component not in COMPONENTS:
        raise UnknownComponent(f"no fork named {component!r}: {', '.join(COMPONENTS)}")
    return component in components()
