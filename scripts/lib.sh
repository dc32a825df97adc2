# Shared helpers for the scripts in this folder. Source it from bash with the repo root as the
# working directory:  source scripts/lib.sh

# Fails with a clear message unless the Node.js that package.json's `engines` names is on the
# PATH (the one place the supported version is stated; ADR 0014).
require_node() {
  if ! command -v node >/dev/null 2>&1; then
    echo "error: node is not installed; this project needs the Node.js named in package.json (engines.node)" >&2
    exit 1
  fi
  if ! node -e '
    const wanted = require("./package.json").engines.node;
    const m = /^>=(\d+)\.(\d+)$/.exec(wanted);
    if (!m) { console.error(`package.json engines.node is ${wanted}; expected the form >=MAJOR.MINOR`); process.exit(2); }
    const [major, minor] = process.versions.node.split(".").map(Number);
    const ok = major > Number(m[1]) || (major === Number(m[1]) && minor >= Number(m[2]));
    if (!ok) console.error(`error: this project needs Node.js ${wanted} (package.json engines), found ${process.version} at ${process.execPath}`);
    process.exit(ok ? 0 : 1);
  '; then
    exit 1
  fi
}

# Installs the npm dependencies exactly as package-lock.json locks them when they are missing or
# stale: when there is no node_modules, or package-lock.json or a package.json changed after the
# last install (npm writes node_modules/.package-lock.json on every install). `npm ci` never
# rewrites the lockfile, so no command here modifies a tracked file; a lockfile out of step with
# package.json fails here with npm's own message (run `npm install` and commit the lockfile).
ensure_node_modules() {
  local stamp=node_modules/.package-lock.json
  if [[ -f $stamp && ! package-lock.json -nt $stamp ]] &&
    [[ -z "$(find package.json packages/*/package.json -newer "$stamp" 2>/dev/null)" ]]; then
    return 0
  fi
  echo "==> npm ci --no-audit --no-fund (dependencies missing or changed)"
  npm ci --no-audit --no-fund
}

# Prints the time elapsed since START_NS (from `date +%s%N`), e.g. "12.3 s".
elapsed_since() {
  local start_ns="$1" now_ns
  now_ns="$(date +%s%N)"
  awk -v d="$((now_ns - start_ns))" 'BEGIN { printf "%.1f s", d / 1e9 }'
}
