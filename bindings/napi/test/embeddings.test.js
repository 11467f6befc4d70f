'use strict';
// embed / rerank through the addon against an independent driver: the CLI of the same build
// (`edgellm embed` / `edgellm rerank`, one request per process) on the same synthetic encoder
// files (all-MiniLM-L6 and ms-marco cross-encoder shapes cut to 2 layers, Q8_0, the real bge
// vocabulary; `edgellm synth`, 0.4 s each). Vectors are compared exactly: the CLI's raw format
// prints %.9g, which round-trips a float (measured max |diff| 0). Bad input rejects with the C
// ABI's status as `code`. The calls run on libuv workers (run_async), never on the JS thread.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const edgellm = require('..');
const h = require('./helpers');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgellm-napi-embed-'));
const vocab = path.join(h.testdata, 'testdata', 'vocab', 'ggml-vocab-bert-bge.gguf');
function synth(shape) {
  const out = path.join(dir, `${shape}.gguf`);
  execFileSync(h.cli, ['synth', '--shape', shape, '--layers', '2', '--type', 'q8_0', '--tokenizer', vocab, '-o', out, '-q']);
  return out;
}
const minilm = synth('all-minilm-l6');
const marco = synth('ms-marco-minilm-l6');
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

const texts = [
  'The quick brown fox jumps over the lazy dog.',
  'Café crème brûlée, s\'il vous plaît!',
  '我的笔记在手机上',
  'hello',
];

