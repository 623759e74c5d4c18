"""The tests mirror the packages (tests/README.md): a test module sits in the folder of the
package it exercises (tests/btts/tsdb/ for btts/tsdb/), the house-wide checks in tests/house/,
what tests share in tests/support/; nothing else at tests/ top level but conftest.py and the
commands (``python -m tests.corpus`` ...). A module dropped at the top, a folder no package
matches, or a test importing another test module fails here, naming where it goes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support import REPO

OWN_FOLDERS = {"house", "support", "data"}  # tests/ folders that mirror no package
TOP_FILES = {"__init__.py", "conftest.py"}
COMMAND = re.compile(r'^if __name__ == "__main__":', re.M)


def _folders(tests: Path) -> list[Path]:
    return sorted(
        p
        for p in tests.rglob("*")
        if p.is_dir()
        and p.name != "__pycache__"
        and not p.relative_to(tests).parts[0].startswith(".")
        and p.relative_to(tests).parts[0] != "data"
    )


def top_level_problems(tests: Path) -> list[str]:
    """Modules at tests/ top level that are neither conftest.py nor a command."""
    return [
        f"{p.relative_to(tests.parent)}: a test module goes in the folder of the package it "
        "exercises (tests/<package>/...), shared code in tests/support/ (tests/README.md)"
        for p in sorted(tests.glob("*.py"))
        if p.name not in TOP_FILES
        and (p.name.startswith("test_") or not COMMAND.search(p.read_text(encoding="utf-8")))
    ]


def folder_problems(tests: Path, repo: Path) -> list[str]:
    """Folders of tests/ that mirror no package of the repository, or that are no package."""
    problems = []
    for folder in _folders(tests):
        parts = folder.relative_to(tests).parts
        where = folder.relative_to(tests.parent)
        if not (folder / "__init__.py").is_file():
            problems.append(f"{where}: no __init__.py (test modules of two folders would clash)")
        if parts[0] not in OWN_FOLDERS and not (repo.joinpath(*parts) / "__init__.py").is_file():
            problems.append(f"{where}: mirrors no package ({'/'.join(parts)}/ is none)")
        if parts[0] in OWN_FOLDERS and len(parts) > 1:
            problems.append(f"{where}: {parts[0]}/ is one flat folder")
    return problems


def import_problems(tests: Path) -> list[str]:
    """Test modules imported by other modules: what tests share belongs in tests/support/."""
    problems = []
    for path in sorted(tests.rglob("*.py")):
        if "data" in path.relative_to(tests).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_"):
                    problems.append(
                        f"{path.relative_to(tests.parent)}:{node.lineno} imports {name}: "
                        "move what is shared to tests/support/"
                    )
    return problems


def misplaced_tests(tests: Path) -> list[str]:
    """Test modules in tests/support/: shared code only (pytest would collect them there)."""
    return [
        f"{p.relative_to(tests.parent)}: tests/support/ holds no tests"
        for p in sorted((tests / "support").rglob("test_*.py"))
    ]


def test_nothing_but_conftest_and_the_commands_at_the_top():
    assert top_level_problems(REPO / "tests") == []


def test_every_folder_mirrors_a_package_and_is_one():
    assert folder_problems(REPO / "tests", REPO) == []


def test_no_test_module_imports_another():
    assert import_problems(REPO / "tests") == []


def test_support_holds_no_tests():
    assert misplaced_tests(REPO / "tests") == []


def test_the_documented_commands_stay_at_the_top():
    """README, docs and the Makefile run these as ``python -m tests.NAME``."""
    for name in ("corpus", "schema_oracle", "matrix", "surface", "guidance", "init_datasets"):
        path = REPO / "tests" / f"{name}.py"
        assert COMMAND.search(path.read_text(encoding="utf-8")), path


def test_the_checks_can_fail(tmp_path):
    tests = tmp_path / "tests"
    for folder in ("", "house", "support", "btts", "btts/tsdb", "nowhere", "house/deep"):
        (tests / folder).mkdir(parents=True, exist_ok=True)
        (tests / folder / "__init__.py").write_text("")
    (tests / "lost").mkdir()
    for package in ("btts", "btts/tsdb"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tests / "conftest.py").write_text("")
    (tests / "tool.py").write_text('if __name__ == "__main__":\n    pass\n')
    (tests / "helpers.py").write_text("X = 1\n")
    (tests / "test_flat.py").write_text('if __name__ == "__main__":\n    pass\n')
    (tests / "support" / "test_hidden.py").write_text("")
    (tests / "btts" / "tsdb" / "test_a.py").write_text("from tests.btts.tsdb import test_b\n")
    (tests / "btts" / "tsdb" / "test_c.py").write_text("from tests.btts.tsdb.test_b import x\n")
    (tests / "btts" / "tsdb" / "test_d.py").write_text("from tests.support import jobs\n")

    assert [p.split(":")[0] for p in top_level_problems(tests)] == [
        "tests/helpers.py",
        "tests/test_flat.py",
    ]
    assert folder_problems(tests, tmp_path) == [
        "tests/house/deep: house/ is one flat folder",
        "tests/lost: no __init__.py (test modules of two folders would clash)",
        "tests/lost: mirrors no package (lost/ is none)",
        "tests/nowhere: mirrors no package (nowhere/ is none)",
    ]
    assert [p.split(" imports ")[1].split(":")[0] for p in import_problems(tests)] == [
        "tests.btts.tsdb.test_b",
        "tests.btts.tsdb.test_b",
    ]
    assert misplaced_tests(tests) == ["tests/support/test_hidden.py: tests/support/ holds no tests"]
