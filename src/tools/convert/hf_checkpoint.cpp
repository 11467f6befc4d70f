#include "tools/convert/hf_checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace edgellm::convert {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::unique_ptr<Json> read_optional_json(const fs::path& p) {
  if (!is_file(p)) return nullptr;
  try {
    return std::make_unique<Json>(Json::parse(read_whole_file(p.string())));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidFile) throw;
    throw Error(ErrorCode::kInvalidFile, "'" + p.string() + "' is not valid JSON: " + e.what());
  }
}

// A shard name from the index must be a plain file in the checkpoint directory: no path
// separators, no "..", nothing absolute (a hostile index must not make us read elsewhere).
void check_shard_name(const std::string& name, const std::string& index_path) {
  const bool plain = !name.empty() && name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
                     name != "." && name != ".." && name.find('\0') == std::string::npos;
  require(
      plain, ErrorCode::kInvalidFile,
      "'" + index_path + "': shard name '" + name.substr(0, 64) + "' is not a file name in the checkpoint directory");
}

}  // namespace

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(ErrorCode::kIo, "cannot read '" + path + "'");
  return ss.str();
}

HfCheckpoint HfCheckpoint::open(const std::string& dir) {
  HfCheckpoint c;
  c.dir_ = dir;
  const fs::path root(dir);
  std::error_code ec;
  require(fs::is_directory(root, ec), ErrorCode::kIo,
          "'" + dir +
              "' is not a directory (convert reads a Hugging Face model directory: config.json, "
              "*.safetensors, tokenizer.json)");
  const fs::path config_path = root / "config.json";
  require(is_file(config_path), ErrorCode::kIo, "'" + dir + "' has no config.json");
  c.config_ = *read_optional_json(config_path);

  // Which shard files: the index's (sorted, as llama.cpp orders them), else model.safetensors,
  // else every model*.safetensors.
  std::vector<std::string> shard_names;
  std::unique_ptr<Json> index;
  const fs::path index_path = root / "model.safetensors.index.json";
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> shard
  if (is_file(index_path)) {
    index = read_optional_json(index_path);
    const Json* wm = index->find("weight_map");
    require(wm != nullptr && wm->is_object(), ErrorCode::kInvalidFile,
            "'" + index_path.string() + "' has no weight_map object");
    std::set<std::string> names;
    for (const auto& [tensor, shard] : wm->as_object()) {
      require(shard.is_string(), ErrorCode::kInvalidFile,
              "'" + index_path.string() + "': weight_map entry '" + tensor + "' is not a file name");
      check_shard_name(shard.as_string(), index_path.string());
      names.insert(shard.as_string());
      weight_map.emplace_back(tensor, shard.as_string());
    }
    require(!names.empty(), ErrorCode::kInvalidFile, "'" + index_path.string() + "': weight_map is empty");
    shard_names.assign(names.begin(), names.end());
  } else if (is_file(root / "model.safetensors")) {
    shard_names.push_back("model.safetensors");
  } else {
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("model", 0) == 0 && n.size() > 12 && n.substr(n.size() - 12) == ".safetensors" && is_file(e.path())) {
        shard_names.push_back(n);
      }
    }
    std::sort(shard_names.begin(), shard_names.end());
  }
  if (shard_names.empty()) {
    const bool bin = is_file(root / "pytorch_model.bin") || is_file(root / "pytorch_model.bin.index.json");
    throw Error(ErrorCode::kIo, "'" + dir + "' has no model.safetensors (nor model.safetensors.index.json)" +
                                    std::string(bin ? "; PyTorch .bin checkpoints are not read: save the model "
                                                      "with safe_serialization=True"
                                                    : ""));
  }
  for (const auto& n : shard_names) {
    const fs::path p = root / n;
    require(
        is_file(p), ErrorCode::kIo,
        "shard '" + n + "' " + (index ? "named by model.safetensors.index.json " : "") + "is missing in '" + dir + "'");
    c.shards_.push_back(SafetensorsFile::open(p.string()));
  }

  for (const SafetensorsFile& shard : c.shards_) {
    for (const SafetensorsTensor& t : shard.tensors()) {
      const auto [it, fresh] = c.index_.emplace(t.name, c.tensors_.size());
      if (!fresh) {
        throw Error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' is in both '" +
                                                 c.tensors_[it->second].shard->path() + "' and '" + shard.path() + "'");
      }
      c.tensors_.push_back({&t, &shard});
    }
  }
  if (index) {
    // The index and the shards must agree exactly: a tensor the index lists but no shard holds
    // means a missing or truncated download; one in another shard than listed, a stale index.
    for (const auto& [tensor, shard] : weight_map) {
      const Entry* e = c.find(tensor);
      require(e != nullptr, ErrorCode::kInvalidFile,
              "tensor '" + tensor + "' is listed in model.safetensors.index.json (shard '" + shard +
                  "') but no shard holds it (missing or incomplete download?)");
      require(fs::path(e->shard->path()).filename().string() == shard, ErrorCode::kInvalidFile,
              "tensor '" + tensor + "' is in '" + e->shard->path() + "' but the index says '" + shard + "'");
    }
    require(weight_map.size() == c.tensors_.size(), ErrorCode::kInvalidFile, [&] {
      std::set<std::string> listed;
      for (const auto& w : weight_map) listed.insert(w.first);
      for (const Entry& e : c.tensors_) {
        if (!listed.count(e.tensor->name)) {
          return "tensor '" + e.tensor->name + "' of '" + e.shard->path() + "' is not in model.safetensors.index.json";
        }
      }
      return std::string("model.safetensors.index.json lists a tensor twice");
    });
  }

  return c;
}

std::unique_ptr<Json> HfCheckpoint::read_json(const std::string& name) const {
  return read_optional_json(fs::path(dir_) / name);
}

std::string HfCheckpoint::chat_template_file() const {
  const fs::path p = fs::path(dir_) / "chat_template.jinja";
  return is_file(p) ? read_whole_file(p.string()) : std::string();
}

const HfCheckpoint::Entry* HfCheckpoint::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t HfCheckpoint::tensor_bytes() const {
  uint64_t n = 0;
  for (const Entry& e : tensors_) n += e.tensor->n_bytes;
  return n;
}

}  // namespace edgellm::convert
