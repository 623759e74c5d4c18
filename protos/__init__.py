"""Protocol-buffer messages (docs/patterns.md §3 rule 12, §4 TS-BLOB): ``<name>.proto`` is the
source.

``<name>_pb2.py`` (and ``.pyi``) is generated from it by the build, never edited or committed:
``setup.py``'s ``build_py`` runs :func:`generate` (``grpc_tools.protoc``) for ``pip install .``,
``pip wheel .`` and ``pip install -e .`` alike.

Fallback for a source checkout where the build did not generate the code (a virtualenv made
before a ``.proto`` existed or changed, or a setuptools that skipped the customisation of an
editable install): importing ``protos.<name>_pb2`` first generates it next to its ``.proto``
when it is missing or older than the ``.proto``, using ``grpc_tools`` (in the ``test`` extra).
``make protos`` does the same explicitly.

Only the standard library is imported here: ``setup.py`` loads this file on its own (not as the
``protos`` package) to reuse :func:`generate` at build time.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["generate"]

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name
SUFFIX = "_pb2"
# A source checkout (setup.py beside the package): only there may an import regenerate code.
_IN_CHECKOUT = (PACKAGE_DIR.parent / "setup.py").is_file()


class ProtocError(RuntimeError):
    """The code of a ``.proto`` could not be generated; the message says how to fix it."""


def generated_module(proto: Path) -> Path:
    return proto.with_name(f"{proto.stem}{SUFFIX}.py")


def is_current(proto: Path) -> bool:
    """Whether the generated module exists and is not older than its ``.proto``."""
    module = generated_module(proto)
    return module.is_file() and module.stat().st_mtime >= proto.stat().st_mtime


def generate(
    out_root: Path, sources: Sequence[Path] | None = None, package_dir: Path = PACKAGE_DIR
) -> list[Path]:
    """Compile ``.proto`` files of this package into ``<out_root>/protos/<name>_pb2.py`` (and
    ``.pyi``). Files are written to a temporary folder first and moved into place, so a reader
    (another test process, a Beam worker) never imports half a file. Returns the modules."""
    sources = sorted(package_dir.glob("*.proto")) if sources is None else list(sources)
    if not sources:
        return []
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        raise ProtocError(
            "grpcio-tools is not installed, so protos/*_pb2.py cannot be generated: "
            "run `pip install -e '.[test]'` (or `make protos`)"
        ) from None
    root = package_dir.parent
    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    out_dir = Path(out_root) / PACKAGE
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".protoc-", dir=out_dir) as tmp:
        args = [
            "grpc_tools.protoc",
            f"--proto_path={root}",
            f"--proto_path={well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            *(str(Path(s).resolve()) for s in sources),
        ]
        if protoc.main(args) != 0:
            names = ", ".join(Path(s).name for s in sources)
            raise ProtocError(f"protoc failed on {names} (its errors are printed above)")
        made = []
        for produced in sorted((Path(tmp) / PACKAGE).iterdir()):
            final = out_dir / produced.name
            os.replace(produced, final)
            if final.suffix == ".py":
                made.append(final)
    return made


class _GenerateOnImport:
    """A meta-path finder that (re)generates ``protos.<name>_pb2`` in a source checkout when it
    is missing or stale, then lets the normal finders import it."""

    @classmethod
    def find_spec(cls, fullname: str, path: object = None, target: object = None) -> None:
        stem = fullname.removeprefix(f"{PACKAGE}.")
        if stem == fullname or "." in stem or not stem.endswith(SUFFIX):
            return None
        proto = PACKAGE_DIR / f"{stem.removesuffix(SUFFIX)}.proto"
        if not proto.is_file() or is_current(proto):
            return None
        try:
            generate(PACKAGE_DIR.parent, [proto])
        except ProtocError as err:
            if generated_module(proto).is_file():
                warnings.warn(f"{fullname} is older than {proto.name}: {err}", stacklevel=2)
                return None
            raise ImportError(f"cannot generate {fullname}: {err}", name=fullname) from None
        importlib.invalidate_caches()
        return None


if (
    __name__ == PACKAGE
    and _IN_CHECKOUT
    and not any(
        isinstance(f, type) and f.__name__ == _GenerateOnImport.__name__ for f in sys.meta_path
    )
):
    sys.meta_path.insert(0, _GenerateOnImport)
