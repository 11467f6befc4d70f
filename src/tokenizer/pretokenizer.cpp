#include "tokenizer/pretokenizer.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace edgellm {
namespace {

using unicode::flags;

constexpr uint16_t kLN = unicode::kLetter | unicode::kNumber;

inline bool is_ws(uint32_t cp) { return flags(cp) & unicode::kWhitespace; }
inline bool is_cr_lf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

struct CpRange {
  uint32_t lo, hi;
};

template <size_t N>
bool in_ranges(const CpRange (&ranges)[N], uint32_t cp) {
  for (const CpRange& r : ranges) {
    if (cp >= r.lo && cp <= r.hi) return true;
  }
  return false;
}

// deepseek-llm's explicit letter class (cased letters of Latin, Greek, Cyrillic, Armenian,
// Georgian, Cherokee, Glagolitic, Coptic, Deseret, Osage, ...), from its tokenizer.json regex.
constexpr CpRange kDeepseekLetters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// deepseek-llm's punctuation class: ASCII punctuation/symbols, their full-width forms, curly
// quotes U+2018..U+201F and the ideographic space / comma / full stop U+3000..U+3002.
constexpr CpRange kDeepseekPunct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F},
    {0x3000, 0x3002},
};
// The "Chinese" class of both deepseek rules: U+4E00..U+9FA5 (CJK unified ideographs as of
// Unicode 1.1), U+0800..U+4E00 (written that way in the original regex) and Hangul syllables
// plus U+D7B0..U+D7FF.
constexpr CpRange kDeepseekCjk[] = {{0x0800, 0x4E00}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7FF}};

// Splits [begin, end) with one stage: `match(cps, pos, end)` returns the end of a match that
// starts at pos, or pos when none starts there (leftmost-first search like a regex iterator).
// Matches and the gaps between them both become pieces.
template <typename Match>
void split_stage(const uint32_t* cps, size_t begin, size_t end, Match match,
                 std::vector<size_t>& ends) {
  size_t gap_start = begin;
  size_t pos = begin;
  while (pos < end) {
    const size_t m = match(cps, pos, end);
    if (m > pos) {
      if (pos > gap_start) ends.push_back(pos);
      ends.push_back(m);
      pos = m;
      gap_start = m;
    } else {
      ++pos;
    }
  }
  if (end > gap_start) ends.push_back(end);
}

// Regex "\s?[class]+" (optional single white space then a run of class members).
template <typename Pred>
size_t match_optional_space_run(const uint32_t* cps, size_t pos, size_t end, Pred in_class) {
  size_t p = pos;
  if (is_ws(cps[p]) && p + 1 < end && in_class(cps[p + 1])) {
    ++p;
  } else if (!in_class(cps[p])) {
    return pos;
  }
  while (p < end && in_class(cps[p])) ++p;
  return p;
}

template <typename Pred>
size_t match_run(const uint32_t* cps, size_t pos, size_t end, Pred in_class) {
  size_t p = pos;
  while (p < end && in_class(cps[p])) ++p;
  return p;
}

// Applies stages in order; each stage refines every piece produced by the previous one.
using Stage = void (*)(const uint32_t*, size_t, size_t, std::vector<size_t>&);

std::vector<size_t> run_stages(const std::vector<uint32_t>& cps, const Stage* stages,
                               size_t n_stages) {
  std::vector<size_t> bounds{0};
  if (cps.empty()) return bounds;
  bounds.push_back(cps.size());
  std::vector<size_t> next;
  for (size_t s = 0; s < n_stages; ++s) {
    next.clear();
    next.push_back(0);
    for (size_t w = 0; w + 1 < bounds.size(); ++w) stages[s](cps.data(), bounds[w], bounds[w + 1], next);
    bounds.swap(next);
  }
  return bounds;
}

// ---- stage implementations -------------------------------------------------------------

void stage_gpt2(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) { split_gpt2(c, b, e, o); }
void stage_llama3(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) { split_llama3(c, b, e, 3, o); }
void stage_qwen2(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) { split_llama3(c, b, e, 1, o); }

