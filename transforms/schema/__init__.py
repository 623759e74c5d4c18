"""Schema files: a dataset's tables and event mapping declared in YAML (or JSON), no Python.

One file describes one source of events and every table it lands in (fan-out):

* ``event``: the source fields (type, limits, whether optional, the name keys and columns use
  for them) and which field is the event time;
* ``tables``: per table its column pattern, families with GC rules, the row-key recipe as an
  ordered list of segments, and the columns (which field feeds which qualifier);
* ``queries`` (optional): the named reads of ``btts query``;
* ``advisor`` (optional): the workload the schema advisor judges the keys against.

:func:`load` validates everything before any data is read and reports every problem with the
file's line number and the fix. The built-in datasets' declarations are schema files too
(``transforms/declarations/*.yaml``), so the format can say everything they say. The user guide
(``docs/user-guide.md``) documents every key; ``docs/schemas/`` has one worked file per pattern.

The package, by concern: :mod:`.model` (the frozen values), :mod:`.yaml_lines` (YAML that
remembers lines), :mod:`.problems` (the one collector every check reports into), one validator
module per section (:mod:`.event`; :mod:`.tables`, :mod:`.key_recipe`, :mod:`.columns`;
:mod:`.queries`; :mod:`.advisor`), :mod:`.protobuf` (which message classes a file may name),
:mod:`.loader` (the whole file) and :mod:`.help` (the input text of ``--help``).
Pure: no Beam, no client.
"""

from __future__ import annotations

from transforms.errors import SchemaError
from transforms.schema.help import describe_input
from transforms.schema.loader import builtin, load, loads, with_times
from transforms.schema.model import (
    DECLARATIONS,
    AdvisorDerived,
    AdvisorFamily,
    AdvisorField,
    AdvisorSection,
    AdvisorWorkload,
    ColumnSpec,
    FieldSpec,
    QuerySpec,
    Schema,
    TableSpec,
)
from transforms.schema.protobuf import message_class

__all__ = [
    "DECLARATIONS",
    "AdvisorDerived",
    "AdvisorFamily",
    "AdvisorField",
    "AdvisorSection",
    "AdvisorWorkload",
    "ColumnSpec",
    "FieldSpec",
    "QuerySpec",
    "Schema",
    "SchemaError",
    "TableSpec",
    "builtin",
    "describe_input",
    "load",
    "loads",
    "message_class",
    "with_times",
]
