# Shared helpers for the scripts in this folder. Source it from bash with the repo root as the
# working directory:  source scripts/lib.sh

# Fails with a clear message unless Node.js >= 20.12 is on the PATH.
require_node() {
  if ! command -v node >/dev/null 2>&1; then
    echo "error: node is not installed; this project needs Node.js >= 20.12" >&2
    exit 1
  fi
  if ! node -e '
    const [major, minor] = process.versions.node.split(".").map(Number);
    process.exit(major > 20 || (major === 20 && minor >= 12) ? 0 : 1);
  '; then
    echo "error: this project needs Node.js >= 20.12, found $(node --version) at $(command -v node)" >&2
    exit 1
  fi
}

# Installs the npm dependencies when they are missing or stale: when there is no node_modules,
# or package-lock.json or a package.json changed after the last install (npm writes
# node_modules/.package-lock.json on every install). Otherwise does nothing.
#
# Uses `npm install`, not `npm ci`: the registry this project is built against lacks biome's
# non-Linux platform packages, so npm leaves them out of the lockfile and `npm ci` then refuses
# the lockfile as out of sync. `npm install` keeps the locked versions (and package.json pins
# exact versions of every tool).
ensure_node_modules() {
  local stamp=node_modules/.package-lock.json
  if [[ -f $stamp && ! package-lock.json -nt $stamp ]] &&
    [[ -z "$(find package.json packages/*/package.json -newer "$stamp" 2>/dev/null)" ]]; then
    return 0
  fi
  echo "==> npm install --no-audit --no-fund (dependencies missing or changed)"
  npm install --no-audit --no-fund
}

# Prints the time elapsed since START_NS (from `date +%s%N`), e.g. "12.3 s".
elapsed_since() {
  local start_ns="$1" now_ns
  now_ns="$(date +%s%N)"
  awk -v d="$((now_ns - start_ns))" 'BEGIN { printf "%.1f s", d / 1e9 }'
}
