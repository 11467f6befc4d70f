'use strict';
// Shared by the node --test files: where the models and the CLI are, and small utilities.
const path = require('node:path');
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..', '..');
// $EDGELLM_TESTDATA (the Makefile exports it), else ../shared next to the checkout.
const testdata = process.env.EDGELLM_TESTDATA || path.resolve(root, '..', 'shared');
const model = (name) => path.join(testdata, 'models', name);
const stories = model('stories260K.gguf');
const zhPoems = model('tiny-zh-poems.gguf');
// The CLI of the same build: the independent reference for greedy text.
const cli = process.env.EDGELLM_CLI || path.join(root, 'build', 'edgellm');

// What `edgellm run` prints for a greedy generation (stdout bytes: a pipe gets the text unchanged).
function cliGreedy(modelPath, prompt, maxTokens) {
  return execFileSync(cli, ['run', '-m', modelPath, '-p', prompt, '-n', String(maxTokens), '--temp', '0'], {
    maxBuffer: 1 << 24,
  });
}

// Streams one generation; resolves { pieces, result, afterSettle } where afterSettle counts pieces
// that arrived after the result settled (must stay 0).
async function stream(m, input, options) {
  const pieces = [];
  let settled = false;
  let late = 0;
  const g = m.generate(input, options, (piece) => {
    if (settled) late++;
    pieces.push(piece);
  });
  const result = await g.result;
  settled = true;
  await new Promise((r) => setTimeout(r, 20));  // give a late piece the chance to show up
  return { id: g.id, pieces, result, late };
}

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

function threadCount() {
  return fs.readdirSync('/proc/self/task').length;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

module.exports = { root, testdata, stories, zhPoems, cli, cliGreedy, stream, rejection, threadCount, sleep };
