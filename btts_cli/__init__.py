"""The ``btts`` command line, the Dataflow template launcher and the demo: the top layer.

Below it, in order: ``pipelines`` (the jobs), ``btts`` (the library: admin, emulator harness,
queries, advisor) and ``transforms`` (schema files, builders, Beam transforms). A layer imports
only the ones below it (tests/house/test_layering.py checks every import).
"""
