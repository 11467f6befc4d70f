'use strict';
// The env goes away while the addon is busy: process.exit() mid-stream, a worker thread
// terminated mid-stream, a script that ends with a model never released, a router waiting for
// a JS transport that never answers. Each runs in a child process, which must exit cleanly (no
// crash, no hang: the runtimes are destroyed before Node-API frees the thread-safe functions
// their threads post to).
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const h = require('./helpers');

const addon = require.resolve('..');

function runChild(source) {
  const r = spawnSync(process.execPath, ['-e', source], {
    env: { ...process.env, MODEL: h.stories, ADDON: addon }, encoding: 'utf8', timeout: 60000,
  });
  assert.equal(r.signal, null, `child killed by ${r.signal}: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const LONG = "{ temperature: 0, maxTokens: 1500, ignoreEos: true }";

test('process.exit() from onToken mid-stream', () => {
  const out = runChild(`
    const e = require(process.env.ADDON);
    e.load(process.env.MODEL).then((m) => {
      let n = 0;
      m.generate('Once upon a time', ${LONG}, () => { if (++n === 3) { console.log('exit'); process.exit(0); } });
      m.generate('Tom had a ball', ${LONG});
    });`);
  assert.equal(out.trim(), 'exit');
});

test('a worker thread terminated mid-stream', () => {
  const out = runChild(`
    const { Worker } = require('node:worker_threads');
    const w = new Worker(\`
      const { parentPort } = require('node:worker_threads');
      const e = require(process.env.ADDON);
      e.load(process.env.MODEL).then((m) => {
        let n = 0;
        m.generate('Once upon a time', ${LONG}, () => { if (++n === 3) parentPort.postMessage('streaming'); });
        m.warmup();
      });\`, { eval: true });
    w.on('message', async () => { await w.terminate(); console.log('terminated'); });`);
  assert.equal(out.trim(), 'terminated');
});

test('a worker thread terminated while release() is on its way', () => {
  const out = runChild(`
    const { Worker } = require('node:worker_threads');
    const w = new Worker(\`
      const { parentPort } = require('node:worker_threads');
      const e = require(process.env.ADDON);
      e.load(process.env.MODEL).then((m) => {
        m.generate('Once upon a time', ${LONG});
        m.release();
        parentPort.postMessage('releasing');
      });\`, { eval: true });
    w.on('message', async () => { await w.terminate(); console.log('terminated'); });`);
  assert.equal(out.trim(), 'terminated');
});

test('a script that ends with a loaded model and a paused request', () => {
  const out = runChild(`
    const e = require(process.env.ADDON);
    e.load(process.env.MODEL).then((m) => {
      globalThis.keep = m;
      m.pause();
      const g = m.generate('Once upon a time', ${LONG});
      g.result.catch(() => {});
      setTimeout(() => { console.log('done'); process.exit(0); }, 50);
    });`);
  assert.equal(out.trim(), 'done');
});

test('process.exit() while the router waits for a JS transport', () => {
  const out = runChild(`
    const e = require(process.env.ADDON);
    e.load(process.env.MODEL).then((m) => {
      m.setRouter({ localThreshold: 1, cloudThreshold: 1, transport: () => {
        setImmediate(() => { console.log('exit'); process.exit(0); });
        return new Promise(() => {});  // never settles
      } });
      m.generate([{ role: 'user', content: 'hi' }], { route: 'cloud', maxTokens: 4 });
    });`);
  assert.equal(out.trim(), 'exit');
});

test('a worker thread terminated while the router waits for its transport', () => {
  const out = runChild(`
    const { Worker } = require('node:worker_threads');
    const w = new Worker(\`
      const { parentPort } = require('node:worker_threads');
      const e = require(process.env.ADDON);
      e.load(process.env.MODEL).then((m) => {
        m.setRouter({ localThreshold: 1, cloudThreshold: 1, transport: () => {
          parentPort.postMessage('calling');
          return new Promise(() => {});
        } });
        m.generate([{ role: 'user', content: 'hi' }], { route: 'cloud', maxTokens: 4 });
      });\`, { eval: true });
    w.on('message', async () => { await w.terminate(); console.log('terminated'); });`);
  assert.equal(out.trim(), 'terminated');
});
