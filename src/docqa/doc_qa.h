// Document Q&A on the device ("ask my notes"): a folder of documents is chunked
// (text_chunker.h), embedded by an embedding Runtime and kept in a local vector index file
// (vector_index.h, index_file.h); a question is embedded the same way, the nearest chunks are
// found (exactly), optionally reordered by a reranker Runtime, and a generation Runtime answers
// from them, citing the chunk ids it used. Nothing leaves the device.
//
//   index_directory(dir)   every .txt / .md file under dir: new ones added, changed ones (by
//                          SHA-256 of their content) re-chunked and re-embedded, vanished ones
//                          removed, unchanged ones left alone; then one atomic save
//   retrieve(question)     top candidates by cosine; with a reranker, the top_k by its scores
//   ask(question)          the top_k chunks numbered by chunk id in the prompt; the answer's
//                          "[id]" markers that name a chunk it was given are its citations
//
// Thread-safety: one thread uses a DocQa at a time (it owns its index); the Runtimes it is given
// may be shared with other users.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "docqa/text_chunker.h"
#include "docqa/vector_index.h"
#include "engine/embedder.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "service/request.h"

namespace edgellm {

class Runtime;

struct DocQaOptions {
  // Chunk size and overlap in the embedder's tokens; max_tokens 0: min(256, the embedder's
  // context - 2), so a chunk and its [CLS] / [SEP] (or BOS / EOS) always fit.
  ChunkOptions chunk = {0, 32};
  // Inputs longer than the embedder's / reranker's context (a chunk whose count came out over,
  // a long question): cut (kEnd, keeping [SEP] / EOS) or refused (kRefuse: the error names it).
  Truncation truncation = Truncation::kEnd;
  bool rebuild = false;  // start from an empty index (the file is not read; the next save replaces it)
  VectorType vector_type = VectorType::kInt8;
  std::vector<std::string> extensions = {".txt", ".md", ".markdown"};
  uint64_t max_document_bytes = uint64_t{16} << 20;  // larger files are skipped (and noted)
  // Put before the question when it is embedded (documents are embedded as they are): bge
  // English v1.5 models retrieve better with "Represent this sentence for searching relevant
  // passages: "; most models want nothing.
  std::string query_prefix;
  int32_t top_k = 4;         // chunks the answer is generated from
  int32_t candidates = 16;   // chunks retrieved before the reranker keeps top_k of them
  int32_t embed_batch = 32;  // chunks per embedding request while indexing
  int32_t max_answer_tokens = 256;
  SamplerParams sampling = [] {
    SamplerParams s;
    s.temperature = 0;  // greedy: the same question gives the same answer
    return s;
  }();
};

struct IndexReport {
  int32_t added = 0, updated = 0, removed = 0, unchanged = 0, skipped = 0;
  int64_t chunks_added = 0, chunks_removed = 0, tokens_embedded = 0;
  double seconds = 0;
  std::vector<std::string> notes;  // skipped files and why, sanitized text
};

struct RetrievedChunk {
  uint32_t chunk = 0;  // id
  std::string path;    // its document
  uint32_t begin = 0, end = 0;
  std::string text;
  float score = 0;  // cosine with the question
  std::optional<float> rerank_score;
};

// Where a retrieval's time went (milliseconds, wall clock).
struct RetrieveTiming {
  double embed_ms = 0;   // the question through the embedder (queue wait included)
  double search_ms = 0;  // the exact scan over every stored vector and the top-k
  double rerank_ms = 0;  // the reranker's request (0 without one)
};

struct Citation {
  uint32_t chunk = 0;
  std::string path;
  uint32_t begin = 0, end = 0;
};

struct DocAnswer {
  std::string answer;
  std::vector<RetrievedChunk> context;  // what the generator was given, best first
  std::vector<Citation> citations;      // the chunks the answer cites, in the order it cites them
  FinishReason finish_reason = FinishReason::kError;
  std::string error;
  double retrieve_ms = 0, generate_ms = 0;
  RetrieveTiming retrieve_timing;
};

class DocQa {
 public:
  // Opens `index_path` (a new, empty index when the file does not exist). Throws Error:
  // kInvalidArgument when `embedder` is not an embedding runtime or the index was built with
  // another embedding model (vectors of two models do not compare: rebuild it), kInvalidFile
  // for a corrupt file (index_file.h: its reason; nothing is changed on disk), kIo.
  DocQa(Runtime& embedder, std::string index_path, DocQaOptions options = {});
  ~DocQa();
  DocQa(const DocQa&) = delete;
  DocQa& operator=(const DocQa&) = delete;

