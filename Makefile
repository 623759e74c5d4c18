# The two commands of the README: `make demo` (the main job on the emulator) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

PROTOS := $(wildcard protos/*.proto)

.PHONY: venv protos demo test test-official test-fast check-guidance lint fmt clean browser prometheus

venv: $(STAMP)

# The editable install generates protos/*_pb2.py (setup.py build_py); `protos` runs again after it
# so that a generation failure stops here, loudly (setuptools only warns about it in editable mode).
$(STAMP): setup.py pyproject.toml $(PROTOS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(MAKE) --no-print-directory protos
	touch $(STAMP)

# (Re)generate protos/*_pb2.py from protos/*.proto with grpc_tools (from the test extra).
protos:
	$(BIN)/python -c 'import protos; print(*protos.generate(protos.PACKAGE_DIR.parent), sep="\n")'

demo: venv
	$(BIN)/btts demo

# One pytest worker per logical CPU (pytest-xdist; "auto" would count physical cores when
# psutil is installed: fewer than the CPUs where they are hyperthreads). Each worker has its own
# emulators (session fixtures are per worker) and tmp dirs. worksteal hands each worker a
# contiguous half of the collection and lets an idle one take the tail of the other's queue, so
# a module's fixtures are mostly set up once and one long test does not leave a core idle.
# TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= logical
test: venv browser prometheus
	BTTS_OFFICIAL= $(BIN)/python -m pytest -rA -q -n $(TEST_WORKERS) --dist worksteal
	$(MAKE) --no-print-directory test-official

# The second pass: tests that judge results (ingest read back, reads, btts serve over HTTP) with
# every fork of a library switched to the library's own path (docs/forks.md); the forks'
# differential tests themselves run in the first pass.
OFFICIAL_TESTS ?= tests/transforms/test_official_switch.py tests/pipelines/test_golden.py \
	tests/transforms/bigtable/test_read.py \
	tests/btts/tsdb/test_grafana_queries.py tests/btts/tsdb/test_http_stack.py \
	'tests/house/test_round_trip.py::test_every_pattern_reads_back_what_went_in[ts_cols]'
test-official: venv
	BTTS_OFFICIAL=all $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal $(OFFICIAL_TESTS)

# A smoke subset of the suite (times, keys and cells, schemas, drafts, an ingest on the emulator)
# on every Python from setup.py's python_requires up to 3.13 found as python3.X on PATH or under
# pyenv, each in its own virtualenv cached under .matrix/ (tests/matrix.py); one line per version.
.PHONY: test-matrix
test-matrix: venv
	$(BIN)/python -m tests.matrix

# Headless Chromium and its driver for the btts serve page test
# (tests/btts/tsdb/test_chart_page.py): Debian's packages, installed only when missing and apt-get
# is there (as root, or with sudo); otherwise the test skips and says why.
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo -n ); \
		$$SUDO apt-get install -y chromium chromium-driver >/dev/null \
		|| { $$SUDO apt-get update >/dev/null && $$SUDO apt-get install -y chromium chromium-driver >/dev/null; } \
		|| echo "make browser: could not install chromium (the page test will skip)"; \
	else echo "make browser: no apt-get here (the page test will skip)"; fi

# Debian's Prometheus (prometheus, promtool) for the remote write/read tests (tests/btts/prom/):
# the XOR chunks against promtool's, PromQL through btts against Prometheus' own storage.
# Installed only when missing and apt-get is there; otherwise those tests skip and say why.
prometheus:
	@if [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo -n ); \
		$$SUDO apt-get install -y prometheus >/dev/null \
		|| { $$SUDO apt-get update >/dev/null && $$SUDO apt-get install -y prometheus >/dev/null; } \
		|| echo "make prometheus: could not install prometheus (its tests will skip)"; \
	else echo "make prometheus: no apt-get here (the Prometheus tests will skip)"; fi

# Maintainers holding the guidance's examples file: are all its cases and facts still here?
check-guidance: venv
	@test -n "$(GUIDANCE)" || { echo "usage: make check-guidance GUIDANCE=path/to/doc_examples.json"; exit 2; }
	$(BIN)/python -m tests.guidance "$(GUIDANCE)"

# ruff, then vulture: code nothing uses (pyproject.toml [tool.vulture] says where it looks and
# which names outside callers reach by name); then the errors' layers (tests/lint_errors.py): no
# HTTP status below btts serve's routes, no process exit below the command line, every exception
# class in the one tree.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vulture
	$(BIN)/python -m tests.lint_errors

fmt: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache dead-letters demo-output .btts \
		protos/*_pb2.py protos/*_pb2.pyi

# Benchmarks (benchmarks/run.py): ours vs the raw-client ceiling and the naive pipeline, one run;
# then each fork of a library against the library's own path (benchmarks/forks.py, docs/forks.md).
.PHONY: bench bench-quick
bench: venv
	$(BIN)/python -m benchmarks.run
	$(BIN)/python -m benchmarks.forks

bench-quick: venv
	$(BIN)/python -m benchmarks.run --quick
	$(BIN)/python -m benchmarks.forks --quick

# One 1 GiB JSON-lines file read by two DirectRunner worker processes (benchmarks/one_file.py):
# lines, CPU and reading span per worker, whether both were busy; benchmarks/results/one_file.json.
.PHONY: bench-one-file
bench-one-file: venv
	$(BIN)/python -m benchmarks.one_file --in_process

# Dataflow flex templates: regenerate templates/<pipeline>/ (metadata.json from the pipelines'
# option classes, Dockerfile) and print the gcloud commands that build each image and
# template spec. PROJECT, REGION and BUCKET (optionally REPOSITORY, TAG) come from the
# environment, else stay ${...} placeholders; `python -m btts_cli.templates build --run` runs them.
.PHONY: templates wheel-check
templates: venv
	$(BIN)/python -m btts_cli.templates build

# The project wheel and sdist carry what Dataflow workers need, and the wheel installed into a
# fresh virtualenv runs `btts --help` and the nightly job's --help (also part of `make test`).
wheel-check: venv
	$(BIN)/python -m pytest -q -rA tests/btts_cli/test_templates.py -k wheel

# Soak (benchmarks/soak.py): a bounded streaming run of the server-metrics job from the Pub/Sub
# emulator to the Bigtable emulator, reporting landed events/s, backlog, lag and memory every
# 10 s; writes benchmarks/results/soak.json and fails if an event is lost or duplicated or memory
# grows. Outside `make test` (minutes by design). `make soak SOAK_MINUTES=10 SOAK_RATE=500`.
# soak-ceiling steps the rate up (x1.5 every SOAK_STEP_SECONDS) until the backlog grows and
# reports the highest sustained rate, rollups checked (benchmarks/results/soak-ceiling.json).
SOAK_MINUTES ?= 3
SOAK_RATE ?= 200
SOAK_STEP_SECONDS ?= 60
.PHONY: soak soak-ceiling
soak: venv
	$(BIN)/python -m benchmarks.soak --minutes $(SOAK_MINUTES) --rate $(SOAK_RATE)

soak-ceiling: venv
	$(BIN)/python -m benchmarks.soak --ceiling --hosts 50 --step_seconds $(SOAK_STEP_SECONDS)
