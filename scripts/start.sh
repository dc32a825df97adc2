#!/usr/bin/env bash
# The one start command (`npm start`): installs what is missing, then starts svc-cloud on its
# embedded defaults: the embedded database in ./svc-data, the development identity provider, and
# the console at http://127.0.0.1:8080/console/. SVC_* variables configure it (docs/cloud.md).
# The console and pilot pages are built ahead of time into packages/console/dist (skipped when
# that build is newer than its sources); svc-cloud serves them as static files.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
require_node
ensure_node_modules
node packages/console/scripts/build.mjs
exec packages/cloud/bin/svc-cloud "$@"
