#!/usr/bin/env bash
# The example report of docs/eval.md: tiny-zh-poems quantized to Q4_0 (edgellm quantize) against
# its F32 original on a task set built at run time from shared/testdata/text/zh-eval.txt (held-out
# poems; the text stays outside the repository, so the report is written with --redact-inputs):
#   title-D    "《TITLE》\n作者：AUTHOR\n"           -> document D's first sentence (up to 。！？),
#              for the poems (an attribution "-- AUTHOR《TITLE》")
#   next-D-K   that header (poems) and the first K sentences of document D -> sentence K+1
# (ROUGE, character level; generation stops at 。！？ or a line end).
# Usage: scripts/eval-zh-poems-example.sh [BUILD_DIR] [OUT_DIR]
#   defaults: build, docs/eval-example; EDGELLM_TESTDATA (default ../shared).
# Writes OUT_DIR/report.json, report.md and report.png (scripts/eval-chart.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/eval-example}
testdata=${EDGELLM_TESTDATA:-$root/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$testdata/testdata/text/zh-eval.txt" "$work/zh-poems-tasks.jsonl" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
cases = []
STOP = ["。", "！", "？", "\n"]
for d, doc in enumerate(text.split("\n%\n")):
    lines = doc.split("\n")
    attribution = [l for l in lines if re.match(r"^\s*--", l)]
    body = [l for l in lines if l.strip() and not re.match(r"^\s*--", l)]
    m = re.match(r"^\s*--\s*([^\s《》]+)《([^》]+)》\s*$", attribution[0]) if attribution else None
    head = "《%s》\n作者：%s\n" % (m.group(2), m.group(1)) if m else ""
    full = "\n".join(body)
    # Sentences end with 。！？ (a poem line holds two or more); each continuation case gives the
    # text up to a sentence end and asks for the next sentence.
    ends = [x.end() for x in re.finditer(r"[。！？]", full)]
    sents = [full[a:b].strip() for a, b in zip([0] + ends[:-1], ends)]
    if not sents:
        continue
    if head:
        cases.append({"id": "title-%d" % d, "prompt": head, "reference": sents[0], "metric": "rouge", "stop": STOP})
    for k in range(1, len(sents)):
        prefix = full[:ends[k - 1]]
        if full[ends[k - 1]:ends[k - 1] + 1] == "\n":
            prefix += "\n"
        if len(head + prefix) > 240:  # the model's context is 512 tokens (one per character, bytes for the rest)
            break
        cases.append({"id": "next-%d-%d" % (d, k), "prompt": head + prefix, "reference": sents[k],
                      "metric": "rouge", "stop": STOP})
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for c in cases:
        f.write(json.dumps(c, ensure_ascii=False) + "\n")
print("tasks: %d cases" % len(cases), file=sys.stderr)
PY

"$build/edgellm" quantize "$testdata/models/tiny-zh-poems.gguf" "$work/tiny-zh-poems-q4_0.gguf" q4_0 >/dev/null
cp "$testdata/models/tiny-zh-poems.gguf" "$work/tiny-zh-poems-f32.gguf"
mkdir -p "$out"
"$build/edgellm" eval -m "$work/tiny-zh-poems-q4_0.gguf" --base "$work/tiny-zh-poems-f32.gguf" \
  -f "$work/zh-poems-tasks.jsonl" -n 48 --parallel 4 --redact-inputs -o "$out"
# Paths in the report: the file names only (the temporary folder means nothing to a reader).
/usr/bin/python3 - "$out/report.json" "$work" <<'PY'
import sys
p, work = sys.argv[1], sys.argv[2]
s = open(p, encoding="utf-8").read().replace(work + "/", "")
open(p, "w", encoding="utf-8").write(s)
PY
sed -i "s|$work/||g" "$out/report.md"
/usr/bin/python3 "$root/scripts/eval-chart.py" "$out/report.json" "$out/report.png"
