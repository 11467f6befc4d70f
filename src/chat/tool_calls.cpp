#include "chat/tool_calls.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "core/utf8.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"

namespace edgellm {

namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

enum class Scan { kComplete, kIncomplete, kInvalid };

// Where the JSON value starting at s[pos] ends (one past it). Strings, nesting and escapes are
// followed; scalars end at a delimiter (so "12" at the end of the text is incomplete: more
// digits may come).
Scan scan_value(std::string_view s, size_t pos, size_t* end) {
  if (pos >= s.size()) return Scan::kIncomplete;
  const char c0 = s[pos];
  if (c0 == '{' || c0 == '[' || c0 == '"') {
    int depth = 0;
    bool in_string = false, escape = false;
    for (size_t i = pos; i < s.size(); ++i) {
      const char c = s[i];
      if (in_string) {
        if (escape) {
          escape = false;
        } else if (c == '\\') {
          escape = true;
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) {
            *end = i + 1;
            return Scan::kComplete;
          }
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          *end = i + 1;
          return Scan::kComplete;
        }
        if (depth < 0) return Scan::kInvalid;
      }
    }
    return Scan::kIncomplete;
  }
  size_t i = pos;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i])) ++i;
  if (i == pos) return Scan::kInvalid;
  if (i == s.size()) return Scan::kIncomplete;
  *end = i;
  return Scan::kComplete;
}

// Matches `lit` at s[pos]: kComplete (advances pos), kIncomplete (s ends inside it), kInvalid.
Scan expect(std::string_view s, size_t* pos, std::string_view lit) {
  const size_t n = std::min(lit.size(), s.size() - std::min(*pos, s.size()));
  if (s.substr(*pos, n) != lit.substr(0, n)) return Scan::kInvalid;
  if (n < lit.size()) return Scan::kIncomplete;
  *pos += lit.size();
  return Scan::kComplete;
}

// The header of a call object up to its arguments value:
//   { "name" : "<name>" , "<args_key>" :      (whitespace anywhere)
// On kComplete: *name and *args_pos are set.
Scan call_header(std::string_view s, size_t pos, std::initializer_list<std::string_view> args_keys, std::string* name,
                 size_t* args_pos) {
  pos = skip_space(s, pos);
  Scan r = expect(s, &pos, "{");
  if (r != Scan::kComplete) return r;
  pos = skip_space(s, pos);
  if ((r = expect(s, &pos, "\"name\"")) != Scan::kComplete) return r;
  pos = skip_space(s, pos);
  if ((r = expect(s, &pos, ":")) != Scan::kComplete) return r;
  pos = skip_space(s, pos);
  if (pos >= s.size()) return Scan::kIncomplete;
  if (s[pos] != '"') return Scan::kInvalid;
  size_t end = 0;
  if ((r = scan_value(s, pos, &end)) != Scan::kComplete) return r;
  Json n;
  try {
    n = Json::parse(s.substr(pos, end - pos));
  } catch (const Error&) {
    return Scan::kInvalid;
  }
  pos = skip_space(s, end);
  if ((r = expect(s, &pos, ",")) != Scan::kComplete) return r;
  pos = skip_space(s, pos);
  bool matched = false, partial = false;
  for (std::string_view key : args_keys) {
    std::string k = "\"";
    k += key;
    k += "\"";
    size_t p = pos;
    const Scan kr = expect(s, &p, k);
    if (kr == Scan::kComplete) {
      pos = p;
      matched = true;
      break;
    }
    partial |= kr == Scan::kIncomplete;
  }
  if (!matched) return partial ? Scan::kIncomplete : Scan::kInvalid;
  pos = skip_space(s, pos);
  if ((r = expect(s, &pos, ":")) != Scan::kComplete) return r;
  pos = skip_space(s, pos);
  if (pos >= s.size()) return Scan::kIncomplete;
  *name = n.as_string();
  *args_pos = pos;
  return Scan::kComplete;
}

