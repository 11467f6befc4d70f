// GCC 12 warns "may be used uninitialized" inside libstdc++'s <regex> (std::function members of
// the NFA states) when optimising with sanitizers; the warning is a false positive in the
// standard library, so it is silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "tools/quant/quant_rules.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace edgellm::quant {
namespace {

struct FileTypeEntry {
  const char* name;
  FileType ftype;
  TensorType base;
};

// Canonical names first (file_type_name returns the first entry of each ftype).
constexpr FileTypeEntry kFileTypes[] = {
    {"F32", FileType::kAllF32, TensorType::F32},
    {"F16", FileType::kMostlyF16, TensorType::F16},
    {"BF16", FileType::kMostlyBF16, TensorType::BF16},
    {"Q4_0", FileType::kMostlyQ4_0, TensorType::Q4_0},
    {"Q4_1", FileType::kMostlyQ4_1, TensorType::Q4_1},
    {"Q5_0", FileType::kMostlyQ5_0, TensorType::Q5_0},
    {"Q5_1", FileType::kMostlyQ5_1, TensorType::Q5_1},
    {"Q8_0", FileType::kMostlyQ8_0, TensorType::Q8_0},
    {"Q4_K_S", FileType::kMostlyQ4_K_S, TensorType::Q4_K},
    {"Q4_K_M", FileType::kMostlyQ4_K_M, TensorType::Q4_K},
    {"Q5_K_S", FileType::kMostlyQ5_K_S, TensorType::Q5_K},
    {"Q5_K_M", FileType::kMostlyQ5_K_M, TensorType::Q5_K},
    {"Q6_K", FileType::kMostlyQ6_K, TensorType::Q6_K},
    // Aliases.
    {"Q4_K", FileType::kMostlyQ4_K_S, TensorType::Q4_K},
    {"Q5_K", FileType::kMostlyQ5_K_S, TensorType::Q5_K},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

FileType file_type_from_name(std::string_view name) {
  for (const auto& e : kFileTypes) {
    if (iequals(name, e.name)) return e.ftype;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown quantization type '" + std::string(name) + "' (expected one of " + file_type_names() + ")");
}

const char* file_type_name(FileType ftype) {
  for (const auto& e : kFileTypes) {
    if (e.ftype == ftype) return e.name;
  }
  return "unknown";
}

TensorType file_type_base_type(FileType ftype) {
  for (const auto& e : kFileTypes) {
    if (e.ftype == ftype) return e.base;
  }
  throw Error(ErrorCode::kInternal, "file type " + std::to_string(static_cast<uint32_t>(ftype)) + " has no base type");
}

std::string file_type_names() {
  std::string out;
  for (const auto& e : kFileTypes) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

TypeRule parse_type_rule(std::string_view text) {
  const std::string_view t = trim(text);
  // The type is after the LAST '=' so a regex may itself contain '='.
  const size_t eq = t.rfind('=');
  require(eq != std::string_view::npos && eq > 0 && eq + 1 < t.size(), ErrorCode::kInvalidArgument,
          "rule '" + std::string(text) + "' is not of the form REGEX=type");
  TypeRule rule;
  rule.pattern = std::string(trim(t.substr(0, eq)));
  const std::string_view type_name = trim(t.substr(eq + 1));
  const auto type = tensor_type_from_name(type_name);
  require(type.has_value() && tensor_type_traits(*type).is_weight_type, ErrorCode::kInvalidArgument,
          "rule '" + std::string(text) + "': '" + std::string(type_name) + "' is not a weight type");
  rule.type = *type;
  try {
    rule.re = std::regex(rule.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error(ErrorCode::kInvalidArgument, "rule '" + std::string(text) + "': bad regex: " + e.what());
  }
  return rule;
}

std::vector<TypeRule> parse_type_rules(std::string_view text, const std::string& origin) {
  std::vector<TypeRule> rules;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    try {
      rules.push_back(parse_type_rule(line));
    } catch (const Error& e) {
      throw Error(e.code(), origin + ":" + std::to_string(line_no) + ": " + e.what());
    }
  }
  return rules;
}

std::vector<TensorDesc> describe_tensors(const gguf::GgufFile& file) {
  std::vector<TensorDesc> out;
  out.reserve(file.tensors().size());
  for (const auto& t : file.tensors()) {
    TensorDesc d;
    d.name = std::string(t.name);
    d.type = t.type;
    d.n_dims = t.n_dims;
    std::copy(std::begin(t.ne), std::end(t.ne), std::begin(d.ne));
    out.push_back(std::move(d));
  }
  return out;
}

// ------------------------------------------------------------------ planner

TypePlanner::TypePlanner(PlannerOptions options, const std::vector<TensorDesc>& all_tensors)
    : options_(std::move(options)) {
  for (const auto& t : all_tensors) {
    if (t.name == "output.weight") has_output_ = true;
    if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight")) ++n_attention_wv_;
    if (contains(t.name, "ffn_down") && is_quantizable_weight(t)) ++n_ffn_down_;
  }
}

bool TypePlanner::use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

bool TypePlanner::is_quantizable_weight(const TensorDesc& t) {
  if (!std::string_view(t.name).ends_with("weight")) return false;
  if (t.n_dims < 2) return false;
  if (contains(t.name, "_norm.weight")) return false;
  // Learned position / token-type embeddings are looked up, never multiplied (llama.cpp keeps them).
  if (contains(t.name, "position_embd") || contains(t.name, "token_types")) return false;
  return true;
}

TensorType TypePlanner::fit_to_width(TensorType wanted, int64_t width, std::string* note) {
  const int64_t block = tensor_block_size(wanted);
  if (width % block == 0) return wanted;
  TensorType alt = TensorType::F16;
  switch (wanted) {
    case TensorType::Q4_K: alt = TensorType::Q5_0; break;
    case TensorType::Q5_K: alt = TensorType::Q5_1; break;
    case TensorType::Q6_K: alt = TensorType::Q8_0; break;
    default: alt = TensorType::F16; break;
  }
  std::string why = "row width " + std::to_string(width) + " is not a multiple of " + std::to_string(block) +
                    " (" + tensor_type_name(wanted) + ")";
  if (width % tensor_block_size(alt) != 0) {
    why += " nor of " + std::to_string(tensor_block_size(alt)) + " (" + tensor_type_name(alt) + ")";
    alt = TensorType::F16;
  }
  if (note) *note = why + ": falling back to " + tensor_type_name(alt);
  return alt;
}

TensorType TypePlanner::recipe_type(const TensorDesc& t, std::string* reason) {
  const FileType ft = options_.ftype;
  TensorType type = file_type_base_type(ft);
  const bool is_attn_v = contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight");
  const bool is_ffn_down = contains(t.name, "ffn_down");
  // Counters advance for every tensor of the category, whatever type it ends up with (llama.cpp).
  const int i_wv = is_attn_v ? i_attention_wv_++ : -1;
  const int i_down = is_ffn_down ? i_ffn_down_++ : -1;

  const bool mix = !options_.pure && tensor_type_traits(type).is_quantized;
  if (!mix) return type;

  const bool is_output = t.name == "output.weight" || (!has_output_ && t.name == "token_embd.weight");
  if (is_output) {
    // The output projection is the most sensitive matrix: llama.cpp gives it Q6_K (Q8_0 when the
    // width does not allow a K-quant) unless the recipe is already Q8_0.
    if (t.ne[0] % 256 != 0) {
      type = TensorType::Q8_0;
    } else if (type != TensorType::Q8_0) {
      type = TensorType::Q6_K;
    }
    if (reason) *reason = "output tensor";
    return type;
  }
  if (is_attn_v) {
    if ((ft == FileType::kMostlyQ4_K_M || ft == FileType::kMostlyQ5_K_M) && use_more_bits(i_wv, n_attention_wv_)) {
      type = TensorType::Q6_K;
      if (reason) *reason = std::string(file_type_name(ft)) + ": use_more_bits attn_v " + std::to_string(i_wv) + "/" +
                            std::to_string(n_attention_wv_);
    } else if (ft == FileType::kMostlyQ4_K_S && i_wv < 4) {
      type = TensorType::Q5_K;
      if (reason) *reason = "Q4_K_S: attn_v of the first 4 layers";
    }
    return type;
  }
  if (is_ffn_down) {
    if ((ft == FileType::kMostlyQ4_K_M || ft == FileType::kMostlyQ5_K_M) && use_more_bits(i_down, n_ffn_down_)) {
      type = TensorType::Q6_K;
      if (reason) *reason = std::string(file_type_name(ft)) + ": use_more_bits ffn_down " + std::to_string(i_down) +
                            "/" + std::to_string(n_ffn_down_);
    } else if (ft == FileType::kMostlyQ4_K_S && i_down < n_ffn_down_ / 8) {
      type = TensorType::Q5_K;
      if (reason) *reason = "Q4_K_S: ffn_down of the first 1/8 layers";
    } else if ((ft == FileType::kMostlyQ4_0 || ft == FileType::kMostlyQ5_0) && options_.has_imatrix &&
               i_down < n_ffn_down_ / 8) {
      // llama.cpp guards the first ffn_down layers of Q4_0 / Q5_0 with the _1 type, but only with
      // an imatrix, so that a run without one keeps its old result.
      type = ft == FileType::kMostlyQ4_0 ? TensorType::Q4_1 : TensorType::Q5_1;
      if (reason) *reason = std::string(file_type_name(ft)) + " with an imatrix: ffn_down of the first 1/8 layers";
    }
    return type;
  }
  return type;
}

TypeDecision TypePlanner::decide(const TensorDesc& t) {
  TypeDecision d;
  if (!is_quantizable_weight(t)) {
    d.type = t.type;
    d.quantizable = false;
    d.reason = t.n_dims < 2 ? "1-D tensor kept as is" : "not a weight matrix, kept as is";
    return d;
  }
  d.quantizable = true;
  // The recipe runs first even when a rule matches, so its layer counters stay in step.
  std::string reason;
  TensorType wanted = recipe_type(t, &reason);
  if (const auto it = options_.tensor_types.find(t.name); it != options_.tensor_types.end()) {
    wanted = it->second;
    reason = "recipe";
  } else {
    for (const auto& rule : options_.rules) {
      if (std::regex_search(t.name, rule.re)) {
        wanted = rule.type;
        reason = "rule '" + rule.pattern + "'";
        break;
      }
    }
  }
  std::string note;
  d.type = fit_to_width(wanted, t.ne[0], &note);
  d.fallback = d.type != wanted;
  d.reason = d.fallback ? (reason.empty() ? note : reason + "; " + note) : reason;
  return d;
}

}  // namespace edgellm::quant
