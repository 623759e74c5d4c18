"""The help text a schema writes: what one input record of a job holds (its ``--help``)."""

from __future__ import annotations

from transforms.schema.model import FieldSpec, Schema

__all__ = ["describe_input"]


def _field_line(spec: FieldSpec) -> str:
    limits = []
    if spec.max_length:
        limits.append(f"at most {spec.max_length} characters")
    if spec.minimum is not None or spec.maximum is not None:
        limits.append(f"{spec.minimum or ''}..{spec.maximum or ''}")
    if spec.type == "time" and spec.format != "auto":
        limits.append(f"format {spec.format}")
    if spec.earliest:
        limits.append(f"from {spec.earliest}")
    if spec.max_entries:
        limits.append(f"at most {spec.max_entries} entries")
    if spec.optional:
        limits.append("optional")
    detail = f" ({', '.join(limits)})" if limits else ""
    doc = f": {spec.doc}" if spec.doc else ""
    return f"  {spec.name:<14} {spec.type}{detail}{doc}"


def describe_input(schema: Schema) -> str:
    """What one input record of ``schema`` holds, and an example line: the input section of a
    job's ``--help``, written from the schema so it never drifts from what the job accepts."""
    lines = ["Input: one event per JSON line (or CSV row), with the fields:"]
    lines += [_field_line(spec) for spec in schema.fields]
    if schema.example:
        lines += ["Example line:", f"  {schema.example}"]
    return "\n".join(lines)
