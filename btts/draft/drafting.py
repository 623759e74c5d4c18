"""``btts init``'s library: from input files to a drafted schema file and the advisor's view.

The steps, each its own module: a bounded :mod:`~btts.draft.sample` of each file; the
:mod:`~btts.draft.fields` each column holds; the :mod:`~btts.draft.times`; the
:mod:`~btts.draft.shape` (wide or long, which fields name entities); the
:mod:`~btts.draft.design` decisions; the :mod:`~btts.draft.render`\\ ed YAML. Ambiguities go to
``ask`` (a question on a terminal) or take the likeliest option, said in a comment.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from btts.draft import check as check_mod
from btts.draft import design as design_mod
from btts.draft import dialect as dialect_mod
from btts.draft import missing, shape, zones
from btts.draft.fields import infer_columns
from btts.draft.model import DraftSchema, Question
from btts.draft.render import render
from btts.draft.sample import DraftError, Sample, read_sample
from btts.draft.times import TimeGuess, guess_times, hinted, resolution, unread_time
from transforms.schema import csv_section
from transforms.text import timefmt

__all__ = ["draft", "review"]

Asker = Callable[[Question], int]


@dataclass
class Draft:
    schema: DraftSchema
    text: str
    samples: list[Sample]


def _dataset(paths: Sequence[str], given: str | None) -> str:
    if given:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", given):
            raise DraftError(f"--dataset {given!r}: use letters, digits and _ (e.g. my_data)")
        return given
    stem = os.path.basename(paths[0]).split(".")[0]
    name = re.sub(r"[^A-Za-z0-9_]+", "_", stem).strip("_").lower() or "data"
    return name if re.match(r"[A-Za-z_]", name) else f"d_{name}"


def _expand(paths: Sequence[str]) -> list[str]:
    """Paths as given, a quoted glob expanded (as ``--input`` does); one that matches nothing is
    a DraftError naming it."""
    out = []
    for path in paths:
        if any(c in path for c in "*?[") and not os.path.exists(path):
            found = sorted(glob.glob(path))
            if not found:
                raise DraftError(f"{path}: no file matches")
            out += found
        else:
            out.append(path)
    return out


def _unpivot(records: list[dict], wide: shape.Wide) -> list[dict]:
    """Each record as one event per series column (an empty cell gives no event)."""
    out = []
    for record in records:
        base = {k: v for k, v in record.items() if k not in wide.columns}
        for column in wide.columns:
            if record.get(column) is not None:
                out.append({**base, wide.name: column, wide.value: record[column]})
    return out


def _pick(guesses: list[TimeGuess], ask: Asker | None) -> tuple[TimeGuess, Question | None]:
    best = guesses[0]
    ties = [g for g in guesses if g.score == best.score]
    if len(ties) < 2:
        return best, None
    question = Question("Which field is the event time?", [f"{g.field} ({g.format})" for g in ties])
    question.chosen = ask(question) if ask else 0
    return ties[question.chosen], question


def _day_first(guess: TimeGuess, ask: Asker | None) -> Question | None:
    """03/04/2020: day first or month first, when every sampled value reads both ways."""
    fmt = guess.format
    head, sep, tail = fmt[:2], fmt[2:3], fmt[3:5]
    if {head, tail} != {"%d", "%m"} or sep not in ("/", "-", "."):
        return None
    other = f"{tail}{sep}{head}{fmt[5:]}"
    if other not in guess.alternatives:
        return None
    question = Question(
        f"Field {guess.field}: is 03{sep}04 the 3rd of April or March 4th?", [fmt, other]
    )
    question.chosen = ask(question) if ask else 0
    if question.chosen:
        guess.format, guess.alternatives = other, [fmt]
    return question


_CLOCKS = ("hour", "minute", "second", "ms")


def _zone_check(guesses: list[TimeGuess], time: TimeGuess) -> TimeGuess:
    """The event time once a field of wall times (no offset, to the hour or finer) and one of
    instants (an offset or epoch) are checked against each other (:func:`zones.compare`): the
    wall times in the zone that explains them when they are the finer, else the instants (also
    when the file holds a repeated hour at both its instants: only they tell those apart); a
    DraftError naming both when they look like one instant but no zone explains them, or when
    the finer wall times cannot tell a repeated hour's two instants apart."""
    walls = [
        g
        for g in guesses
        if not timefmt.has_offset(g.format) and not g.needs_year and resolution(g.ms) in _CLOCKS
    ]
    trues = [g for g in guesses if timefmt.has_offset(g.format)]  # an offset, or epoch: instants
    if not walls or not trues or len(walls[0].ms) != len(trues[0].ms):
        return time
    wall, true = walls[0], trues[0]
    found = zones.compare(wall.ms, true.ms, (_described(wall), true.field))
    if isinstance(found, str):
        raise DraftError(found)
    if found is None or found.zone == "UTC":
        return time
    finer = _CLOCKS.index(resolution(wall.ms)) > _CLOCKS.index(resolution(true.ms))
    if found.both:  # only the instants tell the repeated hour's two records apart
        if finer:
            raise DraftError(
                f"fields {_described(wall)!r} are wall times in {found.zone}, but the file holds "
                f"an hour its clocks repeat at both its instants, which only {true.field!r} tells "
                f"apart: declare {true.field!r} the event time (time: {true.field}) in the schema"
            )
        true.why = f"{true.why}; {found.why}"
        return true
    wall.timezone, wall.ambiguous, wall.ms = found.zone, found.ambiguous, found.ms
    wall.why = f"{wall.why}; {found.why}"
    return wall if finer else true


