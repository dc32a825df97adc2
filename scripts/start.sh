#!/usr/bin/env bash
# The one start command (`npm start`): installs what is missing, then starts what runs on embedded
# defaults. Today that is the wire loopback; the cloud service and the daemon replace it as they land.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
require_node
ensure_node_modules
exec node --conditions=source --import tsx scripts/src/wire-loopback.ts "$@"
