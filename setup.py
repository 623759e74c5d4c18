"""bigtable-timeseries: Beam pipelines that land time series in Cloud Bigtable."""

from pathlib import Path

from setuptools import find_packages, setup

# The same ranges the templates' images install; the native WriteToBigTable path is verified
# against these.
INSTALL_REQUIRES = [
    "apache-beam[gcp]>=2.77.0,<2.78",
    "google-cloud-bigtable>=2.50.0,<3",
    "protobuf>=4.25,<7",
]

setup(
    name="bigtable-timeseries",
    version="0.1.0",
    description="Apache Beam pipelines for every Bigtable time-series schema pattern",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(
        include=[
            "btts",
            "btts.*",
            "pipelines",
            "pipelines.*",
            "transforms",
            "transforms.*",
            "protos",
            "protos.*",
        ]
    ),
    install_requires=INSTALL_REQUIRES,
    extras_require={
        "test": [
            "pytest>=8",
            "hypothesis>=6.100",
            "ruff>=0.6",
        ],
    },
    entry_points={"console_scripts": ["btts = btts.cli:main"]},
)
