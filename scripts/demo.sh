#!/usr/bin/env bash
# The main job on the embedded emulator: set-up, then publish, read back
# into Arrow (and through Spark), print a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd /tmp && exec python3 -m pubsub_go demo "$@"
