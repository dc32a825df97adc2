#!/usr/bin/env bash
# npm run bench -- <suite>: installs what is missing, then runs one benchmark suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
require_node
ensure_node_modules
# The ingest suite captures real RTP from ffmpeg; the reach suite builds network namespaces.
bash scripts/ensure-system.sh ffmpeg chromium nftables tcpdump conntrack
exec node --conditions=source --import tsx bench/run.ts "$@"