// `edgellm embed -f FILE --embd-output-format raw ...`: one row per line.
function cliVectors(model, inputs, extra = []) {
  const file = path.join(dir, 'texts.txt');
  fs.writeFileSync(file, inputs.join('\n'));
  const out = execFileSync(h.cli, ['embed', '-m', model, '-f', file, '--embd-output-format', 'raw', ...extra],
    { maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  return out.trim().split('\n').map((line) => Float32Array.from(line.trim().split(/\s+/).map(Number)));
}

test('embed: the CLI\'s vectors exactly, as Float32Arrays over one ArrayBuffer', async () => {
  const m = await edgellm.load(minilm, { threads: 2 });
  try {
    const info = m.info();
    assert.equal(info.role, 'embed');
    assert.equal(info.dims, 384);
    assert.equal(info.can_rerank, false);
    for (const [options, flags] of [[undefined, []], [{ pooling: 'cls' }, ['--pooling', 'cls']],
      [{ pooling: 'mean', normalize: -1 }, ['--pooling', 'mean', '--embd-normalize', '-1']]]) {
      const want = cliVectors(minilm, texts, flags);
      // Several calls at once (their texts share forwards) plus one with every text.
      const [all, ...singles] = await Promise.all([m.embed(texts, options), ...texts.map((t) => m.embed(t, options))]);
      assert.equal(all.vectors.length, texts.length);
      assert.equal(all.dims, 384);
      assert.equal(all.pooling, options && options.pooling ? options.pooling : 'mean');
      assert.ok(all.vectors.every((v) => v instanceof Float32Array && v.buffer === all.vectors[0].buffer));
      assert.equal(all.vectors[0].buffer.byteLength, texts.length * 384 * 4);
      assert.equal(all.tokens[3], 3);  // [CLS] hello [SEP]
      assert.equal(all.promptTokens, all.tokens.reduce((a, b) => a + b, 0));
      for (let i = 0; i < texts.length; i++) {
        assert.deepEqual(all.vectors[i], want[i], `text ${i} ${flags.join(' ')}`);
        assert.deepEqual(singles[i].vectors[0], want[i], `text ${i} alone ${flags.join(' ')}`);
      }
    }
    const none = await m.embed(['hello', 'the fox'], { pooling: 'none' });
    const wantNone = cliVectors(minilm, ['hello', 'the fox'], ['--pooling', 'none']);
    assert.equal(none.vectors.length, none.tokens[0] + none.tokens[1]);
    assert.deepEqual(none.vectors, wantNone);
  } finally {
    await m.release();
  }
});

test('rerank: the CLI\'s scores, best first, topN', async () => {
  const m = await edgellm.load(marco, { threads: 2 });
  try {
    assert.equal(m.info().can_rerank, true);
    const query = 'what do pandas eat';
    const docs = ['Giant pandas eat bamboo.', 'The stock market fell.', '熊猫吃竹子', 'Pandas are bears.'];
    const args = ['rerank', '-m', marco, '-q', query, '--json'];
    for (const d of docs) args.push('-d', d);
    const want = JSON.parse(execFileSync(h.cli, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
    const r = await m.rerank(query, docs, { topN: 2 });
    assert.equal(r.scores.length, docs.length);
    for (const e of want.results) assert.equal(r.scores[e.index], e.relevance_score, `document ${e.index}`);
    assert.deepEqual(r.results.map((e) => e.index), want.results.slice(0, 2).map((e) => e.index));
    assert.equal(r.promptTokens, want.usage.prompt_tokens);
    const e = await h.rejection(m.embed('hello').then(() => m.rerank(query, [])));
    assert.equal(e.code, 'INVALID_ARGUMENT');
  } finally {
    await m.release();
  }
});

test('embed / rerank reject bad input with the C ABI status and a message', async () => {
  const m = await edgellm.load(minilm, { threads: 2, contextSize: 16 });
  try {
    const cases = [
      [() => m.embed([]), 'INVALID_ARGUMENT', /input/],
      [() => m.embed(['ok', '']), 'INVALID_ARGUMENT', /empty/],
      [() => m.embed(42), 'INVALID_ARGUMENT', /texts must be a string or an array of strings/],
      [() => m.embed(['a', 7]), 'INVALID_ARGUMENT', /texts\[1\] must be a string/],
      [() => m.embed('a\u0000b'), 'INVALID_ARGUMENT', /NUL/],
      [() => m.embed('bad \u0007 bell'), 'INVALID_ARGUMENT', /control/],
      [() => m.embed('word '.repeat(40)), 'INVALID_ARGUMENT', /16/],
      [() => m.embed('hello', { pooling: 'rank' }), 'INVALID_ARGUMENT', /pooling/],
      [() => m.embed('hello', { normalize: 'yes' }), 'INVALID_ARGUMENT', /normalize/],
      [() => m.embed(new Array(3000).fill('a')), 'INVALID_ARGUMENT', /2048/],
      [() => m.rerank('q', ['d']), 'UNSUPPORTED', /classification head/],
      [() => m.rerank(1, ['d']), 'INVALID_ARGUMENT', /query must be a string/],
    ];
    for (const [call, code, words] of cases) {
      const e = await h.rejection(call());
      assert.equal(e.code, code, `${call}: ${e.message}`);
      assert.match(e.message, words, `${call}`);
    }
    // Lone surrogates (invalid UTF-16) arrive as U+FFFD from Node-API: embedded, not a crash.
    const lone = await m.embed('x\ud800y');
    assert.equal(lone.vectors.length, 1);
    const cut = await m.embed('word '.repeat(40), { truncate: 'end' });
    assert.equal(cut.truncated, 1);
    assert.equal(cut.tokens[0], 16);
    m.pause();
    const t = await h.rejection(m.embed('hello', { deadlineMs: 50 }));
    assert.equal(t.code, 'TIMEOUT');
    m.resume();
  } finally {
    await m.release();
  }
  const released = await h.rejection(m.embed('hello'));
  assert.equal(released.code, 'SHUT_DOWN');
  const gen = await edgellm.load(h.stories);
  try {
    const e = await h.rejection(gen.embed('hello'));
    assert.equal(e.code, 'UNSUPPORTED');
    assert.equal(gen.info().role, 'generate');
  } finally {
    await gen.release();
  }
});
