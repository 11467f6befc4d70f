'use strict';
// Where require('edgellm') finds the addon (index.js): $EDGELLM_NAPI_ADDON first, and a path
// there that does not exist is an error naming it (not a silent fallback to another build); the
// error says how to get an addon. The package's prebuilds/ are checked by scripts/test-npm-pack.sh.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const pkg = path.resolve(__dirname, '..');
const load = (env) => spawnSync(process.execPath, ['-e', `require(${JSON.stringify(pkg)}); console.log('loaded')`],
                                { env: { ...process.env, ...env }, encoding: 'utf8' });

test('EDGELLM_NAPI_ADDON that does not exist: an error naming it and the ways out', () => {
  const r = load({ EDGELLM_NAPI_ADDON: '/nonexistent/edgellm.node' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /no native addon \(edgellm\.node\) for linux-/);
  assert.match(r.stderr, /\$EDGELLM_NAPI_ADDON: \/nonexistent\/edgellm\.node/);
  assert.match(r.stderr, /npm pack/);
  assert.doesNotMatch(r.stderr, /the source checkout build/, 'fell back past an explicit EDGELLM_NAPI_ADDON');
});

test('EDGELLM_NAPI_ADDON naming an addon: that one is loaded', { skip: !process.env.EDGELLM_NAPI_ADDON }, () => {
  const r = load({});
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /loaded/);
});
