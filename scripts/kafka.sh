#!/usr/bin/env bash
# Run Apache Kafka (KRaft, one node) on 127.0.0.1:PORT in the foreground, data kept in DATA_DIR
# (formatted on first use; the KRaft controller listens on PORT+1). Ctrl-C stops it.
# The broker jars come from `make kafka`; the config is the one the tests use (harness/services.py).
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: scripts/kafka.sh PORT DATA_DIR" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
py="$root/.venv/bin/python"
[ -x "$py" ] || { echo "no $py: run \`make install\` first" >&2; exit 1; }
[ -d "$root/.kafka/libs" ] || make -C "$root" --no-print-directory kafka
cd "$root"
exec "$py" -m harness.services kafka --port "$1" --dir "$(mkdir -p "$2" && cd "$2" && pwd)"