def _described(guess: TimeGuess) -> str:
    """A guess's field as a refusal names it: the parts of a made time, or the field."""
    if guess.derived:
        return ", ".join(guess.sources.values())
    return guess.field


def _time(columns, records, ask: Asker | None) -> tuple[TimeGuess, list[Question], list[str]]:
    guesses = guess_times(columns, records)
    if not guesses:
        for column in columns.values():  # years the calendar of times does not hold
            low, high = column.low, column.high
            early = low is not None and high is not None and low < 1 and 1000 <= high < 10000
            if column.type in ("integer", "number") and hinted(column.name) and early:
                raise DraftError(
                    f"field {column.name!r} reads as years, but goes back to {low} and "
                    "times hold years 1 to 9999: drop or shift the records before year 1"
                )
        why = unread_time(columns)
        if why:
            raise DraftError(why)
        names = ", ".join(columns) or "none"
        raise DraftError(
            f"no field reads as a time (fields: {names}); every event needs one: add a date, "
            "a time, epoch seconds/ms or a year"
        )
    time, question = _pick(guesses, ask)
    time = _zone_check(guesses, time)
    questions = [q for q in (question, _day_first(time, ask)) if q]
    others = [f"{g.field} ({g.format})" for g in guesses if g is not time and not g.derived]
    return time, questions, others


def draft(
    paths: Sequence[str],
    dataset: str | None = None,
    rate: float | None = None,
    query: Sequence[str] = (),
    ask: Asker | None = None,
    latest: bool = False,
) -> Draft:
    """A schema drafted from bounded samples of ``paths``, then checked by the job's builder
    over the whole files (up to :data:`check.FULL_CHECK_BYTES`): the records it refuses or
    whose keys collide join the sample and the draft is made again, up to :data:`ROUNDS`
    times. ``ask`` answers ambiguities (each once); ``latest``: the commonest query reads the
    newest values first (a reversed time)."""
    paths = _expand(paths)
    samples = [read_sample(p) for p in paths]  # a file that cannot be: SampleError, a DraftError
    ask = _remembered(ask)
    wanted = _Wanted(_dataset(paths, dataset), rate, list(query), ask, latest)
    extra: list[dict] = []
    for round_ in range(ROUNDS):  # (a round before the last may stop at its first offenders)
        result = _draft_once(samples, extra, wanted, paths)
        if result.schema.refusals or not _loads(result.text):
            return result  # (the loader's refusal is said by btts init)
        found = check_mod.check(result.text, samples, final=round_ == ROUNDS - 1)
        if found.reason.startswith("no column to unpivot") and not wanted.flat:
            wanted.flat = found.dead  # records with no series value: a column per field
            result = _draft_once(samples, extra, wanted, paths)
            found = check_mod.check(result.text, samples, final=round_ == ROUNDS - 1)
        new = [r for r in found.offenders if r not in extra]
        if not (found.dead or found.clashes) or not new:
            break
        extra += new
    if found.partial:  # what the draft would lose is said of every record
        found = check_mod.check(result.text, samples)
    if found.dead or found.clashes:
        if not result.schema.losses:  # (those already say why)
            result.schema.losses.append(_unlanded(found))
    else:
        design_mod.note_checked(result.schema, found.describe())
    result.schema.header = _header(samples, result.schema, paths)
    result.text = render(result.schema)
    return result


ROUNDS = 4  # drafts made, each with the records the previous one did not land


