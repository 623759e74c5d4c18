"""The schema advisor: check declarations against the guidance before a byte is written.

* :mod:`btts.advisor.lint` — rules of docs/patterns.md §3 over every table declaration (``btts
  advise lint``).
* :mod:`btts.advisor.hotspots` — replays a workload's keys onto range-partitioned tablets over N
  nodes and draws a Key-Visualizer-like heatmap (``btts advise hotspots``).
* :mod:`btts.advisor.table_report` — key and row sizes, limits and monotonic prefixes of a real or
  emulated table (``btts advise table``).
* :mod:`btts.advisor.rows` — how large rows grow under the declared workload (the lint's row
  rules, the reports' numbers); :mod:`btts.advisor.naming` — what a field's name says it holds.
* :mod:`btts.advisor.workload` — what the key recipes do not say (event rates, field
  cardinalities and kinds, column counts, derived tables, acknowledged findings), read from each
  schema file's ``advisor:`` section.
"""

__all__ = []
