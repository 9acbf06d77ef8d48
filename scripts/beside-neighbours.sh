#!/usr/bin/env bash
# Runs a command beside two busy neighbours — benches/calibrate.py's bursty CPU loops, each
# killed when this script ends, however it ends — the way issue 68 asks the tests of
# measurements to hold on a busy machine:
#
#   scripts/beside-neighbours.sh cargo test --test bisect --test history
#
# NEIGHBOURS=K for another count.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 -c '
import os, subprocess, sys
sys.path.insert(0, "benches")
from calibrate import start_neighbours
start_neighbours(int(os.environ.get("NEIGHBOURS", "2")))
sys.exit(subprocess.run(sys.argv[1:]).returncode)
' "$@"
