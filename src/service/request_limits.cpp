#include "service/request_limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"
#include "engine/pooling.h"
#include "tokenizer/sanitize.h"

namespace edgellm {
namespace {

[[noreturn]] void refuse(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// Shortest round-trip form of a limit or a value: "2", "0.5", "1e+308".
std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);  // whole numbers as integers: 100, not 1e+02
    return buf;
  }
  // Sampling values arrive as floats: a float shows as the shortest text that reads back as
  // the same float (0.1f is "0.1", not "0.100000001").
  const bool is_float = static_cast<double>(static_cast<float>(v)) == v;
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (is_float ? std::strtof(buf, nullptr) == static_cast<float>(v) : std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void in_range(double v, double lo, double hi, const char* name) {
  if (!(v >= lo && v <= hi))
    refuse(std::string(name) + " must be in [" + num(lo) + ", " + num(hi) + "], got " + num(v));
}

void check_priority(Priority p) {
  if (p != Priority::kInteractive && p != Priority::kBackground) {
    refuse("priority must be 0 (interactive) or 1 (background), got " + std::to_string(static_cast<int>(p)));
  }
}

bool is_control(char32_t cp) {
  return (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || (cp >= 0x7F && cp <= 0x9F);
}

// kRefuse: invalid UTF-8 or a control character is an error naming `what` and the byte.
// kStrip: cleans the text in place; returns the characters changed.
size_t check_text(std::string& text, const std::string& what, InputPolicy policy) {
  if (policy == InputPolicy::kStrip) {
    size_t changed = 0;
    std::string clean = sanitize_user_text(text, &changed);
    if (changed > 0) text = std::move(clean);
    return changed;
  }
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    if (!d.ok()) {
      refuse(what + " is not valid UTF-8 (ill-formed sequence at byte " + std::to_string(pos) + ")");
    }
    if (is_control(d.cp)) {
      char cp[16];
      std::snprintf(cp, sizeof cp, "U+%04X", static_cast<unsigned>(d.cp));
      refuse(what + " holds the control character " + cp + " at byte " + std::to_string(pos) +
             " (the input policy refuses control characters; set it to strip to remove them)");
    }
    pos += d.length;
  }
  return 0;
}

void check_strict_utf8(const std::string& text, const std::string& what) {
  const size_t bad = utf8::first_invalid(text);
  if (bad != text.size())
    refuse(what + " is not valid UTF-8 (ill-formed sequence at byte " + std::to_string(bad) + ")");
}

}  // namespace

void check_role(const std::string& r, const std::string& where) {
  if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
    check_strict_utf8(r, where + ".role");
    refuse(where + ": unknown role \"" + r + "\" (expected system, user, assistant or tool)");
  }
}

void check_tool_turns(const Json& messages) {
  if (!messages.is_array()) return;   // check_messages refuses it
  std::vector<std::string> call_ids;  // every call made so far, in order
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages.at(i);
    if (!m.is_object()) continue;
    const std::string where = "messages[" + std::to_string(i) + "]";
    const Json* role = m.find("role");
    const bool assistant = role != nullptr && role->is_string() && role->as_string() == "assistant";
    const bool tool = role != nullptr && role->is_string() && role->as_string() == "tool";
    const Json* calls = m.find("tool_calls");
    if (calls != nullptr && !calls->is_null()) {
      if (!assistant) refuse(where + ": only an assistant turn carries tool_calls");
      if (!calls->is_array() || calls->size() == 0) {
        refuse(where + ".tool_calls: expected a non-empty array of {id, function: {name, arguments}}");
      }
      for (size_t j = 0; j < calls->size(); ++j) {
        const std::string at = where + ".tool_calls[" + std::to_string(j) + "]";
        const Json& c = calls->at(j);
        const Json* id = c.is_object() ? c.find("id") : nullptr;
        const Json* fn = c.is_object() ? c.find("function") : nullptr;
        if (id == nullptr || !id->is_string() || id->as_string().empty()) {
          refuse(at + ".id: expected a non-empty string (the id the tool turn answers)");
        }
        check_strict_utf8(id->as_string(), at + ".id");
        if (fn == nullptr || !fn->is_object()) refuse(at + ".function: expected an object {name, arguments}");
        const Json* name = fn->find("name");
        if (name == nullptr || !name->is_string() || name->as_string().empty()) {
          refuse(at + ".function.name: expected a non-empty string");
        }
        check_strict_utf8(name->as_string(), at + ".function.name");
        const Json* args = fn->find("arguments");
        if (args != nullptr && !args->is_object()) {
          refuse(at + ".function.arguments: not a JSON object (expected the arguments object as JSON text)");
        }
        call_ids.push_back(id->as_string());
      }
    }
    const Json* call_id = m.find("tool_call_id");
    if (tool) {
      if (call_id == nullptr || call_id->is_null()) {
        refuse(where + ": a tool turn needs tool_call_id (the id of the call whose result it carries)");
      }
      if (!call_id->is_string()) refuse(where + ".tool_call_id: expected a string");
      check_strict_utf8(call_id->as_string(), where + ".tool_call_id");
      if (std::find(call_ids.begin(), call_ids.end(), call_id->as_string()) == call_ids.end()) {
        refuse(where + ".tool_call_id: \"" + call_id->as_string() +
               "\" is the id of no call an earlier assistant turn made");
      }
    } else if (call_id != nullptr && !call_id->is_null()) {
      refuse(where + ": only a tool turn carries tool_call_id");
    }
  }
}