// "[\r\n]": every CR / LF alone.
void stage_cr_lf(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t) { return is_cr_lf(s[p]) ? p + 1 : p; }, o);
}
// "\p{N}+" and "\p{N}".
void stage_numbers(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    return match_run(s, p, end, [](uint32_t cp) { return unicode::is_number(cp); });
  }, o);
}
void stage_single_numbers(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t) { return unicode::is_number(s[p]) ? p + 1 : p; }, o);
}
// "[0-9][0-9][0-9]": groups of exactly three ASCII digits, left to right.
void stage_ascii_digit_triples(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    auto digit = [](uint32_t cp) { return cp >= '0' && cp <= '9'; };
    return (p + 2 < end && digit(s[p]) && digit(s[p + 1]) && digit(s[p + 2])) ? p + 3 : p;
  }, o);
}
// "[\p{P}\$\+<=>\^~\|`]+" (falcon) and "[\p{P}\$\+<=>\^~\|]+" (default).
bool falcon_punct(uint32_t cp) {
  return (flags(cp) & unicode::kPunct) || cp == '$' || cp == '+' || cp == '<' || cp == '=' ||
         cp == '>' || cp == '^' || cp == '~' || cp == '|' || cp == '`';
}
bool default_punct(uint32_t cp) { return cp != '`' && falcon_punct(cp); }
void stage_falcon_punct(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) { return match_run(s, p, end, falcon_punct); }, o);
}
void stage_default_punct(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) { return match_run(s, p, end, default_punct); }, o);
}
// deepseek-llm: "\s?[letters]+", "\s?[punct]+", "\s+$", "[CJK]+".
void stage_ds_letters(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    return match_optional_space_run(s, p, end, [](uint32_t cp) { return in_ranges(kDeepseekLetters, cp); });
  }, o);
}
void stage_ds_punct(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    return match_optional_space_run(s, p, end, [](uint32_t cp) { return in_ranges(kDeepseekPunct, cp); });
  }, o);
}
void stage_trailing_space(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  // "\s+$": the white-space run that ends the piece (the leftmost match is the whole run).
  size_t start = e;
  while (start > b && is_ws(c[start - 1])) --start;
  if (start > b && start < e) o.push_back(start);  // text before the run is its own piece
  o.push_back(e);
}
void stage_cjk(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    return match_run(s, p, end, [](uint32_t cp) { return in_ranges(kDeepseekCjk, cp); });
  }, o);
}
// deepseek-coder: "\s?\p{L}+", "\s?\p{P}+".
void stage_dc_letters(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    return match_optional_space_run(s, p, end, [](uint32_t cp) { return unicode::is_letter(cp); });
  }, o);
}
void stage_dc_punct(const uint32_t* c, size_t b, size_t e, std::vector<size_t>& o) {
  split_stage(c, b, e, [](const uint32_t* s, size_t p, size_t end) {
    return match_optional_space_run(s, p, end, [](uint32_t cp) { return (flags(cp) & unicode::kPunct) != 0; });
  }, o);
}

}  // namespace

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const uint32_t* cps, size_t begin, size_t end, std::vector<size_t>& ends) {
  // Flags of a position inside the piece; positions past the end have no flags at all, which
  // is how the regex sees the end of the piece.
  auto fl = [&](size_t p) -> uint16_t { return p < end ? flags(cps[p]) : 0; };
  auto in_piece = [&](size_t p) { return p < end; };
  size_t pos = begin;
  while (pos < end) {
    const uint32_t cp = cps[pos];
    if (cp == '\'' && pos + 1 < end) {
      const uint32_t n1 = cps[pos + 1];
      if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
        pos += 2;
        ends.push_back(pos);
        continue;
      }
      if (pos + 2 < end) {
        const uint32_t n2 = cps[pos + 2];
        if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
          pos += 3;
          ends.push_back(pos);
          continue;
        }
      }
    }
    // The optional leading space of the next three alternatives.
    const size_t body = (cp == ' ') ? pos + 1 : pos;
    const uint16_t f2 = fl(body);
    if (in_piece(body) && (f2 & unicode::kLetter)) {
      size_t p = body;
      while (in_piece(p) && (fl(p) & unicode::kLetter)) ++p;
      ends.push_back(p);
      pos = p;
      continue;
    }
    if (in_piece(body) && (f2 & unicode::kNumber)) {
      size_t p = body;
      while (in_piece(p) && (fl(p) & unicode::kNumber)) ++p;
      ends.push_back(p);
      pos = p;
      continue;
    }
    auto other = [&](size_t p) { return in_piece(p) && !(fl(p) & (kLN | unicode::kWhitespace)); };
    if (other(body)) {
      size_t p = body;
      while (other(p)) ++p;
      ends.push_back(p);
      pos = p;
      continue;
    }
    size_t n_ws = 0;
    while (in_piece(pos + n_ws) && is_ws(cps[pos + n_ws])) ++n_ws;
    if (n_ws > 1 && in_piece(pos + n_ws)) {
      // \s+(?!\S): leave the last white space to prefix the following word.
      pos += n_ws - 1;
      ends.push_back(pos);
      continue;
    }
    if (n_ws > 0) {
      pos += n_ws;
      ends.push_back(pos);
      continue;
    }
    ends.push_back(++pos);  // unreachable in practice: every code point matches one branch
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(const uint32_t* cps, size_t begin, size_t end, size_t max_digits,
                  std::vector<size_t>& ends) {
  auto fl = [&](size_t p) -> uint16_t { return p < end ? flags(cps[p]) : 0; };
  auto in_piece = [&](size_t p) { return p < end; };
  auto lower = [](uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; };
  size_t pos = begin;
  while (pos < end) {
    const uint32_t cp = cps[pos];
    const uint16_t f = fl(pos);
    if (cp == '\'' && pos + 1 < end) {
      const uint32_t n1 = lower(cps[pos + 1]);
      if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
        pos += 2;
        ends.push_back(pos);
        continue;
      }
      if (pos + 2 < end) {
        const uint32_t n2 = lower(cps[pos + 2]);
        if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
          pos += 3;
          ends.push_back(pos);
          continue;
        }
      }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!is_cr_lf(cp) && !(f & unicode::kNumber)) {
      if ((f & unicode::kLetter) || (fl(pos + 1) & unicode::kLetter)) {
        size_t p = pos + 1;
        while (in_piece(p) && (fl(p) & unicode::kLetter)) ++p;
        ends.push_back(p);
        pos = p;
        continue;
      }
    }
    // \p{N}{1,max_digits}: a digit run is cut into groups of max_digits from the left.
    if (f & unicode::kNumber) {
      size_t p = pos;
      while (in_piece(p) && (fl(p) & unicode::kNumber) && p - pos < max_digits) ++p;
      ends.push_back(p);
      pos = p;
      continue;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    const size_t body = (cp == ' ') ? pos + 1 : pos;
    auto other = [&](size_t p) { return in_piece(p) && !(fl(p) & (kLN | unicode::kWhitespace)); };
    if (other(body)) {
      size_t p = body;
      while (other(p)) ++p;
      while (in_piece(p) && is_cr_lf(cps[p])) ++p;
      ends.push_back(p);
      pos = p;
      continue;
    }
    size_t n_ws = 0;
    size_t last_cr_lf_end = 0;
    while (in_piece(pos + n_ws) && is_ws(cps[pos + n_ws])) {
      if (is_cr_lf(cps[pos + n_ws])) last_cr_lf_end = pos + n_ws + 1;
      ++n_ws;
    }
    if (last_cr_lf_end > 0) {  // \s*[\r\n]+ (backtracks to the last CR/LF of the run)
      pos = last_cr_lf_end;
      ends.push_back(pos);
      continue;
    }
    if (n_ws > 1 && in_piece(pos + n_ws)) {  // \s+(?!\S)
      pos += n_ws - 1;
      ends.push_back(pos);
      continue;
    }
    if (n_ws > 0) {  // \s+
      pos += n_ws;
      ends.push_back(pos);
      continue;
    }
    ends.push_back(++pos);
  }
}

