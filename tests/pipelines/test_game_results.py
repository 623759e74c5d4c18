"""Game results (docs/patterns.md §5.5): one result, two tables keyed for two queries."""

from __future__ import annotations

import json

import pytest

from btts.query import engine
from tests.support.jobs import compiled, dump, read_dead_letters, run_job, write_lines
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.text import events

MARCH_1 = 1425168000000  # 2015-03-01T00:00:00Z


def outcome(game="LoL", player="Corrie", date="2015-03-01", win="false", kda="4.25") -> str:
    """A JSON line; ``win`` and ``kda`` are JSON literals."""
    head = json.dumps({"game": game, "player": player, "date": date})[:-1]
    return f'{head}, "win": {win}, "kda": {kda}}}'


def rows_of(line: str) -> list[RowMutation]:
    return compiled("game_results")(events.parse_json_object(line))


# -- pure -------------------------------------------------------------------------------------


def test_a_result_lands_in_both_tables_with_the_same_cells():
    ts = MARCH_1 * 1000
    cells = (Cell("GAME", b"WIN", b"false", ts), Cell("GAME", b"KDA", b"4.25", ts))
    assert rows_of(outcome()) == [
        RowMutation("GAME_BY_PLAYER", b"LoL#Corrie#20150301", cells),
        RowMutation("GAME_BY_DATE", b"LoL#20150301#Corrie", cells),
    ]


def test_win_and_decimal_text_and_midnight_utc():
    by_player, by_date = rows_of(outcome(player="Jo", date="2015-03-02", win="true", kda="7.00"))
    assert by_player.key == b"LoL#Jo#20150302" and by_date.key == b"LoL#20150302#Jo"
    assert by_player.cells == (
        Cell("GAME", b"WIN", b"true", (MARCH_1 + 86_400_000) * 1000),
        Cell("GAME", b"KDA", b"7.00", (MARCH_1 + 86_400_000) * 1000),
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            '{"game": "LoL", "player": "Jo", "date": "2015-03-01", "win": true}',
            "missing field(s): kda",
        ),
        (
            outcome()[:-1] + ', "map": "rift"}',
            (
                "unexpected field(s): map (declared: date, game, kda, player, win; "
                "event.extra_fields: ignore drops the others)"
            ),
        ),
        (
            outcome(date="2015-02-30"),
            "field 'date': '2015-02-30' is not a real date (day is out of range for month)",
        ),
        (outcome(date="2015-3-1"), "field 'date': '2015-3-1' is not a date YYYY-MM-DD"),
        (
            outcome(date="2015-03-01T10:00:00Z"),
            "field 'date': '2015-03-01T10:00:00Z' is not a date YYYY-MM-DD",
        ),
        (outcome(date=20150301), "field 'date': expected a date YYYY-MM-DD, got number"),
        (
            outcome(date="1969-12-31"),
            "field 'date': '1969-12-31' is outside 1970-01-01..2286-11-20",
        ),
        (outcome(win='"false"'), "field 'win': expected true or false, got string"),
        (outcome(win="0"), "field 'win': expected true or false, got number"),
        (outcome(kda="-1.5"), "field 'kda': -1.5 is below its minimum 0"),
        (outcome(kda='"4.25"'), "field 'kda': expected a number, got string"),
        (outcome(player="Cor#rie"), "field 'player': contains the key delimiter '#'"),
        (outcome(player=" Corrie"), "field 'player': ' Corrie' has leading or trailing whitespace"),
        (outcome(game=""), "field 'game': empty"),
    ],
)
def test_bad_results_are_refused_with_the_reason(line, reason):
    with pytest.raises(InvalidEvent) as err:
        rows_of(line)
    assert str(err.value) == reason


# -- the job on the emulator -----------------------------------------------------------------