// Length of the longest suffix of s that is a proper prefix of `tag` (text to hold back).
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

std::string quoted(std::string_view s) {
  std::string out;
  json_escape(out, s);
  return out;
}

// GBNF rules for text that never contains `trigger` (an ASCII string): the states of its
// Knuth-Morris-Pratt automaton, one rule each; a character that would complete the trigger has
// no transition. Returns the start rule's name.
std::string text_without(const std::string& trigger, const std::string& prefix, std::string& rules) {
  const size_t n = trigger.size();
  std::vector<size_t> fail(n, 0);
  for (size_t i = 1, k = 0; i < n; ++i) {
    while (k > 0 && trigger[i] != trigger[k]) k = fail[k - 1];
    if (trigger[i] == trigger[k]) ++k;
    fail[i] = k;
  }
  const auto delta = [&](size_t state, char c) {
    while (state > 0 && trigger[state] != c) state = fail[state - 1];
    return trigger[state] == c ? state + 1 : 0;
  };
  for (size_t state = 0; state < n; ++state) {
    std::vector<std::string> alts{"\"\""};
    std::vector<grammar::CodePointRange> special;
    std::map<size_t, std::vector<char>> by_target;
    for (int c = 1; c < 128; ++c) {
      const size_t t = delta(state, static_cast<char>(c));
      if (t == 0) continue;
      special.push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c)});
      if (t < n) by_target[t].push_back(static_cast<char>(c));
    }
    alts.push_back(grammar::gbnf_class(grammar::complement_ranges(grammar::normalize_ranges(special))) + " " + prefix + "0");
    for (const auto& [t, chars] : by_target) {
      std::vector<grammar::CodePointRange> r;
      for (char c : chars) r.push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c)});
      alts.push_back(grammar::gbnf_class(grammar::normalize_ranges(r)) + " " + prefix + std::to_string(t));
    }
    rules += prefix + std::to_string(state) + " ::= ";
    for (size_t i = 0; i < alts.size(); ++i) rules += (i ? " | " : "") + alts[i];
    rules += "\n";
  }
  return prefix + "0";
}

const Json& tool_function(const Json& tool) { return tool.at("function"); }

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3-json";
    case ToolCallFormat::kGeneric: return "generic";
  }
  return "generic";
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
  if (source.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find("\"parameters\": dictionary of argument name") != std::string_view::npos ||
      (source.find("<|start_header_id|>") != std::string_view::npos && source.find("ipython") != std::string_view::npos)) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kGeneric;
}

ToolChoice parse_tool_choice(const Json& v) {
  ToolChoice c;
  if (v.is_null()) return c;
  if (v.is_string()) {
    const std::string& s = v.as_string();
    if (s == "none") {
      c.kind = ToolChoiceKind::kNone;
    } else if (s == "auto") {
      c.kind = ToolChoiceKind::kAuto;
    } else if (s == "required") {
      c.kind = ToolChoiceKind::kRequired;
    } else {
      throw Error(ErrorCode::kInvalidArgument, "tool_choice: expected \"none\", \"auto\", \"required\" or a function, got \"" + s + "\"");
    }
    return c;
  }
  const Json* fn = v.is_object() ? v.find("function") : nullptr;
  const Json* name = fn != nullptr && fn->is_object() ? fn->find("name") : nullptr;
  require(name != nullptr && name->is_string() && !name->as_string().empty(), ErrorCode::kInvalidArgument,
          "tool_choice: a function choice must be {\"type\": \"function\", \"function\": {\"name\": \"...\"}}");
  c.kind = ToolChoiceKind::kFunction;
  c.function = name->as_string();
  return c;
}

