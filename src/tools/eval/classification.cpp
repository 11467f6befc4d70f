#include "tools/eval/classification.h"

#include "core/json.h"
#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace edgellm::eval {
namespace {

bool is_trim_char(char32_t c) {
  const uint16_t f = unicode::flags(c);
  return (f & (unicode::kWhitespace | unicode::kPunct)) != 0 || c == '`' || c == '*';
}

// Byte length of the code point that ends s (1 when s does not end with a well-formed one).
size_t last_cp_start(std::string_view s) {
  size_t start = s.size() - 1;
  while (start > 0 && s.size() - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  const utf8::Decoded d = utf8::decode(s, start);
  return d.ok() && start + d.length == s.size() ? start : s.size() - 1;
}

}  // namespace

std::string normalize_label(std::string_view label) {
  // Trim from the front, then from the back, whole code points at a time.
  size_t begin = 0;
  while (begin < label.size()) {
    const utf8::Decoded d = utf8::decode(label, begin);
    if (!d.ok() || !is_trim_char(d.cp)) break;
    begin += d.length;
  }
  std::string_view s = label.substr(begin);
  while (!s.empty()) {
    const size_t start = last_cp_start(s);
    const utf8::Decoded d = utf8::decode(s, start);
    if (!d.ok() || !is_trim_char(d.cp)) break;
    s = s.substr(0, start);
  }
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string label_from_generation(std::string_view text, const std::vector<std::string>& labels) {
  std::string line;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    line = normalize_label(text.substr(pos, end - pos));
    if (!line.empty()) break;
    pos = end + 1;
  }
  const std::string* best = nullptr;
  size_t best_len = 0;
  for (const std::string& label : labels) {
    const std::string norm = normalize_label(label);
    if (norm.empty()) continue;
    if (norm == line) return norm;
    if (line.size() > norm.size() && line.compare(0, norm.size(), norm) == 0 && norm.size() > best_len) {
      // Only a whole-word prefix: "positive" does not pick the label "pos".
      const utf8::Decoded next = utf8::decode(line, norm.size());
      if (!next.ok() || !(unicode::is_letter(next.cp) || unicode::is_number(next.cp))) {
        best = &label;
        best_len = norm.size();
      }
    }
  }
  return best != nullptr ? normalize_label(*best) : line;
}

std::optional<ClassifyRequest> classify_request(const EvalCase& c) {
  ClassifyRequest r;
  r.labels = c.labels;
  r.deadline_ms = 0;  // an evaluation waits however loaded the machine is
  if (c.messages.is_null()) {
    r.raw = true;
    r.text = c.prompt;
    return r;
  }
  const auto content = [&](size_t i, const char* role) -> const std::string* {
    const Json& m = c.messages.at(i);
    const Json* rl = m.is_object() ? m.find("role") : nullptr;
    const Json* ct = m.is_object() ? m.find("content") : nullptr;
    if (rl == nullptr || !rl->is_string() || rl->as_string() != role || ct == nullptr || !ct->is_string()) return nullptr;
    return &ct->as_string();
  };
  const size_t n = c.messages.is_array() ? c.messages.size() : 0;
  if (n == 1 || n == 2) {
    const std::string* user = content(n - 1, "user");
    const std::string* system = n == 2 ? content(0, "system") : nullptr;
    if (user != nullptr && (n == 1 || system != nullptr)) {
      r.text = *user;
      if (system != nullptr) r.instruction = *system;
      return r;
    }
  }
  return std::nullopt;
}

bool label_correct(std::string_view predicted, const std::vector<std::string>& references) {
  const std::string p = normalize_label(predicted);
  for (const std::string& r : references) {
    if (normalize_label(r) == p) return true;
  }
  return false;
}

}  // namespace edgellm::eval
