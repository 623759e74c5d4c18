"""Debian's Prometheus for the tests of btts/prom: an exporter written for them (counters,
gauges, a histogram, a series that comes and goes), Prometheus servers started on free loopback
ports and stopped by their PID, and their HTTP API. ``make prometheus`` installs it."""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMETHEUS = shutil.which("prometheus")
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Exporter:
    """One instance of the demo metrics, every scrape a step further: counters that grow (one
    resets at scrape 20), gauges that move (one with NaN and ±Inf now and then), a histogram,
    and a series present only on some scrapes (Prometheus marks it stale when it goes)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.scrapes = 0
        self.cpu = {"user": 0.0, "system": 0.0, "idle": 0.0}
        self.hist = [0] * (len(BUCKETS) + 1)
        self.hist_sum = 0.0
        self.lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def page(self) -> str:
        with self.lock:
            self.scrapes += 1
            return "\n".join(self._lines(self.scrapes)) + "\n"

    def _lines(self, n: int) -> list[str]:
        k = self.seed
        for i, mode in enumerate(self.cpu):
            self.cpu[mode] += 0.1 * (i + 1) * (1 + (n * k) % 3)
        if n == 20:
            self.cpu["idle"] = 0.0  # a counter reset
        for i in range(1 + (n * 7 + k) % 4):
            value = ((n * 37 + i * 11 + k) % 100) / 40
            self.hist[next((j for j, b in enumerate(BUCKETS) if value <= b), len(BUCKETS))] += 1
            self.hist_sum += value
        odd = {5: "NaN", 6: "+Inf", 7: "-Inf"}.get(n % 13, repr(math.sin(n / 3) * 1e3 + k))
        out = [
            "# TYPE demo_memory_usage_bytes gauge",
            *(
                f'demo_memory_usage_bytes{{type="{t}"}} {1e9 * (i + 1) + n * 1e6 * (k + i) % 7e8}'
                for i, t in enumerate(("free", "used", "cached", "buffers"))
            ),
            "# TYPE demo_num_cpus gauge",
            f"demo_num_cpus {2 + k}",
            "# TYPE demo_disk_usage_bytes gauge",
            f"demo_disk_usage_bytes {1e10 + n * 3.3e6 * k + (n % 5) * 1e5}",
            "# TYPE demo_odd_gauge gauge",
            f"demo_odd_gauge {odd}",
            "# TYPE demo_batch_last_success_timestamp_seconds gauge",
            f"demo_batch_last_success_timestamp_seconds {1.7e9 + (n // 6) * 6}",
            "# TYPE demo_cpu_usage_seconds_total counter",
            *(f'demo_cpu_usage_seconds_total{{mode="{m}"}} {v:.6f}' for m, v in self.cpu.items()),
            "# TYPE demo_api_request_duration_seconds histogram",
        ]
        total = 0
        for bound, count in zip((*map(str, BUCKETS), "+Inf"), self.hist, strict=True):
            total += count
            out.append(f'demo_api_request_duration_seconds_bucket{{le="{bound}"}} {total}')
        out += [
            f"demo_api_request_duration_seconds_sum {self.hist_sum:.6f}",
            f"demo_api_request_duration_seconds_count {total}",
        ]
        if (n // 8) % 2 == 0:
            out += ["# TYPE demo_intermittent_metric gauge", f"demo_intermittent_metric {n}"]
        return out

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Prometheus:
    """``prometheus`` with a config and a data folder of its own on a free loopback port."""

    def __init__(self, work: Path, config: str) -> None:
        work.mkdir(parents=True, exist_ok=True)
        (work / "prometheus.yml").write_text(config)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(work / "log.txt", "w")  # noqa: SIM115 (closed in stop)
        argv = [
            PROMETHEUS,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.work = work

    def wait_ready(self, timeout: float = 30.0) -> None:
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.work / 'log.txt').read_text()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def api(self, path: str, **params) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return json.loads(err.read())

    def metric(self, name: str) -> list[float]:
        """The values of one metric on this Prometheus' own /metrics page."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as resp:
            text = resp.read().decode()
        return [
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") or line.startswith(name + " ")
        ]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
