#!/usr/bin/python3
"""Reference scores for `edgellm eval`'s metrics: writes tests/eval/data/metric-golden.json.

The build never runs this script; its output is committed and tests/eval/test_metrics_golden.cpp
compares the C++ metrics (src/tools/eval/) with it. Re-run it (same seed, same output) with

    scripts/install-deps.sh --eval-tools          # Debian's python3-nltk
    /usr/bin/python3 scripts/eval-metric-reference.py > tests/eval/data/metric-golden.json

What it computes, independently of the C++ code:
  - 240 random sentence pairs (seed 41): English (with capitals, digits, punctuation, accented
    words, articles), Chinese, mixed Chinese/English, a few Japanese and Korean; hypotheses are
    random edits of a reference (drop / insert / substitute / swap), some identical, some
    unrelated, some empty or one token long; 1-3 references;
  - tokens of the three rules of src/tools/eval/text_tokens.h, written again here from their
    definitions (rouge-score's tokenize.py: lower(), [^a-z0-9]+ -> space, split; the CJK
    extension; the BLEU word / punctuation rule from unicodedata categories; SQuAD v1.1's
    normalize_answer with MLQA's punctuation and mixed segmentation);
  - ROUGE-1 / 2 / L (precision, recall, F) by a second implementation of rouge-score's
    rouge_scorer.py (Debian has no python3-rouge-score), checked first against rouge-score's own
    published test values (rouge_scorer_test.py) so that the reference is itself right;
  - BLEU by NLTK itself (nltk.translate.bleu_score.corpus_bleu, Debian python3-nltk 3.8) with
    SmoothingFunction().method0..method3: every pair as a one-segment corpus (sentence_bleu),
    the whole set and consecutive blocks of 10 pairs as corpora;
  - exact match and F1 as SQuAD v1.1's evaluate script computes them on those tokens.
"""
import collections
import json
import math
import random
import re
import string
import sys
import unicodedata
import warnings

import nltk
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

SEED = 41
N_PAIRS = 240

# --------------------------------------------------------------------------- tokenisation

CJK_RANGES = [(0x1100, 0x11FF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF),
              (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F),
              (0x30000, 0x3134F)]


def is_cjk(ch):
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def rouge_tokens(text):
    """rouge-score's tokenize (no stemmer) with each CJK character a token of its own."""
    out, word = [], ""
    for ch in text.lower():
        if re.fullmatch(r"[a-z0-9]", ch):
            word += ch
            continue
        if word:
            out.append(word)
            word = ""
        if is_cjk(ch):
            out.append(ch)
    if word:
        out.append(word)
    return out


def rouge_score_tokenize(text):
    """rouge-score's tokenize.py exactly (for text without CJK): the check of rouge_tokens."""
    text = re.sub(r"[^a-z0-9]+", " ", text.lower())
    return [t for t in re.split(r"\s+", text) if re.match(r"^[a-z0-9]+$", t)]


def bleu_tokens(text):
    out, word = [], ""
    for ch in text:
        cat = unicodedata.category(ch)
        # White_Space property: Python's isspace() also counts U+001C..U+001F, which the
        # generator below never produces.
        if ch.isspace():
            if word:
                out.append(word)
                word = ""
        elif cat[0] in "PS" or is_cjk(ch):
            if word:
                out.append(word)
                word = ""
            out.append(ch)
        else:
            word += ch
    if word:
        out.append(word)
    return out


def qa_normalize(s):
    """SQuAD v1.1 normalize_answer; lower() of ASCII only, punctuation as MLQA removes it."""
    s = "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)
    s = "".join(c for c in s if c not in string.punctuation and not unicodedata.category(c).startswith("P"))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def qa_tokens(s):
    out = []
    for word in qa_normalize(s).split(" "):
        cur = ""
        for ch in word:
            if is_cjk(ch):
                if cur:
                    out.append(cur)
                    cur = ""
                out.append(ch)
            else:
                cur += ch
        if cur:
            out.append(cur)
    return out


