#!/usr/bin/env bash
# The one start command (`npm start`): installs what is missing, builds the console and pilot pages,
# then runs scripts/src/start.ts: svc-cloud on its embedded defaults (the embedded database in
# ./svc-data, the development identity provider, the console at http://127.0.0.1:8080/console/) and,
# with the development provider, the demonstration robot (docs/demo.md): a real svcd fed by a
# bundled clip, enrolled in the org the development users join. SVC_* variables configure svc-cloud
# (docs/cloud.md); `npm start -- --no-demo` (or SVC_DEMO=0) leaves the robot out; other arguments
# go to svc-cloud. The pages are built ahead of time into packages/console/dist (skipped when that
# build is newer than its sources); svc-cloud serves them as static files.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
require_node
ensure_node_modules
node packages/console/scripts/build.mjs
exec node --conditions=source --import tsx scripts/src/start.ts "$@"
