"""A mutation oracle for the schema loader: thousands of broken and odd schema files, each with
the exact outcome of loading it (the error text, or a canonical dump of the loaded schema).

Every schema file of the repository (the built-in declarations, the documentation's worked
files) is mutated deterministically: a key deleted or renamed (to hostile names too), a value
replaced by another type, a hostile text, an out-of-range number, a list item duplicated, a line
of the text deleted, duplicated or indented. A refactoring of the loader must keep every outcome
identical: record the outcomes before it, compare after::

    python -m tests.schema_oracle record BEFORE.json
    python -m tests.schema_oracle compare BEFORE.json

``tests/transforms/schema/test_loader_oracle.py`` runs a fixed sample against
``tests/data/schema_oracle_digest.json`` (``python -m tests.schema_oracle digest`` rewrites it
after a deliberate change of error texts).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import yaml

from btts.advisor import workload
from transforms import schema as sf

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("transforms/declarations/*.yaml", "docs/schemas/*.yaml", "tests/data/**/*.yaml")
DIGEST = REPO / "tests" / "data" / "schema_oracle_digest.json"
ODD_PER_NODE = 5  # odd values tried per node of a file (of ODD_VALUES + HOSTILE_TEXTS)
KEYS_PER_NODE = 2  # hostile names a key is renamed to per node
SAMPLE_EVERY = 50  # the pytest's sample: one case in this many (by a stable hash of its id)
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
HOSTILE_TEXTS = (
    "__import__",
    "os.system",
    "builtins.eval",
    "subprocess.Popen",
    "quote'\"`",
    "line\nbreak",
    "ünïcødé✓",
    "\u202eevil",
    "{{x}}",
    "",
    " ",
)
ODD_VALUES = (None, 0, -1, 1, 2.5, True, 10**20, -(10**20), [], {}, ["x"], {"k": "v"}, [1, 2])
HOSTILE_KEYS = ("__import__", "os.system", "x'y", "a\nb", "ünï", "")
PROTO_NAMES = (
    "os.system",
    "builtins.eval",
    "subprocess.Popen",
    "importlib.import_module",
    "json.loads",
    "nosuch_module_xyz.Message",
    "protos.balloon_pb2.Nope",
    "protos.nosuch_pb2.Message",
    "protos.balloon_pb2.BalloonMeasurement",
    "protos.generate",
    "protos..Message",
    ".Message",
    "protos.balloon_pb2.",
    "protos.balloon_pb2.__class__",
    "protos.balloon_pb2._sym_db",
    "__import__",
    "os.path.join",
)


def schema_files() -> list[Path]:
    """Every file of :data:`SOURCES` that loads as a schema (tests/data holds other YAML)."""
    out = []
    for pattern in SOURCES:
        for path in sorted(REPO.glob(pattern)):
            try:
                sf.loads(path.read_text(encoding="utf-8"), path.name)
            except sf.SchemaError:
                continue
            out.append(path)
    return out


# -- mutations --------------------------------------------------------------------------------


def _paths(node: object, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


def _get(doc: object, path: tuple) -> object:
    for step in path:
        doc = doc[step]
    return doc


def _with(doc: object, path: tuple, change) -> object:
    """A copy of ``doc`` whose node at ``path`` is ``change(parent, last step)``'s doing."""
    doc = json.loads(json.dumps(doc))  # the parsed files are JSON-like: a deep copy
    parent = _get(doc, path[:-1])
    change(parent, path[-1])
    return doc


def _set(value):
    def change(parent, step):
        parent[step] = json.loads(json.dumps(value))

    return change


def _delete(parent, step):
    del parent[step]


