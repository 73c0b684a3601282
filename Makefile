# The two set-up commands of the README: `make demo` and `make test`.
# Both build .venv from scratch with the pinned constraints (torch is the local CPU wheel).
PY ?= python3
VENV := .venv
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test install system-deps lint

$(STAMP): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# Debian packages the tests drive (installed only when missing): the browser tests' Chromium,
# and the PostgreSQL server the shared-index tests start themselves (tests/pg_server.py).
system-deps:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; \
	fi

demo: $(STAMP)
	$(VENV)/bin/trainledger demo --out demo-runs

# Tests run in parallel (pytest-xdist: one worker per core, four at most; each starts its own
# servers) and the 15 slowest are printed, so the suite's time stays visible as it grows.
test: $(STAMP) system-deps
	$(VENV)/bin/python -m pytest -q -n auto --maxprocesses=4 --durations=15

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy src bench