namespace {

size_t check_messages(Json& messages, InputPolicy policy) {
  if (!messages.is_array() || messages.size() == 0) refuse("messages: expected a non-empty array of {role, content}");
  if (messages.size() > limits::kMaxMessages) {
    refuse("messages: more than " + std::to_string(limits::kMaxMessages) + " messages");
  }
  size_t changed = 0;
  Json::Array& a = messages.as_array();
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    Json& m = a[i];
    const Json* role = m.is_object() ? m.find("role") : nullptr;
    const Json* content = m.is_object() ? m.find("content") : nullptr;
    if (role == nullptr || !role->is_string()) refuse(where + ": no string \"role\"");
    if (content == nullptr || !content->is_string()) refuse(where + ": no string \"content\"");
    check_role(role->as_string(), where);
    std::string text = content->as_string();
    const size_t n = check_text(text, where + ".content", policy);
    if (n > 0) m.set("content", std::move(text));
    changed += n;
  }
  check_tool_turns(messages);
  if (a.back().at("role").as_string() == "assistant") {
    refuse("messages: the last message is from the assistant; there is nothing to answer");
  }
  return changed;
}

}  // namespace

const char* input_policy_name(InputPolicy p) {
  return p == InputPolicy::kStrip ? "strip" : "refuse";
}

InputPolicy input_policy_from_name(const std::string& name) {
  if (name == "refuse") return InputPolicy::kRefuse;
  if (name == "strip") return InputPolicy::kStrip;
  refuse("input policy \"" + name + "\" is unknown (expected refuse or strip)");
}

void check_stop_count(size_t n) {
  if (n > limits::kMaxStopStrings) {
    refuse("stop: at most " + std::to_string(limits::kMaxStopStrings) + " stop strings, got " + std::to_string(n));
  }
}

void check_logit_bias_count(size_t n) {
  if (n > limits::kMaxLogitBias) refuse("logit_bias: more than " + std::to_string(limits::kMaxLogitBias) + " entries");
}

void check_token_count(size_t n) {
  if (n > limits::kMaxInputTokens) refuse("tokens: more than " + std::to_string(limits::kMaxInputTokens));
}

void check_embedding_input_count(const std::string& what, size_t n) {
  if (n > limits::kMaxEmbeddingInputs) {
    refuse(what + ": at most " + std::to_string(limits::kMaxEmbeddingInputs) + ", got " + std::to_string(n));
  }
}

void check_label_count(size_t n) {
  if (n > limits::kMaxClassifyLabels) {
    refuse("labels: at most " + std::to_string(limits::kMaxClassifyLabels) + ", got " + std::to_string(n));
  }
}

