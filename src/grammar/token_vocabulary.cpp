#include "grammar/token_vocabulary.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::grammar {

namespace {
// Trie depth is stored in 16 bits; longer pieces (none in real vocabularies) are left out of the
// trie, so the grammar never allows them through their bytes.
constexpr size_t kMaxTrieDepth = 0xFFFF;
}  // namespace

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer) {
  std::vector<std::string> pieces(static_cast<size_t>(tokenizer.n_vocab()));
  std::vector<std::pair<std::string, int32_t>> texts;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    pieces[static_cast<size_t>(id)] = tokenizer.token_to_piece(id, false);
    if (pieces[static_cast<size_t>(id)].empty()) texts.emplace_back(tokenizer.token_text(id), id);
  }
  return from_pieces(pieces, tokenizer.eog_ids(), texts);
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_pieces(
    const std::vector<std::string>& pieces, const std::vector<int32_t>& eog_ids,
    const std::vector<std::pair<std::string, int32_t>>& texts) {
  require(!pieces.empty(), ErrorCode::kInvalidArgument, "grammar vocabulary: no tokens");
  require(pieces.size() < 0x7FFFFFFF, ErrorCode::kInvalidArgument, "grammar vocabulary: too many tokens");
  std::shared_ptr<TokenVocabulary> v(new TokenVocabulary());
  v->build(pieces, eog_ids);
  for (const auto& [text, id] : texts) {
    if (id >= 0 && id < v->size() && !text.empty()) v->texts_.emplace_back(text, id);
  }
  std::sort(v->texts_.begin(), v->texts_.end());
  return v;
}

std::optional<int32_t> TokenVocabulary::find_token(std::string_view text) const {
  const auto it = std::lower_bound(texts_.begin(), texts_.end(), text,
                                   [](const std::pair<std::string, int32_t>& e, std::string_view t) { return e.first < t; });
  if (it != texts_.end() && it->first == text) {
    const auto next = it + 1;
    if (next != texts_.end() && next->first == text) return std::nullopt;  // ambiguous
    return it->second;
  }
  // Follow the bytes down the trie; the tokens of the node reached are those with exactly them.
  size_t i = 0;
  for (size_t d = 0; d < text.size(); ++d) {
    const auto b = static_cast<uint8_t>(text[d]);
    // Siblings at depth d + 1 under the current node: scan them, skipping subtrees.
    while (i < trie_size() && nodes_[i].depth == d + 1 && nodes_[i].byte != b) i = nodes_[i].subtree_end;
    if (i >= trie_size() || nodes_[i].depth != d + 1 || nodes_[i].byte != b) return std::nullopt;
    if (d + 1 < text.size()) ++i;  // to the first child
  }
  if (text.empty() || i >= trie_size()) return std::nullopt;
  const uint32_t begin = nodes_[i].tokens_begin, end = nodes_[i + 1].tokens_begin;
  if (end - begin != 1) return std::nullopt;
  return trie_tokens_[begin];
}

void TokenVocabulary::build(const std::vector<std::string>& pieces, const std::vector<int32_t>& eog_ids) {
  size_t total = 0;
  for (const std::string& p : pieces) total += p.size();
  require(total < 0xFFFFFFFFu, ErrorCode::kInvalidArgument, "grammar vocabulary: token text too large");
  data_.reserve(total);
  offsets_.reserve(pieces.size() + 1);
  offsets_.push_back(0);
  for (const std::string& p : pieces) {
    data_ += p;
    offsets_.push_back(static_cast<uint32_t>(data_.size()));
  }
  eog_.assign(pieces.size(), 0);
  for (int32_t id : eog_ids) {
    if (id >= 0 && static_cast<size_t>(id) < pieces.size() && !eog_[static_cast<size_t>(id)]) {
      eog_[static_cast<size_t>(id)] = 1;
      eog_ids_.push_back(id);
    }
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());

  std::vector<int32_t> order;
  order.reserve(pieces.size());
  for (int32_t id = 0; id < size(); ++id) {
    const size_t n = bytes(id).size();
    if (n == 0 || n > kMaxTrieDepth || is_eog(id)) continue;
    order.push_back(id);
    max_len_ = std::max(max_len_, n);
  }
  // Byte order (char_traits<char> compares as unsigned char); ties by id for a stable layout.
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const int c = bytes(a).compare(bytes(b));
    return c < 0 || (c == 0 && a < b);
  });
  std::vector<uint32_t> path;  // open nodes, one per depth
  std::string_view prev;
  for (const int32_t id : order) {
    const std::string_view b = bytes(id);
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < b.size() && prev[lcp] == b[lcp]) ++lcp;
    while (path.size() > lcp) {
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t k = lcp; k < b.size(); ++k) {
      TrieNode n;
      n.byte = static_cast<uint8_t>(b[k]);
      n.depth = static_cast<uint16_t>(k + 1);
      n.tokens_begin = static_cast<uint32_t>(trie_tokens_.size());
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    trie_tokens_.push_back(id);
    prev = b;
  }
  while (!path.empty()) {
    nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
    path.pop_back();
  }
  TrieNode sentinel;
  sentinel.tokens_begin = static_cast<uint32_t>(trie_tokens_.size());
  sentinel.subtree_end = static_cast<uint32_t>(nodes_.size() + 1);
  nodes_.push_back(sentinel);
}

size_t TokenVocabulary::memory_bytes() const {
  size_t texts = 0;
  for (const auto& t : texts_) texts += t.first.capacity() + sizeof(t);
  return texts + data_.capacity() + offsets_.capacity() * sizeof(uint32_t) + eog_.capacity() +
         eog_ids_.capacity() * sizeof(int32_t) + nodes_.capacity() * sizeof(TrieNode) +
         trie_tokens_.capacity() * sizeof(int32_t);
}

}  // namespace edgellm::grammar
