// What `edgellm embed`, `edgellm rerank` and `edgellm docqa` share: the embedder's options (as
// llama-server names them), opening an embedding Runtime, and running one request to its end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "generation_options.h"
#include "runtime/runtime.h"
#include "service/embedding_request.h"

namespace edgellm::cli {

struct EmbedderOptions {
  ModelOptions model;      // -m / --registry
  int32_t ctx_size = 0;    // -c: longest input (0: the model's)
  int32_t batch_size = 0;  // -b: tokens per forward (0: max(ctx, 1024))
  int32_t threads = 0;     // -t
  std::string truncate = "refuse";
};

// -m / --registry, -c,--ctx-size  -b,--batch-size  -t,--threads (the shared options), --truncate refuse|end
void add_embedder_options(ArgParser& ap, EmbedderOptions& o, const std::string& model_note);
Truncation parse_truncation(const std::string& text);

// An embedding runtime (RuntimeParams::role kEmbed) over `model` with the options.
std::unique_ptr<Runtime> open_embedding_runtime(const EmbedderOptions& o);

// Submits and waits for on_finish; an error result throws its Error.
EmbeddingResult run_embedding_request(Runtime& rt, EmbeddingRequest request);

// `text` split at every `separator` (empty pieces dropped); "\\n" and "\\t" in the separator are
// the control characters, as llama-embedding reads --embd-separator.
std::vector<std::string> split_texts(const std::string& text, std::string separator);
std::string unescape_separator(std::string separator);
std::string read_text_file(const std::string& path);

}  // namespace edgellm::cli
