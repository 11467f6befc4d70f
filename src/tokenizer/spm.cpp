// SentencePiece-style BPE (GGUF tokenizer.ggml.model = "llama"): start from single UTF-8
// characters and repeatedly merge the adjacent pair whose concatenation is the vocab token with
// the highest score (ties: leftmost pair), using a priority queue so long inputs stay
// O(n log n). Symbols that are not tokens at the end fall back to byte tokens <0xNN>.
#include <queue>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm {
namespace {

struct SpmSymbol {
  int prev;
  int next;
  size_t start;  // byte offset in the escaped text
  size_t n;      // byte length; 0 once merged into its left neighbour
};

struct SpmBigram {
  float score;
  int left;
  int right;
  size_t size;  // byte length of the pair when queued (stale entries are skipped)
};

struct SpmBigramOrder {
  // std::priority_queue pops the *largest*: highest score first, then the leftmost pair.
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

int32_t Tokenizer::spm_byte_token(uint8_t byte) const {
  if (byte_tokens_[byte] >= 0) return byte_tokens_[byte];
  const int32_t single = lookup(std::string_view(reinterpret_cast<const char*>(&byte), 1));
  return single >= 0 ? single : data_.unk;
}

void Tokenizer::encode_spm(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<SpmSymbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    bool valid = false;
    unicode::decode_one(text, pos, &len, &valid);  // malformed bytes: one symbol per subpart
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, pos + len == text.size() ? -1 : index + 1, pos, len});
    pos += len;
  }

  std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmBigramOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view pair = text.substr(symbols[left].start, symbols[left].n + symbols[right].n);
    const int32_t id = lookup(pair);
    if (id < 0) return;
    queue.push({data_.scores[static_cast<size_t>(id)], left, right, pair.size()});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    const SpmBigram top = queue.top();
    queue.pop();
    SpmSymbol& left = symbols[top.left];
    SpmSymbol& right = symbols[top.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != top.size) continue;  // stale
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    try_add(left.prev, top.left);
    try_add(top.left, left.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].start, symbols[i].n);
    const int32_t id = lookup(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t byte_id = spm_byte_token(static_cast<uint8_t>(c));
      if (byte_id >= 0) out.push_back(byte_id);  // no byte token and no unk: nothing can encode it
    }
  }
}

}  // namespace edgellm
