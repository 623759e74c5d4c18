"""``python -m pipelines.nightly``: the nightly job as a script."""

from pipelines import common
from pipelines.nightly import run

common.main(run)
