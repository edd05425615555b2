#!/usr/bin/env bash
# Re-fetches the panel's vendored ES modules from the npm registry, unmodified,
# and rewrites vendor/SHA256SUMS. The versions are pinned here; to upgrade,
# change them, run this script, read the diff, and run
# `go test ./gateway -run TestVendoredFiles`.
set -euo pipefail
cd "$(dirname "$0")/vendor"

PREACT=11.2.0 # MIT
HTM=3.1.1     # Apache-2.0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "preact@$PREACT" "htm@$HTM" >/dev/null)
tar -xzf "$tmp/preact-$PREACT.tgz" -C "$tmp" package/dist/preact.mjs package/hooks/dist/hooks.mjs package/LICENSE
mv "$tmp/package" "$tmp/preact"
tar -xzf "$tmp/htm-$HTM.tgz" -C "$tmp" package/dist/htm.mjs package/LICENSE
mv "$tmp/package" "$tmp/htm"

cp "$tmp/preact/dist/preact.mjs" preact.mjs
cp "$tmp/preact/hooks/dist/hooks.mjs" hooks.mjs
cp "$tmp/preact/LICENSE" LICENSE.preact
cp "$tmp/htm/dist/htm.mjs" htm.mjs
cp "$tmp/htm/LICENSE" LICENSE.htm
{
  echo "# preact@$PREACT (MIT), htm@$HTM (Apache-2.0), from registry.npmjs.org via npm pack"
  sha256sum preact.mjs hooks.mjs htm.mjs LICENSE.preact LICENSE.htm
} > SHA256SUMS
cat SHA256SUMS