  IndexReport index_directory(const std::string& dir);
  // One document under a key of the caller's (an app's note id): added, or replaced when its
  // content changed. Not saved until save().
  IndexReport add_or_update(const std::string& key, std::string_view text, int64_t mtime = 0);
  bool remove(const std::string& key);
  void save();

  // top_k > 0 overrides options().top_k for this call (with a reranker, at least that many
  // candidates are retrieved for it to reorder).
  std::vector<RetrievedChunk> retrieve(const std::string& question, Runtime* reranker = nullptr,
                                       RetrieveTiming* timing = nullptr, int32_t top_k = 0);
  // retrieve + generate. The passages are dropped from the lowest-ranked while the rendered
  // prompt (the generator's chat template) and max_answer_tokens exceed the generator's context;
  // DocAnswer::context holds what was given. Throws Error(kInvalidArgument) for an empty index or
  // question, or a question that leaves no room for one passage, and what the runtimes throw at
  // submit; a generation that fails ends as the answer's finish_reason / error.
  // deadline_ms > 0 bounds the whole ask, retrieval included (the embedder's and reranker's
  // requests get what is left of it, the generation the rest): past it the answer is the text
  // so far with finish_reason kTimeout, and when it passes before the generation starts, no text
  // and no context (the shape of a generation that timed out in its queue).
  DocAnswer ask(const std::string& question, Runtime& generator, Runtime* reranker = nullptr, int64_t deadline_ms = 0);

  // ask() in its two halves, for a caller that runs the generation itself (the server streams
  // the answer and cancels it when its client leaves): prepare_answer retrieves and fits the
  // passages (the part that uses the index: the caller's one-user rule covers only it) and
  // returns the generation's request; the caller sets its callbacks, submits it to `generator`
  // and takes the citations of what came back with cite(). Throws as ask() does.
  struct PreparedAnswer {
    std::vector<RetrievedChunk> context;  // what the generator is given, best first
    RetrieveTiming retrieve_timing;
    double retrieve_ms = 0;
    bool timed_out = false;  // the deadline passed during retrieval: `request` is not to be submitted
    ServiceRequest request;  // messages, max_answer_tokens, sampling, the deadline's remainder
  };
  PreparedAnswer prepare_answer(const std::string& question, Runtime& generator, Runtime* reranker = nullptr,
                                int64_t deadline_ms = 0);
  // The chunks of `context` that `answer` cites ("[id]" markers), in the order it cites them.
  static std::vector<Citation> cite(std::string_view answer, const std::vector<RetrievedChunk>& context);

  const VectorIndex& index() const { return *index_; }
  const std::string& index_path() const { return path_; }
  const DocQaOptions& options() const { return options_; }  // chunk size resolved

  // The chat messages the generator gets: a system message with the rules (answer from the
  // passages only, cite them as [id], say so when they do not hold the answer) and a user
  // message with the passages ("[id] (path) text") and the question.
  static Json answer_messages(const std::string& question, const std::vector<RetrievedChunk>& context);
  // A document key as every face takes it (an app's note id, stored in the index file and shown
  // in citations): 1 to kMaxKeyBytes bytes of valid UTF-8 without control characters. Throws
  // Error(kInvalidArgument) naming what is wrong (the byte of an ill-formed sequence).
  static constexpr size_t kMaxKeyBytes = 4096;
  static void check_key(std::string_view key);
  // The ids of "[n]" (also "[n, m]", "[n][m]") markers in `answer`, in order of first use.
  static std::vector<uint32_t> cited_ids(std::string_view answer);
  // The embedding model's identity as the index records it (fingerprint, architecture, dims).
  static std::string model_id_of(Runtime& embedder);

 private:
  std::vector<float> embed_texts(const std::vector<std::string>& texts, int64_t* tokens);
  std::string settings_json() const;
  // retrieve() within `deadline` (Clock::time_point::max(): none); nullopt when it passed.
  std::optional<std::vector<RetrievedChunk>> retrieve_by(const std::string& question, Runtime* reranker,
                                                         RetrieveTiming* timing, int32_t top_k,
                                                         std::chrono::steady_clock::time_point deadline);

  Runtime& embedder_;
  std::string path_;
  DocQaOptions options_;
  std::unique_ptr<VectorIndex> index_;
  bool loaded_from_file_ = false;  // the file at path_ was read whole: it may become the backup
};

}  // namespace edgellm
