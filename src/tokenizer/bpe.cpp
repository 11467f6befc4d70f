// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"): the text is split into words by the
// pre-tokenizer, every byte of a word becomes one character of GPT-2's printable byte alphabet,
// then the adjacent pair with the best (lowest) merge rank is merged until no ranked pair is
// left. Merges are looked up by (left id, right id), so a merge costs one hash probe.
#include <array>
#include <queue>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm {
namespace {

// GPT-2's byte -> code point map: printable Latin-1 bytes map to themselves, the other 68
// bytes (controls, space, DEL, NBSP, soft hyphen...) to U+0100.. in byte order.
struct ByteAlphabet {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // indexed by code point < 0x144; -1 if not in the alphabet
  ByteAlphabet() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? b : next++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

struct Symbol {
  int32_t id;  // -1: this byte's alphabet character is not in the vocab
  int prev;
  int next;
  bool alive;
};

struct Bigram {
  int32_t rank;
  int left;
  int right;
  int32_t left_id;
  int32_t right_id;
};

struct BigramOrder {
  // Pops the lowest rank first, then the leftmost pair.
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

std::string bpe_unmap_bytes(std::string_view token_text) {
  const ByteAlphabet& a = alphabet();
  std::string out;
  out.reserve(token_text.size());
  for (size_t pos = 0; pos < token_text.size();) {
    size_t len = 0;
    bool valid = false;
    const uint32_t cp = unicode::decode_one(token_text, pos, &len, &valid);
    if (valid && cp < a.to_byte.size() && a.to_byte[cp] >= 0) {
      out.push_back(static_cast<char>(a.to_byte[cp]));
    } else {
      out.append(token_text.substr(pos, len));  // outside the alphabet: keep the text as is
    }
    pos += len;
  }
  return out;
}

void Tokenizer::build_bpe_tables() {
  const ByteAlphabet& a = alphabet();
  for (int b = 0; b < 256; ++b) byte_symbol_ids_[b] = lookup(unicode::to_utf8(a.to_cp[b]));
  merges_.reserve(data_.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < data_.merges.size(); ++rank) {
    const std::string& m = data_.merges[rank];
    const size_t space = m.find(' ', 1);
    require(space != std::string::npos && space + 1 < m.size(), ErrorCode::kInvalidFile,
            "tokenizer merge #" + std::to_string(rank) + " ('" + m.substr(0, 60) + "') is not of the form 'left right'");
    const std::string_view left(m.data(), space);
    const std::string_view right(m.data() + space + 1, m.size() - space - 1);
    const int32_t lid = lookup(left);
    const int32_t rid = lookup(right);
    if (lid < 0 || rid < 0) continue;  // can never fire: its parts are not tokens
    joined.assign(left);
    joined.append(right);
    const int32_t result = lookup(joined);
    if (result < 0) continue;  // merging would leave a non-token symbol; skip it
    merges_.insert_if_absent(lid, rid, {static_cast<int32_t>(rank), result});  // first listed = best
  }
  // The strings served only to build the table: 151k of them for Qwen (~5 MB).
  std::vector<std::string>().swap(data_.merges);
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  const unicode::DecodedText decoded = unicode::decode(text);
  const std::vector<size_t> bounds = pretokenize(pre_, decoded.cps);
  for (size_t w = 0; w + 1 < bounds.size(); ++w) {
    const size_t begin = decoded.offsets[bounds[w]];
    const size_t end = decoded.offsets[bounds[w + 1]];
    bpe_word(text.substr(begin, end - begin), out);
  }
}

void Tokenizer::bpe_word(std::string_view word, std::vector<int32_t>& out) const {
  if (data_.ignore_merges) {
    std::string mapped;
    for (char c : word) unicode::append_utf8(mapped, alphabet().to_cp[static_cast<uint8_t>(c)]);
    const int32_t id = lookup(mapped);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    symbols[i] = {byte_symbol_ids_[static_cast<uint8_t>(word[i])], static_cast<int>(i) - 1,
                  i + 1 == word.size() ? -1 : static_cast<int>(i) + 1, true};
  }
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t lid = symbols[left].id;
    const int32_t rid = symbols[right].id;
    if (lid < 0 || rid < 0) return;
    const MergeTable::Merge* m = merges_.find(lid, rid);
    if (m == nullptr) return;
    queue.push({m->rank, left, right, lid, rid});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));
  while (!queue.empty()) {
    const Bigram top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    // Stale: one side was merged away or changed since this pair was queued.
    if (!left.alive || !right.alive || left.next != top.right || left.id != top.left_id ||
        right.id != top.right_id) {
      continue;
    }
    left.id = merges_.find(top.left_id, top.right_id)->result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    try_add(left.prev, top.left);
    try_add(top.left, left.next);
  }
  for (int i = 0; i != -1 && !symbols.empty(); i = symbols[i].next) {
    const int32_t id = symbols[i].id >= 0 ? symbols[i].id : data_.unk;
    if (id >= 0) out.push_back(id);  // a byte missing from the alphabet and no unk: dropped
  }
}

}  // namespace edgellm
