#include "tools/eval/task_file.h"

#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "core/utf8.h"

namespace edgellm::eval {
namespace {

constexpr int32_t kMaxTokensLimit = 32768;

[[noreturn]] void bad(int32_t line, const std::string& why) {
  throw Error(ErrorCode::kInvalidFile, "task file line " + std::to_string(line) + ": " + why);
}

std::string checked_string(const Json& v, int32_t line, const std::string& what) {
  if (!v.is_string()) bad(line, what + " must be a string");
  const std::string& s = v.as_string();
  if (!utf8::is_valid(s)) {
    bad(line, what + " is not valid UTF-8 (byte " + std::to_string(utf8::first_invalid(s)) + ")");
  }
  return s;
}

std::vector<std::string> string_array(const Json& v, int32_t line, const std::string& what, bool non_empty) {
  if (!v.is_array()) bad(line, what + " must be an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(checked_string(v.at(i), line, what + "[" + std::to_string(i) + "]"));
  if (non_empty && out.empty()) bad(line, what + " must not be empty");
  return out;
}

Metric parse_metric(const Json& v, int32_t line) {
  const std::string name = checked_string(v, line, "\"metric\"");
  for (const Metric m : {Metric::kRouge, Metric::kBleu, Metric::kQa, Metric::kAccuracy}) {
    if (name == metric_name(m)) return m;
  }
  bad(line, "unknown metric '" + name + "' (rouge, bleu, qa or accuracy)");
}

void check_messages(const Json& v, int32_t line) {
  if (!v.is_array() || v.size() == 0) bad(line, "\"messages\" must be a non-empty array of {role, content}");
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& m = v.at(i);
    const std::string at = "\"messages\"[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(line, at + " must be an object");
    const Json* role = m.find("role");
    const Json* content = m.find("content");
    if (role == nullptr || content == nullptr) bad(line, at + " needs \"role\" and \"content\"");
    checked_string(*role, line, at + ".role");
    checked_string(*content, line, at + ".content");
  }
}

EvalCase parse_case(const Json& j, int32_t line) {
  if (!j.is_object()) bad(line, "not a JSON object");
  EvalCase c;
  c.line = line;
  c.id = "line-" + std::to_string(line);
  bool have_metric = false, have_reference = false;
  for (const auto& [key, value] : j.as_object()) {
    if (key == "id") {
      c.id = checked_string(value, line, "\"id\"");
      if (c.id.empty() || c.id.size() > 200) bad(line, "\"id\" must be 1-200 bytes");
    } else if (key == "prompt") {
      c.prompt = checked_string(value, line, "\"prompt\"");
      if (c.prompt.empty()) bad(line, "\"prompt\" is empty");
    } else if (key == "messages") {
      check_messages(value, line);
      c.messages = value;
    } else if (key == "reference" || key == "references") {
      if (have_reference) bad(line, "give \"reference\" or \"references\", not both");
      have_reference = true;
      c.references = value.is_array() ? string_array(value, line, "\"" + key + "\"", true)
                                      : std::vector<std::string>{checked_string(value, line, "\"" + key + "\"")};
    } else if (key == "metric") {
      c.metric = parse_metric(value, line);
      have_metric = true;
    } else if (key == "labels") {
      c.labels = string_array(value, line, "\"labels\"", false);
    } else if (key == "max_tokens") {
      if (!value.is_number() || value.as_number() != static_cast<double>(static_cast<int64_t>(value.as_number())) ||
          value.as_number() < 1 || value.as_number() > kMaxTokensLimit) {
        bad(line, "\"max_tokens\" must be a whole number in [1, " + std::to_string(kMaxTokensLimit) + "]");
      }
      c.max_tokens = static_cast<int32_t>(value.as_number());
    } else if (key == "stop") {
      c.stop = string_array(value, line, "\"stop\"", false);
    } else {
      bad(line, "unknown field \"" + key + "\" (id, prompt, messages, reference(s), metric, labels, max_tokens, stop)");
    }
  }
  const bool has_prompt = !c.prompt.empty(), has_messages = !c.messages.is_null();
  if (has_prompt == has_messages) bad(line, "give exactly one of \"prompt\" and \"messages\"");
  if (!have_reference) bad(line, "no \"reference\" or \"references\"");
  if (!have_metric) bad(line, "no \"metric\" (rouge, bleu, qa or accuracy)");
  if (!c.labels.empty() && c.metric != Metric::kAccuracy) bad(line, "\"labels\" belong to metric accuracy only");
  return c;
}

}  // namespace

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kRouge: return "rouge";
    case Metric::kBleu: return "bleu";
    case Metric::kQa: return "qa";
    case Metric::kAccuracy: return "accuracy";
  }
  return "?";
}

std::vector<EvalCase> parse_task_lines(std::string_view text) {
  std::vector<EvalCase> cases;
  std::set<std::string> ids;
  int32_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 BOM
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    Json j;
    try {
      j = Json::parse(line, 64);
    } catch (const Error& e) {
      bad(line_no, std::string("malformed JSON: ") + e.what());
    }
    EvalCase c = parse_case(j, line_no);
    if (!ids.insert(c.id).second) bad(line_no, "duplicate id '" + c.id + "'");
    if (cases.size() >= kMaxEvalCases) bad(line_no, "more than " + std::to_string(kMaxEvalCases) + " cases");
    cases.push_back(std::move(c));
  }
  if (cases.empty()) throw Error(ErrorCode::kInvalidFile, "task file has no case");
  return cases;
}

TaskFile read_task_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::kIo, [&] { return "cannot open task file '" + path + "'"; });
  std::ostringstream ss;
  ss << in.rdbuf();
  require(!in.bad(), ErrorCode::kIo, [&] { return "cannot read task file '" + path + "'"; });
  TaskFile f;
  f.path = path;
  const std::string text = ss.str();
  f.sha256 = Sha256::hex_of(text);
  try {
    f.cases = parse_task_lines(text);
  } catch (const Error& e) {
    throw Error(e.code(), "'" + path + "': " + e.what());
  }
  return f;
}

}  // namespace edgellm::eval
