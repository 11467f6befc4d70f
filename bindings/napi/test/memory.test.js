'use strict';
// Native memory goes back: explicit release and finalization (the Model dropped and collected,
// run with --expose-gc) over 50 load cycles each. Two independent signals: the process's RSS and
// its thread count (each live service owns a scheduler thread and a worker pool).
const test = require('node:test');
const assert = require('node:assert/strict');
const edgellm = require('..');
const h = require('./helpers');

const CYCLES = 50;
// A leaked stories260K service holds ~8 MB (measured: 50 models kept alive grew RSS by ~390 MB);
// released ones leave the RSS flat once glibc's per-thread malloc arenas exist, which the first
// ~20 cycles create (measured: +55 MB over cycles 0-20, +4 MB over cycles 40-180).
const RSS_BOUND = 32 * 1024 * 1024;

async function collect() {
  for (let i = 0; i < 3; i++) {
    global.gc();
    await h.sleep(10);  // finalizers run from the event loop after a collection
  }
}

async function cycle(release) {
  const m = await edgellm.load(h.stories);
  const r = await m.generate('Once upon a time', { temperature: 0, maxTokens: 8 }).result;
  assert.equal(r.completionTokens, 8);
  if (release) await m.release();
}

for (const release of [true, false]) {
  test(`${CYCLES} load cycles with ${release ? 'release()' : 'finalization only'}: RSS and threads flat`,
    { skip: typeof global.gc !== 'function' && 'run with --expose-gc' }, async () => {
      for (let i = 0; i < 20; i++) await cycle(release);  // warm up the malloc arenas and code paths
      await collect();
      const rss0 = process.memoryUsage().rss;
      const threads0 = h.threadCount();
      for (let i = 0; i < CYCLES; i++) {
        await cycle(release);
        if (i % 10 === 9) await collect();
      }
      await collect();
      const grew = process.memoryUsage().rss - rss0;
      // Under ASan (EDGELLM_NAPI_SANITIZER=1) freed memory sits in its quarantine: threads only.
      if (!process.env.EDGELLM_NAPI_SANITIZER) assert.ok(grew < RSS_BOUND, `RSS grew ${(grew / 1048576).toFixed(1)} MiB over ${CYCLES} cycles`);
      assert.ok(h.threadCount() <= threads0, `threads ${threads0} -> ${h.threadCount()}`);
    });
}