PreTokenizerKind pretokenizer_from_name(std::string_view name) {
  static const struct {
    const char* name;
    PreTokenizerKind kind;
  } kNames[] = {
      {"default", PreTokenizerKind::kDefault},
      {"gpt-2", PreTokenizerKind::kGpt2}, {"mpt", PreTokenizerKind::kGpt2},
      {"olmo", PreTokenizerKind::kGpt2}, {"jais", PreTokenizerKind::kGpt2},
      {"phi-2", PreTokenizerKind::kGpt2}, {"roberta-bpe", PreTokenizerKind::kGpt2},
      {"jina-es", PreTokenizerKind::kGpt2}, {"jina-de", PreTokenizerKind::kGpt2},
      {"jina-v1-en", PreTokenizerKind::kGpt2}, {"jina-v2-es", PreTokenizerKind::kGpt2},
      {"jina-v2-de", PreTokenizerKind::kGpt2}, {"jina-v2-code", PreTokenizerKind::kGpt2},
      {"gigachat", PreTokenizerKind::kGpt2},
      {"llama3", PreTokenizerKind::kLlama3}, {"llama-v3", PreTokenizerKind::kLlama3},
      {"llama-bpe", PreTokenizerKind::kLlama3}, {"falcon3", PreTokenizerKind::kLlama3},
      {"dbrx", PreTokenizerKind::kLlama3}, {"smaug-bpe", PreTokenizerKind::kLlama3},
      {"qwen2", PreTokenizerKind::kQwen2}, {"stablelm2", PreTokenizerKind::kQwen2},
      {"deepseek-r1-qwen", PreTokenizerKind::kQwen2},
      {"deepseek-llm", PreTokenizerKind::kDeepseekLlm},
      {"deepseek-coder", PreTokenizerKind::kDeepseekCoder},
      {"falcon", PreTokenizerKind::kFalcon},
      {"starcoder", PreTokenizerKind::kStarcoder}, {"refact", PreTokenizerKind::kStarcoder},
      {"command-r", PreTokenizerKind::kStarcoder}, {"smollm", PreTokenizerKind::kStarcoder},
      {"codeshell", PreTokenizerKind::kStarcoder}, {"exaone", PreTokenizerKind::kStarcoder},
      {"minerva-7b", PreTokenizerKind::kStarcoder},
  };
  for (const auto& entry : kNames) {
    if (name == entry.name) return entry.kind;
  }
  throw Error(ErrorCode::kUnsupported,
              "tokenizer pre-tokenizer '" + std::string(name) + "' (tokenizer.ggml.pre) is not supported");
}

