# neardup worker image.
#
#   docker build -t neardup:0.1.0 .
#   docker run --rm --read-only -p 6066:6066 \
#     -e NEARDUP_KAFKA_BOOTSTRAP=kafka:9092 -e NEARDUP_REDIS_URL=redis://redis:6379/0 neardup:0.1.0
#
# Reproducible: the base image is pinned by tag (pin it by digest too with
# --build-arg PYTHON_IMAGE=python:3.11.11-slim-bookworm@sha256:...), every Python package is pinned
# by deploy/constraints.txt, and pip keeps no cache. The runtime stage has no compiler, no pip and
# no curl; it runs as uid 10001 and works with a read-only root filesystem (state goes to /tmp).

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

# ---- builder: wheels for neardup and every pinned dependency, then a venv made from them ----
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

# A compiler only for dependencies without a wheel for the build platform
# (faust-streaming on arm64); none of it reaches the runtime stage.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY deploy/constraints.txt /src/deploy/constraints.txt
COPY pyproject.toml setup.py README.md LICENSE /src/
# The compiled core's sources: built into the wheel where the builder has cargo (Rust 1.85 or newer);
# this builder has none yet, so the image runs the python reference (the worker says so once).
COPY core/Cargo.toml core/Cargo.lock /src/core/
COPY core/src /src/core/src
COPY sketch /src/sketch
COPY stream /src/stream
COPY neardup /src/neardup

# neardup with the stream extra: the worker (faust, aiokafka) and the shared index (redis); the
# constraints pin exactly that closure (deploy/freeze_constraints.py, IMAGE_EXTRAS).
RUN pip wheel --no-cache-dir --constraint deploy/constraints.txt --wheel-dir /wheels ".[stream]" \
    && python -m venv --without-pip /opt/neardup \
    && pip --python /opt/neardup/bin/python install --no-cache-dir --no-index \
        --find-links /wheels --constraint deploy/constraints.txt "neardup[stream]"

# ---- runtime ----
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="neardup" \
      org.opencontainers.image.description="Streaming near-duplicate detector (Kafka + Redis)" \
      org.opencontainers.image.licenses="Apache-2.0"

# The base image's own pip/setuptools/wheel are not needed to run neardup: remove them.
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
    && groupadd --system --gid 10001 neardup \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin neardup

COPY --from=builder /opt/neardup /opt/neardup

# NEARDUP_DATA_DIR is faust's local state; /tmp is the one writable place (a volume here, an
# emptyDir in the helm chart, a tmpfs in docker-compose.yml).
ENV PATH=/opt/neardup/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NEARDUP_DATA_DIR=/tmp/neardup \
    NEARDUP_WEB_PORT=6066

VOLUME ["/tmp"]
WORKDIR /tmp
USER 10001:10001
EXPOSE 6066

# /health answers 200 when Kafka and Redis are reachable, 503 otherwise; urlopen raises on 503,
# so the check fails. python's urllib because the slim image has no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('NEARDUP_WEB_PORT', '6066') + '/health', timeout=4)"]

STOPSIGNAL SIGTERM
ENTRYPOINT ["neardup"]
CMD ["worker"]