# --------------------------------------------------------------------------- ROUGE (rouge-score's definitions)

def fmeasure(p, r):
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def ngrams(tokens, n):
    return collections.Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def score_ngrams(target, prediction, n):
    t, p = ngrams(target, n), ngrams(prediction, n)
    overlap = sum(min(c, p[g]) for g, c in t.items())
    precision = overlap / max(sum(p.values()), 1)
    recall = overlap / max(sum(t.values()), 1)
    return [precision, recall, fmeasure(precision, recall)]


def lcs_length(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def score_lcs(target, prediction):
    if not target or not prediction:
        return [0.0, 0.0, 0.0]
    lcs = lcs_length(target, prediction)
    precision, recall = lcs / len(prediction), lcs / len(target)
    return [precision, recall, fmeasure(precision, recall)]


def rouge(references, prediction):
    """score_multi: per type, the reference with the highest F (the first on ties)."""
    pred = rouge_tokens(prediction)
    best = {}
    for ref in references:
        target = rouge_tokens(ref)
        scores = {"rouge1": score_ngrams(target, pred, 1), "rouge2": score_ngrams(target, pred, 2),
                  "rougeL": score_lcs(target, pred)}
        for k, v in scores.items():
            if k not in best or v[2] > best[k][2]:
                best[k] = v
    return best


def check_rouge_against_published():
    """rouge-score's rouge_scorer_test.py (google-research/rouge): score(target, prediction)."""
    def one(target, prediction):
        return rouge([target], prediction)
    cases = [
        (("testing one two", "testing"), "rouge1", (1, 1 / 3, 1 / 2)),
        (("testing one two", ""), "rouge1", (0, 0, 0)),
        (("testing one two", ""), "rouge2", (0, 0, 0)),
        (("testing one two", ""), "rougeL", (0, 0, 0)),
        (("testing one two", "testing one"), "rouge2", (1, 1 / 2, 2 / 3)),
        (("testing one two", "testing one"), "rougeL", (1, 2 / 3, 4 / 5)),
        (("testing one two", "testing two"), "rougeL", (1, 2 / 3, 4 / 5)),
        (("testing one two", "testing one"), "rouge1", (1, 2 / 3, 4 / 5)),
    ]
    for (target, prediction), kind, want in cases:
        got = one(target, prediction)[kind]
        assert all(abs(g - w) < 1e-12 for g, w in zip(got, want)), (target, prediction, kind, got, want)


# --------------------------------------------------------------------------- SQuAD v1.1 EM / F1

def qa_scores(references, prediction):
    pred_norm, pred_tokens = qa_normalize(prediction), qa_tokens(prediction)
    em = max(float(qa_normalize(r) == pred_norm) for r in references)
    best_f1 = 0.0
    for r in references:
        gold = qa_tokens(r)
        common = collections.Counter(pred_tokens) & collections.Counter(gold)
        same = sum(common.values())
        if same == 0:
            f1 = 0.0
        else:
            precision, recall = same / len(pred_tokens), same / len(gold)
            f1 = 2 * precision * recall / (precision + recall)
        best_f1 = max(best_f1, f1)
    return {"exact_match": em, "f1": best_f1}


# --------------------------------------------------------------------------- random pairs

EN_WORDS = ("the a an of to and in is was for on that with as it by at from this be are or his have not "
            "model phone memory token river mountain quickly slowly green quiet summary answer question "
            "engine battery offline device report budget window evening morning garden letter music "
            "student teacher city market bridge cloud ocean forest winter summer bright heavy small "
            "large open closed early late simple careful happy tired ready running reading writing "
            "quantized weights layer context cache thread signal number travel light silver yellow").split()
EN_EXTRA = ["café", "naïve", "Über", "Zürich", "résumé", "İstanbul", "5\u212a", "2024", "3.5", "x86-64",
            "don't", "it's", "U.S.", "e-mail", "GPT-4", "$12", "100%", "C++", "#1", "A/B"]
EN_PUNCT = [",", ".", "!", "?", ";", ":", "\u2014", "\u201c", "\u201d", "(", ")", "'", "\"", "..."]
ZH_CHARS = ("的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里"
            "用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心她本前开但因只从想实日"
            "军者意无力它与长把机十民第公此已工使情明性知全三又关点正业外将两高间由问很最重并物手应战向头文体政美相见"
            "被利什二等产或新己制身果加西斯月话合回特代内信表化老给世位次度门任常先海通教儿原东声提立及比员解水名真论"
            "处走义各入几口认条平系气题活尔更别打女变四神总何电数安少报才结反受目太量再感建务做接必场件计管期市直德资"
            "春风花月夜山水云雨雪江河湖海天地日星光明白红绿青草木林鸟鱼")
ZH_PUNCT = ["，", "。", "！", "？", "：", "；", "“", "”", "（", "）", "、"]
JA_UNITS = list("こんにちはありがとうカタカナテスト日本語")
KO_UNITS = list("안녕하세요감사합니다한국어")


def unit_pool(kind):
    if kind == "en":
        return EN_WORDS * 3 + EN_EXTRA + EN_PUNCT
    if kind == "zh":
        return list(ZH_CHARS) * 2 + ZH_PUNCT
    if kind == "mixed":
        return list(ZH_CHARS) + EN_WORDS + EN_EXTRA[:10] + ZH_PUNCT
    if kind == "ja":
        return JA_UNITS + list(ZH_CHARS[:40]) + ["。", "、"]
    return KO_UNITS + ["한국", "사람", ".", ","]


def join_units(units, kind, rng):
    if kind in ("zh", "ja"):
        return "".join(units)
    out = ""
    for u in units:
        if not out:
            out = u
        elif u in EN_PUNCT[:5] or u in ZH_PUNCT or (kind == "mixed" and (is_cjk(u[0]) or is_cjk(out[-1])) and rng.random() < 0.7):
            out += u
        else:
            out += rng.choice([" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000"]) if rng.random() < 0.1 else " "
            out += u
    return out


def sentence(kind, rng, lo=3, hi=25):
    pool = unit_pool(kind)
    units = [rng.choice(pool) for _ in range(rng.randint(lo, hi))]
    if kind == "en" and units and rng.random() < 0.6:
        units[0] = units[0][:1].upper() + units[0][1:]
    return units


def perturb(units, kind, rng, rate):
    pool = unit_pool(kind)
    out = []
    for u in units:
        r = rng.random()
        if r < rate / 3:
            continue                            # drop
        if r < 2 * rate / 3:
            out.append(rng.choice(pool))        # substitute
            continue
        if kind == "en" and r < 0.8 * rate:
            u = u.upper() if rng.random() < 0.5 else u.capitalize()
        out.append(u)
        if rng.random() < rate / 3:
            out.append(rng.choice(pool))        # insert
    if len(out) > 2 and rng.random() < rate:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]  # swap
    return out


