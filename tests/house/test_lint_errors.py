"""The check ``make lint`` runs on errors (tests/lint_errors.py): the product passes it, and each
kind of crossing planted in a small tree of the same shape is found, where it was planted."""

from __future__ import annotations

from pathlib import Path

from tests import lint_errors

FILES = {
    "transforms/errors.py": (
        "class BttsError(Exception): pass\n"
        "class UserError(BttsError): pass\n"
        "class Timeout(BttsError): pass\n"
    ),
    "transforms/parse.py": "class Oops(ValueError): pass\n",  # tree
    "btts/tsdb/errors.py": (
        "from transforms.errors import UserError\nclass BadRequest(UserError, ValueError): pass\n"
    ),
    "btts/tsdb/reads.py": (
        "from btts.tsdb.errors import BadRequest\n"
        "def read():\n"
        "    raise BadRequest('late', 504)\n"  # http
        "def check(exc):\n"
        "    return exc.code in (503, 504)\n"  # http
        "def fine():\n"
        "    raise BadRequest('no such tag')\n"
    ),
    "btts/tsdb/routes.py": (  # the HTTP layer may
        "from http import HTTPStatus\n"
        "from btts.tsdb.errors import BadRequest\n"
        "class HttpError(BadRequest): pass\n"
        "def refuse():\n"
        "    raise HttpError('read-only', HTTPStatus.METHOD_NOT_ALLOWED)\n"
    ),
    "btts/exits.py": "def stop(line):\n    return SystemExit(line)\n",  # the one mapping may
    "btts/config.py": (
        "from btts.tsdb.errors import BadRequest\n"
        "def load(path):\n"
        "    try:\n"
        "        return open(path)\n"
        "    except OSError as err:\n"
        "        raise BadRequest(str(err)) from None\n"  # rewrap
        "def kept(path):\n"
        "    try:\n"
        "        return open(path)\n"
        "    except OSError as err:\n"
        "        raise BadRequest(str(err)) from err\n"  # rewrap: the text said again
        "def carried(path):\n"
        "    try:\n"
        "        return open(path)\n"
        "    except OSError as err:\n"
        "        raise BadRequest.because(err) from err\n"  # the error kept as a value
        "def argparse_way(text):\n"
        "    try:\n"
        "        return int(text)\n"
        "    except ValueError as err:\n"
        "        raise TypeError(str(err)) from err\n"  # not a kind of the tree
    ),
    "pipelines/job.py": (
        "import sys\n"
        "class Stopped(SystemExit): pass\n"  # exit (and tree)
        "def run():\n"
        "    sys.exit(2)\n"  # exit
        "def help():\n"
        "    raise SystemExit(0)\n"  # exit
    ),
    "btts_cli/main.py": "import sys\ndef main():\n    sys.exit(2)\n",  # the command line may
    "protos/__init__.py": "class ProtocError(RuntimeError): pass\n",  # below the tree
}

EXPECTED = {
    "transforms/parse.py:1: tree",
    "btts/tsdb/reads.py:3: http",
    "btts/tsdb/reads.py:5: http",
    "btts/config.py:6: rewrap",
    "btts/config.py:11: rewrap",
    "pipelines/job.py:2: exit",
    "pipelines/job.py:2: tree",
    "pipelines/job.py:4: exit",
    "pipelines/job.py:6: exit",
}


def test_the_product_raises_nothing_across_a_layer():
    assert lint_errors.problems() == []


def test_every_planted_crossing_is_found_where_it_was_planted(tmp_path: Path):
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = lint_errors.problems(tmp_path)
    assert {": ".join(line.split(": ")[:2]) for line in found} == EXPECTED, found
