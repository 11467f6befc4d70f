'use strict';
// Document Q&A through the addon (openDocQA / DocQA) against an independent driver: the CLI of the
// same build (`edgellm docqa search|ask --json`, a separate process) reading the index file the
// addon wrote, on a synthetic all-MiniLM-L6 encoder (2 layers, Q8_0, the real bge vocabulary;
// `edgellm synth`) and stories260K as the generator. Hits (ids and scores) and the greedy answer
// must be equal; add / update / remove leave no stale chunk; bad input and a corrupt index reject
// with the C ABI's status as `code` and lose no document; a released model rejects SHUT_DOWN.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const edgellm = require('..');
const h = require('./helpers');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgellm-napi-docqa-'));
const vocab = path.join(h.testdata, 'testdata', 'vocab', 'ggml-vocab-bert-bge.gguf');
const minilm = path.join(dir, 'all-minilm-l6.gguf');
execFileSync(h.cli, ['synth', '--shape', 'all-minilm-l6', '--layers', '2', '--type', 'q8_0', '--tokenizer', vocab,
  '-o', minilm, '-q']);
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

const options = { chunkTokens: 24, overlapTokens: 8, topK: 3, maxAnswerTokens: 16 };
const cliOptions = ['--chunk-tokens', '24', '--overlap', '8', '--top-k', '3', '-n', '16', '--json'];
const notes = {
  garden: 'The garden has a violin under the pepper tree. Marble candles light the path.\n\n' +
    'In winter the garden sleeps. Copper lanterns hang by the gate.',
  harbor: 'The harbor holds silver rockets and an old anchor. Ships sail to the island at dawn.\n\n' +
    'A tunnel runs from the harbor to the castle. Its mirror shows the valley.',
  desert: 'The desert is cotton white at noon. Thunder comes from the planet beyond the forest.\n\n' +
    'An orange signal marks the bridge over the dry river.',
};

function cli(args) {
  return JSON.parse(execFileSync(h.cli, ['docqa', ...args, '-m', minilm, ...cliOptions],
    { maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'ignore'] }).toString());
}

test('DocQA: search and ask equal the CLI on the same index file; updates leave no stale chunk', async () => {
  const indexPath = path.join(dir, 'notes.index');
  const emb = await edgellm.load(minilm, { threads: 2 });
  const gen = await edgellm.load(h.stories, { threads: 2, parallel: 1 });
  const qa = await edgellm.openDocQA({ embedder: emb, generator: gen, indexPath, ...options });
  try {
    assert.ok(qa instanceof edgellm.DocQA);
    for (const [key, text] of Object.entries(notes)) {
      const r = await qa.add(key, text);
      assert.equal(r.added, 1);
      assert.ok(r.chunksAdded >= 2, JSON.stringify(r));  // two paragraphs: a chunk never spans both
    }
    assert.equal((await qa.add('garden', notes.garden)).unchanged, 1);
    const old = (await qa.search('x', { topK: 4096 })).hits.filter((x) => x.key === 'harbor').map((x) => x.chunk);
    const harbor2 = 'The harbor was rebuilt with melody and rivers.';
    assert.equal((await qa.add('harbor', harbor2)).updated, 1);
    const rem = await qa.remove('desert');
    assert.equal(rem.removed, 1);
    assert.equal(rem.documents, 2);
    const listing = await qa.list();
    assert.deepEqual(listing.documents.map((d) => d.key), ['garden', 'harbor']);
    const all = (await qa.search('x', { topK: 4096 })).hits;
    assert.equal(all.length, listing.chunks);
    const texts = { garden: notes.garden, harbor: harbor2 };
    for (const c of all) {
      assert.ok(!old.includes(c.chunk), `stale chunk ${c.chunk}`);
      // begin / end are UTF-8 byte offsets into the document's text.
      assert.equal(Buffer.from(texts[c.key]).subarray(c.begin, c.end).toString(), c.text);
    }

    for (const q of ['copper lanterns by the gate', 'Which rockets are in the harbor?', all[0].text]) {
      const got = await qa.search(q);
      const want = cli(['search', q, '--index', indexPath]).hits;
      assert.equal(got.hits.length, 3);
      assert.deepEqual(got.hits.map((x) => [x.chunk, x.key, x.text]), want.map((x) => [x.chunk, x.path, x.text]));
      // The float score as a JS number and as the CLI's shortest double: equal.
      assert.deepEqual(got.hits.map((x) => x.score), want.map((x) => x.score));
      assert.ok(got.timings.searchMs >= 0);
    }
    const question = 'What hangs by the gate?';
    const a = await qa.ask(question);
    const want = cli(['ask', question, '--index', indexPath, '--gen-model', h.stories]);
    assert.equal(a.answer, want.answer);
    assert.equal(a.finishReason, want.finish_reason);
    assert.deepEqual(a.context.map((x) => x.chunk), want.context.map((x) => x.chunk));
    assert.deepEqual(a.citations, want.citations.map((c) => c.chunk));
    for (const id of a.citations) assert.ok(a.context.some((x) => x.chunk === id));
  } finally {
    qa.close();
    await gen.release();
    await emb.release();
  }
});