void check_tools(const Json& tools) {
  require(tools.is_array(), ErrorCode::kInvalidArgument, "tools: must be an array");
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools.at(i);
    const std::string where = "tools[" + std::to_string(i) + "]";
    require(t.is_object(), ErrorCode::kInvalidArgument, where + ": must be an object");
    const Json* type = t.find("type");
    require(type == nullptr || (type->is_string() && type->as_string() == "function"), ErrorCode::kInvalidArgument,
            where + ": only tools of type \"function\" are supported");
    const Json* fn = t.find("function");
    require(fn != nullptr && fn->is_object(), ErrorCode::kInvalidArgument, where + ": missing \"function\" object");
    const Json* name = fn->find("name");
    require(name != nullptr && name->is_string() && !name->as_string().empty() && name->as_string().size() <= 64,
            ErrorCode::kInvalidArgument, where + ": function.name must be a string of 1 to 64 characters");
    for (const char c : name->as_string()) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      require(ok, ErrorCode::kInvalidArgument, where + ": function.name \"" + name->as_string() + "\" may only hold letters, digits, '_', '-' and '.'");
    }
    require(names.insert(name->as_string()).second, ErrorCode::kInvalidArgument,
            where + ": function name \"" + name->as_string() + "\" is used twice");
    const Json* params = fn->find("parameters");
    require(params == nullptr || params->is_object(), ErrorCode::kInvalidArgument,
            where + " (" + name->as_string() + "): parameters must be a JSON Schema object");
  }
}

Json normalize_chat_messages(const Json& messages) {
  require(messages.is_array(), ErrorCode::kInvalidArgument, "messages: must be an array");
  Json out = messages;
  for (Json& m : out.as_array()) {
    if (!m.is_object()) continue;
    if (const Json* c = m.find("content")) {
      if (c->is_null()) {
        m.set("content", "");
      } else if (c->is_array()) {
        std::string text;
        for (const Json& part : c->as_array()) {
          const Json* t = part.is_object() ? part.find("text") : nullptr;
          if (t != nullptr && t->is_string()) text += t->as_string();
        }
        m.set("content", text);
      }
    }
    const Json* calls = m.find("tool_calls");
    if (calls == nullptr || !calls->is_array()) continue;
    Json fixed = *calls;
    for (Json& call : fixed.as_array()) {
      if (!call.is_object()) continue;
      const Json* fn = call.find("function");
      if (fn == nullptr || !fn->is_object()) continue;
      const Json* args = fn->find("arguments");
      if (args == nullptr || !args->is_string()) continue;
      Json f = *fn;
      try {
        f.set("arguments", Json::parse(args->as_string()));
      } catch (const Error&) {
        // Not JSON: left as the string it is (the template prints it as such).
      }
      call.set("function", std::move(f));
    }
    m.set("tool_calls", std::move(fixed));
  }
  return out;
}

