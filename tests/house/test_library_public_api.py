"""The product uses Beam and the Google client libraries through their public APIs only.

A private name (``_x``) of a library can change in any release: the write sink once broke on
``DirectRow._get_mutations()`` changing type. This test walks the product's source (ast) and
refuses:

* an import of a private module (``_x`` or ``internal`` in its path) or name from
  ``apache_beam`` or ``google`` (``google.cloud``, ``google.api_core``, ``google.protobuf``, ...);
* an attribute chain rooted at a name imported from them that goes through a private name
  (``bigtableio._BigTableWriteFn``, ``beam.x._y``);
* wherever it appears, an access to a private attribute the client libraries are known to
  have (``._get_mutations``, ``._to_pb``, ``._pb``, ``._project_id``, ...), including through
  ``getattr``.

Product-internal privates are a separate concern (tests/house/test_private_access.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import REPO

PRODUCT = ["transforms", "btts", "btts_cli", "pipelines", "templates"]
EXTRA_FILES = ["protos/__init__.py"]
LIBRARIES = ("apache_beam", "google")
# Private attributes of the libraries' objects, refused on any object: the product cannot tell
# a client object from its own by name, and has no attribute of its own spelt like these.
KNOWN_PRIVATE = frozenset(
    {
        "_get_mutations",
        "_get_mutation_pbs",
        "_to_pb",
        "_to_dict",
        "_from_dict",
        "_from_pb",
        "_pb",
        "_pb_mutations",
        "_project_id",
        "_instance_id",
        "_table_impl",
        "_table_data_client",
        "_instance_admin_client",
        "_table_admin_client",
        "_grpc_channel",
        "_stubs",
        "_wrapped_methods",
        "_BigTableWriteFn",
        "_write_fn",
    }
)


def product_files() -> list[Path]:
    files = [p for d in PRODUCT for p in sorted((REPO / d).rglob("*.py"))]
    files += [REPO / f for f in EXTRA_FILES]
    return [p for p in files if p.exists() and not p.name.endswith(("_pb2.py", "_pb2_grpc.py"))]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(module: str) -> bool:
    """``_x`` anywhere in the path, or an ``internal`` package (``apache_beam.internal``,
    ``google.protobuf.internal``): neither library promises anything there."""
    return any(_private(part) or part == "internal" for part in module.split("."))


def _library(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in LIBRARIES


def _chain(node: ast.AST) -> tuple[str | None, list[str]]:
    """``a.b.c`` → ("a", ["b", "c"]); the root is None when it is not a plain name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    root = node.id if isinstance(node, ast.Name) else None
    return root, attrs[::-1]


def offences(source: str, filename: str = "<src>") -> list[str]:
    """Every private library access in ``source``, as ``line: what``."""
    tree = ast.parse(source, filename)
    library_names: set[str] = set()  # names bound to a library module or object
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _library(alias.name):
                    if _private_module(alias.name):
                        found.append(f"{node.lineno}: import of private module {alias.name}")
                    library_names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and _library(node.module) and not node.level:
            if _private_module(node.module):
                found.append(f"{node.lineno}: import from private module {node.module}")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno}: import of private {node.module}.{alias.name}")
                library_names.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in KNOWN_PRIVATE:
                found.append(f"{node.lineno}: access to a client library's private .{node.attr}")
            root, attrs = _chain(node)
            if root in library_names and _private(node.attr) and node.attr not in KNOWN_PRIVATE:
                found.append(f"{node.lineno}: private {root}.{'.'.join(attrs)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            name = node.args[1].value
            root, _attrs = _chain(node.args[0])
            if name in KNOWN_PRIVATE or (root in library_names and _private(name)):
                found.append(f"{node.lineno}: {node.func.id}(..., {name!r})")
    return sorted(set(found), key=lambda line: int(line.split(":")[0]))


def test_the_walk_covers_the_product():
    names = {str(p.relative_to(REPO)) for p in product_files()}
    assert "transforms/bigtable/write.py" in names and "protos/__init__.py" in names
    assert len(names) > 40


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from apache_beam.io.gcp import bigtableio\nbigtableio._BigTableWriteFn", "private"),
        ("from apache_beam.internal.metrics.metric import Metrics", "private module"),
        ("from apache_beam.metrics.metric import Lineage", None),
        ("from apache_beam.io.gcp.bigtableio import _BigTableWriteFn", "import of private"),
        ("import google.cloud._helpers", "private module"),
        ("from google.cloud.bigtable_v2.services.bigtable.transports import _x", "private"),
        ("row._get_mutations()", "_get_mutations"),
        ("entry._to_pb()._pb.SerializeToString()", "_to_pb"),
        ("self._project_id", "_project_id"),
        ("getattr(row, '_get_mutations')", "getattr"),
        ("import apache_beam as beam\nbeam.pvalue._private_thing", "private beam.pvalue"),
        ("import apache_beam as beam\nbeam.__version__", None),
        ("self._table_id\nself._encoder", None),  # the product's own attributes
        ("from transforms import wire\nwire._head", None),  # product-internal: another test
    ],
)
def test_the_walk_finds_private_access(source, expected):
    found = offences(source)
    if expected is None:
        assert found == []
    else:
        assert any(expected in line for line in found), found


def test_the_product_uses_only_public_library_apis():
    problems = []
    for path in product_files():
        for line in offences(path.read_text(encoding="utf-8"), str(path)):
            problems.append(f"{path.relative_to(REPO)}:{line}")
    assert problems == [], "private library access:\n" + "\n".join(problems)