const char* pretokenizer_name(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kDefault: return "default";
    case PreTokenizerKind::kGpt2: return "gpt-2";
    case PreTokenizerKind::kLlama3: return "llama-bpe";
    case PreTokenizerKind::kQwen2: return "qwen2";
    case PreTokenizerKind::kDeepseekLlm: return "deepseek-llm";
    case PreTokenizerKind::kDeepseekCoder: return "deepseek-coder";
    case PreTokenizerKind::kFalcon: return "falcon";
    case PreTokenizerKind::kStarcoder: return "starcoder";
  }
  return "?";
}

std::vector<size_t> pretokenize(PreTokenizerKind kind, const std::vector<uint32_t>& cps) {
  switch (kind) {
    case PreTokenizerKind::kGpt2: {
      static constexpr Stage kStages[] = {stage_gpt2};
      return run_stages(cps, kStages, 1);
    }
    case PreTokenizerKind::kLlama3: {
      static constexpr Stage kStages[] = {stage_llama3};
      return run_stages(cps, kStages, 1);
    }
    case PreTokenizerKind::kQwen2: {
      static constexpr Stage kStages[] = {stage_qwen2};
      return run_stages(cps, kStages, 1);
    }
    case PreTokenizerKind::kDeepseekLlm: {
      static constexpr Stage kStages[] = {stage_cr_lf, stage_ds_letters, stage_ds_punct,
                                          stage_trailing_space, stage_cjk, stage_numbers};
      return run_stages(cps, kStages, 6);
    }
    case PreTokenizerKind::kDeepseekCoder: {
      static constexpr Stage kStages[] = {stage_cr_lf, stage_dc_letters, stage_dc_punct, stage_cjk,
                                          stage_single_numbers};
      return run_stages(cps, kStages, 5);
    }
    case PreTokenizerKind::kFalcon: {
      static constexpr Stage kStages[] = {stage_falcon_punct, stage_gpt2, stage_ascii_digit_triples};
      return run_stages(cps, kStages, 3);
    }
    case PreTokenizerKind::kStarcoder: {
      static constexpr Stage kStages[] = {stage_single_numbers, stage_gpt2};
      return run_stages(cps, kStages, 2);
    }
    case PreTokenizerKind::kDefault: {
      static constexpr Stage kStages[] = {stage_default_punct, stage_gpt2, stage_numbers,
                                          stage_ascii_digit_triples};
      return run_stages(cps, kStages, 4);
    }
  }
  throw Error(ErrorCode::kInternal, "unknown pre-tokenizer kind");
}

}  // namespace edgellm
