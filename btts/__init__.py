"""bigtable-timeseries' library: configuration, table administration, the emulator harness,
queries (``query``), the OpenTSDB API (``tsdb``), the advisor and the demo's samples. The command
line (``btts_cli``) sits above it."""

__all__ = ["__version__"]

__version__ = "0.1.0"

import warnings

# The client warns on every connection to the emulator; once is not news either.
warnings.filterwarnings(
    "ignore", message="Connecting to Bigtable emulator", category=RuntimeWarning
)
