'use strict';
// pack(): the app writes a model's pack file once, then loads map it instead of repacking. The
// reference for the text is a load that repacks (packDir '') and the CLI on the same file.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const edgellm = require('..');
const h = require('./helpers');

const PROMPT = '床前明月光';
const GREEDY = { temperature: 0, maxTokens: 24 };

async function greedyText(modelPath, options) {
  const m = await edgellm.load(modelPath, options);
  try {
    const { result } = await h.stream(m, PROMPT, GREEDY);
    return { text: result.text, info: m.info() };
  } finally {
    await m.release();
  }
}

// Runs fn({ model, cache }) with tiny-zh-poems quantized to Q4_0 (the CLI) in a fresh temporary
// folder and an empty cache folder beside it; removes them after.
async function withQuantizedPoems(prefix, fn) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    const model = path.join(tmp, 'poems-q4_0.gguf');
    execFileSync(h.cli, ['quantize', h.zhPoems, model, 'Q4_0'], { stdio: 'ignore' });
    const cache = path.join(tmp, 'cache');
    fs.mkdirSync(cache);
    await fn({ model, cache });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

test('pack into a cache folder: loads with packDir map it and generate what repacking does', () =>
  withQuantizedPoems('edgellm-pack-', async ({ model, cache }) => {
    assert.equal(await edgellm.pack(model, { packDir: cache, threads: 2 }), undefined);
    const packFile = path.join(cache, 'poems-q4_0.gguf.x16.pack');
    assert.ok(fs.statSync(packFile).size > 1 << 20, 'the pack file is about the model size');
    assert.deepEqual(fs.readdirSync(cache), ['poems-q4_0.gguf.x16.pack'], 'no temporary file left');

    const mapped = await greedyText(model, { packDir: cache });
    assert.equal(mapped.info.pack_file, `mapped ${packFile}`);
    assert.ok(mapped.info.pack_mapped_tensors > 0);
    assert.equal(mapped.info.repacked_bytes, 0, 'nothing repacked into anonymous memory');
    const repacked = await greedyText(model, { packDir: '' });
    assert.equal(repacked.info.pack_file, 'off');
    assert.ok(repacked.info.repacked_bytes > 0);
    assert.ok(mapped.text.length > 0);
    assert.equal(mapped.text, repacked.text);
    const cliText = execFileSync(h.cli, ['run', '-m', model, '-p', PROMPT, '-n', '24', '--temp', '0']).toString('utf8');
    assert.equal(mapped.text, cliText);

    // Without packDir the load looks beside the model, finds nothing, and repacks.
    const beside = await greedyText(model);
    assert.equal(beside.info.pack_file, `none at ${model}.x16.pack`);
    assert.equal(beside.text, repacked.text);

    // A damaged pack file is refused (not an error): the load repacks and the text is the same.
    const bytes = fs.readFileSync(packFile);
    fs.writeFileSync(packFile, bytes.subarray(0, bytes.length >> 1));
    const damaged = await greedyText(model, { packDir: cache });
    assert.match(damaged.info.pack_file, /^refused: /);
    assert.equal(damaged.text, repacked.text);
  }));

test('on a CPU without the kernels for the layouts (scalar pinned) pack rejects UNSUPPORTED and writes nothing', () =>
  withQuantizedPoems('edgellm-pack-isa-', async ({ model, cache }) => {
    // EDGELLM_ISA is read once per process: a child node with the scalar kernels.
    const script = `require(${JSON.stringify(path.resolve(__dirname, '..'))}).pack(process.argv[1], { packDir: process.argv[2] })
      .then(() => console.log('OK'), (e) => console.log(e.code));`;
    const out = execFileSync(process.execPath, ['-e', script, model, cache],
      { env: { ...process.env, EDGELLM_ISA: 'scalar' } }).toString().trim();
    assert.equal(out, 'UNSUPPORTED');
    assert.deepEqual(fs.readdirSync(cache), []);
  }));

test('pack rejects with codes and writes nothing', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgellm-pack-err-'));
  try {
    assert.equal((await h.rejection(edgellm.pack('/no/such/model.gguf', { packDir: tmp }))).code, 'IO');
    const f32 = await h.rejection(edgellm.pack(h.stories, { packDir: tmp }));  // all F32: nothing to repack
    assert.equal(f32.code, 'INVALID_ARGUMENT');
    assert.match(f32.message, /interleaved/);
    assert.equal((await h.rejection(edgellm.pack(42))).code, 'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.pack(h.stories, { threads: -1 }))).code, 'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.pack(h.stories, { packDir: 7 }))).code, 'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.pack(h.stories, { packDir: '' }))).code, 'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.pack(h.stories, { threads: 300 }))).code, 'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.load(h.stories, { packDir: 7 }))).code, 'INVALID_ARGUMENT');
    assert.deepEqual(fs.readdirSync(tmp), []);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
