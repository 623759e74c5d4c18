"""Reusable pieces: pure key and cell builders, table declarations, and Beam transforms.

The pure modules (``keys``, ``timefmt``, ``events``, ``schema``, ``mutations`` and the dataset
builders) import neither Beam nor a Bigtable client, so they are cheap to test and fast on the
hot path. Beam transforms live in ``transforms.beam``.
"""
