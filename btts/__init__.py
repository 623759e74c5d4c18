"""bigtable-timeseries: the command line, the emulator harness and table administration."""

__version__ = "0.1.0"

import warnings

# The client warns on every connection to the emulator; once is not news either.
warnings.filterwarnings(
    "ignore", message="Connecting to Bigtable emulator", category=RuntimeWarning
)
