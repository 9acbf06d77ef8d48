#!/usr/bin/env bash
# Calibrates the verdicts on this machine: A/A false positives and the detection of 5 % and
# 2 % more CPU per request, paired against interleaved order, with Wilson intervals. Prints
# the Markdown table that BENCHMARKS.md shows. About 25 minutes on 2 cores with the defaults.
#   N=20 CLIENTS=4 DURATION=1s REPETITIONS=3 benches/calibrate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
python3 benches/calibrate.py
