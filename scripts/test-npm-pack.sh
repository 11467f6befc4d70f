#!/usr/bin/env bash
# The npm package test (`make test-napi`): `npm pack` of bindings/napi from the build BUILD (no
# second build: the prepack script copies BUILD's edgellm.node and libedgellm.so), `npm install`
# of the tarball into an empty project in a temporary folder (offline: the package has no
# dependencies), then `require('edgellm')` there streams a generation of stories260K, with
# EDGELLM_NAPI_ADDON unset and the source checkout out of reach (the project is outside it).
# Usage: scripts/test-npm-pack.sh BUILD   ($EDGELLM_TESTDATA: the shared/ folder)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: test-npm-pack.sh BUILD}" && pwd)
testdata=${EDGELLM_TESTDATA:-$root/../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -rf "$root/bindings/napi/prebuilds"' EXIT
fail() { echo "test-npm-pack: FAIL: $*" >&2; exit 1; }

unset EDGELLM_NAPI_ADDON
(cd "$root/bindings/napi" && EDGELLM_BUILD_DIR="$build" npm pack --pack-destination "$tmp" --silent >"$tmp/pack.log") ||
  { cat "$tmp/pack.log"; fail "npm pack"; }
tarball=$(ls "$tmp"/edgellm-*.tgz)
tar -tzf "$tarball" >"$tmp/contents"
for f in package/index.js package/index.d.ts package/README.md package/package.json \
         "package/prebuilds/linux-$(node -p process.arch)/edgellm.node"; do
  grep -qx "$f" "$tmp/contents" || fail "$f missing from $(basename "$tarball")"
done
grep -q "^package/prebuilds/linux-.*/libedgellm\.so\.[0-9]" "$tmp/contents" || fail "libedgellm.so missing from the tarball"
if grep -q "^package/test/\|^package/src/\|^package/scripts/" "$tmp/contents"; then fail "sources or tests in the tarball"; fi

mkdir "$tmp/app"
cd "$tmp/app"
npm init -y >/dev/null
npm install --offline --no-audit --no-fund "$tarball" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "npm install"; }
[[ -f node_modules/edgellm/index.d.ts ]] || fail "typings not installed"
cat >app.js <<'JS'
const edgellm = require('edgellm');
const where = require.resolve('edgellm');
(async () => {
  const model = await edgellm.load(process.argv[2]);
  const pieces = [];
  const g = model.generate('Once upon a time', { maxTokens: 24, temperature: 0 }, (p) => pieces.push(p));
  const r = await g.result;
  await model.release();
  if (pieces.length < 2 || pieces.join('') !== r.text) throw new Error(`stream of ${pieces.length} pieces != result`);
  console.log(JSON.stringify({ where, pieces: pieces.length, text: r.text, finishReason: r.finishReason }));
})().catch((e) => { console.error(e); process.exit(1); });
JS
out=$(node app.js "$testdata/models/stories260K.gguf") || fail "require('edgellm') from the installed tarball"
grep -q "\"where\":\"$tmp/app/node_modules/edgellm/index.js\"" <<<"$out" || fail "not the installed package: $out"
# The addon loaded is the package's own prebuild (its RPATH finds the libedgellm.so beside it).
ldd "$tmp/app/node_modules/edgellm/prebuilds/linux-$(node -p process.arch)/edgellm.node" | grep libedgellm |
  grep -q "$tmp/app/node_modules/edgellm/prebuilds" || fail "the prebuilt addon does not load the library beside it"
echo "test-npm-pack: ok: $(basename "$tarball") ($(wc -l <"$tmp/contents") files) installed offline, $out"
