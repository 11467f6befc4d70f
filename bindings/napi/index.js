'use strict';
// Loads the native addon (edgellm.node), the first of:
//   1. $EDGELLM_NAPI_ADDON: the path of an edgellm.node to use (a build of your own, a sanitizer
//      build in the tests);
//   2. prebuilds/<platform>-<arch>/edgellm.node inside this package: what `npm pack` puts in the
//      tarball (with libedgellm.so beside it; the addon finds it through its $ORIGIN RPATH);
//   3. build/bindings/napi/edgellm.node of the source checkout this folder is in (the default
//      CMake build directory), so `require('./bindings/napi')` works in a built checkout.
// None found: an error naming every place tried and how to get one (docs/harmonyos.md).
const fs = require('node:fs');
const path = require('node:path');

function candidates() {
  const out = [];
  if (process.env.EDGELLM_NAPI_ADDON) out.push(['$EDGELLM_NAPI_ADDON', process.env.EDGELLM_NAPI_ADDON]);
  out.push(['the package prebuild', path.join(__dirname, 'prebuilds', `${process.platform}-${process.arch}`, 'edgellm.node')]);
  out.push(['the source checkout build', path.join(__dirname, '..', '..', 'build', 'bindings', 'napi', 'edgellm.node')]);
  return out;
}

function load() {
  const tried = [];
  for (const [what, file] of candidates()) {
    if (fs.existsSync(file)) return require(file);
    tried.push(`  ${what}: ${file}`);
    // An explicit $EDGELLM_NAPI_ADDON that does not exist is a mistake, not a reason to fall back.
    if (what === '$EDGELLM_NAPI_ADDON') break;
  }
  throw new Error(
    `edgellm: no native addon (edgellm.node) for ${process.platform}-${process.arch}; looked in:\n${tried.join('\n')}\n` +
      'Build it (cmake -S . -B build && cmake --build build --target edgellm_napi in the EdgeLLM checkout), ' +
      'install a package that carries one for this platform (npm pack in bindings/napi), ' +
      'or set EDGELLM_NAPI_ADDON=/path/to/edgellm.node.');
}

module.exports = load();
