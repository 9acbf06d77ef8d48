#!/usr/bin/env bash
# Runs PLAN as N shards on this one machine, the way a Kubernetes Indexed Job would run them
# on N nodes — one after another, each in its own network namespace (loopback only) and UTS
# namespace (host name sim-node-K), with JOB_COMPLETION_INDEX set — then merges them into OUT
# with `bakeoff merge`. Needs root (ip netns, unshare). docs/scale-out.md shows its output.
#
# usage: scripts/simulate-shards.sh PLAN N OUT     (BAKEOFF=path/to/bakeoff to choose one)
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 PLAN N OUT" >&2
    exit 1
fi
plan=$(realpath "$1")
n=$2
out=$3
bakeoff=$(command -v "${BAKEOFF:-bakeoff}")
work=$(mktemp -d)
namespaces=()
cleanup() {
    for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
for i in $(seq 0 $((n - 1))); do
    ns="bakeoff-sim-$$-$i"
    ip netns add "$ns"
    namespaces+=("$ns")
    ip netns exec "$ns" ip link set lo up
    echo "== shard $((i + 1)) of $n (namespace $ns, host sim-node-$((i + 1)))" >&2
    # A shard that fails still leaves its results; the merge says what is missing.
    JOB_COMPLETION_INDEX=$i ip netns exec "$ns" unshare --uts sh -c \
        'hostname "sim-node-$4" && exec "$0" run "$1" --shards "$2" --out "$3"' \
        "$bakeoff" "$plan" "$n" "$work/shard-$i" "$((i + 1))" >/dev/null || true
done
"$bakeoff" merge "$work"/shard-* --out "$out"
