"""Benchmarks: our pipelines against the raw-client ceiling and the naive Beam pipeline."""
