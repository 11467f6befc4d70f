// The vocabulary as a grammar sees it: the bytes each token adds to the output text, which
// tokens end generation, and a trie of all byte strings for the mask precomputation.
//
// A token's bytes are what the streaming detokenizer emits for it: Tokenizer::token_to_piece
// without rendering control tokens, so "<|im_start|>" has no bytes and only a grammar's token
// element (`<[id]>`, `!<[id]>`) can allow it; "▁Hello" is " Hello"; "<0xE4>" is the byte E4.
// End-of-generation tokens are never matched by the grammar's elements; the matcher allows them
// exactly where the grammar may end.
//
// The trie holds every token with at least one byte that does not end generation. Nodes are
// stored in preorder, so a subtree is a contiguous range and a walk that rejects a prefix skips
// all its extensions in one step; tokens are stored in the same order (TrieNode::tokens_begin).
//
// Immutable after construction; shared by every grammar compiled for the model (thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm {
class Tokenizer;
}

namespace edgellm::grammar {

struct TrieNode {
  uint8_t byte = 0;
  uint16_t depth = 0;        // 1 for the first byte of a token
  uint32_t subtree_end = 0;  // index of the first node after this node's subtree
  uint32_t tokens_begin = 0; // this node's tokens are trie_tokens[tokens_begin, next node's tokens_begin)
};

class TokenVocabulary {
 public:
  // From a model's tokenizer (token_to_piece(id, false), is_eog).
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const Tokenizer& tokenizer);
  // From explicit byte strings (tests, benchmarks): pieces[id] is token id's output bytes.
  // `texts` (optional): the written form of tokens without output bytes ("<|im_end|>"), which
  // GBNF's `<text>` token syntax may name.
  static std::shared_ptr<const TokenVocabulary> from_pieces(
      const std::vector<std::string>& pieces, const std::vector<int32_t>& eog_ids,
      const std::vector<std::pair<std::string, int32_t>>& texts = {});

  // The one token `text` names (GBNF `<text>`): a token without output bytes written that way
  // ("<|im_end|>", "<think>" when it is a control token), or else the single token whose bytes
  // are exactly `text`. nullopt when none or several match.
  std::optional<int32_t> find_token(std::string_view text) const;

  int32_t size() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view bytes(int32_t id) const {
    return std::string_view(data_).substr(offsets_[static_cast<size_t>(id)],
                                          offsets_[static_cast<size_t>(id) + 1] - offsets_[static_cast<size_t>(id)]);
  }
  bool is_eog(int32_t id) const { return eog_[static_cast<size_t>(id)] != 0; }
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  // Preorder trie nodes (no root node: depth-1 nodes are the roots of the forest) and the
  // tokens in node order; node_tokens_end(i) = nodes[i + 1].tokens_begin (a sentinel node ends it).
  const std::vector<TrieNode>& trie() const { return nodes_; }
  const std::vector<int32_t>& trie_tokens() const { return trie_tokens_; }
  size_t trie_size() const { return nodes_.size() - 1; }  // without the sentinel
  // Longest token in bytes.
  size_t max_token_bytes() const { return max_len_; }
  // Bytes of memory held (pieces, trie, token lists).
  size_t memory_bytes() const;

 private:
  TokenVocabulary() = default;
  void build(const std::vector<std::string>& pieces, const std::vector<int32_t>& eog_ids);

  std::string data_;
  std::vector<uint32_t> offsets_;
  std::vector<uint8_t> eog_;
  std::vector<int32_t> eog_ids_;
  std::vector<TrieNode> nodes_;
  std::vector<int32_t> trie_tokens_;
  size_t max_len_ = 0;
  std::vector<std::pair<std::string, int32_t>> texts_;  // sorted by text
};

}  // namespace edgellm::grammar
