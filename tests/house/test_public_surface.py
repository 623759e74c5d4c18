"""Public surfaces that mean it: a module's ``__all__`` is exactly what other product modules
use of it (plus the entry points it is reached by by name), so a name kept only for the tests,
or a name another package reaches without it being declared, fails here. A package that gathers
its modules' names (``transforms.schema``, ``pipelines.common``, ``pipelines.nightly``) is the one
path to them from outside; nothing re-exports a name a second way."""

from __future__ import annotations

import pytest

from tests import surface

OFFERED = surface.offered()
WITH_ALL = sorted(m for m, p in surface.MODULES.items() if surface.declared_all(p) is not None)


@pytest.mark.parametrize("module", WITH_ALL)
def test_all_is_what_other_modules_use(module):
    declared = set(surface.declared_all(surface.MODULES[module]))
    expected = set(surface.expected_all(module, OFFERED[module]))
    assert declared == expected, (
        f"{module}: declared but unused elsewhere {sorted(declared - expected)}; used elsewhere "
        f"but undeclared {sorted(expected - declared)} (python -m tests.surface --fix)"
    )


@pytest.mark.parametrize("module", sorted(surface.MODULES))
def test_every_module_others_use_declares_its_surface(module):
    used = OFFERED[module] & surface.defined(surface.MODULES[module])
    assert not used or module in WITH_ALL, f"{module} has no __all__ but offers {sorted(used)}"


def _second_paths() -> list[str]:
    """Imports of a name through a module that neither defines it nor gathers it."""
    found = []
    for user, path in surface.MODULES.items():
        for module, name in surface.uses(path):
            if module == user or surface.is_facade(module) or module.endswith(".__main__"):
                continue
            if name not in surface.defined(surface.MODULES[module]):
                found.append(f"{user} takes {name} from {module}")
    return found


def test_no_name_is_reached_a_second_way():
    assert _second_paths() == []


def test_the_measure_can_fail(tmp_path, monkeypatch):
    module = tmp_path / "m.py"
    module.write_text("from transforms.text import timefmt\nx = timefmt.iso(0)\n")
    assert ("transforms.text.timefmt", "iso") in surface.uses(module)
    assert surface.expected_all("transforms.text.timefmt", {"iso", "nope"}) == ["iso"]