def _rename(new):
    def change(parent, step):
        items = [(new if k == step else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)

    return change


def _duplicate(parent, step):
    parent.insert(step + 1, json.loads(json.dumps(parent[step])))


def _value_variants(value: object, turn: int) -> list[tuple[str, object]]:
    """Type-specific changes, and a few of the odd values and hostile texts (which few turns
    with ``turn``, so that every one is tried at many places without trying all everywhere)."""
    odd = [(f"odd {v!r}", v) for v in ODD_VALUES] + [(f"text {v!r}", v) for v in HOSTILE_TEXTS]
    out = [odd[(turn * ODD_PER_NODE + i) % len(odd)] for i in range(ODD_PER_NODE)]
    if isinstance(value, str) and value:
        out += [
            ("typo", value + "x"),
            ("cut", value[:-1]),
            ("upper", value.upper()),
            ("lower", value.lower()),
            ("quoted", value + "'"),
            ("spaced", " " + value),
            ("number text", "12"),
        ]
    if type(value) is int:
        out += [("int+1", value + 1), ("negated", -value), ("as text", str(value))]
        out += [("huge", value * 10**12), ("float", value + 0.5)]
    if isinstance(value, float):
        out += [("truncated", int(value)), ("as text", str(value))]
    return out


def _structural(doc: object) -> Iterator[tuple[str, Callable[[], object]]]:
    """``(label, make)``: ``make()`` builds the mutated document (only for the cases run)."""
    for turn, path in enumerate(_paths(doc)):
        if not path:
            continue
        where = "/".join(map(str, path))
        parent = _get(doc, path[:-1])
        value = parent[path[-1]]
        yield f"{where}: delete", partial(_with, doc, path, _delete)
        if isinstance(parent, dict):
            names = [
                HOSTILE_KEYS[(turn * KEYS_PER_NODE + i) % len(HOSTILE_KEYS)]
                for i in range(KEYS_PER_NODE)
            ]
            for new in (*names, f"{path[-1]}x", str(path[-1]).upper()):
                if new not in parent:
                    yield f"{where}: rename to {new!r}", partial(_with, doc, path, _rename(new))
        else:
            yield f"{where}: duplicate", partial(_with, doc, path, _duplicate)
        for label, new in _value_variants(value, turn):
            yield f"{where}: {label}", partial(_with, doc, path, _set(new))
        if isinstance(value, dict) and "protobuf" in value:
            for name in PROTO_NAMES:
                yield (
                    f"{where}: protobuf {name!r}",
                    partial(_with, doc, (*path, "protobuf"), _set(name)),
                )
        if isinstance(value, dict) and set(value) == {"json"}:  # a blob column: try protobuf
            for name in PROTO_NAMES:
                blob = {"protobuf": name, "fields": {"id": value["json"][0]}}
                yield f"{where}: to protobuf {name!r}", partial(_with, doc, path, _set(blob))


def _textual(text: str) -> Iterator[tuple[str, str]]:
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        yield f"line {index + 1}: delete", "".join(lines[:index] + lines[index + 1 :])
        yield f"line {index + 1}: duplicate", "".join(lines[: index + 1] + lines[index:])
        yield (
            f"line {index + 1}: indent",
            "".join([*lines[:index], " " + line, *lines[index + 1 :]]),
        )
        if index % 3 == 0:
            yield (
                f"line {index + 1}: tab",
                "".join([*lines[:index], "\t" + line, *lines[index + 1 :]]),
            )


def cases() -> Iterator[tuple[str, str]]:
    """``(case id, schema text)`` for every mutation of every schema file, in a fixed order."""
    for case_id, make in lazy_cases():
        yield case_id, make()


def lazy_cases() -> Iterator[tuple[str, Callable[[], str]]]:
    """``(case id, make)``: :func:`cases` whose texts are built by ``make()`` on demand."""
    for path in schema_files():
        name = str(path.relative_to(REPO))
        text = path.read_text(encoding="utf-8")
        yield f"{name} | original", partial(str, text)
        for label, mutated in _textual(text):
            yield f"{name} | {label}", partial(str, mutated)
        doc = yaml.safe_load(text)
        for label, make in _structural(doc):
            yield f"{name} | {label}", partial(_dumped, make)


def _dumped(make: Callable[[], object]) -> str:
    return yaml.dump(make(), Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=1000)


# -- outcomes ---------------------------------------------------------------------------------


# Keys of the input shapes (extra_fields, unpivot, times made from fields and their constant
# parts, missing-value tokens, decimal years' rounding, a CSV's dialect and columns read by
# position, a record's number in its file): dumped only when a file uses them, so that every
# file from before them loads to the very same dump.
_SHAPE_KEYS = frozenset(
    {
        "extra_fields",
        "unpivot",
        "sources",
        "constants",
        "round",
        "missing",
        "csv",
        "column",
        "date_format",
        "numbered",
    }
)


def _canonical(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"__class__": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.name in _SHAPE_KEYS and getattr(value, f.name) == f.default:
                continue
            out[f.name] = _canonical(getattr(value, f.name))
        return out
    if isinstance(value, dict):
        return [[_canonical(k), _canonical(v)] for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dt.timedelta):
        return f"timedelta({value.total_seconds()})"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _hints(schema) -> object:
    """The advisor section as its reader sees it: the hints of every table."""
    out = {}
    for name in [None, *schema.table_names, "NO_SUCH_TABLE"]:
        try:
            out[str(name)] = _canonical(workload.hints_from_advisor(schema.advisor, name))
        except Exception as err:  # the reader's own failure is an outcome too
            out[str(name)] = f"crash {type(err).__name__}: {err}"
    return out


def outcome(text: str, source: str = "case.yaml") -> str:
    """The exact result of loading ``text``: its error text or a dump of the schema."""
    try:
        schema = sf.loads(text, source)
    except sf.SchemaError as err:
        return "error: " + str(err)
    except Exception as err:
        return f"crash {type(err).__name__}: {err}"
    dump = {}
    for f in dataclasses.fields(schema):
        if f.name in ("text", "advisor", "proto_modules"):
            continue
        if f.name in _SHAPE_KEYS and getattr(schema, f.name) == f.default:
            continue
        dump[f.name] = _canonical(getattr(schema, f.name))
    dump["advisor hints"] = _hints(schema)
    dump["describe_input"] = sf.describe_input(schema)
    return _stable("schema: " + json.dumps(dump, ensure_ascii=False, sort_keys=True))


def _stable(text: str) -> str:
    """``text`` without memory addresses (a key recipe's compiled functions repr with theirs)."""
    return _ADDRESS.sub("", text)


def _sampled(case_id: str) -> bool:
    return int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % SAMPLE_EVERY == 0


def _digest(outcome_text: str) -> str:
    return hashlib.sha256(outcome_text.encode()).hexdigest()[:16]


def record() -> dict[str, str]:
    results: dict[str, str] = {}
    for case_id, text in cases():
        if case_id in results:
            raise AssertionError(f"two cases named {case_id!r}")
        results[case_id] = outcome(text)
    return results


def sample_digests() -> dict[str, str]:
    """The pytest's cases: a stable sample, each with a short hash of its outcome."""
    return {cid: _digest(outcome(make())) for cid, make in lazy_cases() if _sampled(cid)}


UNEXPECTED = "UNEXPECTED"


def _why_different(before: str, after: str) -> str:
    """The deliberate changes a comparison may show; anything else is :data:`UNEXPECTED`."""
    if "refused: " in after and before.startswith(("crash", "error")):
        return "protobuf name outside protos now refused"
    if before.startswith("crash") and not after.startswith("crash"):
        return "a traceback before, a schema error now"
    if before.startswith("schema: ") and after.startswith("schema: "):
        old, new = (json.loads(text.removeprefix("schema: ")) for text in (before, after))
        if old.pop("advisor hints") != new.pop("advisor hints") and old == new:
            return "advisor hints of explicit nulls (now: the defaults)"
    return UNEXPECTED


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "record" and len(argv) == 2:
        results = record()
        Path(argv[1]).write_text(json.dumps(results, ensure_ascii=False, indent=0))
        errors = sum(v.startswith("error") for v in results.values())
        print(f"{len(results)} cases ({errors} errors) recorded in {argv[1]}")
        return 0
    if command == "compare" and len(argv) == 2:
        before = {k: _stable(v) for k, v in json.loads(Path(argv[1]).read_text()).items()}
        after = record()
        differ = sorted(c for c in before.keys() & after.keys() if before[c] != after[c])
        missing = sorted(before.keys() ^ after.keys())
        kinds: dict[str, list[str]] = {}
        for case_id in differ:
            kind = _why_different(before[case_id], after[case_id])
            kinds.setdefault(kind, []).append(case_id)
            print(f"DIFFERS ({kind}) {case_id}\n  before: {before[case_id]!r}")
            print(f"  after:  {after[case_id]!r}")
        for case_id in missing:
            print(f"ONLY IN ONE RUN {case_id}")
        print(f"{len(after)} cases, {len(differ)} differ, {len(missing)} in one run only")
        for kind, ids in sorted(kinds.items()):
            print(f"  {len(ids):6} {kind}")
        return 1 if UNEXPECTED in kinds or missing else 0
    if command == "digest" and len(argv) == 1:
        digests = sample_digests()
        DIGEST.write_text(json.dumps(digests, ensure_ascii=False, indent=0, sort_keys=True) + "\n")
        print(f"{len(digests)} sampled cases written to {DIGEST.relative_to(REPO)}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