void check_sampling(const SamplerParams& s, int32_t n_vocab) {
  in_range(s.temperature, 0.0, limits::kMaxTemperature, "temperature");
  in_range(s.top_p, 0.0, 1.0, "top_p");
  in_range(s.min_p, 0.0, 1.0, "min_p");
  if (!(s.repeat_penalty > 0 && s.repeat_penalty <= limits::kMaxRepeatPenalty)) {
    refuse("repeat_penalty must be in (0, " + num(limits::kMaxRepeatPenalty) + "], got " + num(s.repeat_penalty));
  }
  in_range(s.frequency_penalty, -limits::kMaxAbsFrequencyPenalty, limits::kMaxAbsFrequencyPenalty, "frequency_penalty");
  in_range(s.presence_penalty, -limits::kMaxAbsFrequencyPenalty, limits::kMaxAbsFrequencyPenalty, "presence_penalty");
  if (s.top_k < 0) refuse("top_k must be >= 0 (0 disables it), got " + std::to_string(s.top_k));
  if (s.penalty_last_n < -1)
    refuse("penalty_last_n must be >= -1 (-1: all tokens), got " + std::to_string(s.penalty_last_n));
  check_logit_bias_count(s.logit_bias.size());
  for (const auto& [id, bias] : s.logit_bias) {
    if (id < 0 || id >= n_vocab) {
      refuse("logit_bias: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(n_vocab) + ")");
    }
    // -inf bans the token (llama.cpp's `false`); anything else is bounded as OpenAI bounds it.
    if (!(bias == -INFINITY || (bias >= -limits::kMaxAbsLogitBias && bias <= limits::kMaxAbsLogitBias))) {
      refuse("logit_bias: the bias of token " + std::to_string(id) + " must be in [-" + num(limits::kMaxAbsLogitBias) +
             ", " + num(limits::kMaxAbsLogitBias) + "] or -inf, got " + num(bias));
    }
  }
}

size_t check_request(ServiceRequest& r, int32_t n_vocab, InputPolicy policy) {
  const int inputs = (!r.prompt.empty() ? 1 : 0) + (!r.messages.is_null() ? 1 : 0) + (!r.tokens.empty() ? 1 : 0);
  if (inputs == 0) refuse("no input: give a prompt, messages or tokens");
  if (inputs > 1) refuse("more than one input: give exactly one of prompt, messages, tokens");
  size_t changed = 0;
  if (!r.prompt.empty()) changed += check_text(r.prompt, "prompt", policy);
  if (!r.messages.is_null()) changed += check_messages(r.messages, policy);
  check_token_count(r.tokens.size());
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    if (r.tokens[i] < 0 || r.tokens[i] >= n_vocab) {
      refuse("tokens[" + std::to_string(i) + "] = " + std::to_string(r.tokens[i]) + " is outside the vocabulary [0, " +
             std::to_string(n_vocab) + ")");
    }
  }
  check_stop_count(r.generation.stop.size());
  for (size_t i = 0; i < r.generation.stop.size(); ++i) {
    const std::string& s = r.generation.stop[i];
    const std::string what = "stop[" + std::to_string(i) + "]";
    if (s.empty() || s.size() > limits::kMaxStopBytes) {
      refuse(what + ": must be 1 to " + std::to_string(limits::kMaxStopBytes) + " bytes, got " +
             std::to_string(s.size()));
    }
    check_strict_utf8(s, what);
  }
  const int constraints = (r.generation.grammar != nullptr ? 1 : 0) + (!r.grammar_gbnf.empty() ? 1 : 0) +
                          (!r.json_schema.empty() ? 1 : 0) + (r.json_object ? 1 : 0);
  if (constraints > 1) refuse("more than one output constraint: give at most one of grammar, json_schema, json_object");
  if (r.grammar_gbnf.size() > limits::kMaxGrammarBytes || r.json_schema.size() > limits::kMaxGrammarBytes) {
    refuse(std::string(r.grammar_gbnf.empty() ? "json_schema" : "grammar") + ": more than " +
           std::to_string(limits::kMaxGrammarBytes) + " bytes");
  }
  if (!r.grammar_gbnf.empty()) check_strict_utf8(r.grammar_gbnf, "grammar");
  if (!r.json_schema.empty()) check_strict_utf8(r.json_schema, "json_schema");
  if (r.generation.n_keep < -1)
    refuse("n_keep must be >= -1 (-1: the whole prompt), got " + std::to_string(r.generation.n_keep));
  // generate()'s fields the service cannot honour (request.h): refused, never ignored.
  if (r.generation.seq_id != 0) {
    refuse("seq_id must be 0 (the service picks the sequence), got " + std::to_string(r.generation.seq_id));
  }
  if (r.generation.truncate_prompt) {
    refuse("truncate_prompt is not served: a prompt that does not fit the context is refused, never cut");
  }
  check_priority(r.priority);
  check_sampling(r.sampling, n_vocab);
  return changed;
}

