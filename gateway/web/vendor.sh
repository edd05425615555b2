#!/usr/bin/env bash
# Re-fetches the panel's vendored ES modules from the npm registry, unmodified,
# and rewrites vendor/SHA256SUMS. The versions are pinned here; to upgrade,
# change them, run this script, read the diff, and run
# `go test ./gateway -run TestVendoredFiles`.
set -euo pipefail
cd "$(dirname "$0")/vendor"

PREACT=11.2.0 # MIT
HTM=3.1.1     # Apache-2.0
MARKDOWNIT=15.0.3 # MIT; its browser build bundles its dependencies (entities, linkify-it, mdurl, punycode.js, uc.micro)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "preact@$PREACT" "htm@$HTM" "markdown-it@$MARKDOWNIT" >/dev/null)
tar -xzf "$tmp/preact-$PREACT.tgz" -C "$tmp" package/dist/preact.mjs package/hooks/dist/hooks.mjs package/LICENSE
mv "$tmp/package" "$tmp/preact"
tar -xzf "$tmp/htm-$HTM.tgz" -C "$tmp" package/dist/htm.mjs package/LICENSE
mv "$tmp/package" "$tmp/htm"
tar -xzf "$tmp/markdown-it-$MARKDOWNIT.tgz" -C "$tmp" package/dist/browser/markdown-it.esm.min.mjs package/LICENSE
mv "$tmp/package" "$tmp/markdown-it"

cp "$tmp/preact/dist/preact.mjs" preact.mjs
cp "$tmp/preact/hooks/dist/hooks.mjs" hooks.mjs
cp "$tmp/preact/LICENSE" LICENSE.preact
cp "$tmp/htm/dist/htm.mjs" htm.mjs
cp "$tmp/htm/LICENSE" LICENSE.htm
cp "$tmp/markdown-it/dist/browser/markdown-it.esm.min.mjs" markdown-it.mjs
cp "$tmp/markdown-it/LICENSE" LICENSE.markdown-it
{
  echo "# preact@$PREACT (MIT), htm@$HTM (Apache-2.0), markdown-it@$MARKDOWNIT (MIT), from registry.npmjs.org via npm pack"
  sha256sum preact.mjs hooks.mjs htm.mjs markdown-it.mjs LICENSE.preact LICENSE.htm LICENSE.markdown-it
} > SHA256SUMS
cat SHA256SUMS
