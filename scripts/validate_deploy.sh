#!/usr/bin/env bash
# Validate the deployment files offline: no container engine, no Kubernetes cluster.
#
#   scripts/validate_deploy.sh                 install the tools if needed, then check everything
#   scripts/validate_deploy.sh --install-only  only install the tools (docker-compose, .venv-helm)
#   scripts/validate_deploy.sh --offline       skip the one check that asks PyPI (pin resolution)
#
# Checks: docker-compose config (Debian's docker-compose v1 validates offline; with stand-ins for
# its secrets, refused without them, every published port on 127.0.0.1), that compose runs
# the Apache Kafka the tests run (deploy/kafka/pom.xml's version, KRaft, one combined node) and
# that every file naming a Kafka version names that one, hadolint on the Dockerfile, yamllint on
# compose and chart values, the Docker build context (what COPY needs is there; a wheel built from
# exactly that context is complete), helm lint + render of the chart in several scenarios, the
# rendered manifests against the Kubernetes schemas (strict), and that the image's pinned
# dependencies resolve to wheels for linux/amd64 CPython 3.11.
#
# Tools: docker-compose from apt (installed here when missing and root); everything else from
# deploy/requirements-validate.txt into .venv-helm, made with Python >= 3.12 (helm-sdkpy needs it):
# $NEARDUP_PYTHON312, python3.13/python3.12 on PATH, or pyenv's 3.12+/3.13+.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VENV=${HELM_VENV:-.venv-helm}
REQS=deploy/requirements-validate.txt
STAMP=$HELM_VENV/.installed
INSTALL_ONLY=0
OFFLINE=0
for arg in "$@"; do
    case "$arg" in
        --install-only) INSTALL_ONLY=1 ;;
        --offline) OFFLINE=1 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

