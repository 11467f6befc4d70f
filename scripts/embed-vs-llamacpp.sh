#!/usr/bin/env bash
# EdgeLLM's embeddings against llama.cpp's on the same GGUF files (docs/embeddings.md,
# "Against llama.cpp"), and the paired throughput benchmark (docs/benchmarks.md, "Embeddings").
# Not a test and not run by CI: it needs the reference build of scripts/build-llamacpp-reference.sh
# (libllama; LLAMACPP_TARGETS=llama) and compiles scripts/llamacpp-embed.c against it.
#
#   scripts/embed-vs-llamacpp.sh compare [BUILD] [LLAMACPP_DIR]   # cosine per text, every pooling
#   scripts/embed-vs-llamacpp.sh bench   [BUILD] [LLAMACPP_DIR]   # texts/s at 16 / 128 / 512 tokens
#   scripts/embed-vs-llamacpp.sh cli     [BUILD] [LLAMACPP_DIR]   # `edgellm embed` vs `llama-embedding`
#
# cli: the two command-line tools on one batch of 32 English sentences (text in: each engine's
# own WordPiece), paired A/B with the order alternating, PAIRS pairs (default 5): whole-process
# wall time (load included) of `edgellm embed -f` vs `llama-embedding -f`, and the compute only,
# REPEATS (default 5) runs of the batch after the load (`edgellm embed --repeats` vs the libllama
# driver, which runs llama-embedding's loop); medians. Each pair's vectors are compared (cosine
# per sentence, both tools' outputs) and the token counts must agree. Needs llama-embedding
# (LLAMACPP_TARGETS="llama-embedding llama"). llama.cpp's OpenMP threads spin between graph
# nodes; on a shared, oversubscribed machine that spinning steals the other thread's core, so the
# llama.cpp runs get OMP_WAIT_POLICY=${LLAMA_OMP_WAIT:-passive} (measured faster here; LLAMA_OMP_WAIT=active to
# compare).
#
# Models: synthetic bge-small-en (CLS pooling, 12 layers) and all-MiniLM-L6 (mean pooling) of
# the real shapes with the real bge vocabulary (ggml-vocab-bert-bge.gguf), Q8_0 and F16, made by
# `edgellm synth`. Both engines get the same token ids (EdgeLLM's WordPiece, which equals
# llama.cpp's on the bge vocab cases) and 2 threads. Environment: EDGELLM_TESTDATA (shared/),
# WORK (default /tmp/embed-vs-llamacpp), PAIRS (bench pairs, default 3), THREADS (2).
set -euo pipefail
MODE=${1:?usage: $0 compare|bench [BUILD] [LLAMACPP_DIR]}
BUILD=$(realpath "${2:-build}")
LLAMA=$(realpath "${3:-../llamacpp-ref}")
TESTDATA=${EDGELLM_TESTDATA:-$(dirname "$0")/../../shared}
WORK=${WORK:-/tmp/embed-vs-llamacpp}
THREADS=${THREADS:-2}
PAIRS=${PAIRS:-3}
EDGELLM="$BUILD/edgellm"
mkdir -p "$WORK"

LIB="$LLAMA/src/build/bin"
[ -f "$LIB/libllama.so" ] || { echo "no $LIB/libllama.so: LLAMACPP_TARGETS=llama scripts/build-llamacpp-reference.sh $LLAMA" >&2; exit 1; }
DRIVER="$WORK/llamacpp-embed"
gcc -O2 -o "$DRIVER" "$(dirname "$0")/llamacpp-embed.c" -I"$LLAMA/src/include" -I"$LLAMA/src/ggml/include" \
  -L"$LIB" -lllama -lm -Wl,-rpath,"$LIB"

VOCAB="$TESTDATA/testdata/vocab/ggml-vocab-bert-bge.gguf"
model() {  # shape type -> path
  local f="$WORK/$1-$2.gguf"
  [ -f "$f" ] || "$EDGELLM" synth --shape "$1" --type "$2" --tokenizer "$VOCAB" -o "$f" -q >&2
  echo "$f"
}

