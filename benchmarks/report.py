"""What the benchmarks' ``main`` functions share: run against the emulator unless a Bigtable
host is given, then write the JSON report."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from btts.emulator import ENV_HOST, Emulator


def run_and_write(out: Path, run: Callable[[], dict]) -> dict:
    """``run()``'s report, measured on the emulator unless ``ENV_HOST`` names a host, written
    to ``out`` as JSON."""
    with contextlib.ExitStack() as stack:
        if not os.environ.get(ENV_HOST):
            stack.enter_context(Emulator())
        report = run()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    return report