std::string tool_call_gbnf(const Json& tools, const ToolCallGrammarOptions& options) {
  check_tools(tools);
  const ToolChoice& choice = options.choice;
  if (choice.kind == ToolChoiceKind::kNone) return "";
  if (tools.size() == 0) {
    require(choice.kind == ToolChoiceKind::kAuto, ErrorCode::kInvalidArgument,
            "tool_choice requires a tool call but no tools are given");
    return "";
  }
  grammar::JsonGrammarBuilder b;
  const std::string sp = b.builtin("space");
  const std::string args_key = options.format == ToolCallFormat::kLlama3Json ? "parameters" : "arguments";
  std::vector<std::string> fns;
  bool found = choice.kind != ToolChoiceKind::kFunction;
  std::string rules;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& fn = tool_function(tools.at(i));
    const std::string& name = fn.at("name").as_string();
    if (choice.kind == ToolChoiceKind::kFunction && name != choice.function) continue;
    found = true;
    static const Json kNoParameters = Json::parse(R"({"type": "object", "properties": {}})");
    const Json* params = fn.find("parameters");
    std::string args;
    try {
      args = b.add_schema(params != nullptr ? *params : kNoParameters, name + "-args");
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, "tools[" + std::to_string(i) + "] (" + name + ") parameters: " + e.what());
    }
    const std::string rule = "fn-" + std::to_string(fns.size());
    rules += rule + " ::= " + grammar::gbnf_literal(quoted(name)) + " " + sp + " \",\" " + sp + " " +
             grammar::gbnf_literal(quoted(args_key)) + " " + sp + " \":\" " + sp + " " + args + "\n";
    fns.push_back(rule);
  }
  require(found, ErrorCode::kInvalidArgument, "tool_choice names function \"" + choice.function + "\", which is not among the tools");
  std::string any_fn;
  for (size_t i = 0; i < fns.size(); ++i) any_fn += (i ? " | " : "") + fns[i];
  const std::string call_object = "\"{\" " + sp + " \"\\\"name\\\"\" " + sp + " \":\" " + sp + " (" + any_fn + ") \"}\" " + sp;
  const bool many = options.parallel && choice.kind != ToolChoiceKind::kFunction;
  std::string root;
  switch (options.format) {
    case ToolCallFormat::kHermes: {
      rules += "call ::= \"<tool_call>\" \"\\n\"? " + call_object + " \"</tool_call>\"\n";
      rules += std::string("calls ::= call") + (many ? " (" + sp + " call)*" : "") + "\n";
      if (choice.kind == ToolChoiceKind::kAuto) {
        const std::string free = text_without(std::string(kHermesOpen), "free-", rules);
        root = free + " calls?";
      } else {
        root = "calls";
      }
      break;
    }
    case ToolCallFormat::kLlama3Json: {
      rules += "call ::= " + call_object + "\n";
      rules += std::string("calls ::= call") + (many ? " (\";\" " + sp + " call)*" : "") + "\n";
      root = choice.kind == ToolChoiceKind::kAuto ? "calls | ([^{] .*)?" : "calls";
      break;
    }
    case ToolCallFormat::kGeneric: {
      rules += "call ::= " + call_object + "\n";
      rules += "calls ::= \"{\" " + sp + " \"\\\"tool_calls\\\"\" " + sp + " \":\" " + sp + " \"[\" " + sp + " call" +
               (many ? " (\",\" " + sp + " call)*" : "") + " \"]\" " + sp + " \"}\" " + sp + "\n";
      if (choice.kind == ToolChoiceKind::kAuto) {
        rules += "response ::= \"{\" " + sp + " \"\\\"response\\\"\" " + sp + " \":\" " + sp + " " + b.builtin("string") +
                 " \"}\" " + sp + "\n";
        root = "calls | response";
      } else {
        root = "calls";
      }
      break;
    }
  }
  return "root ::= " + root + "\n" + rules + b.rules();
}

std::string generic_tool_system_prompt(const Json& tools, const ToolChoice& choice) {
  check_tools(tools);
  std::string out =
      "You can call the following tools. Each is described by its name and a JSON Schema of its arguments:\n\n";
  for (const Json& t : tools.as_array()) out += tool_function(t).dump() + "\n";
  out += "\nReply with one JSON object and nothing else. To call tools: "
         "{\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<arguments>}}]}";
  if (choice.kind == ToolChoiceKind::kAuto) out += ". To answer without a tool: {\"response\": \"<your answer>\"}";
  if (choice.kind == ToolChoiceKind::kFunction) out += ". Call the tool \"" + choice.function + "\"";
  out += ".";
  return out;
}

// ---- parser

ToolCallParser::ToolCallParser(ToolCallFormat format, uint64_t id_seed) : format_(format) {
  rng_ = id_seed != 0 ? id_seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

std::string ToolCallParser::next_id() {
  static const char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) {
    rng_ += 0x9E3779B97F4A7C15ull;  // splitmix64
    uint64_t z = rng_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    id += kAlnum[z % 62];
  }
  return id;
}

void ToolCallParser::emit_content(std::string_view text, ToolCallEvents& out) {
  // Never split a UTF-8 character: content goes out as whole characters.
  content_ += text;
  out.content += text;
}

ToolCallEvents ToolCallParser::push(std::string_view text) {
  buffer_ += text;
  return scan(false);
}

