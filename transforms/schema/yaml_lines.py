"""YAML that remembers lines: a schema file parsed so that every problem can name its line.

:func:`parse` reads YAML (or JSON) text with a safe loader whose mappings (:class:`Map`) and
sequences (:class:`Seq`) carry the line of each entry, refusing duplicate keys (plain YAML keeps
the last one silently) and text UTF-8 cannot encode.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from transforms.errors import SchemaError, UserError

__all__ = ["Map", "Seq", "line_of", "parse"]


class Map(dict):
    """A mapping of the file: ``line`` is its own, ``lines`` each value's."""

    line = 0
    lines: dict


class Seq(list):
    """A list of the file: ``line`` is its own, ``lines`` each item's."""

    line = 0
    lines: list


class _KeyProblem(UserError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _Loader(yaml.SafeLoader):
    """SafeLoader building :class:`Map` and :class:`Seq`."""

    def construct_yaml_map(self, node):
        data = Map()
        data.line = node.start_mark.line + 1
        data.lines = {}
        yield data
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise _KeyProblem(key_node.start_mark.line + 1, "a key must be plain text")
            if key in data:
                raise _KeyProblem(
                    key_node.start_mark.line + 1,
                    f"duplicate key {key!r} (first on line {data.lines[key]}): keep one",
                )
            data[key] = self.construct_object(value_node, deep=True)
            data.lines[key] = value_node.start_mark.line + 1

    def construct_yaml_seq(self, node):
        data = Seq()
        data.line = node.start_mark.line + 1
        data.lines = [n.start_mark.line + 1 for n in node.value]
        yield data
        data.extend(self.construct_object(n, deep=True) for n in node.value)

    def construct_yaml_timestamp(self, node):
        """A date (``earliest: 1854-01-01``); an impossible one is a problem on its line."""
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as err:
            raise _KeyProblem(
                node.start_mark.line + 1, f"{node.value!r} is not a real date ({err})"
            ) from None


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_yaml_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _Loader.construct_yaml_seq)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def line_of(container: object, key: object = None, default: int = 0) -> int:
    """The line of ``container[key]`` (of the container itself without a key); ``default``
    for a value that is not from the file."""
    if isinstance(container, Map):
        return container.lines.get(key, container.line) if key is not None else container.line
    if isinstance(container, Seq):
        if isinstance(key, int) and 0 <= key < len(container.lines):
            return container.lines[key]
        return container.line
    return default


def parse(text: str, source: str) -> object:
    """The document of ``text``; :class:`SchemaError` when it is not YAML a schema can be."""
    try:
        document = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except _KeyProblem as problem:
        raise SchemaError(source, [(problem.line, problem.message)]) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 0
        raise SchemaError(source, [(line, f"not valid YAML: {err.problem or err}")]) from None
    except yaml.YAMLError as err:
        raise SchemaError(source, [(0, f"not valid YAML: {err}")]) from None
    broken = [
        (
            line,
            f"{value[:40]!r} is not valid Unicode text (a lone surrogate): write the "
            "character itself, not its UTF-16 escapes",
        )
        for line, value in _unencodable(document)
    ]
    if broken:  # e.g. "\ud83d" escapes: YAML does not pair surrogates as JSON does
        raise SchemaError(source, broken)
    return document


def _unencodable(node: object, line: int = 0) -> Iterator[tuple[int, str]]:
    """Every text of the document that UTF-8 cannot encode, with its line."""
    if isinstance(node, str):
        try:
            node.encode("utf-8")
        except UnicodeEncodeError:
            yield line, node
    elif isinstance(node, dict):
        for key, value in node.items():
            at = line_of(node, key, line)
            yield from _unencodable(key, at)
            yield from _unencodable(value, at)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _unencodable(value, line_of(node, index, line))