if [ "$MODE" = compare ]; then
  TEXTS=("Hello world"
         "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill."
         "Where did I put the notes from Tuesday's meeting about the budget?"
         "我的笔记在哪里？ 会议记录 budget 2024"
         "Caf\u00e9 d\u00e9j\u00e0 vu: numbers 3.14159 and 2,718 -- punctuation!?"
         "a")
  : > "$WORK/ids.txt"
  for t in "${TEXTS[@]}"; do
    "$EDGELLM" tokenize -m "$(model bge-small-en f16)" --json "$(printf '%b' "$t")" |
      python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))' >> "$WORK/ids.txt"
  done
  printf '%-28s %-8s %-5s %12s %12s\n' model pooling n "worst cos" "mean cos"
  for shape in bge-small-en all-minilm-l6; do
    for type in f16 q8_0; do
      m=$(model "$shape" "$type")
      for pooling in cls mean last none; do
        p=$(case $pooling in none) echo 0;; mean) echo 1;; cls) echo 2;; last) echo 3;; esac)
        "$EDGELLM" embed -m "$m" --token-ids "$WORK/ids.txt" --pooling "$pooling" --embd-output-format raw \
          -t "$THREADS" > "$WORK/ours.txt"
        "$DRIVER" "$m" "$THREADS" 1024 "$p" 2 1 < "$WORK/ids.txt" > "$WORK/theirs.txt" 2> "$WORK/llama.log"
        python3 - "$WORK/ours.txt" "$WORK/theirs.txt" "$shape-$type" "$pooling" <<'PY'
import math, sys
a = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
b = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
assert len(a) == len(b), (len(a), len(b))
cos = []
for x, y in zip(a, b):
    xy = sum(p * q for p, q in zip(x, y)); xx = sum(p * p for p in x); yy = sum(q * q for q in y)
    cos.append(xy / math.sqrt(xx * yy))
print("%-28s %-8s %-5d %12.8f %12.8f" % (sys.argv[3], sys.argv[4], len(cos), min(cos), sum(cos) / len(cos)))
PY
      done
    done
  done
  exit 0
fi

if [ "$MODE" = cli ]; then
  EMBEDDING_BIN="$LIB/llama-embedding"
  [ -x "$EMBEDDING_BIN" ] || { echo "no $EMBEDDING_BIN: LLAMACPP_TARGETS=llama-embedding scripts/build-llamacpp-reference.sh $LLAMA" >&2; exit 1; }
  cat > "$WORK/sentences.txt" <<'TXT'
The train to the airport leaves at 7:40 every weekday morning.
Remember to buy milk, eggs and bread on the way home.
The quarterly budget meeting was moved to Thursday afternoon.
Giant pandas eat bamboo for up to fourteen hours a day.
My passport expires next March, so I need to renew it soon.
The doctor said to take the medicine twice a day after meals.
Our Wi-Fi password is written on the back of the router.
The recipe calls for two cups of flour and a pinch of salt.
Call the landlord about the broken heater before the weekend.
The conference in Berlin starts on the fifth of October.
She prefers tea without sugar and coffee with a little milk.
The project deadline is the end of the month, no exceptions.
Water the tomato plants every evening during the summer.
The museum is closed on Mondays and open late on Fridays.
He parked the car on the third level of the garage, near the elevator.
The invoice number for the new laptop is 2026-0415.
Backups of the photos are stored on the external drive in the drawer.
The kids have swimming lessons on Tuesday and Saturday.
Cancel the gym membership before the annual renewal in June.
The hotel booking confirmation was sent to my work email.
Light travels about three hundred thousand kilometres per second.
The dentist appointment was rescheduled to half past nine.
Please review the draft contract and send your comments by Friday.
The library books are due back on the twenty-second.
Our flight was delayed by two hours because of fog in Amsterdam.
The car needs new tyres and an oil change before the long trip.
Grandma's birthday party is at the restaurant by the river.
The password manager generates a new random password for every site.
Rain is expected all week, so bring an umbrella to the office.
The insurance policy covers water damage but not earthquakes.
A short walk after lunch helps me concentrate in the afternoon.
The team agreed to ship the release candidate next Wednesday.
TXT
  echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
  # The same ids for the compute-only runs: EdgeLLM's WordPiece on the vocabulary every model here
  # carries (the token counts of the two CLIs on the texts are checked equal below).
  : > "$WORK/sentence-ids.txt"
  while IFS= read -r line; do
    "$EDGELLM" tokenize -m "$VOCAB" --json "$line" |
      python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))' >> "$WORK/sentence-ids.txt"
  done < "$WORK/sentences.txt"
  for spec in bge-small-en:q8_0:2 bge-small-en:f16:2 all-minilm-l6:q8_0:1; do  # shape:type:driver pooling (cls 2, mean 1)
    IFS=: read -r shape type pool <<< "$spec"
    m=$(model "$shape" "$type")
    python3 - "$EDGELLM" "$EMBEDDING_BIN" "$DRIVER" "$m" "$WORK" "$THREADS" "$PAIRS" "${REPEATS:-5}" "$pool" \
        "$shape $type" "${LLAMA_OMP_WAIT:-passive}" <<'PY'