ToolCallEvents ToolCallParser::finish() {
  ToolCallEvents out = scan(true);
  if (call_open_) {
    // The reply ended inside a call (a length limit): the call keeps what was streamed; its text
    // is not content.
    call_open_ = false;
    buffer_.clear();
  }
  if (!buffer_.empty()) {
    emit_content(buffer_, out);
    buffer_.clear();
  }
  return out;
}

// Tries to parse (more of) the call starting at buffer_[pos]. Returns true when the call is
// complete (*consumed = bytes of it); false when more text is needed or it is not a call
// (*consumed = 0 then, and call_open_ tells which).
bool ToolCallParser::try_call_at(size_t pos, bool at_end, size_t* consumed, ToolCallEvents& out) {
  *consumed = 0;
  const std::string_view s = buffer_;
  size_t p = pos;
  if (format_ == ToolCallFormat::kHermes) {
    if (expect(s, &p, kHermesOpen) != Scan::kComplete) return false;
  }
  std::string name;
  size_t args_pos = 0;
  const Scan h = format_ == ToolCallFormat::kLlama3Json ? call_header(s, p, {"parameters", "arguments"}, &name, &args_pos)
                                                        : call_header(s, p, {"arguments"}, &name, &args_pos);
  if (h == Scan::kIncomplete && !at_end) return false;
  if (h != Scan::kComplete) {
    // Not the usual key order: a Hermes call may still parse whole once its closing tag is here.
    if (format_ == ToolCallFormat::kHermes) {
      const size_t close = s.find(kHermesClose, p);
      if (close == std::string_view::npos) return false;
      try {
        const Json j = Json::parse(s.substr(p, close - p));
        const Json* n = j.find("name");
        const Json* a = j.find("arguments");
        if (n != nullptr && n->is_string() && a != nullptr) {
          ToolCallDelta d{static_cast<int>(calls_.size()), next_id(), n->as_string(), a->dump()};
          calls_.push_back({d.id, d.name, d.arguments});
          out.calls.push_back(d);
          *consumed = close + kHermesClose.size() - pos;
          return true;
        }
      } catch (const Error&) {
      }
    }
    *consumed = 0;
    return false;
  }
  if (!call_open_) {
    calls_.push_back({next_id(), name, ""});
    out.calls.push_back({static_cast<int>(calls_.size() - 1), calls_.back().id, name, ""});
    call_open_ = true;
    streamed_args_ = 0;
  }
  size_t args_end = 0;
  const Scan a = scan_value(s, args_pos, &args_end);
  const size_t have = a == Scan::kComplete ? args_end - args_pos : s.size() - args_pos;
  if (have > streamed_args_) {
    // Stream the new argument bytes, whole UTF-8 characters only.
    std::string_view fresh = s.substr(args_pos + streamed_args_, have - streamed_args_);
    if (a != Scan::kComplete) fresh.remove_suffix(utf8::incomplete_suffix_length(fresh));
    if (!fresh.empty()) {
      calls_.back().arguments += fresh;
      out.calls.push_back({static_cast<int>(calls_.size() - 1), "", "", std::string(fresh)});
      streamed_args_ += fresh.size();
    }
  }
  if (a != Scan::kComplete) return false;
  p = skip_space(s, args_end);
  Scan t = expect(s, &p, "}");
  if (t == Scan::kComplete && format_ == ToolCallFormat::kHermes) {
    p = skip_space(s, p);
    t = expect(s, &p, kHermesClose);
  }
  if (t != Scan::kComplete) return false;
  call_open_ = false;
  *consumed = p - pos;
  return true;
}

