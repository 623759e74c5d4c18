"""``btts init FILE…``: draft a schema file from the data (:mod:`btts.draft`), check it with
the advisor, print it.

The draft goes to stdout (or ``-o``); the advisor's findings, the questions and any warning go
to stderr, so ``btts init data.csv > my.yaml`` leaves a clean file. A draft the loader refuses
or the advisor finds an open error in exits 1 (the file is still written, its problems said).
Questions are asked only when stdin and stderr are terminals; otherwise the likeliest answer is
taken and the file's comments say so.
"""

from __future__ import annotations

import argparse
import sys

__all__ = []

EXAMPLE = """\
example:
  btts init data.csv > my.yaml                  # draft, with every decision in a comment
  btts tables create --schema my.yaml           # create the table and its family
  btts ingest --schema my.yaml --input data.csv # land the file
  btts serve --schema my.yaml                   # dashboards (Grafana's OpenTSDB source)
  btts init prices.csv.gz --query symbol --rate 2000 -o prices.yaml
"""


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``init`` to a ``btts`` subparser set."""
    init = subparsers.add_parser(
        "init",
        help="draft a schema file from a data file (CSV, JSON lines or array, Parquet, gzip)",
        description="Read a bounded sample of each FILE (any format --input accepts, "
        "compressed or not) and print a complete schema file: the fields and their types, the "
        "time and its format, the entity fields that lead the key, the pattern, GC rule and "
        "queries, each decision with its reason in a comment. The advisor checks the draft; "
        "its findings go to stderr.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    init.add_argument("files", nargs="+", metavar="FILE", help="input file(s) of one dataset")
    init.add_argument("--dataset", metavar="NAME", help="the dataset's name (default: the file's)")
    init.add_argument(
        "--rate",
        metavar="EVENTS_PER_SECOND",
        help="the live write rate the key must take (default: the data's own pace)",
    )
    init.add_argument(
        "--query",
        nargs="+",
        action="extend",
        default=[],
        metavar="FIELD",
        help="the field(s) your main query selects: they lead the key, in this order",
    )
    init.add_argument(
        "--latest",
        action="store_true",
        help="the commonest query reads the newest values first: a reversed time in the key",
    )
    init.add_argument("-o", "--output", metavar="FILE", help="write the schema here, not stdout")
    init.set_defaults(func=run)
    return init


def _rate(text: str | None) -> float | None:
    from btts import errors

    if text is None:
        return None
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not rate > 0 or rate == float("inf"):
        raise errors.ConfigError(f"--rate {text!r}: give events per second, e.g. 500 or 0.5")
    return rate


def _terminal_asker():
    """Questions on stderr, answers from stdin, only when both are terminals."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def ask(question) -> int:
        print(question.text, file=sys.stderr)
        for i, option in enumerate(question.options, 1):
            print(f"  {i}. {option}{'  (likeliest)' if i == 1 else ''}", file=sys.stderr)
        print(f"choice [1-{len(question.options)}, Enter = 1]: ", end="", file=sys.stderr)
        sys.stderr.flush()
        answer = sys.stdin.readline().strip()  # not input(): its prompt would go to stdout
        return (
            int(answer) - 1 if answer.isdigit() and 0 < int(answer) <= len(question.options) else 0
        )

    return ask


def _marked(text: str, problems, findings) -> str:
    """The draft with what fails it said at its top, so the file never hides it either."""
    from btts.advisor.findings import failing

    every = [f for fs in findings.values() for f in fs]
    bad = [f"# ADVISOR ERROR {f.rule}: {f.message.split('. ')[0]}."
           for f in failing(every, "error")]  # fmt: skip
    if problems and "\n# REFUSED: " not in f"\n{text}":
        bad = [f"# REFUSED: {line.strip()}" for line in problems.splitlines()]
    return "\n".join([*bad, text]) if bad else text


def _report(draft, problems, findings) -> bool:
    """Say on stderr what the advisor and the loader think of the draft; True when it fails."""
    from btts.advisor.findings import failing

    for note in draft.schema.notes:
        print(f"btts init: note: {note}", file=sys.stderr)
    for refusal in draft.schema.refusals:
        print(f"btts init: refused: {refusal}", file=sys.stderr)
    if draft.schema.refusals:
        return True
    for loss in draft.schema.losses:
        print(f"btts init: error: {loss}", file=sys.stderr)
    if problems:
        found = [line.strip() for line in problems.splitlines()[1:]] or [problems]
        print(
            f"btts init: error: the schema loader refuses the draft ({len(found)} problem(s), "
            f"each at the draft's top): {found[0]}",
            file=sys.stderr,
        )
        return True
    every = [f for fs in findings.values() for f in fs]
    for f in every:
        print(f"btts init: advisor: {f.severity.upper()} {f.rule}: {f.message}", file=sys.stderr)
    errors = failing(every, "error")
    verdict = f"{len(errors)} open error(s)" if errors else "no error"
    print(f"btts init: advisor: {len(every)} finding(s), {verdict}", file=sys.stderr)
    if errors:  # the one line that says why the command fails, and what to change
        more = f" ({len(errors) - 1} more above)" if len(errors) > 1 else ""
        print(
            f"btts init: error: the advisor finds an error in the draft: {errors[0].rule}: "
            f"{errors[0].message.split('. ')[0]}{more}",
            file=sys.stderr,
        )
    return bool(errors or draft.schema.losses)


def run(args: argparse.Namespace) -> int:
    """Draft, check, write; exit 1 when the draft would not load, would lose records (nulls,
    records its key cannot tell apart) or the advisor finds an error (the draft is written all
    the same, for the user to fix)."""
    from btts import errors
    from btts.draft import draft, review

    result = draft(  # a file no schema can be drafted from: a DraftError (a user error)
        args.files, args.dataset, _rate(args.rate), args.query, _terminal_asker(), args.latest
    )
    problems, findings = review(result.text, args.output or "draft.yaml")
    result.text = _marked(result.text, problems, findings)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(result.text)
        except OSError as err:
            raise errors.ConfigError(f"cannot write {args.output}: {err.strerror}") from err
        print(f"btts init: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(result.text)
        sys.stdout.flush()
    return 1 if _report(result, problems, findings) else 0
