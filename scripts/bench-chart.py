#!/usr/bin/env python3
"""Charts and the summary table of docs/benchmarks.md, from the benchmarks' JSON.

  bench-chart.py --bench A.json [B.json ...] [--llamacpp L.jsonl ...] [--ttft T.json ...]
                 [--rss-llamacpp R.json] -o chart.png [--table table.md]

--bench     `edgellm bench -o json` output (records with model_filename, n_prompt, n_gen, avg_ts,
            peak_rss_bytes, ...). Several files: every record is used; records of one model and
            test from several files (rounds) are averaged.
--llamacpp  llama-bench `-o jsonl` (or `-o json`) output of the same files.
--ttft      `edgellm bench --ttft -o json` output: the warm rows' TTFT per model and prompt length.
--rss-llamacpp  {"<model file name>": peak RSS bytes} (scripts/bench-summary.sh measures llama-bench
            with getrusage).
-o          a PNG: per model, pp (prompt) and tg (generation) tokens/s, ours beside llama.cpp's.
--table     a Markdown table: per model, pp / tg of both, their ratio, TTFT (ours measured by
            `bench --ttft`; llama.cpp's is its pp time, llama-bench having no TTFT test) and peak RSS.

Drawn with matplotlib from Debian (python3-matplotlib): when it is missing the script re-runs
itself with Debian's /usr/bin/python3 and, as root, installs the package (apt-get), so a fresh
machine needs nothing by hand.
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    debian = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(debian) and os.path.exists(debian):
        probe = subprocess.run([debian, "-c", "import matplotlib"], capture_output=True)
        if probe.returncode == 0:
            os.execv(debian, [debian] + sys.argv)
    if os.geteuid() != 0 and not shutil.which("sudo"):
        sys.exit("bench-chart: python3-matplotlib is missing (apt-get install python3-matplotlib)")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print("bench-chart: installing python3-matplotlib (Debian)", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=False, env=env)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3-matplotlib"],
                   check=True, env=env)
    if os.path.realpath(sys.executable) != os.path.realpath(debian):
        os.execv(debian, [debian] + sys.argv)


def load_records(paths, jsonl_ok=True):
    out = []
    for p in paths or []:
        with open(p) as f:
            text = f.read().strip()
        if not text:
            continue
        if text[0] == "[":
            out += json.loads(text)
        elif jsonl_ok:
            out += [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            out.append(json.loads(text))
    return out


def base(path):
    return os.path.basename(path or "?")


def test_name(r):
    if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0:
        return f"pp{r['n_prompt']}"
    if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0:
        return f"tg{r['n_gen']}"
    return f"pp{r.get('n_prompt', 0)}+tg{r.get('n_gen', 0)}"


def by_model_test(records):
    """{model file: {test: mean tok/s over the records (rounds)}} in first-seen model order."""
    acc = collections.OrderedDict()
    for r in records:
        if r.get("n_depth", 0):
            continue
        acc.setdefault(base(r.get("model_filename")), collections.defaultdict(list))[test_name(r)].append(r["avg_ts"])
    return collections.OrderedDict((m, {t: statistics.mean(v) for t, v in tests.items()}) for m, tests in acc.items())


def peak_rss(records):
    out = {}
    for r in records:
        rss = r.get("peak_rss_bytes")
        if rss:
            out[base(r.get("model_filename"))] = max(out.get(base(r.get("model_filename")), 0), rss)
    return out


def ttft_ms(records):
    """{model file: (prompt tokens, warm TTFT ms)} of the longest warm prompt <= 512 tokens."""
    out = {}
    for r in records:
        if r.get("scenario") != "warm":  # not cold, not with a system prompt
            continue
        name, n, ms = base(r.get("model_filename")), r.get("prompt_tokens"), r.get("median_ttft_ms")
        if n is None or ms is None or n > 512:
            continue
        if name not in out or n > out[name][0]:
            out[name] = (n, ms)
    return out


def fmt(x, spec="{:.1f}"):
    return "-" if x is None else spec.format(x)


def write_table(path, ours, theirs, ttft, rss_ours, rss_theirs, pp, tg):
    lines = [f"| model | {pp} EdgeLLM | {pp} llama.cpp | x | {tg} EdgeLLM | {tg} llama.cpp | x | "
             f"TTFT EdgeLLM (ms, warm) | TTFT llama.cpp (ms, its {pp} time) | "
             f"peak RSS EdgeLLM (MiB) | peak RSS llama.cpp (MiB) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    pp_tokens = int(pp[2:]) if pp[2:].isdigit() else None
    for m, tests in ours.items():
        t = theirs.get(m, {})
        row = [m]
        for test in (pp, tg):
            a, b = tests.get(test), t.get(test)
            row += [fmt(a), fmt(b), fmt(a / b if a and b else None, "{:.2f}")]
        n_ms = ttft.get(m)
        row.append(f"{n_ms[1]:.1f} ({n_ms[0]} tokens)" if n_ms else "-")
        # llama-bench has no TTFT test: its prefill of the same prompt length (random token ids,
        # so no tokenizing; the first token's sampling not included) is the closest it measures.
        row.append(fmt(1000.0 * pp_tokens / t[pp] if pp_tokens and t.get(pp) else None))
        row.append(fmt(rss_ours.get(m) / 2**20 if rss_ours.get(m) else None))
        row.append(fmt(rss_theirs.get(m) / 2**20 if rss_theirs.get(m) else None))
        lines.append("| " + " | ".join(row) + " |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def draw(path, ours, theirs, pp, tg, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(ours)
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(models) + 4), 4.5))
    for ax, test in zip(axes, (pp, tg)):
        xs = range(len(models))
        width = 0.38 if theirs else 0.6
        a = [ours[m].get(test, 0) for m in models]
        bars = ax.bar([x - (width / 2 if theirs else 0) for x in xs], a, width, label="EdgeLLM", color="#2b7bba")
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
        if theirs:
            b = [theirs.get(m, {}).get(test, 0) for m in models]
            bars = ax.bar([x + width / 2 for x in xs], b, width, label="llama.cpp", color="#f0a030")
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([m.replace(".gguf", "") for m in models], rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{test}: {'prompt processing' if test.startswith('pp') else 'generation'} (tokens/s)")
        ax.set_ylabel("tokens/s (higher is better)")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"bench-chart: wrote {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", nargs="+", required=True)
    ap.add_argument("--llamacpp", nargs="*")
    ap.add_argument("--ttft", nargs="*")
    ap.add_argument("--rss-llamacpp")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--table")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    ensure_matplotlib()

    mine = load_records(args.bench)
    ours = by_model_test(mine)
    if not ours:
        sys.exit("bench-chart: no records in " + " ".join(args.bench))
    theirs = by_model_test(load_records(args.llamacpp))
    tests = collections.Counter(t for v in ours.values() for t in v)
    pp = next((t for t, _ in tests.most_common() if t.startswith("pp")), "pp512")
    tg = next((t for t, _ in tests.most_common() if t.startswith("tg")), "tg128")
    title = args.title
    draw(args.output, ours, theirs, pp, tg, title)
    if args.table:
        rss_theirs = {}
        if args.rss_llamacpp:
            with open(args.rss_llamacpp) as f:
                rss_theirs = json.load(f)
        write_table(args.table, ours, theirs, ttft_ms(load_records(args.ttft)), peak_rss(mine), rss_theirs, pp, tg)
        print(f"bench-chart: wrote {args.table}", file=sys.stderr)


if __name__ == "__main__":
    main()
