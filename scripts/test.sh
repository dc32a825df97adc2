#!/usr/bin/env bash
# The one test command (`npm test`): installs what is missing, then typechecks and builds,
# lints, and runs every test, browser tests included. Works on a fresh clone on a fresh Debian
# machine that has only Node, npm and apt (run as root, or install the Debian packages first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/lib.sh
source scripts/lib.sh

require_node

total_start="$(date +%s%N)"

start="$(date +%s%N)"
ensure_node_modules
# Chromium for the browser tests; ffmpeg and GStreamer (with its RTSP server and Python bindings)
# as the real video sources of the ingest tests (shared/design/testing.md); coturn as the TURN
# server of the WebRTC tests, with openssl for its certificate and faketime for its clock.
bash scripts/ensure-system.sh chromium ffmpeg postgresql nftables tcpdump miniupnpd conntrack \
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
  gstreamer1.0-plugins-ugly gstreamer1.0-libav gstreamer1.0-rtsp gir1.2-gst-rtsp-server-1.0 python3-gi \
  coturn openssl faketime
echo "    setup took $(elapsed_since "$start")"

failed=()
stage() {
  local name="$1" start
  shift
  echo
  echo "==> $*"
  start="$(date +%s%N)"
  if "$@"; then
    echo "    ok: $name ($(elapsed_since "$start"))"
  else
    echo "    FAILED: $name ($(elapsed_since "$start"))"
    failed+=("$name")
  fi
}

# Every stage runs even when an earlier one failed, so one run shows every problem.
stage "typecheck and build" npx --no-install tsc -b
# The console and pilot pages svc-cloud serves, built ahead of time (skipped when up to date); the
# tests that open /console/ and /pilot/ need them (vitest's global setup builds them too).
stage "console pages" node packages/console/scripts/build.mjs
# The layer table of docs/architecture.md, cycles, and imports into another package's src/.
stage "layering" npx --no-install depcruise --config .dependency-cruiser.cjs --output-type err-long packages scripts bench
# Biome colours its report even when the output is a log file; plain text reads better there.
biome_colors=()
[[ -t 1 ]] || biome_colors=(--colors=off)
stage "lint and format" npx --no-install biome ci "${biome_colors[@]}" .
# Colour codes make a CI log hard to read; the JSON report gives the plain closing count below.
[[ -t 1 ]] || export NO_COLOR=1
report="$(mktemp -t vitest-report.XXXXXX.json)"
trap 'rm -f "$report"' EXIT
stage "tests" npx --no-install vitest run --reporter=default --reporter=json --outputFile.json="$report"

echo
# One plain line with the counts, and a run that executed no test is a failure, not a pass.
if ! node -e '
  const fs = require("node:fs");
  const text = fs.existsSync(process.argv[1]) ? fs.readFileSync(process.argv[1], "utf8") : "";
  const r = text ? JSON.parse(text) : { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTotalTests: 0 };
  const skipped = r.numPendingTests + (r.numTodoTests ?? 0);
  console.log(`vitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped ? `, ${skipped} skipped` : ""));
  // In CI nothing may be skipped.
  process.exit(r.numTotalTests > 0 && !(process.env.CI && skipped > 0) ? 0 : 1);
' "$report"; then
  failed+=("no test ran")
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "npm test: FAILED (${failed[*]}) after $(elapsed_since "$total_start")" >&2
  exit 1
fi
echo "npm test: all passed in $(elapsed_since "$total_start")"
