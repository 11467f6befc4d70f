#include "embedding_cli.h"

#include <chrono>
#include <cstdio>
#include <future>

#include "core/error.h"

namespace edgellm::cli {

void add_embedder_options(ArgParser& ap, EmbedderOptions& o, const std::string& model_note) {
  add_model_options(ap, &o.model, model_note);
  ap.add_int(shared_option("ctx-size"), &o.ctx_size, 0, 1 << 20, "longest input; default 0: the model's positions");
  ap.add_int(shared_option("batch-size"), &o.batch_size, 0, 1 << 16, "default 0: max(ctx, 1024)");
  ap.add_int(shared_option("threads"), &o.threads, 0, 256, "default 0: the big cores");
  ap.add_string("--truncate", &o.truncate, "MODE",
                "inputs longer than the context: refuse (default) or end (cut, keeping [SEP] / EOS)");
}

Truncation parse_truncation(const std::string& text) {
  if (text == "refuse") return Truncation::kRefuse;
  if (text == "end") return Truncation::kEnd;
  throw Error(ErrorCode::kInvalidArgument, "--truncate '" + text + "' is not one of refuse, end");
}

std::unique_ptr<Runtime> open_embedding_runtime(const EmbedderOptions& o) {
  RuntimeParams p;
  p.model_path = resolve_model_path(o.model);
  p.role = RuntimeRole::kEmbed;
  p.embedding.embedder.n_ctx = o.ctx_size;
  p.embedding.embedder.n_batch = o.batch_size;
  p.embedding.embedder.n_threads = o.threads;
  p.embedding.max_queued = 64;
  return std::make_unique<Runtime>(p);
}

EmbeddingResult run_embedding_request(Runtime& rt, EmbeddingRequest request) {
  auto done = std::make_shared<std::promise<EmbeddingResult>>();
  request.deadline_ms = 0;  // the CLI waits as long as it takes
  request.on_finish = [done](EmbeddingResult& r) { done->set_value(std::move(r)); };
  rt.embed(std::move(request));
  EmbeddingResult r = done->get_future().get();
  if (r.finish_reason == FinishReason::kError) throw Error(r.error_code, r.error);
  require(r.finish_reason == FinishReason::kStop, ErrorCode::kCancelled, "the embedding request was cancelled");
  return r;
}

std::string unescape_separator(std::string separator) {
  std::string out;
  for (size_t i = 0; i < separator.size(); ++i) {
    if (separator[i] == '\\' && i + 1 < separator.size() && (separator[i + 1] == 'n' || separator[i + 1] == 't')) {
      out.push_back(separator[i + 1] == 'n' ? '\n' : '\t');
      ++i;
    } else {
      out.push_back(separator[i]);
    }
  }
  return out;
}

std::vector<std::string> split_texts(const std::string& text, std::string separator) {
  separator = unescape_separator(separator);
  std::vector<std::string> out;
  if (separator.empty()) {
    if (!text.empty()) out.push_back(text);
    return out;
  }
  size_t pos = 0;
  for (;;) {
    const size_t next = text.find(separator, pos);
    std::string piece = text.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!piece.empty()) out.push_back(std::move(piece));
    if (next == std::string::npos) break;
    pos = next + separator.size();
  }
  return out;
}

std::string read_text_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  require(f != nullptr, ErrorCode::kIo, "cannot open '" + path + "'");
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  require(!failed, ErrorCode::kIo, "cannot read '" + path + "'");
  return data;
}

}  // namespace edgellm::cli
