// The web chat page in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): type a prompt, see tokens arrive, press Stop, see the stats; the server
// counts the cancelled generation. Also a phone-sized viewport: nothing wider than the screen.
// A screenshot is written to $EDGELLM_SCREENSHOT_DIR (default: the OS temp dir).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { startServer } from "./server.mjs";

let server;
let browser;
const shots = process.env.EDGELLM_SCREENSHOT_DIR || os.tmpdir();

before(async () => {
  server = await startServer(["-c", "16384", "-np", "1"]);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                    args: ["--no-sandbox", "--disable-gpu"] });
});
after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0);
});

test("stream, stop, stats on a phone-sized screen", async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e));
  // stories260K answers in a fraction of a second; for Stop to have something to stop, the
  // request goes out with ignore_eos (llama-server's field) and max_tokens 16000 (10-30 s of
  // generation), and the server is frozen (SIGSTOP) once the page shows text: the page can then
  // neither fall behind nor reach the end of the stream before Stop, however fast or loaded the
  // machine (a page 500 characters behind a 3,900-token answer made this test flaky).
  // (Wrapping fetch in the page, not page.route: an intercepted response reaches the page only
  // when complete, which would hide the streaming.)
  await page.addInitScript(() => {
    const realFetch = window.fetch;
    window.fetch = (url, init) => {
      if (String(url).endsWith("/v1/chat/completions") && init && init.body) {
        init = { ...init, body: JSON.stringify({ ...JSON.parse(init.body), ignore_eos: true, max_tokens: 16000 }) };
      }
      return realFetch(url, init);
    };
  });
  await page.goto(server.url + "/");
  await page.waitForFunction(() => document.getElementById("model").textContent.length > 0);

  await page.click("summary");
  await page.fill("#system", "You tell short stories.");
  await page.fill("#prompt", "Once upon a time");
  const cancelsBefore = await server.metric('edgellm_requests_by_reason_total{reason="cancelled"}');
  await page.click("#send");

  const answer = page.locator('[data-testid="answer"] .text');
  try {
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="answer"] .text');
      return el && el.textContent.length > 20;
    }, null, { timeout: 30000, polling: 25 });
  } catch (e) {
    const log = await page.evaluate(() => document.getElementById("log").innerHTML).catch((x) => String(x));
    throw new Error(`${e.message}\npage log: ${log}\npage errors: ${pageErrors}\nserver log:\n${server.log().slice(-3000)}`);
  }
  server.signal("SIGSTOP");
  assert.equal(await page.isDisabled("#send"), true);
  const partial = (await answer.textContent()).length;
  // force: Playwright's actionability check waits until the button has not moved for two
  // animation frames, which never happens while the answer above it grows every frame on a
  // fast machine (the click then landed after the whole answer). A user clicks a moving button.
  await page.click("#stop", { force: true });

  const stats = page.locator('[data-testid="stats"]');
  await stats.waitFor({ timeout: 10000 });
  const statsText = await stats.textContent();
  assert.match(statsText, /TTFT \d+ ms/);
  assert.match(statsText, /\d+ tokens/);
  assert.match(statsText, /tok\/s/);
  assert.match(statsText, /stopped/);
  const final = (await answer.textContent()).length;
  assert.ok(final >= partial && final < 16000 * 8, "the answer stopped early");
  assert.equal(await page.isDisabled("#send"), false);
  server.signal("SIGCONT");

  // The server saw the disconnect and cancelled the generation (bounded wait).
  let cancels = cancelsBefore;
  for (let i = 0; i < 100 && cancels === cancelsBefore; i++) {
    await new Promise((r) => setTimeout(r, 50));
    cancels = await server.metric('edgellm_requests_by_reason_total{reason="cancelled"}');
  }
  assert.equal(cancels, cancelsBefore + 1);

  // Phone layout: no horizontal scrolling, the composer stays on screen.
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `page is ${width}px wide on a 390px screen`);
  const box = await page.locator("#prompt").boundingBox();
  assert.ok(box && box.y + box.height <= 844);
  await page.screenshot({ path: path.join(shots, "edgellm-chat-phone.png") });
  assert.deepEqual(pageErrors, []);
  await page.close();
});

