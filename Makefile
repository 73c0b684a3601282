# The two set-up commands of the README: `make demo` and `make test`.
# Both build .venv from scratch with the pinned constraints (torch is the local CPU wheel).
PY ?= python3
VENV := .venv
PIP := $(VENV)/bin/pip
# each command installs what it runs: the demo the package with its `all` extra (torch, the
# UI, pandas, scikit-learn), the tests the whole development stack (which includes `all`)
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-all

.PHONY: demo test test-protobuf-floor install system-deps lint protos

$(DEMO_STAMP): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt -e ".[all]"
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP) $(DEMO_STAMP)

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

demo: $(DEMO_STAMP)
	$(VENV)/bin/trainledger demo --out demo-runs

# Tests run in parallel (pytest-xdist: one worker per core, four at most; each starts its own
# servers) and the 15 slowest are printed, so the suite's time stays visible as it grows.
test: $(STAMP) system-deps
	$(VENV)/bin/python -m pytest -q -n auto --maxprocesses=4 --durations=15
	$(MAKE) test-protobuf-floor

# The protobuf floor that pyproject.toml declares: the tests that read and write protobuf run
# again on that runtime (with a TensorBoard release that runs on it), ahead of the venv's.
PROTOBUF_FLOOR := protobuf==4.25.9 tensorboard==2.17.1
FLOOR_DIR := .protobuf-floor
$(FLOOR_DIR)/.installed: Makefile
	rm -rf $(FLOOR_DIR)
	$(PIP) install -q --no-deps --target $(FLOOR_DIR) $(PROTOBUF_FLOOR)
	touch $@

test-protobuf-floor: $(STAMP) $(FLOOR_DIR)/.installed
	PYTHONPATH=$(FLOOR_DIR) $(VENV)/bin/python -c \
		"import google.protobuf as p; assert p.__version__ == '4.25.9', p.__version__"
	PYTHONPATH=$(FLOOR_DIR) $(VENV)/bin/python -m pytest -q -n auto --maxprocesses=4 \
		-m "not slow" tests/summary tests/lineage tests/checkpoint tests/test_protos.py

# Regenerate the committed _pb2 modules after editing a .proto, with the protoc that keeps
# the floor (tools/regen_protos.py), in a side venv of its own.
protos:
	test -x .venv-protoc/bin/python || $(PY) -m venv .venv-protoc
	.venv-protoc/bin/pip install -q "grpcio-tools==1.62.3"
	.venv-protoc/bin/python -m tools.regen_protos

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy src bench
