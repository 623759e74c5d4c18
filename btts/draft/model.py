"""The drafted schema as values with their reasons: what :mod:`btts.draft.render` writes.

Every decision carries the comment that states it, why, and the alternative, so the rendered
file explains itself line by line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Choice", "DraftSchema", "Question"]


@dataclass
class Choice:
    """One line of the schema (a mapping in YAML flow style) and the comment beside it."""

    value: dict
    comment: str = ""


@dataclass
class Question:
    """An ambiguity: the options (the first is the likeliest) and which one was taken."""

    text: str
    options: list[str]
    chosen: int = 0


@dataclass
class DraftSchema:
    """A whole drafted schema file."""

    dataset: str
    doc: str
    header: list[str] = field(default_factory=list)  # the comment block at the top
    time: str = ""
    time_comment: str = ""
    fields: dict[str, Choice] = field(default_factory=dict)
    unpivot: Choice | None = None
    table: str = ""
    pattern: str = "TS-COLS"
    pattern_comment: str = ""
    cell_timestamp: Choice | None = None
    families: list[Choice] = field(default_factory=list)
    key: list[Choice] = field(default_factory=list)
    columns: list[Choice] = field(default_factory=list)
    queries: list[Choice] = field(default_factory=list)
    advisor: dict = field(default_factory=dict)
    advisor_comments: dict[str, str] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)  # records the draft would lose: exit 1
    refusals: list[str] = field(default_factory=list)  # what the user must add first: exit 1
    missing: Choice | None = None  # event.missing: the texts the file writes for no value
    csv: Choice | None = None  # event.csv: the CSV file's dialect, when not the default
    checked: str = ""  # what the draft was checked over by the job's builder
    notes: list[str] = field(default_factory=list)  # decisions btts init also says on stderr
