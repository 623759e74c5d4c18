"""Prometheus on Bigtable (docs/prometheus.md): ``btts serve --schema prometheus`` answers
Prometheus' remote write (``POST /api/v1/write``) and remote read (``POST /api/v1/read``) over
the built-in ``prometheus`` dataset (``transforms/declarations/prometheus.yaml``). Samples land
through the schema's builder and the pipelines' mutations; reads resolve matchers from the
label index and read the samples' key ranges in parallel. Prometheus evaluates PromQL itself.
"""