@dataclass
class _Wanted:
    """What the user asked for besides the files."""

    dataset: str
    rate: float | None
    query: list[str]
    ask: Asker | None
    latest: bool
    flat: int = 0  # records an unpivot would give no event: a column per field instead


def _remembered(ask: Asker | None) -> Asker | None:
    """``ask`` asking each question once (a later draft round takes the same answer)."""
    if ask is None:
        return None
    answers: dict[tuple, int] = {}

    def once(question: Question) -> int:
        key = (question.text, tuple(question.options))
        if key not in answers:
            answers[key] = ask(question)
        return answers[key]

    return once


def _unlanded(found: check_mod.Check) -> str:
    """The one line saying what a checked draft would not land, and the fix."""
    if found.clashes:
        return (
            f"{found.clashes:,} records of {found.describe()} share a row key with another "
            f"record and differ from it (first key {found.clash!r}): the later would overwrite "
            "the earlier; add the field that tells them apart to the key (btts init --query "
            "FIELD)"
        )
    if found.reason.startswith("no column to unpivot"):
        return (
            f"{found.dead:,} records of {found.describe()} have a value in none of the "
            "unpivoted columns, so they would make no event: drop event.unpivot from the draft "
            "(a column per field) or those records"
        )
    return (
        f"the job would refuse {found.dead:,} records of {found.describe()} (first: "
        f"{found.reason}); fix those values, or the field's type in the draft"
    )


def _draft_once(samples: list[Sample], extra: list[dict], wanted: _Wanted, paths) -> Draft:
    """One draft from the samples and ``extra`` records (that a previous draft did not land)."""
    raw = [r for s in samples for r in s.records] + extra
    tokens, keep = missing.detect(raw)
    records = dialect_mod.inference_numbers(missing.strip(raw, tokens, keep), samples[0].dialect)
    order = list(dict.fromkeys(c for s in samples for c in s.columns))
    columns = infer_columns(records, order)
    time, questions, others = _time(columns, records, wanted.ask)
    wide = shape.wide(columns, [time.field, *time.sources.values()], samples[0].fmt)
    if wide and wide.how == "unpivot" and wanted.flat:
        wide = None
    if wide and wide.how == "unpivot":
        records = _unpivot(records, wide)
        columns = infer_columns(records, [c for c in order if c not in wide.columns])
        time, questions, others = _time(columns, records, wanted.ask)
    unknown = [q for q in wanted.query if q not in columns]
    if unknown:
        raise DraftError(
            f"--query {unknown[0]}: no such field; the file's fields: {', '.join(columns)}"
        )
    sources = [time.field, *time.sources.values()]
    if wide and wide.how == "map":
        sources += wide.columns  # (entries of the map field: not fields of their own)
    one_file = len(samples) == 1 and not (wide and wide.how == "unpivot")
    ents = shape.entities(columns, records, time.ms, wanted.query, sources, one_file)
    if (ents.clashes or ents.numbered) and wide and wide.how == "map":  # a record id among
        ident = shape.record_id({n: columns[n] for n in wide.columns}, [])  # the series
        if ident is not None:
            wide.columns.remove(ident.name)
            sources.remove(ident.name)
            ents = shape.entities(columns, records, time.ms, wanted.query, sources, one_file)
    inputs = design_mod.Inputs(
        wanted.dataset, [s.describe() for s in samples], samples[0].fmt,
        all(s.complete for s in samples), _estimate(samples, wide), columns, records, time,
        wide, wanted.rate, others, wanted.query, wanted.latest, tokens, keep,
    )  # fmt: skip
    schema = design_mod.design(inputs, ents)
    schema.questions = questions
    _csv_choice(schema, samples)
    if wide and wide.how == "unpivot":
        _unpivot_choice(schema, wide)
    if wanted.flat:
        schema.pattern_comment += (
            f"; not unpivoted: an unpivot would give no event to the {wanted.flat:,} "
            "record(s) with a value in none of the series columns"
        )
    schema.header = _header(samples, schema, paths)
    return Draft(schema, render(schema), samples)