die() { echo "validate_deploy: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- tools -------------------------------------------------------------------------------------

COMPOSE=()
ensure_compose() {
    if command -v docker-compose >/dev/null 2>&1; then
        COMPOSE=(docker-compose)
    elif docker compose version >/dev/null 2>&1; then
        COMPOSE=(docker compose)
    elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing docker-compose (Debian package; validates compose files offline)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null \
            || die "apt-get install docker-compose failed"
        COMPOSE=(docker-compose)
    else
        die "docker-compose is missing and cannot be installed here (needs root and apt-get):" \
            "install Debian's docker-compose package or the docker compose plugin"
    fi
}

find_python312() {
    local c candidates=()
    [ -n "${NEARDUP_PYTHON312:-}" ] && candidates+=("$NEARDUP_PYTHON312")
    for c in python3.13 python3.12; do
        command -v "$c" >/dev/null 2>&1 && candidates+=("$(command -v "$c")")
    done
    local roots=()
    command -v pyenv >/dev/null 2>&1 && roots+=("$(pyenv root)")
    roots+=("${PYENV_ROOT:-$HOME/.pyenv}" /root/.pyenv)
    for r in "${roots[@]}"; do
        for c in "$r"/versions/3.1[2-9]*/bin/python; do
            [ -x "$c" ] && candidates+=("$c")
        done
    done
    for c in "${candidates[@]}"; do
        if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

ensure_venv() {
    if [ -f "$STAMP" ] && [ "$STAMP" -nt "$REQS" ] && "$HELM_VENV/bin/python" -c '' 2>/dev/null; then
        return 0
    fi
    local py start
    py=$(find_python312) || die "no Python >= 3.12 found (helm-sdkpy needs it): set" \
        "NEARDUP_PYTHON312=/path/to/python3.12, or 'pyenv install 3.12'"
    start=$(now)
    echo "creating $HELM_VENV with $py ($("$py" -V 2>&1)) from $REQS"
    rm -rf "$HELM_VENV"
    "$py" -m venv "$HELM_VENV"
    printf '*\n' > "$HELM_VENV/.gitignore"   # keeps git, ruff and friends out of it
    local log=$HELM_VENV/install.log
    { "$HELM_VENV/bin/python" -m pip install --disable-pip-version-check --upgrade pip \
        && "$HELM_VENV/bin/python" -m pip install --disable-pip-version-check -r "$REQS"; } \
        >"$log" 2>&1 || { tail -n 30 "$log" >&2; die "pip install -r $REQS failed (log: $log)"; }
    touch "$STAMP"
    echo "tools installed in $(since "$start")s"
}

ensure_compose
ensure_venv
[ "$INSTALL_ONLY" = 1 ] && exit 0

# --- checks ------------------------------------------------------------------------------------

PY="$HELM_VENV/bin/python"
FAILED=()
TOTAL_START=$(now)
run() {
    local name=$1 start out rc
    shift
    start=$(now)
    set +e
    out=$("$@" 2>&1)
    rc=$?
    set -e
    if [ $rc = 0 ]; then
        printf 'ok    %-34s %5ss\n' "$name" "$(since "$start")"
    else
        printf 'FAIL  %-34s %5ss\n' "$name" "$(since "$start")"
        FAILED+=("$name")
    fi
    if [ -n "$out" ] && { [ $rc != 0 ] || [ -n "${VERBOSE:-}" ]; }; then
        printf '%s\n' "$out" | sed 's/^/      /'
    fi
}

# compose with stand-ins for the secrets docker-compose.yml requires, and no .env read
NO_ENV_FILE=$(mktemp)
trap 'rm -f "$NO_ENV_FILE"' EXIT
compose_with_secrets() {
    NEARDUP_CHECK_TOKEN=validate-token NEARDUP_REDIS_PASSWORD=validate-password \
        "${COMPOSE[@]}" --env-file "$NO_ENV_FILE" -f docker-compose.yml "$@"
}

compose_config() {
    # (Functions run by `run` are outside errexit: every step says `|| return 1`.)
    compose_with_secrets config -q || return 1
    compose_with_secrets --profile example config -q || return 1
    # Closed by default: without the secrets compose refuses to start.
    ! env -u NEARDUP_CHECK_TOKEN -u NEARDUP_REDIS_PASSWORD \
        "${COMPOSE[@]}" --env-file "$NO_ENV_FILE" -f docker-compose.yml config -q 2>/dev/null \
        || { echo "compose starts without NEARDUP_CHECK_TOKEN and NEARDUP_REDIS_PASSWORD"; return 1; }
    # The partition count is one variable: it must reach the topic creation.
    local rendered open
    rendered=$(NEARDUP_PARTITIONS=3 compose_with_secrets config) || return 1
    grep -q -- '--partitions 3' <<<"$rendered" \
        || { echo "NEARDUP_PARTITIONS does not reach kafka-topics.sh --partitions"; return 1; }
    grep -q -- 'cleanup.policy=compact' <<<"$rendered" \
        || { echo "the topics service does not compact the verdict topic"; return 1; }
    # Every published port on loopback (v1 prints a bound port as a string, v2 as host_ip).
    open=$("$PY" -c '
import sys, yaml
for name, svc in yaml.safe_load(sys.stdin)["services"].items():
    for p in svc.get("ports", []):
        spec = str(p).split("/")[0]
        ip = p.get("host_ip", "") if isinstance(p, dict) else spec.rsplit(":", 2)[0]
        if ip != "127.0.0.1":
            print(name, p)
' <<<"$rendered") || return 1
    [ -z "$open" ] || { echo "ports published beyond 127.0.0.1: $open"; return 1; }
}

kafka_matches_pom() {
    # deploy/kafka/pom.xml pins the broker the tests run; compose must run that image, in KRaft
    # mode (one node that is broker and controller, no ZooKeeper), and no file may name another.
    local want rendered images roles named v
    want=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' deploy/kafka/pom.xml)
    [ -n "$want" ] || { echo "no <kafka.version> in deploy/kafka/pom.xml"; return 1; }
    rendered=$(compose_with_secrets --profile example config) || return 1
    images=$(grep -oE 'apache/kafka:[^[:space:]"]+' <<<"$rendered" | sort -u | paste -sd' ')
    [ "$images" = "apache/kafka:$want" ] \
        || { echo "compose runs ${images:-no apache/kafka image}; deploy/kafka/pom.xml pins $want"; return 1; }
    roles=$(sed -n 's/^ *KAFKA_PROCESS_ROLES: *//p' <<<"$rendered" | tr -d "\"'")
    [ "$(tr ',' '\n' <<<"$roles" | sort | paste -sd,)" = "broker,controller" ] \
        || { echo "KAFKA_PROCESS_ROLES is '$roles', not one KRaft node that is broker and controller"; return 1; }
    ! grep -qi zookeeper <<<"$rendered" || { echo "compose mentions ZooKeeper (Kafka 4 is KRaft only)"; return 1; }
    named=$(cat docker-compose.yml helm/neardup/values.yaml helm/neardup/Chart.yaml README.md docs/*.md \
        | tr -s ' \n#' ' ' | grep -oE 'Apache Kafka [0-9]+\.[0-9]+\.[0-9]+' | awk '{print $3}' | sort -u)
    for v in $named; do
        [ "$v" = "$want" ] \
            || { echo "a deployment file or README names Apache Kafka $v; the pom pins $want"; return 1; }
    done
}

resolve_pins() {
    # Every pinned dependency exists as a wheel for the image's platform (linux/amd64, CPython
    # 3.11), and the pins are mutually consistent: the builder stage needs no compiler on amd64.
    local target rc=0
    target=$(mktemp -d)
    grep -v '^#' deploy/constraints.txt > "$target/requirements.txt" || return 1
    "$PY" -m pip install --quiet --disable-pip-version-check --dry-run --ignore-installed \
        --no-warn-conflicts \
        --only-binary=:all: --implementation cp --python-version 3.11 \
        --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
        --target "$target/t" -r "$target/requirements.txt" || rc=1
    rm -rf "$target"
    return $rc
}

run "docker-compose config" compose_config
run "compose Kafka = deploy/kafka/pom.xml" kafka_matches_pom
run "hadolint Dockerfile" "$HELM_VENV/bin/hadolint" Dockerfile
run "yamllint" "$HELM_VENV/bin/yamllint" --strict -c deploy/.yamllint \
    docker-compose.yml helm/neardup/Chart.yaml helm/neardup/values.yaml deploy/helm-values
run "docker build context + wheel" "$PY" deploy/deploy_check.py context
run "sdist: LICENSE, no tests, a complete wheel" "$PY" deploy/deploy_check.py sdist
run "helm lint/render/kubernetes-validate" "$PY" deploy/deploy_check.py chart
if [ "$OFFLINE" = 0 ]; then
    run "image pins resolve (PyPI)" resolve_pins
fi

echo "total $(since "$TOTAL_START")s"
if [ ${#FAILED[@]} -gt 0 ]; then
    echo "validate_deploy: failed: ${FAILED[*]}" >&2
    exit 1
fi
echo "validate_deploy: all deployment checks passed"