test("a second turn carries the history and finishes with usage stats", async () => {
  const page = await browser.newPage({ viewport: { width: 1024, height: 700 } });
  const bodies = [];
  page.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(r.postData())); });
  await page.goto(server.url + "/");
  // Waits for the turn's stats, not for its request: before the second request the page first
  // counts the conversation's tokens (/apply-template, /tokenize) to fit the context.
  for (const [i, prompt] of ["Lily had a cat", "What did the cat do?"].entries()) {
    await page.fill("#prompt", prompt);
    await page.press("#prompt", "Enter");
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stats"]').length === n,
                                i + 1, { timeout: 10000 });
  }
  assert.equal(bodies.length, 2);
  assert.deepEqual(bodies[1].messages.map((m) => m.role), ["user", "assistant", "user"]);
  assert.equal(bodies[1].messages[0].content, "Lily had a cat");
  const last = await page.locator('[data-testid="stats"]').last().textContent();
  assert.match(last, /(stop|length)$/);
  await page.close();
});

// Installed in the page before its own scripts (addInitScript): /v1/chat/completions answers
// with a stream made here, not by the server, so what the page sees does not depend on this
// machine's speed. One "word " token per read, chunk k (from 0) saying decode_ms k (1000 tok/s),
// never ending. delayMs: a wait before each chunk (0: the next chunk is always ready);
// badChunkAt: that read (from 1) gives a malformed chunk. Aborting the fetch errors the stream
// and sets window.__aborted.
function fakeChatStream({ delayMs = 0, badChunkAt = 0 }) {
  const realFetch = window.fetch;
  window.__aborted = false;
  window.fetch = (url, init) => {
    if (!String(url).endsWith("/v1/chat/completions")) return realFetch(url, init);
    const enc = new TextEncoder();
    let i = 0;
    const emit = (controller) => {
      i += 1;
      if (i === badChunkAt) {
        controller.enqueue(enc.encode("data: {not json\n\n"));
        return;
      }
      const chunk = { choices: [{ index: 0, delta: { content: "word " }, finish_reason: null }],
                      x_edgellm: { tokens: 1, decode_ms: i - 1 } };
      controller.enqueue(enc.encode("data: " + JSON.stringify(chunk) + "\n\n"));
    };
    const body = new ReadableStream({
      start(controller) {
        init.signal.addEventListener("abort", () => {
          window.__aborted = true;
          controller.error(new DOMException("aborted", "AbortError"));
        });
      },
      pull(controller) {  // one chunk per read
        if (delayMs > 0) return new Promise((r) => setTimeout(r, delayMs)).then(() => emit(controller));
        emit(controller);
      },
    });
    return Promise.resolve(new Response(body, { headers: { "Content-Type": "text/event-stream" } }));
  };
}

// Tokens faster than the page can draw them: a stream that always has the next chunk ready
// (made in the page, so it does not depend on this machine's speed) is read as one long chain of
// microtasks. The page must still paint the answer and take the Stop click while it lasts; a read
// loop that never yields froze the page until the stream ended (seen as a flaky test above).
test("a stream faster than the page: text shows and Stop works while it arrives", async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e));
  await page.addInitScript(fakeChatStream, {});
  await page.goto(server.url + "/");
  await page.fill("#prompt", "Once upon a time");
  await page.click("#send", { timeout: 10000 });
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="answer"] .text');
    return el && el.textContent.length > 20;
  }, null, { timeout: 10000 });
  await page.click("#stop", { force: true, timeout: 10000 });
  const stats = page.locator('[data-testid="stats"]');
  await stats.waitFor({ timeout: 10000 });
  const statsText = await stats.textContent();
  // decode_ms advances 1 ms per token: the page's rate is the server's, 1000 tok/s.
  assert.match(statsText, /\d+ tokens · 1000\.0 tok\/s · stopped$/);
  const words = (await page.locator('[data-testid="answer"] .text').textContent()).split(" ").length - 1;
  assert.equal(statsText.match(/(\d+) tokens/)[1], String(words));
  assert.deepEqual(pageErrors, []);
  await page.close();
});

// A malformed chunk mid-stream: the page shows the error and closes the connection (aborts the
// fetch), so the server stops generating instead of streaming into a reader nobody reads.
test("a malformed chunk: the error shows and the request is aborted", async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await page.addInitScript(fakeChatStream, { delayMs: 1, badChunkAt: 10 });
  await page.goto(server.url + "/");
  await page.fill("#prompt", "Once upon a time");
  await page.click("#send", { timeout: 10000 });
  const stats = page.locator('[data-testid="stats"]');
  await stats.waitFor({ timeout: 10000 });
  assert.match(await stats.textContent(), /error$/);
  assert.match(await page.locator(".stats.error").textContent(), /^Error: /);
  assert.equal(await page.evaluate(() => window.__aborted), true);
  assert.equal(await page.isDisabled("#send"), false);
  await page.close();
});

