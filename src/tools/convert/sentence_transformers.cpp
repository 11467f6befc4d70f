#include "tools/convert/sentence_transformers.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "core/error.h"
#include "core/json.h"
#include "tools/convert/hf_checkpoint.h"

namespace edgellm::convert {
namespace {

[[noreturn]] void bad_modules(const std::string& what) {
  throw Error(ErrorCode::kInvalidFile, "modules.json: " + what);
}

// A module folder must stay inside the model directory: plain relative segments only.
bool safe_relative_path(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.find('\\') != std::string_view::npos) return false;
  size_t at = 0;
  while (at <= p.size()) {
    const size_t end = std::min(p.find('/', at), p.size());
    const std::string_view seg = p.substr(at, end - at);
    if (seg.empty() || seg == "." || seg == "..") return false;
    at = end + 1;
  }
  return true;
}

bool pooling_flag(const Json& cfg, const char* key) {
  const Json* v = cfg.find(key);
  return v != nullptr && v->is_bool() && v->as_bool();
}

}  // namespace

std::optional<DeclaredPooling> read_sentence_transformers_pooling(const HfCheckpoint& ckpt) {
  const std::unique_ptr<Json> modules = ckpt.read_json("modules.json");
  if (!modules) return std::nullopt;
  if (!modules->is_array()) bad_modules("not a list of modules");
  std::string path;
  for (const Json& m : modules->as_array()) {
    if (!m.is_object()) bad_modules("a module is not an object");
    const Json* type = m.find("type");
    if (type == nullptr || !type->is_string()) bad_modules("a module has no type");
    const std::string& t = type->as_string();
    if (t.size() < 7 || t.compare(t.size() - 7, 7, "Pooling") != 0) continue;
    const Json* p = m.find("path");
    if (p == nullptr || !p->is_string()) bad_modules("the " + t.substr(0, 64) + " module has no path");
    path = p->as_string();
    if (!safe_relative_path(path)) {
      bad_modules("module path '" + path.substr(0, 64) + "' is not a folder inside the model directory");
    }
    break;
  }
  if (path.empty()) return std::nullopt;
  const std::string file = path + "/config.json";
  const std::unique_ptr<Json> cfg = ckpt.read_json(file);
  require(cfg != nullptr, ErrorCode::kIo,
          "modules.json names a pooling module '" + path + "' but " + file + " is missing");
  if (!cfg->is_object()) throw Error(ErrorCode::kInvalidFile, file + ": not a JSON object");
  DeclaredPooling d;
  if (pooling_flag(*cfg, "pooling_mode_mean_tokens")) {
    d = {PoolingType::kMean, file + " pooling_mode_mean_tokens"};
  } else if (pooling_flag(*cfg, "pooling_mode_cls_token")) {
    d = {PoolingType::kCls, file + " pooling_mode_cls_token"};
  } else if (pooling_flag(*cfg, "pooling_mode_lasttoken")) {
    d = {PoolingType::kLast, file + " pooling_mode_lasttoken"};
  } else if (const Json* mode = cfg->find("pooling_mode"); mode && mode->is_string()) {
    const std::string& m = mode->as_string();
    if (m == "mean") d = {PoolingType::kMean, file + " pooling_mode"};
    if (m == "cls") d = {PoolingType::kCls, file + " pooling_mode"};
    if (m == "lasttoken") d = {PoolingType::kLast, file + " pooling_mode"};
  }
  require(d.type != PoolingType::kUnspecified, ErrorCode::kUnsupported,
          file +
              " declares a pooling other than mean, cls or lasttoken (max, weighted mean and mean / sqrt(length) "
              "pooling are not supported)");
  return d;
}

}  // namespace edgellm::convert