import json, math, os, re, statistics, subprocess, sys, time
edgellm, llama, driver, model, work, threads, pairs, repeats, pool, name, omp = sys.argv[1:]
pairs, repeats = int(pairs), int(repeats)
texts, ids = work + "/sentences.txt", work + "/sentence-ids.txt"
n = sum(1 for l in open(texts) if l.strip())
llama_env = dict(os.environ, OMP_WAIT_POLICY=omp)

def timed(cmd, stdin=None, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("failed: %s: %s" % (" ".join(cmd), p.stderr[-2000:]))
    return wall, p.stdout, p.stderr

def array(out, err=""):  # the --embd-output-format array rows (llama-embedding logs around them)
    i = out.find("[[")
    if i < 0:
        sys.exit("no embeddings in the output: %s\n%s" % (out[-500:], err[-2000:]))
    return json.loads(out[i:out.index("]]", i) + 2])

def cosines(a, b):
    return [sum(x * y for x, y in zip(u, v)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v)) for u, v in zip(a, b)]

def seconds_line(err):
    m = re.search(r"seconds (\S+) repeats (\d+) sequences (\d+) tokens (\d+)", err)
    return float(m.group(1)), int(m.group(4))

ours_cli = ["%s" % edgellm, "embed", "-m", model, "-f", texts, "-t", threads, "-b", "2048", "--embd-output-format", "array",
            "--repeats", "1"]
theirs_cli = [llama, "-m", model, "-f", texts, "-t", threads, "-c", "2048", "-b", "2048", "-ub", "2048",
              "--embd-output-format", "array"]
ours_compute = [edgellm, "embed", "-m", model, "--token-ids", ids, "-t", threads, "-b", "2048", "--embd-output-format", "raw",
                "--repeats", str(repeats)]
theirs_compute = [driver, model, threads, "2048", pool, "2", str(repeats)]
rows = {"ours_wall": [], "theirs_wall": [], "ours_req": [], "ours_c": [], "theirs_c": []}
worst = 1.0
for pair in range(pairs):
    def ours():
        w, out, err = timed(ours_cli)
        s, tok = seconds_line(err)
        rows["ours_wall"].append(w); rows["ours_req"].append(s)
        c, _, cerr = timed(ours_compute)
        rows["ours_c"].append(seconds_line(cerr)[0])
        return array(out, err), tok
    def theirs():
        w, out, err = timed(theirs_cli, env=llama_env)
        rows["theirs_wall"].append(w)
        tok = sum(int(t) for t in re.findall(r"batch_decode: n_tokens = (\d+)", err))
        with open(ids) as f:
            _, _, cerr = timed(theirs_compute, stdin=f, env=llama_env)
        rows["theirs_c"].append(seconds_line(cerr)[0])
        return array(out, err), tok
    if pair % 2 == 0:
        (a, ta), (b, tb) = ours(), theirs()
    else:
        (b, tb), (a, ta) = theirs(), ours()
    assert len(a) == len(b) == n, (len(a), len(b), n)
    assert ta == tb, "token counts differ: edgellm %d, llama.cpp %d" % (ta, tb)
    worst = min(worst, min(cosines(a, b)))
    tokens = ta