// A conversation three times as long as the context (issue 42): the page keeps answering. Before
// each turn it counts the conversation's tokens and drops the oldest turns so that the prompt and
// room for an answer fit, says so in a note, and never sends the dropped turns again. A turn that
// fails is not kept in the conversation; "New chat" starts an empty one.
test("a conversation three times the context keeps answering; failed turns are not kept; new chat", async () => {
  const ctx = 128;
  const small = await startServer(["-c", String(ctx), "-np", "1"]);
  const page = await browser.newPage({ viewport: { width: 1024, height: 700 } });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e));
  const bodies = [];
  page.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(r.postData())); });
  try {
    await page.goto(small.url + "/");
    await page.waitForFunction(() => document.getElementById("model").textContent.length > 0);
    await page.click("summary");
    await page.fill("#max-tokens", "24");
    await page.fill("#temperature", "0");
    const prompts = [];
    const countTokens = async (messages) => {
      const t = await (await fetch(small.url + "/apply-template", { method: "POST", body: JSON.stringify({ messages }) })).json();
      const k = await (await fetch(small.url + "/tokenize", { method: "POST",
                                                             body: JSON.stringify({ content: t.prompt, add_special: true }) })).json();
      return k.tokens.length;
    };
    // Turns until the whole conversation (every turn, as if none were dropped) holds 3x the context.
    let whole = 0;
    for (let turn = 0; whole < 3 * ctx && turn < 40; turn++) {
      const prompt = `Turn ${turn}: tell me about Lily and her cat.`;
      prompts.push(prompt);
      await page.fill("#prompt", prompt);
      await page.press("#prompt", "Enter");
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stats"]').length === n,
                                  turn + 1, { timeout: 30000 });
      const stats = await page.locator('[data-testid="stats"]').last().textContent();
      assert.match(stats, /(stop|length)$/, `turn ${turn} failed: ${stats}`);
      const all = await page.evaluate(() => [...document.querySelectorAll(".msg")].map((d) => ({
        role: d.classList.contains("user") ? "user" : "assistant", content: d.querySelector(".text").textContent })));
      whole = await countTokens(all);
    }
    assert.ok(whole >= 3 * ctx, `the conversation reached ${whole} tokens`);
    // Turns were dropped, the page said so, and the last request fit the context.
    const notes = await page.locator('[data-testid="note"]').allTextContents();
    assert.ok(notes.length > 0 && /no longer fit the model's context \(128 tokens\)/.test(notes[0]), notes.join("\n"));
    assert.ok(await page.locator(".msg.dropped").count() >= 2);
    const last = bodies[bodies.length - 1];
    assert.ok(!last.messages.some((m) => m.content === prompts[0]), "the first turn was sent again");
    assert.ok(await countTokens(last.messages) < ctx);
    assert.equal(last.messages[last.messages.length - 1].content, prompts[prompts.length - 1]);

    // A turn that fails (the server answers 500 once) is shown, then left out of later requests.
    let failNext = true;
    await page.route("**/v1/chat/completions", (route) => {
      if (!failNext) return route.continue();
      failNext = false;
      return route.fulfill({ status: 500, contentType: "application/json",
                             body: JSON.stringify({ error: { message: "injected failure", code: "internal" } }) });
    });
    const statsBefore = await page.locator('[data-testid="stats"]').count();
    await page.fill("#prompt", "This turn fails");
    await page.press("#prompt", "Enter");
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stats"]').length === n, statsBefore + 1);
    assert.match(await page.locator(".stats.error").last().textContent(), /injected failure.*not kept/);
    await page.fill("#prompt", "After the failure");
    await page.press("#prompt", "Enter");
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stats"]').length === n, statsBefore + 2);
    const afterFailure = bodies[bodies.length - 1].messages.map((m) => m.content);
    assert.ok(!afterFailure.includes("This turn fails"), "the failed turn was sent again");
    assert.match(await page.locator('[data-testid="stats"]').last().textContent(), /(stop|length)$/);

    // New chat: an empty page, and the next request carries only its own message.
    await page.click("#new-chat");
    assert.equal(await page.locator(".msg").count(), 0);
    await page.fill("#prompt", "A new story");
    await page.press("#prompt", "Enter");
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stats"]').length === 1);
    assert.deepEqual(bodies[bodies.length - 1].messages, [{ role: "user", content: "A new story" }]);
    await page.screenshot({ path: path.join(shots, "edgellm-chat-long-conversation.png") });
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
    assert.equal(await small.stop(), 0);
  }
});