ToolCallEvents ToolCallParser::scan(bool at_end) {
  ToolCallEvents out;
  if (format_ == ToolCallFormat::kGeneric) {
    // One JSON object: decided (and released) at the end.
    if (!at_end) return out;
    try {
      const Json j = Json::parse(buffer_);
      if (const Json* calls = j.is_object() ? j.find("tool_calls") : nullptr; calls != nullptr && calls->is_array()) {
        for (const Json& c : calls->as_array()) {
          const Json* n = c.is_object() ? c.find("name") : nullptr;
          const Json* a = c.is_object() ? c.find("arguments") : nullptr;
          if (n == nullptr || !n->is_string()) continue;
          ToolCallDelta d{static_cast<int>(calls_.size()), next_id(), n->as_string(), a != nullptr ? a->dump() : "{}"};
          calls_.push_back({d.id, d.name, d.arguments});
          out.calls.push_back(d);
        }
        buffer_.clear();
        return out;
      }
      if (const Json* r = j.is_object() ? j.find("response") : nullptr; r != nullptr && r->is_string()) {
        emit_content(r->as_string(), out);
        buffer_.clear();
        return out;
      }
    } catch (const Error&) {
    }
    return out;  // finish() releases the text as it is
  }

  if (format_ == ToolCallFormat::kLlama3Json) {
    if (!decided_) {
      const size_t first = skip_space(buffer_, 0);
      if (first == buffer_.size() && !at_end) return out;
      std::string name;
      size_t args_pos = 0;
      const Scan h = call_header(buffer_, first, {"parameters", "arguments"}, &name, &args_pos);
      if (h == Scan::kIncomplete && !at_end) return out;
      decided_ = true;
      json_reply_ = h == Scan::kComplete;
      if (json_reply_) buffer_.erase(0, first);
    }
    if (!json_reply_) {
      emit_content(buffer_, out);
      buffer_.clear();
      return out;
    }
    for (;;) {
      if (after_call_ && !call_open_) {
        // Between calls: "; " (or whitespace) before the next "{", nothing at the end.
        size_t p = skip_space(buffer_, 0);
        if (p < buffer_.size() && buffer_[p] == ';') p = skip_space(buffer_, p + 1);
        if (p == buffer_.size()) {
          if (at_end) buffer_.clear();
          return out;
        }
        buffer_.erase(0, p);
        after_call_ = false;
      }
      size_t consumed = 0;
      if (!try_call_at(0, at_end, &consumed, out)) return out;
      buffer_.erase(0, consumed);
      after_call_ = true;
    }
  }

  // Hermes: text, calls, text.
  for (;;) {
    if (after_call_ && !call_open_) {
      // Whitespace between calls (and after the last one) is not content; anything else is.
      const size_t p = skip_space(buffer_, 0);
      const std::string_view rest = std::string_view(buffer_).substr(p);
      const size_t n = std::min(rest.size(), kHermesOpen.size());
      const bool tag_next = rest.substr(0, n) == kHermesOpen.substr(0, n);
      if (rest.empty() || (tag_next && rest.size() < kHermesOpen.size())) {
        if (!at_end) return out;  // undecided yet
        if (rest.empty()) {
          buffer_.clear();
          return out;
        }
      }
      if (tag_next && rest.size() >= kHermesOpen.size()) buffer_.erase(0, p);
      after_call_ = false;
    }
    if (!call_open_) {
      const size_t open = buffer_.find(kHermesOpen);
      if (open == std::string::npos) {
        size_t keep = at_end ? 0 : partial_tag_suffix(buffer_, kHermesOpen);
        // Whole UTF-8 characters only.
        const std::string_view head = std::string_view(buffer_).substr(0, buffer_.size() - keep);
        const size_t cut = at_end ? 0 : utf8::incomplete_suffix_length(head);
        emit_content(head.substr(0, head.size() - cut), out);
        buffer_.erase(0, head.size() - cut);
        return out;
      }
      emit_content(std::string_view(buffer_).substr(0, open), out);
      buffer_.erase(0, open);
    }
    size_t consumed = 0;
    if (!try_call_at(0, at_end, &consumed, out)) {
      if (call_open_ || !at_end) return out;  // more of the call is needed
      // At the end and not a call: the tag was text.
      emit_content(kHermesOpen, out);
      buffer_.erase(0, kHermesOpen.size());
      continue;
    }
    buffer_.erase(0, consumed);
    after_call_ = true;
  }
}

}  // namespace edgellm