med = {k: statistics.median(v) for k, v in rows.items()}
print("%-18s %3d texts %4d tokens, %d pairs, worst cosine %.7f (OMP_WAIT_POLICY=%s)" % (name, n, tokens, pairs, worst, omp))
print("  whole process (load + %d texts): edgellm %7.1f ms, llama-embedding %7.1f ms -> %.2fx; edgellm's request alone %.1f ms"
      % (n, med["ours_wall"] * 1e3, med["theirs_wall"] * 1e3, med["theirs_wall"] / med["ours_wall"], med["ours_req"] * 1e3))
eo, et = n * repeats / med["ours_c"], n * repeats / med["theirs_c"]
print("  compute (%d runs after load): edgellm %7.1f texts/s %8.0f tokens/s, llama.cpp %7.1f texts/s %8.0f tokens/s -> %.2fx"
      % (repeats, eo, eo * tokens / n, et, et * tokens / n, eo / et))
PY
  done
  exit 0
fi

[ "$MODE" = bench ] || { echo "unknown mode $MODE" >&2; exit 2; }
# Sequences of L tokens: [CLS], L - 2 ids from the vocabulary's word range, [SEP]; COUNT of them
# so each run embeds ~8k tokens (16-token texts 512 per run, 128-token 64, 512-token 16).
python3 - "$WORK" <<'PY'
import random, sys
random.seed(7)
for L, count in ((16, 512), (128, 64), (512, 16)):
    with open("%s/bench-%d.txt" % (sys.argv[1], L), "w") as f:
        for _ in range(count):
            f.write(" ".join(map(str, [101] + [random.randint(1996, 29611) for _ in range(L - 2)] + [102])) + "\n")
PY
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %6s %5s %14s %14s %8s %11s %11s\n' model tokens pair "edgellm t/s" "llama.cpp t/s" ratio "edgellm MiB" "llama MiB"
for type in q8_0 f16; do
  m=$(model bge-small-en "$type")
  for L in 16 128 512; do
    ids="$WORK/bench-$L.txt"
    n=$(wc -l < "$ids")
    for pair in $(seq 1 "$PAIRS"); do
      # Alternate which engine goes first, so a load change on the machine hits both alike.
      run_ours() { "$EDGELLM" embed -m "$m" --token-ids "$ids" --embd-output-format raw -t "$THREADS" -b 1024 \
                     --repeats 3 2>&1 >/dev/null | grep '^seconds'; }
      run_theirs() { "$DRIVER" "$m" "$THREADS" 1024 2 2 3 < "$ids" 2>&1 >/dev/null | grep '^seconds'; }
      if [ $((pair % 2)) -eq 1 ]; then a=$(run_ours); b=$(run_theirs); else b=$(run_theirs); a=$(run_ours); fi
      python3 - "$a" "$b" "$n" "$type" "$L" "$pair" <<'PY'
import sys
def parse(s):
    f = s.split(); return float(f[1]), int(f[3]), int(f[-1])
(sa, ra, ka), (sb, rb, kb) = parse(sys.argv[1]), parse(sys.argv[2])
n = int(sys.argv[3])
ta, tb = n * ra / sa, n * rb / sb
print("%-22s %6s %5s %14.1f %14.1f %8.3f %11.1f %11.1f" % ("bge-small-en " + sys.argv[4], sys.argv[5], sys.argv[6], ta, tb, ta / tb, ka / 1024, kb / 1024))
PY
    done
  done
done
