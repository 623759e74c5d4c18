"""A pipeline flag (as :mod:`pipelines.flags` declares it) as a flex template's launch parameter:
labels, formats Dataflow validates a launch with, and which flags a Dataflow launch must give
(``templates`` writes them into each template's ``metadata.json``)."""

from __future__ import annotations

import re

from pipelines.flags import Flag

__all__ = ["is_bare", "parameter", "required_on_dataflow"]  # fmt: skip

# Human labels for the console's launch form; a flag missing here gets one made from its name.
LABELS = {
    "schema": "Schema file",
    "schema_table": "Only these tables",
    "input": "Input files",
    "dead_letter": "Dead-letter path prefix",
    "create_tables": "Create missing tables",
    "skip_preflight": "Skip the table check",
    "input_subscription": "Pub/Sub input subscription",
    "dead_letter_topic": "Pub/Sub dead-letter topic",
    "allowed_lateness_minutes": "Allowed lateness (minutes)",
    "timezone": "Time zone",
    "balloon_pattern": "Column pattern",
    "battery_layout": "Battery key layout",
    "date": "Day to copy",
    "dates": "Days to backfill",
    "keep_days": "Days of daily tables to keep",
    "layout": "Daily copy layout",
    "verify": "Verify the copy",
    "no_verify": "Skip the verification",
}

_DAY = r"[0-9]{4}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])"
_GCS = r"gs://[^,\n\r]+"
# Flags whose values have a fixed format: (regex, Dataflow parameter type).
FORMATS = {
    "input": (rf"^{_GCS}(,\s*{_GCS})*$", "TEXT"),
    "dead_letter": (r"^gs://[^\n\r]+$", "TEXT"),
    "input_subscription": (r"^projects/[^/\s]+/subscriptions/[^/\s]+$", "PUBSUB_SUBSCRIPTION"),
    "dead_letter_topic": (r"^projects/[^/\s]+/topics/[^/\s]+$", "PUBSUB_TOPIC"),
    "bigtable_project": (r"^([a-z][-a-z0-9.]*:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", "TEXT"),
    "bigtable_instance": (r"^[a-z][-a-z0-9]{4,31}[a-z0-9]$", "TEXT"),
    # IANA zone names: UTC, Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+5
    "timezone": (r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$", "TEXT"),
    "date": (rf"^{_DAY}$", "TEXT"),
    "dates": (rf"^{_DAY}\.\.{_DAY}$", "TEXT"),
    "source_table": (r"^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}$", "TEXT"),
    "salt_buckets": (r"^[1-9][0-9]*$", "TEXT"),
}
_INTEGER = r"^[0-9]+$"
_BOOLEAN = r"^(true|false)$"

# Flags a local run may leave out (the emulator fills them in) but a Dataflow job may not.
DATAFLOW_REQUIRED = {
    "bigtable_instance": "Required on Dataflow (the emulator default does not apply).",
    "schema": "Required: the schema file (gs://...) read when the job launches.",
}
# What the template launcher (:func:`launch`) adds to a flag's behaviour on Dataflow.
DATAFLOW_NOTES = {
    "dead_letter": "On Dataflow the default is <temp_location>/dead-letters/<pipeline>.",
}


def is_bare(flag: Flag) -> bool:
    """A flag that takes no value (``store_true``/``store_false``): given bare, never as
    ``--flag=value``."""
    return flag.action in ("store_true", "store_false")


def _kind(flag: Flag) -> str:
    """What the launch form asks for: "bool", "enum", "int" or "text"."""
    if is_bare(flag) or (flag.nargs == "?" and isinstance(flag.const, bool)):
        return "bool"  # a bare flag, or e.g. --verify[=true|false]
    if flag.choices:
        return "enum"
    if flag.type is int:
        return "int"
    return "text"


def required_on_dataflow(flag: Flag, names: set[str]) -> bool:
    """Whether a Dataflow launch must give the flag (``names``: the pipeline's flags, without
    dashes): it has no default outside the emulator, or it is the only input of a batch-only
    job."""
    if flag.key in DATAFLOW_REQUIRED:
        return True
    return flag.key == "input" and "input_subscription" not in names


def parameter(flag: Flag, names: set[str]) -> dict:
    """One template parameter: the flag's name, a label, its help, whether it is optional, and
    the regexes and input type Dataflow validates a launch with."""
    name, kind = flag.key, _kind(flag)
    required = required_on_dataflow(flag, names)
    notes = [" ".join(flag.help_text().split())]
    if name in DATAFLOW_REQUIRED:
        notes.append(DATAFLOW_REQUIRED[name])
    elif required:
        notes.append("Required: this pipeline reads files only.")
    if name in DATAFLOW_NOTES:
        notes.append(DATAFLOW_NOTES[name])
    param = {
        "name": name,
        "label": LABELS.get(name) or name.replace("_", " ").capitalize(),
        "helpText": " ".join(n for n in notes if n),
        "isOptional": not required,
    }
    if kind == "bool":
        param.update(paramType="BOOLEAN", regexes=[_BOOLEAN])
    elif kind == "enum":
        choices = [str(c) for c in flag.choices or ()]
        param.update(
            paramType="ENUM",
            regexes=["^(" + "|".join(re.escape(c) for c in choices) + ")$"],
            enumOptions=[{"value": c, "label": c} for c in choices],
        )
    elif name in FORMATS:
        regex, param_type = FORMATS[name]
        param.update(paramType=param_type, regexes=[regex])
    elif kind == "int":
        param.update(paramType="TEXT", regexes=[_INTEGER])
    else:
        param["paramType"] = "TEXT"
    return param
