// Bounded load test of edgellm serve on loopback (docs/server.md "Load"): CONCURRENCY clients
// each send requests back to back until TOTAL requests were sent or SECONDS passed. Reports
// 200/429 counts, p50/p99 latency of the answered requests (whole response, streamed) and
// throughput (answered requests and completion tokens per second).
//   node loadtest.mjs URL [CONCURRENCY=40] [TOTAL=400] [SECONDS=60] [MAX_TOKENS=64]
const [url, conc = "40", total = "400", seconds = "60", maxTokens = "64"] = process.argv.slice(2);
if (!url) { console.error("usage: node loadtest.mjs URL [CONCURRENCY] [TOTAL] [SECONDS] [MAX_TOKENS]"); process.exit(2); }
const deadline = Date.now() + Number(seconds) * 1000;
let sent = 0, ok = 0, busy = 0, failed = 0, tokens = 0;
const latencies = [];
const body = JSON.stringify({ prompt: "Once upon a time", max_tokens: Number(maxTokens), ignore_eos: true, stream: true,
                              stream_options: { include_usage: true } });
async function client() {
  while (sent < Number(total) && Date.now() < deadline) {
    sent++;
    const t0 = performance.now();
    try {
      const res = await fetch(url + "/v1/completions", { method: "POST", body, headers: { "Content-Type": "application/json" },
                                                          signal: AbortSignal.timeout(30000) });
      const text = await res.text();
      if (res.status === 200) {
        ok++;
        latencies.push(performance.now() - t0);
        const m = text.match(/"completion_tokens": (\d+)/);
        if (m) tokens += Number(m[1]);
      } else if (res.status === 429) {
        busy++;
        await new Promise((r) => setTimeout(r, 20));  // a polite client backs off a little
      } else {
        failed++;
      }
    } catch {
      failed++;
    }
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: Number(conc) }, client));
const wall = (performance.now() - t0) / 1000;
latencies.sort((a, b) => a - b);
const q = (p) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : NaN;
console.log(JSON.stringify({ concurrency: Number(conc), sent, ok, busy_429: busy, failed, wall_s: +wall.toFixed(2),
  p50_ms: +q(0.5).toFixed(1), p99_ms: +q(0.99).toFixed(1), answered_per_s: +(ok / wall).toFixed(1),
  completion_tokens_per_s: +(tokens / wall).toFixed(0) }));
process.exit(failed === 0 ? 0 : 1);
