// The face-parity table's shared half (tests/parity/cases.json): the cases expanded, the C ABI's
// answers (tests/parity/parity_capi.c, a C program on libedgellm.so alone: the reference every
// other face is compared with) and the comparison rules. Used by the HTTP runner
// (tests/server/node/parity.test.mjs) and the NAPI runner (bindings/napi/test/parity.test.js).
//
// A face's answer to a case is { ok: true, text } or { ok: false, status, message }, where status
// is the C ABI's status name in lower case ("invalid_argument", "context_full"); each runner
// translates its face's errors (HTTP status + OpenAI code, NAPI's Error.code) into that.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
export const table = JSON.parse(fs.readFileSync(path.join(here, "cases.json"), "utf8"));
export const testdata = process.env.EDGELLM_TESTDATA || path.resolve(repo, "../shared");
export const modelPath = (name) => path.join(testdata, "models", name);

// A case's request with the table's shorthands expanded: prompt_hex (bytes, a Buffer: may be
// invalid UTF-8), prompt_repeat [text, n], messages_repeat [message, n].
export function expand(request) {
  const r = { ...request };
  if (r.prompt_hex !== undefined) {
    r.prompt = Buffer.from(r.prompt_hex, "hex");
    delete r.prompt_hex;
  }
  if (r.prompt_repeat !== undefined) {
    r.prompt = r.prompt_repeat[0].repeat(r.prompt_repeat[1]);
    delete r.prompt_repeat;
  }
  if (r.messages_repeat !== undefined) {
    r.messages = Array.from({ length: r.messages_repeat[1] }, () => ({ ...r.messages_repeat[0] }));
    delete r.messages_repeat;
  }
  return r;
}

// Every case with its kind; `face` keeps the ones that face can express ('faces' absent: all).
export function cases(face) {
  const all = [...table.good.map((c) => ({ ...c, good: true })), ...table.bad.map((c) => ({ ...c, good: false }))];
  return all.filter((c) => !c.faces || c.faces.includes(face));
}

const hex = (v) => (v === undefined || v === null ? "" : Buffer.from(v).toString("hex"));
const unhex = (h) => (h === "-" ? Buffer.alloc(0) : Buffer.from(h, "hex"));

// The C runner's input for every case it can run (parity_capi.c's line format). sessionFiles:
// case name -> the session file its import_session reads.
function capiInput(list, sessionFiles) {
  const rt = table.runtime;
  const lines = [`model ${hex(modelPath(table.model))}`, `runtime ${rt.n_ctx} ${rt.n_parallel} ${rt.max_queued}`];
  for (const c of list) {
    lines.push(`case ${hex(c.name)}`);
    if (c.import_session) {
      lines.push(`import_session ${hex(c.import_session.id)} ${hex(sessionFiles[c.name])}`);
      lines.push("end");
      continue;
    }
    const r = expand(c.request);
    if (r.prompt !== undefined) lines.push(`prompt ${hex(r.prompt)}`);
    if (r.messages !== undefined) {
      if (r.messages.length === 0) lines.push("messages_empty");
      for (const m of r.messages) {
        lines.push(`message ${hex(m.role)} ${hex(m.content)}`);
        for (const c of m.tool_calls || []) {
          lines.push(`tool_call ${hex(c.id)} ${hex(c.function.name)} ${hex(c.function.arguments)}`);
        }
        if (m.tool_call_id !== undefined) lines.push(`tool_call_id ${hex(m.tool_call_id)}`);
      }
    }
    if (r.tokens !== undefined) lines.push(`tokens ${r.tokens.length} ${r.tokens.join(" ")}`);
    for (const k of ["max_tokens", "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "frequency_penalty",
                     "presence_penalty", "penalty_last_n", "seed", "n_keep"]) {
      if (r[k] !== undefined) lines.push(`${k} ${r[k]}`);
    }
    for (const s of r.stop || []) lines.push(`stop ${hex(s)}`);
    for (const [id, bias] of r.logit_bias || []) lines.push(`logit_bias ${id} ${bias}`);
    if (r.session_id !== undefined) lines.push(`session_id ${hex(r.session_id)}`);
    if (r.priority !== undefined) lines.push(`priority ${r.priority}`);
    for (const k of ["add_special", "parse_special"]) if (r[k] !== undefined) lines.push(`${k} ${r[k] ? 1 : 0}`);
    lines.push("end");
  }
  return lines.join("\n") + "\n";
}

// Runs the C runner over `list`; returns Map name -> answer.
export function runCapi(binary, list, sessionFiles = {}) {
  const run = spawnSync(binary, [], { input: capiInput(list, sessionFiles), maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`parity_capi exited with ${run.status}: ${run.stderr}`);
  const answers = new Map();
  for (const line of run.stdout.toString().split("\n")) {
    const f = line.split(" ");
    if (f[0] !== "result") continue;
    const status = f[2].toLowerCase();
    const name = unhex(f[1]).toString();
    answers.set(name, status === "ok" && f[5] !== "-"
      ? { ok: true, text: unhex(f[4]).toString(), finish: f[5] }
      : { ok: false, status, message: unhex(f[3]).toString() });
  }
  return answers;
}

// What a face must answer to a bad case: the table's status and message (or prefix / suffix),
// unless the case records how this face differs ('differs': {face: {status, message}}).
export function expected(c, face) {
  const d = c.differs && c.differs[face];
  return d ? { ...c, ...d, differs: true } : c;
}

// Checks one bad case's answer against the table and the C ABI's; returns a list of problems.
export function compareBad(c, face, answer, capi) {
  const e = expected(c, face);
  const problems = [];
  if (answer.ok) return [`answered (${JSON.stringify(answer.text)}) instead of refusing`];
  if (answer.status !== e.status) problems.push(`status ${answer.status}, expected ${e.status}`);
  const m = answer.message;
  if (e.message !== undefined && m !== e.message) problems.push(`message ${JSON.stringify(m)}, expected ${JSON.stringify(e.message)}`);
  if (e.message_prefix !== undefined && !m.startsWith(e.message_prefix)) problems.push(`message ${JSON.stringify(m)} lacks the prefix`);
  if (e.message_suffix !== undefined && !m.endsWith(e.message_suffix)) problems.push(`message ${JSON.stringify(m)} lacks the suffix`);
  // Word for word as the C ABI's, unless the table records that this face differs.
  if (!e.differs && capi && !capi.ok && m !== capi.message) {
    problems.push(`message ${JSON.stringify(m)} differs from the C ABI's ${JSON.stringify(capi.message)}`);
  }
  return problems;
}
