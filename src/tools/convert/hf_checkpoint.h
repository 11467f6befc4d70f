// A Hugging Face model directory as `save_pretrained` writes it:
//
//   config.json                      hyper-parameters (hf_config.h)
//   model.safetensors                the weights, or
//   model.safetensors.index.json     {"weight_map": {"tensor name": "model-00001-of-00002.safetensors"}}
//   model-0000N-of-0000M.safetensors   + the shards it names
//   tokenizer.json, tokenizer_config.json   (tokenizer_export.h)
//
// Every shard is mapped (nothing copied; a conversion touches one tensor's pages at a time).
// Validation, each failure an Error naming the file and tensor: the index's weight_map must list
// exactly the tensors its shards hold (a missing shard or a tensor in the wrong shard is refused,
// as llama.cpp's converter refuses it), shard names must be plain file names in the directory, and
// no tensor may appear in two shards. PyTorch .bin checkpoints are refused with a hint.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/json.h"
#include "tools/convert/safetensors.h"

namespace edgellm::convert {

class HfCheckpoint {
 public:
  // Errors: kIo (missing directory / config.json / weights), kInvalidFile (malformed files).
  static HfCheckpoint open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const Json& config_json() const { return config_; }
  // Shards in the order they are listed (sorted file names).
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // Every tensor of every shard, shards in order, each shard's tensors in header order.
  struct Entry {
    const SafetensorsTensor* tensor;
    const SafetensorsFile* shard;
  };
  const std::vector<Entry>& tensors() const { return tensors_; }
  const Entry* find(std::string_view name) const;
  uint64_t tensor_bytes() const;  // sum of every tensor's bytes

  // A JSON file of the directory (tokenizer.json, tokenizer_config.json), or nullptr when absent;
  // Error(kInvalidFile) naming it when present but malformed. Read on demand: the tokenizer's
  // document (100+ MB parsed for a 150k vocabulary) is not kept while tensors are converted.
  std::unique_ptr<Json> read_json(const std::string& name) const;
  // chat_template.jinja (newer transformers save the template there); empty when absent.
  std::string chat_template_file() const;

 private:
  std::string dir_;
  Json config_;
  std::vector<SafetensorsFile> shards_;
  std::vector<Entry> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// The whole file; Error(kIo) naming it when it cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace edgellm::convert