def make_pairs():
    rng = random.Random(SEED)
    kinds = ["en"] * 9 + ["zh"] * 7 + ["mixed"] * 3 + ["ja", "ko"]
    pairs = []
    for i in range(N_PAIRS):
        kind = rng.choice(kinds)
        ref_units = sentence(kind, rng)
        style = i % 12
        if style == 0:
            hyp_units = list(ref_units)                        # identical
        elif style == 1:
            hyp_units = sentence(kind, rng)                    # unrelated
        elif style == 2:
            hyp_units = ref_units[:rng.randint(0, 2)]          # empty or very short
        else:
            hyp_units = perturb(ref_units, kind, rng, rng.uniform(0.05, 0.7))
        refs = [join_units(ref_units, kind, rng)]
        for _ in range(rng.choice([0, 0, 0, 1, 2])):
            refs.append(join_units(perturb(ref_units, kind, rng, rng.uniform(0.1, 0.5)), kind, rng))
        pairs.append({"kind": kind, "references": refs, "hypothesis": join_units(hyp_units, kind, rng)})
    # Short QA-style answers (articles, punctuation, case).
    qa = [(["the Eiffel Tower"], "Eiffel tower."), (["Denver Broncos"], "The Denver Broncos!"),
          (["an apple", "apple pie"], "a pie"), (["北京"], "北京市"), (["长江"], "长江。"),
          (["Saint-Étienne"], "saint étienne"), (["1990s"], "the 1990s"), (["a"], "an"),
          (["The the the"], ""), (["Paris, France"], "paris")]
    for refs, hyp in qa:
        pairs.append({"kind": "qa", "references": refs, "hypothesis": hyp})
    return pairs