size_t check_embedding_request(EmbeddingRequest& r, int32_t n_vocab, InputPolicy policy) {
  size_t changed = 0;
  const auto count = [](const char* what, size_t n) { check_embedding_input_count(what, n); };
  if (r.task == EmbeddingTask::kEmbed) {
    if (r.texts.empty() == r.token_inputs.empty())
      refuse("input: give either texts or token arrays (exactly one kind)");
    if (!r.query.empty() || !r.documents.empty()) refuse("query / documents belong to a rerank request");
    count("input", r.texts.size() + r.token_inputs.size());
    for (size_t i = 0; i < r.texts.size(); ++i) {
      const std::string what = "input[" + std::to_string(i) + "]";
      if (r.texts[i].empty()) refuse(what + " is empty");
      changed += check_text(r.texts[i], what, policy);
    }
    for (size_t i = 0; i < r.token_inputs.size(); ++i) {
      const std::vector<int32_t>& t = r.token_inputs[i];
      const std::string what = "input[" + std::to_string(i) + "]";
      if (t.empty()) refuse(what + " is an empty token array");
      if (t.size() > limits::kMaxInputTokens)
        refuse(what + ": more than " + std::to_string(limits::kMaxInputTokens) + " tokens");
      for (size_t k = 0; k < t.size(); ++k) {
        if (t[k] < 0 || t[k] >= n_vocab) {
          refuse(what + "[" + std::to_string(k) + "] = " + std::to_string(t[k]) + " is outside the vocabulary [0, " +
                 std::to_string(n_vocab) + ")");
        }
      }
    }
    if (r.pooling == PoolingType::kRank) refuse("pooling rank gives scores: send a rerank request (query, documents)");
    if (static_cast<int>(r.pooling) < -1 || static_cast<int>(r.pooling) > 4) refuse("pooling is unknown");
    check_normalize(r.normalize);
  } else if (r.task == EmbeddingTask::kRerank) {
    if (!r.texts.empty() || !r.token_inputs.empty()) refuse("a rerank request takes a query and documents, not input");
    if (r.query.empty()) refuse("query is empty");
    if (r.documents.empty()) refuse("documents: give at least one");
    count("documents", r.documents.size());
    changed += check_text(r.query, "query", policy);
    for (size_t i = 0; i < r.documents.size(); ++i) {
      changed += check_text(r.documents[i], "documents[" + std::to_string(i) + "]", policy);
    }
  } else {
    refuse("task is unknown");
  }
  if (r.truncation != Truncation::kRefuse && r.truncation != Truncation::kEnd) refuse("truncation is unknown");
  check_priority(r.priority);
  return changed;
}

size_t check_classify_request(ClassifyRequest& r, InputPolicy policy) {
  if (r.text.empty()) refuse("text is empty");
  size_t changed = check_text(r.text, "text", policy);
  if (!r.instruction.empty()) changed += check_text(r.instruction, "instruction", policy);
  if (r.labels.empty()) refuse("labels: give at least one");
  check_label_count(r.labels.size());
  for (size_t i = 0; i < r.labels.size(); ++i) {
    const std::string what = "labels[" + std::to_string(i) + "]";
    const std::string& label = r.labels[i];
    if (label.empty()) refuse(what + " is empty");
    if (label.size() > limits::kMaxLabelBytes) {
      refuse(what + " is " + std::to_string(label.size()) + " bytes; at most " +
             std::to_string(limits::kMaxLabelBytes));
    }
    std::string copy = label;
    (void)check_text(copy, what, InputPolicy::kRefuse);
    for (size_t j = 0; j < i; ++j) {
      if (r.labels[j] == label) refuse(what + " repeats labels[" + std::to_string(j) + "] (\"" + label + "\")");
    }
  }
  return changed;
}

}  // namespace edgellm
