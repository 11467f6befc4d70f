#include "registry/model_manifest.h"

#include <cmath>

#include "core/error.h"
#include "core/sha256.h"

namespace edgellm {
namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error(ErrorCode::kInvalidFile, "model manifest: field '" + field + "' " + why);
}

const Json& field(const Json& j, const char* name, Json::Type type, const char* type_name) {
  const Json* v = j.find(name);
  if (!v) bad(name, "is missing");
  if (v->type() != type) bad(name, std::string("must be a ") + type_name);
  return *v;
}

double non_negative(const Json& j, const char* name) {
  const Json* v = j.find(name);
  if (!v || v->is_null()) return 0;
  if (!v->is_number()) bad(name, "must be a number");
  const double d = v->as_number();
  if (!std::isfinite(d) || d < 0) bad(name, "must be a finite number >= 0");
  return d;
}

std::string optional_string(const Json& j, const char* name, size_t max_len) {
  const Json* v = j.find(name);
  if (!v || v->is_null()) return {};
  if (!v->is_string()) bad(name, "must be a string");
  if (v->as_string().size() > max_len) bad(name, "is longer than " + std::to_string(max_len) + " bytes");
  return v->as_string();
}

}  // namespace

bool is_registry_identifier(std::string_view s) {
  if (s.empty() || s.size() > 64 || s.front() == '.') return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Json ModelManifest::to_json() const {
  Json j = Json::object();
  j.set("name", name);
  j.set("version", version);
  j.set("file", file);
  j.set("size_bytes", size_bytes);
  j.set("sha256", sha256);
  j.set("weight_type", weight_type);
  j.set("tier", tier);
  j.set("prefill_tokens_per_second", prefill_tokens_per_second);
  j.set("decode_tokens_per_second", decode_tokens_per_second);
  j.set("task_score", task_score ? Json(*task_score) : Json(nullptr));
  j.set("source", source);
  return j;
}

ModelManifest ModelManifest::from_json(const Json& j) {
  if (!j.is_object()) throw Error(ErrorCode::kInvalidFile, "model manifest: not a JSON object");
  ModelManifest m;
  m.name = field(j, "name", Json::Type::kString, "string").as_string();
  if (!is_registry_identifier(m.name)) bad("name", "must be 1-64 characters of [A-Za-z0-9._-], not starting with '.'");
  m.version = field(j, "version", Json::Type::kString, "string").as_string();
  if (!is_registry_identifier(m.version)) bad("version", "must be 1-64 characters of [A-Za-z0-9._-], not starting with '.'");
  m.file = field(j, "file", Json::Type::kString, "string").as_string();
  if (!is_registry_identifier(m.file.substr(0, m.file.find('@'))) || m.file.find('/') != std::string::npos ||
      m.file.find("..") != std::string::npos || m.file.empty()) {
    bad("file", "must be a plain file name inside the registry");
  }
  const double size = field(j, "size_bytes", Json::Type::kNumber, "number").as_number();
  if (!(size >= 0) || size > 9.0e15 || size != std::floor(size)) bad("size_bytes", "must be a whole number of bytes");
  m.size_bytes = static_cast<uint64_t>(size);
  m.sha256 = field(j, "sha256", Json::Type::kString, "string").as_string();
  if (!is_sha256_hex(m.sha256)) bad("sha256", "must be 64 hex digits");
  for (auto& c : m.sha256) c = static_cast<char>((c >= 'A' && c <= 'F') ? c - 'A' + 'a' : c);
  m.weight_type = optional_string(j, "weight_type", 32);
  m.tier = optional_string(j, "tier", 32);
  m.source = optional_string(j, "source", 4096);
  m.prefill_tokens_per_second = non_negative(j, "prefill_tokens_per_second");
  m.decode_tokens_per_second = non_negative(j, "decode_tokens_per_second");
  if (const Json* s = j.find("task_score"); s && !s->is_null()) {
    if (!s->is_number() || !std::isfinite(s->as_number())) bad("task_score", "must be a number or null");
    m.task_score = s->as_number();
  }
  return m;
}

}  // namespace edgellm
