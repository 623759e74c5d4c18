import time, uuid, tempfile
from pathlib import Path
from btts.emulator import Emulator
from btts import config
from benchmarks import read_scale as rs
from btts.tsdb import reads
from btts.query import series as sl
from transforms.scans import series_index as layout
from transforms.text import keys
from transforms.bigtable.filters import KEYS_ONLY
from google.cloud.bigtable.data import ReadRowsQuery, RowRange, row_filters
with Emulator() as emu, tempfile.TemporaryDirectory() as work:
    target = config.Target("bench-project", "p" + uuid.uuid4().hex[:8])
    rs.land(target, [50000], 1, Path(work))
    r = reads.Reader(target)
    p = layout.series_prefix("METRIC", ("metrics", "SCALE/N50000"))
    rng = [RowRange(start_key=p, end_key=keys.prefix_end(p))]
    for name, f in (("none", None), ("newest", sl.NEWEST), ("keys", KEYS_ONLY), ("limit1", row_filters.CellsColumnLimitFilter(1))):
        for lim in (25, 2000):
            t = time.perf_counter()
            for _ in range(5): rows = r.read("SERVER_METRICS_SERIES", ReadRowsQuery(row_ranges=rng, row_filter=f, limit=lim))
            print(name, lim, len(rows), round((time.perf_counter() - t) / 5 * 1000, 1), "ms")
    # narrow range: from a start key
    for span in (100, 1000):
        start = p + layout.encode(["server01000.example.com"])[:0]
        t = time.perf_counter()
        rows = r.read("SERVER_METRICS_SERIES", ReadRowsQuery(row_ranges=[RowRange(start_key=p, end_key=p + b"server0" + str(span).encode())], row_filter=sl.NEWEST, limit=25))
        print("narrow", span, len(rows), round((time.perf_counter() - t) * 1000, 1))
