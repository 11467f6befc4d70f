"""A SentencePiece-style BPE vocabulary, as llama GGUF files hold it (tokenizer.ggml.model "llama").

Vocabulary layout (ids): 0 <unk>, 1 <s>, 2 </s>, 3..258 the byte tokens <0x00>..<0xFF> (byte
fallback for any character not in the vocabulary), then every character of the corpus (most
frequent first), then the merged pieces in the order BPE learned them. U+2581 "▁" stands for a
space and starts every word (add_space_prefix: the text gets a leading "▁").

Scores: a piece's score is minus its id, so of two mergeable pairs the one learned first wins;
encode() below merges exactly as EdgeLLM's and llama.cpp's SPM tokenizer do (the adjacent pair
whose concatenation is a token with the highest score, ties leftmost, until none is left).
"""
import collections

SPACE = "\u2581"
UNK, BOS, EOS = 0, 1, 2
N_SPECIAL = 3
N_BYTES = 256
# GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_BYTE = 1, 2, 3, 6


def normalize(text):
    return SPACE + text.replace(" ", SPACE)


def words_of(text):
    """Splits normalized text before every "▁": the units BPE merges within."""
    out, cur = [], ""
    for ch in text:
        if ch == SPACE and cur:
            out.append(cur)
            cur = ""
        cur += ch
    if cur:
        out.append(cur)
    return out


def train(texts, vocab_size):
    counts = collections.Counter()
    chars = collections.Counter()
    for t in texts:
        for w in words_of(normalize(t)):
            counts[w] += 1
    for w, c in counts.items():
        for ch in w:
            chars[ch] += c
    pieces = [p for p, _ in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0]))]
    n_merges = vocab_size - N_SPECIAL - N_BYTES - len(pieces)
    assert n_merges > 0, f"vocab_size {vocab_size} leaves no room for merges ({len(pieces)} characters)"
    # Each distinct word as a list of symbols, with its count.
    words = [(list(w), c) for w, c in counts.items()]
    known = set(pieces)
    for _ in range(n_merges):
        pairs = collections.Counter()
        for syms, c in words:
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        # Most frequent pair; ties broken by the pair's text so the result is deterministic.
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0][0] + kv[0][1], kv[0][0]))
        merged = a + b
        if merged not in known:
            known.add(merged)
            pieces.append(merged)
        for i, (syms, c) in enumerate(words):
            if len(syms) < 2:
                continue
            out, j = [], 0
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[i] = (out, c)
    return Vocab(pieces)


class Vocab:
    def __init__(self, pieces):
        self.tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + list(pieces)
        self.types = [TYPE_UNKNOWN, TYPE_CONTROL, TYPE_CONTROL] + [TYPE_BYTE] * 256 + [TYPE_NORMAL] * len(pieces)
        self.scores = [0.0] * (N_SPECIAL + N_BYTES) + [-float(N_SPECIAL + N_BYTES + i) for i in range(len(pieces))]
        self.index = {p: i for i, p in enumerate(self.tokens) if self.types[i] == TYPE_NORMAL}
        self._cache = {}

    def __len__(self):
        return len(self.tokens)

    def _encode_word(self, word):
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        syms = list(word)
        while True:
            best, best_i = None, -1
            for i in range(len(syms) - 1):
                tid = self.index.get(syms[i] + syms[i + 1])
                if tid is not None and (best is None or self.scores[tid] > self.scores[best]):
                    best, best_i = tid, i
            if best is None:
                break
            syms[best_i:best_i + 2] = [syms[best_i] + syms[best_i + 1]]
        ids = []
        for s in syms:
            tid = self.index.get(s)
            if tid is None:
                ids.extend(N_SPECIAL + b for b in s.encode("utf-8"))
            else:
                ids.append(tid)
        self._cache[word] = ids
        return ids

    def encode(self, text):
        """Token ids of text (no BOS / EOS). Words are merged independently: no piece holds a
        "▁" except at its start, so no merge can cross a word boundary anyway."""
        ids = []
        for w in words_of(normalize(text)):
            ids.extend(self._encode_word(w))
        return ids

    def decode(self, ids, sequence_start=True):
        """sequence_start: the ids begin the text, so the space the leading "▁" stands for is
        dropped (add_space_prefix added it); a continuation keeps it."""
        out = bytearray()
        for i in ids:
            if self.types[i] == TYPE_BYTE:
                out.append(i - N_SPECIAL)
            elif self.types[i] == TYPE_NORMAL:
                out += self.tokens[i].encode("utf-8")
        text = out.decode("utf-8", errors="replace").replace(SPACE, " ")
        return text[1:] if sequence_start and text.startswith(" ") else text
