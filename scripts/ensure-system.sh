#!/usr/bin/env bash
# Make sure the Debian packages the tests need are installed.
#
# Usage: bash scripts/ensure-system.sh PACKAGE...
#   e.g. bash scripts/ensure-system.sh chromium
#
# Quiet and fast when everything is present. As root, installs what is missing with apt-get
# (one `apt-get update`, only when something is missing). Otherwise prints the command to run
# and exits 1.
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: bash scripts/ensure-system.sh PACKAGE..." >&2
  exit 2
fi

missing=()
for pkg in "$@"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != *"install ok installed"* ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
  {
    echo "error: missing Debian packages needed by the tests: ${missing[*]}"
    echo "install them with:"
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
  } >&2
  exit 1
fi

echo "ensure-system: installing ${missing[*]} with apt-get (the tests need it and it is not installed)"
export DEBIAN_FRONTEND=noninteractive
# apt's progress output goes to a log that is shown only when something fails.
log="$(mktemp -t ensure-system.XXXXXX.log)"
trap 'rm -f "$log"' EXIT
if ! apt-get update >"$log" 2>&1 ||
  ! apt-get install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
  cat "$log" >&2
  echo "error: ensure-system: apt-get failed to install ${missing[*]} (output above)" >&2
  exit 1
fi

# Verify: a package name apt accepted but that did not end up installed is an error.
for pkg in "${missing[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != *"install ok installed"* ]]; then
    echo "error: ensure-system: $pkg is still not installed after apt-get install" >&2
    exit 1
  fi
done
