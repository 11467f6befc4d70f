'use strict';
// Shared by the node --test files: where the models and the CLI are, and small utilities.
const path = require('node:path');
const fs = require('node:fs');
const http = require('node:http');
const { execFileSync, spawn } = require('node:child_process');

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

// `edgellm serve` of the same build on a free loopback port, as a cloud endpoint: resolves
// { url, stop() } once it listens (it prints "on http://HOST:PORT").
function startServe(modelPath, extraArgs = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['serve', '-m', modelPath, '--port', '0', '--no-warmup', ...extraArgs],
      { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`edgellm serve did not start: ${err}`)); }, 60000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      err += d;
      const m = /on (http:\/\/[^ ]+:\d+)/.exec(err);
      if (m && timer) {
        clearTimeout(timer);
        const stop = () => new Promise((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGTERM');
        });
        resolve({ url: m[1], stop, child });
      }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`edgellm serve exited ${code}: ${err}`)); });
  });
}

// A recording proxy in front of `target` (a base URL): every request body and response body is
// kept in `exchanges`, so a test checks what reached the other side. Resolves { url, exchanges,
// close() }.
function startRecordingProxy(target) {
  const exchanges = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const upstream = await fetch(target + req.url, { method: req.method, body: req.method === 'GET' ? undefined : body,
          headers: { 'content-type': 'application/json' } });
        const answer = await upstream.text();
        exchanges.push({ path: req.url, request: body, status: upstream.status, response: answer });
        res.writeHead(upstream.status, { 'content-type': 'application/json' });
        res.end(answer);
      } catch (e) {
        exchanges.push({ path: req.url, request: body, status: 502, response: String(e) });
        res.writeHead(502);
        res.end(String(e));
      }
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, exchanges, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

// A router transport over fetch: POSTs the call's body to BASE/v1/chat/completions of the tier's
// base URL (bases: { small, large }) and answers { status, body }, or { error } when there is no
// answer. `calls` (optional) records every call.
function fetchTransport(bases, calls) {
  return async (call) => {
    if (calls) calls.push(call);
    try {
      const res = await fetch(`${bases[call.tier]}/v1/chat/completions`, {
        method: 'POST', body: call.body, headers: { 'content-type': 'application/json' },
      });
      return { status: res.status, body: await res.text() };
    } catch (e) {
      return { error: `${e.message}${e.cause ? `: ${e.cause.code || e.cause.message}` : ''}` };
    }
  };
}

module.exports = {
  root, testdata, stories, zhPoems, cli, cliGreedy, stream, rejection, threadCount, sleep, startServe,
  startRecordingProxy, fetchTransport,
};
