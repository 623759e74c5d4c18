"""The house plan, checked on the source: every import, function-level ones included.

Packages by concern, imports running one way, bottom up. A unit (a package such as
``transforms.text``, or a module such as ``transforms.errors``) may import its own rank and the
ones below it, never one above; no two modules import each other, however indirectly; and no
product file or function grows past what a reader can hold.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import REPO

TOPS = ["protos", "transforms", "btts", "pipelines", "btts_cli"]

# Bottom up. Units on one line share a rank: they may import each other's modules, but the module
# graph as a whole must still have no cycle.
LAYERS = [
    ["protos"],
    ["transforms.errors", "transforms.limits", "transforms.metrics", "transforms.official"],
    ["transforms.text"],  # times, key segments, event records
    ["transforms.mutations", "transforms.table_model"],  # the shared vocabulary
    ["transforms.declarations", "transforms.schema"],  # schema files, the built-in ones
    ["transforms.builder", "transforms.scans", "transforms.ingest"],  # builder; scans; Beam input
    ["transforms.bigtable"],  # the connector
    ["transforms.rollup"],
    ["btts.errors", "btts.lazy"],
    ["btts.exits"],  # how a command ends: btts_cli and a job's own run both reach it
    ["btts.emulator"],
    ["btts.config"],
    ["btts.admin"],
    ["btts.query"],
    ["btts.advisor", "btts.tsdb", "btts.samples", "btts.prom"],
    ["btts.draft"],  # btts init: a schema drafted from a sample, checked by the advisor
    ["pipelines.flags"],  # every job's flags, without Beam (a job's --help)
    ["pipelines.common"],
    ["pipelines.jobs"],  # one module per job
    ["pipelines.nightly"],
    ["btts_cli"],
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
PACKAGES = {"transforms", "btts", "pipelines"}  # importing one of these alone names no unit

MAX_FILE_LINES = 600
MAX_TRANSFORMS_ENTRIES = 14


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for top in TOPS
        for p in sorted((REPO / top).rglob("*.py"))
        if "_pb2" not in p.name
    }


MODULES = _modules()


def unit(module: str) -> str | None:
    parts = module.split(".")
    if module in PACKAGES:
        return None
    if parts[0] == "pipelines":
        return (
            ".".join(parts[:2]) if parts[1] in ("common", "flags", "nightly") else "pipelines.jobs"
        )
    if parts[0] in ("transforms", "btts"):
        return ".".join(parts[:2])
    return parts[0]


def imports(path: Path) -> set[str]:
    """The project modules ``path`` imports (``from a import b`` counts ``a.b`` when it is a
    module, else ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = set()
    for node in ast.walk(tree):  # every import, at module level or inside a function
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{alias.name}" for alias in node.names}
            found |= (subs & MODULES.keys()) or {node.module}
    return {name for name in found if name in MODULES}


def test_every_unit_has_a_rank():
    assert not {unit(m) for m in MODULES} - {None} - RANK.keys()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module):
    own = unit(module)
    higher = {
        name
        for name in imports(MODULES[module])
        if unit(name) is not None and own is not None and RANK[unit(name)] > RANK[own]
    }
    assert not higher, f"{module} ({own}) imports {sorted(higher)} from a higher layer"


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*trail[trail.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        trail.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_modules():
    graph = {m: {n for n in imports(p) if n != m and n not in PACKAGES} for m, p in MODULES.items()}
    found = cycle(graph)
    assert found is None, "import cycle: " + " → ".join(found or [])


def test_transforms_reads_as_a_few_rooms():
    entries = [
        p.name
        for p in (REPO / "transforms").iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py")
        or (p.is_dir() and (p / "__init__.py").exists())
    ]
    assert len(entries) <= MAX_TRANSFORMS_ENTRIES, sorted(entries)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_product_file_past_what_a_reader_holds(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_FILE_LINES, f"{module}: {lines} lines"


def test_the_checks_can_fail(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from pipelines import common\n    import btts.admin\n")
    assert imports(bad) == {"pipelines.common", "btts.admin"}
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
    assert RANK[unit("btts_cli.main")] > RANK[unit("transforms.text.timefmt")]
    assert unit("pipelines.smart_meters") == "pipelines.jobs"