def _csv_choice(schema: DraftSchema, samples: Sequence[Sample]) -> None:
    """``event.csv`` when the file is not written as plain CSV, and ``from: N`` on each field
    of a repeated column (read by its position: the header alone would lose one)."""
    from btts.draft.model import Choice

    sample = samples[0]
    dialect = sample.dialect
    for position, name in dialect.columns:
        if name in schema.fields:
            schema.fields[name].value["from"] = position
            schema.fields[name].comment = (
                f"column {position}, read by position: the header gives its name to another "
                f"column too; {schema.fields[name].comment}"
            ).rstrip("; ")
    said = csv_section.written(dialect)
    unfielded = {p: n for p, n in dialect.columns if n not in schema.fields}
    if unfielded:  # a map's entry or an unpivoted column: named by position in event.csv
        said["names"] = unfielded
    others = [s for s in samples[1:] if s.fmt == "csv" and s.dialect != dialect]
    if others:  # one schema reads every file in one dialect: the others would be misread
        schema.refusals.append(
            f"{os.path.basename(others[0].path)} is not written in the CSV dialect of "
            f"{os.path.basename(sample.path)} ({flow_text(said) or 'plain CSV'} against "
            f"{flow_text(csv_section.written(others[0].dialect)) or 'plain CSV'}): draft each "
            "dialect's files apart"
        )
    if said:
        schema.csv = Choice(said, _csv_why(dialect, schema.fields))


def flow_text(values: dict) -> str:
    return ", ".join(f"{k}: {v!r}" for k, v in values.items())


def _csv_why(dialect, schema_fields) -> str:
    notes = []
    if dialect.delimiter != ",":
        shown = "tab" if dialect.delimiter == "\t" else repr(dialect.delimiter)
        notes.append(f"cells split by {shown}")
    if dialect.skip:
        notes.append(f"the header is line {dialect.skip + 1} (the lines before it are skipped)")
    if dialect.encoding != "utf-8":
        notes.append(f"the file is not UTF-8: read as {dialect.encoding}")
    if any(n not in schema_fields for _, n in dialect.columns):
        notes.append("the header names a column twice: names gives each its own, by position")
    if dialect.decimal != ".":
        example = "1.013,25" if dialect.thousands else "1,5"
        notes.append(f"numbers written with a decimal comma ({example})")
    elif dialect.thousands:
        notes.append("numbers written with thousands marks (1,013.25)")
    return "the file's own CSV dialect, as btts init read it: " + "; ".join(notes)


def _estimate(samples: Sequence[Sample], wide: shape.Wide | None) -> int:
    total = 0
    for s in samples:
        per_record = len(wide.columns) if wide and wide.how == "unpivot" else 1
        count = len(s.records) * per_record
        if s.total is not None:
            count = s.total * per_record
        elif not s.complete and s.bytes_read:
            count = int(count * s.size / s.bytes_read)
        total += count
    return total


def _unpivot_choice(schema: DraftSchema, wide: shape.Wide) -> None:
    from btts.draft.model import Choice

    schema.unpivot = Choice(
        {"columns": list(wide.columns), "name": wide.name, "value": wide.value},
        f"{wide.why}; an empty cell gives no event",
    )


def _header(samples: Sequence[Sample], schema: DraftSchema, paths: Sequence[str]) -> list[str]:
    lines = [
        f"Drafted by `btts init {' '.join(os.path.basename(p) for p in paths)}` from "
        + "; ".join(f"{os.path.basename(s.path)}: {s.describe()}" for s in samples)
        + ".",
        "Each decision is stated beside it with its reason and the alternative. Check it with "
        "`btts advise lint --schema THIS_FILE`, land it with `btts ingest --schema THIS_FILE "
        "--input FILE --create_tables`.",
    ]
    for q in schema.questions:
        lines.append(f"Asked: {q.text} Took {q.options[q.chosen]} (of {', '.join(q.options)}).")
    if schema.checked:
        lines.append(
            f"Checked by the job's own builder over {schema.checked}: every record lands, and "
            "no two share a row key."
        )
    lines += [f"NOTE: {w}" for w in schema.notes]
    lines += [f"REFUSED: {w}" for w in schema.refusals]
    lines += [f"WOULD LOSE RECORDS: {w}" for w in schema.losses]
    return lines


def _loads(text: str) -> bool:
    from transforms import schema as schema_lib

    try:
        schema_lib.loads(text, "draft.yaml")
    except schema_lib.SchemaError:
        return False
    return True


def review(text: str, name: str = "draft.yaml"):
    """``(problems, findings)`` of a drafted file: the loader's refusal (None when it loads)
    and the advisor's findings per table."""
    from btts.advisor import lint
    from transforms import schema as schema_lib

    try:
        loaded = schema_lib.loads(text, name)
    except schema_lib.SchemaError as err:
        return str(err), {}
    return None, lint.lint_schema(loaded)
