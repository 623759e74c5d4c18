"""Flex template entry point of every pipeline (FLEX_TEMPLATE_PYTHON_PY_FILE).

Each template's image names its pipeline in BTTS_PIPELINE (templates/<pipeline>/Dockerfile);
:func:`btts_cli.templates.launch` adapts the launcher's ``--name=value`` parameters to its flags.
"""

import os

from btts_cli.templates import PIPELINE_ENV, launch

if __name__ == "__main__":
    name = os.environ.get(PIPELINE_ENV)
    if not name:
        raise SystemExit(f"{PIPELINE_ENV} is not set: the template's image names its pipeline")
    launch(name)
