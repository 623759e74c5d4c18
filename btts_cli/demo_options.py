"""``btts demo``'s flags, apart from the demo itself so that ``btts demo --help`` and a bad
flag answer without importing Beam, the clients or the sample checks."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from btts.samples import data as samples
from btts.samples.data import Sizes
from btts_cli.cliparse import Parser

__all__ = ["options"]

DESCRIPTION = (
    "The main job: the whole system on a local emulator, from sample events to query answers."
)

# The size flags: --flag → (the Sizes field it sets, its help).
SIZE_FLAGS = {
    "meters": ("meters", "smart meters"),
    "meter_days": ("meter_days", "days of 15-min readings"),
    "hosts": ("hosts", "servers"),
    "minutes": ("metric_minutes", "minutes of server metrics at one reading per 5 s"),
    "symbols": ("symbols", "exchange symbols (at most 8)"),
}


def options(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Sizes()
    parser = Parser(
        prog="btts demo",
        description=DESCRIPTION,
        epilog="Sizes default to the issue's minimums; the demo's phases are timed.",
    )
    parser.add_argument(
        "--output_dir",
        default="demo-output",
        help="inputs, dead letters and each job's log (default: %(default)s)",
    )
    for flag, (field, text) in SIZE_FLAGS.items():
        parser.add_argument(f"--{flag}", type=int, default=getattr(defaults, field), help=text)
    parser.add_argument(
        "--tiny", action="store_true", help="tiny sizes (the test of the demo); overrides others"
    )
    opts = parser.parse_args(argv)
    if opts.tiny:
        opts.sizes = Sizes.tiny()
    else:
        if opts.meter_days < 2:
            parser.error("--meter_days must be at least 2 (the nightly job copies a past day)")
        if not 1 <= opts.symbols <= len(samples.SYMBOLS):
            parser.error(f"--symbols must be 1..{len(samples.SYMBOLS)}")
        opts.sizes = Sizes(**{field: getattr(opts, f) for f, (field, _) in SIZE_FLAGS.items()})
    return opts
