#include "registry/model_manifest.h"

#include <algorithm>
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
  Json scores = Json::array();
  for (const TaskScore& t : task_scores) scores.push_back(t.to_json());
  j.set("task_scores", std::move(scores));
  return j;
}

Json TaskScore::to_json() const {
  Json j = Json::object();
  j.set("task_file", task_file);
  j.set("task_file_sha256", task_file_sha256);
  j.set("metric", metric);
  j.set("value", value);
  j.set("cases", cases);
  j.set("date", date);
  return j;
}

TaskScore TaskScore::from_json(const Json& j) {
  if (!j.is_object()) bad("task_scores", "entries must be objects");
  TaskScore t;
  t.task_file = optional_string(j, "task_file", 256);
  t.task_file_sha256 = field(j, "task_file_sha256", Json::Type::kString, "string").as_string();
  if (!is_sha256_hex(t.task_file_sha256)) bad("task_scores.task_file_sha256", "must be 64 hex digits");
  for (auto& c : t.task_file_sha256) c = static_cast<char>((c >= 'A' && c <= 'F') ? c - 'A' + 'a' : c);
  t.metric = field(j, "metric", Json::Type::kString, "string").as_string();
  if (!is_registry_identifier(t.metric)) bad("task_scores.metric", "must be 1-64 characters of [A-Za-z0-9._-]");
  t.value = field(j, "value", Json::Type::kNumber, "number").as_number();
  if (!std::isfinite(t.value)) bad("task_scores.value", "must be finite");
  const double cases = non_negative(j, "cases");
  if (cases > 1e12 || cases != std::floor(cases)) bad("task_scores.cases", "must be a whole number");
  t.cases = static_cast<int64_t>(cases);
  t.date = optional_string(j, "date", 40);
  return t;
}

void ModelManifest::record_task_scores(const std::vector<TaskScore>& scores) {
  for (const TaskScore& s : scores) {
    std::erase_if(task_scores, [&](const TaskScore& t) {
      return t.task_file_sha256 == s.task_file_sha256 && t.metric == s.metric;
    });
    task_scores.push_back(s);
  }
  if (task_scores.size() > kMaxTaskScores) {
    task_scores.erase(task_scores.begin(), task_scores.begin() + static_cast<std::ptrdiff_t>(task_scores.size() - kMaxTaskScores));
  }
}

std::optional<double> ModelManifest::task_score_for(const std::string& task_file_sha256, const std::string& metric) const {
  for (const TaskScore& t : task_scores) {
    if (t.task_file_sha256 == task_file_sha256 && t.metric == metric) return t.value;
  }
  return std::nullopt;
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
  if (const Json* s = j.find("task_scores"); s && !s->is_null()) {
    if (!s->is_array()) bad("task_scores", "must be an array");
    if (s->size() > kMaxTaskScores) bad("task_scores", "has more than " + std::to_string(kMaxTaskScores) + " entries");
    for (size_t i = 0; i < s->size(); ++i) {
      try {
        m.task_scores.push_back(TaskScore::from_json(s->at(i)));
      } catch (const Error& e) {
        throw Error(ErrorCode::kInvalidFile, "model manifest: task_scores[" + std::to_string(i) + "]: " + e.what());
      }
    }
  }
  return m;
}

std::vector<std::optional<double>> ranking_task_scores(const std::vector<ModelManifest>& manifests) {
  std::vector<std::optional<double>> out;
  const TaskScore* shared = nullptr;  // the chosen pair, as the first manifest records it
  std::string shared_date;
  if (!manifests.empty()) {
    for (const TaskScore& t : manifests.front().task_scores) {
      std::string newest = t.date;
      bool everywhere = true;
      for (size_t i = 1; i < manifests.size() && everywhere; ++i) {
        everywhere = false;
        for (const TaskScore& u : manifests[i].task_scores) {
          if (u.task_file_sha256 == t.task_file_sha256 && u.metric == t.metric) {
            everywhere = true;
            newest = std::max(newest, u.date);
          }
        }
      }
      if (!everywhere) continue;
      if (shared == nullptr || newest > shared_date || (newest == shared_date && t.metric < shared->metric)) {
        shared = &t;
        shared_date = newest;
      }
    }
  }
  for (const ModelManifest& m : manifests) {
    out.push_back(shared != nullptr ? m.task_score_for(shared->task_file_sha256, shared->metric) : m.task_score);
  }
  return out;
}

}  // namespace edgellm
