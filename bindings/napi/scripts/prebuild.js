'use strict';
// `npm pack` / `npm publish` run this first (package.json "prepack"): copies the addon and the
// library it links from a CMake build of this checkout into prebuilds/<platform>-<arch>/, so the
// tarball installs without a compiler. The addon's RPATH holds $ORIGIN (bindings/napi/
// CMakeLists.txt), so it loads the libedgellm.so beside it.
//   EDGELLM_BUILD_DIR   the build directory (default: ../../build)
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const build = path.resolve(process.env.EDGELLM_BUILD_DIR || path.join(__dirname, '..', '..', '..', 'build'));
const addon = path.join(build, 'bindings', 'napi', 'edgellm.node');
if (!fs.existsSync(addon)) {
  console.error(`prebuild: ${addon} does not exist: build the addon first (cmake --build ${build} --target edgellm_napi)`);
  process.exit(1);
}
// The library file the addon asks for by its SONAME (libedgellm.so.0.2), from the addon's NEEDED entries.
const dynamic = execFileSync('readelf', ['-d', addon], { encoding: 'utf8' });
const needed = [...dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[(libedgellm\.so[^\]]*)\]/g)].map((m) => m[1]);
if (needed.length !== 1) {
  console.error(`prebuild: ${addon} does not link exactly one libedgellm.so (NEEDED: ${needed.join(', ') || 'none'})`);
  process.exit(1);
}
const runpath = (dynamic.match(/\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]/) || [])[1] || '';
if (!runpath.split(':').includes('$ORIGIN')) {
  console.error(`prebuild: ${addon} has no $ORIGIN in its RPATH ('${runpath}'); rebuild with this checkout's CMakeLists.txt`);
  process.exit(1);
}
const dest = path.join(__dirname, '..', 'prebuilds', `${process.platform}-${process.arch}`);
fs.rmSync(dest, { recursive: true, force: true });
fs.mkdirSync(dest, { recursive: true });
fs.copyFileSync(addon, path.join(dest, 'edgellm.node'));
fs.copyFileSync(fs.realpathSync(path.join(build, needed[0])), path.join(dest, needed[0]));
console.error(`prebuild: ${path.relative(process.cwd(), dest)}: edgellm.node + ${needed[0]} from ${build}`);