test('DocQA: bad input and a corrupt index reject with a code and lose nothing; a released model is SHUT_DOWN',
  async () => {
    const indexPath = path.join(dir, 'bad.index');
    const emb = await edgellm.load(minilm, { threads: 2 });
    try {
      assert.equal((await h.rejection(edgellm.openDocQA({ indexPath }))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(edgellm.openDocQA({ embedder: {}, indexPath }))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(edgellm.openDocQA({ embedder: emb }))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(edgellm.openDocQA({ embedder: emb, indexPath, topK: 0 }))).code,
        'INVALID_ARGUMENT');
      assert.throws(() => new edgellm.DocQA(), /openDocQA/);
      const qa = await edgellm.openDocQA({ embedder: emb, indexPath, ...options });
      let e = await h.rejection(qa.search('anything'));
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.match(e.message, /holds no documents/);
      await qa.add('a', notes.garden);
      await qa.add('b', notes.harbor);
      const saved = fs.readFileSync(indexPath);
      // (A JS string is always valid UTF-8 once converted: a lone surrogate becomes U+FFFD.)
      assert.equal((await h.rejection(qa.add('c', '  '))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(qa.add('c\u0001', 'text'))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(qa.add(42, 'text'))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(qa.add('c', 'nul\0inside'))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(qa.remove('missing'))).code, 'NOT_FOUND');
      assert.equal((await h.rejection(qa.ask('what?'))).code, 'UNSUPPORTED');
      assert.equal((await h.rejection(qa.search('q', { topK: 0 }))).code, 'INVALID_ARGUMENT');
      assert.deepEqual(fs.readFileSync(indexPath), saved);  // nothing refused touched the file
      qa.close();
      assert.match((await h.rejection(qa.search('q'))).message, /closed/);

      // A damaged file: refused with the reason, left as it is; its backup opens with document "a".
      const bytes = Buffer.from(saved);
      bytes[bytes.length >> 1] ^= 0x20;
      fs.writeFileSync(indexPath, bytes);
      e = await h.rejection(edgellm.openDocQA({ embedder: emb, indexPath, ...options }));
      assert.equal(e.code, 'INVALID_FILE');
      assert.match(e.message, /corrupt: checksum mismatch/);
      assert.deepEqual(fs.readFileSync(indexPath), bytes);
      const backup = await edgellm.openDocQA({ embedder: emb, indexPath: `${indexPath}.bak`, ...options });
      assert.deepEqual((await backup.list()).documents.map((d) => d.key), ['a']);

      // The embedder released: later calls reject SHUT_DOWN, nothing runs on a freed runtime.
      await emb.release();
      assert.equal((await h.rejection(backup.search('garden'))).code, 'SHUT_DOWN');
      backup.close();
    } finally {
      await emb.release();
    }
  });