# --------------------------------------------------------------------------- main

def bleu_all_methods(list_of_refs, hyps):
    sf = SmoothingFunction()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # method0 warns about zero counts: expected here
        for name in ("method0", "method1", "method2", "method3"):
            out[name] = corpus_bleu(list_of_refs, hyps, smoothing_function=getattr(sf, name))
    return out


def main():
    check_rouge_against_published()
    pairs = make_pairs()
    records = []
    for p in pairs:
        refs, hyp = p["references"], p["hypothesis"]
        if p["kind"] == "en":
            for t in refs + [hyp]:
                assert rouge_tokens(t) == rouge_score_tokenize(t), t
        bt_refs = [bleu_tokens(r) for r in refs]
        bt_hyp = bleu_tokens(hyp)
        records.append({
            "kind": p["kind"],
            "references": refs,
            "hypothesis": hyp,
            "rouge_tokens": {"references": [rouge_tokens(r) for r in refs], "hypothesis": rouge_tokens(hyp)},
            "bleu_tokens": {"references": bt_refs, "hypothesis": bt_hyp},
            "qa_normalized": {"references": [qa_normalize(r) for r in refs], "hypothesis": qa_normalize(hyp)},
            "qa_tokens": {"references": [qa_tokens(r) for r in refs], "hypothesis": qa_tokens(hyp)},
            "rouge": rouge(refs, hyp),
            "sentence_bleu": bleu_all_methods([bt_refs], [bt_hyp]),
            "qa": qa_scores(refs, hyp),
        })
    corpora = []
    ranges = [(0, len(records))] + [(s, min(s + 10, len(records))) for s in range(0, len(records), 10)]
    for start, end in ranges:
        block = records[start:end]
        corpora.append({"start": start, "end": end,
                        "bleu": bleu_all_methods([r["bleu_tokens"]["references"] for r in block],
                                                 [r["bleu_tokens"]["hypothesis"] for r in block])})
    out = {
        "generator": "scripts/eval-metric-reference.py",
        "command": "/usr/bin/python3 scripts/eval-metric-reference.py > tests/eval/data/metric-golden.json",
        "seed": SEED,
        "nltk": nltk.__version__,
        "python": sys.version.split()[0],
        "unicode": unicodedata.unidata_version,
        "pairs": records,
        "corpus_bleu": corpora,
    }
    # One pair (or corpus) per line: reviewable diffs without the size of an indented file.
    w = sys.stdout.write
    w("{\n")
    for k in ("generator", "command", "seed", "nltk", "python", "unicode"):
        w(" %s: %s,\n" % (json.dumps(k), json.dumps(out[k], ensure_ascii=False)))
    for k in ("pairs", "corpus_bleu"):
        w(" %s: [\n" % json.dumps(k))
        items = out[k]
        for i, item in enumerate(items):
            w("  " + json.dumps(item, ensure_ascii=False) + (",\n" if i + 1 < len(items) else "\n"))
        w(" ]" + (",\n" if k == "pairs" else "\n"))
    w("}\n")


if __name__ == "__main__":
    main()