# The guidance's results, plus one in April and one of another game.
RESULTS = [
    outcome(player="Corrie", date="2015-03-01", win="false", kda="4.25"),
    outcome(player="Jo", date="2015-03-02", win="true", kda="7.00"),
    outcome(player="Sam", date="2015-03-02", win="true", kda="7.00"),
    outcome(player="Corrie", date="2015-03-03", win="true", kda="9.50"),
    outcome(player="Corrie", date="2015-04-01", win="true", kda="1.00"),
    outcome(game="Dota", player="Corrie", date="2015-03-05", win="true", kda="2.00"),
]


def _keys(target, table: str, start: bytes, end: bytes) -> list[bytes]:
    return [r.key for r in engine.read_rows(target, table, start, end)]


def test_each_query_is_one_range_scan_and_bad_lines_are_dead_letters(target, tmp_path):
    bad = {
        outcome(date="2015-03-32"): "field 'date': '2015-03-32' is not a real date "
        "(day is out of range for month)",
        outcome(player="a#b"): "field 'player': contains the key delimiter '#'",
        outcome(win="null"): "field 'win': expected true or false, got null",
    }
    lines = [*RESULTS[:3], *bad, *RESULTS[3:]]
    dead = tmp_path / "dead" / "game"
    result = run_job("game_results", target, write_lines(tmp_path / "in.jsonl", lines), dead)

    assert {d["raw"]: d["reason"] for d in read_dead_letters(dead)} == bad
    counts = result.counters
    assert counts["lines_read"] == len(lines) == counts["events_valid"] + counts["dead_letters"]
    assert (counts["events_valid"], counts["dead_letters"]) == (6, 3)
    assert (counts["rows_GAME_BY_PLAYER"], counts["cells_GAME_BY_PLAYER"]) == (6, 12)
    assert (counts["rows_GAME_BY_DATE"], counts["cells_GAME_BY_DATE"]) == (6, 12)

    # "Corrie's LoL games in March"
    assert _keys(target, "GAME_BY_PLAYER", b"LoL#Corrie#20150301", b"LoL#Corrie#20150401") == [
        b"LoL#Corrie#20150301",
        b"LoL#Corrie#20150303",
    ]
    # "All LoL games in March"
    assert _keys(target, "GAME_BY_DATE", b"LoL#20150301", b"LoL#20150401") == [
        b"LoL#20150301#Corrie",
        b"LoL#20150302#Jo",
        b"LoL#20150302#Sam",
        b"LoL#20150303#Corrie",
    ]
    # Both tables hold the same cells.
    by_player = {(c[1:]) for c in dump(target, "GAME_BY_PLAYER")}
    assert by_player == {(c[1:]) for c in dump(target, "GAME_BY_DATE")}
    assert ("GAME", b"KDA", b"9.50", (MARCH_1 + 2 * 86_400_000) * 1000) in by_player


def test_csv_input_lands_the_same_cells_and_reruns_are_idempotent(target, tmp_path):
    csv_lines = [
        "date,game,player,win,kda",
        "2015-03-01,LoL,Corrie,false,4.25",
        "2015-03-02,LoL,Jo,true,7.00",
        "2015-03-02,LoL,Sam,yes,7.00",
    ]
    source = write_lines(tmp_path / "results.csv", csv_lines)
    run_job("game_results", target, source, tmp_path / "dead1")
    assert [d["reason"] for d in read_dead_letters(tmp_path / "dead1")] == [
        "field 'win': expected true or false, got CSV text"
    ]
    want = rows_of(RESULTS[0]) + rows_of(RESULTS[1])
    first = {t: dump(target, t) for t in compiled("game_results").tables}
    for table in compiled("game_results").tables:
        assert sorted(first[table]) == sorted(
            (r.key, c.family, c.qualifier, c.value, c.timestamp_us)
            for r in want
            if r.table == table
            for c in r.cells
        )
    run_job("game_results", target, source, tmp_path / "dead2")
    assert {t: dump(target, t) for t in compiled("game_results").tables} == first
