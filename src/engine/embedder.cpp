#include "engine/embedder.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/memory_plan.h"
#include "engine/pooling.h"
#include "kv/kv_cache.h"
#include "platform/cpu_topology.h"
#include "platform/shared_thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

// Default tokens per forward: one long input, or many short ones in one pass over the weights.
constexpr int32_t kDefaultBatchTokens = 1024;

struct Resolved {
  int32_t n_ctx, n_batch, n_seq_max, n_threads;
};

Resolved resolve(const Model& model, const EmbedderParams& p) {
  const HParams& hp = model.hparams();
  require(p.n_ctx >= 0 && p.n_batch >= 0 && p.n_seq_max >= 1 && p.n_seq_max <= 256 && p.n_threads >= 0 &&
              p.n_threads <= 256,
          ErrorCode::kInvalidArgument,
          "embedder: n_ctx and n_batch must be >= 0, n_seq_max in [1, 256], n_threads in [0, 256]");
  Resolved r{};
  r.n_ctx = p.n_ctx > 0 ? p.n_ctx : (hp.encoder ? hp.n_ctx_train : std::min(hp.n_ctx_train, kDefaultContextCap));
  if (hp.encoder) {
    require(r.n_ctx <= hp.n_ctx_train, ErrorCode::kInvalidArgument,
            "embedder: n_ctx " + std::to_string(r.n_ctx) + " exceeds the " + std::to_string(hp.n_ctx_train) +
                " positions of this " + hp.arch + " model");
  }
  r.n_batch = std::max(p.n_batch > 0 ? p.n_batch : kDefaultBatchTokens, r.n_ctx);
  require(r.n_batch <= (1 << 16), ErrorCode::kInvalidArgument,
          "embedder: n_batch " + std::to_string(r.n_batch) + " is more than 65536 tokens per forward");
  r.n_seq_max = hp.encoder ? r.n_batch : p.n_seq_max;  // an encoder packs any number of sequences
  r.n_threads = p.n_threads > 0 ? p.n_threads : default_thread_count();
  return r;
}

ContextParams decoder_context_params(const Model& model, const Resolved& r, const EmbedderParams& p) {
  ContextParams cp;
  cp.n_ctx = r.n_ctx;
  cp.n_batch = r.n_batch;
  cp.n_seq_max = r.n_seq_max;
  cp.n_threads = r.n_threads;
  cp.kv_type = p.kv_type;
  cp.embeddings = true;
  cp.thread_pool = p.thread_pool;
  // One forward's sequences hold at most n_batch tokens together (one input may be n_ctx), plus
  // a partly filled block per sequence; they are cleared after it.
  const KvCacheParams kp = kv_cache_params(model.hparams(), cp);
  const int64_t blocks = (static_cast<int64_t>(r.n_batch) + cp.kv_block_tokens - 1) / cp.kv_block_tokens + r.n_seq_max;
  cp.kv_budget_bytes = static_cast<size_t>(blocks) * KvCache::block_bytes(kp);
  return cp;
}

}  // namespace

const char* truncation_name(Truncation t) {
  return t == Truncation::kEnd ? "end" : "refuse";
}

Embedder::Embedder(const Model& model, const EmbedderParams& params) : model_(model), params_(params) {
  const Resolved r = resolve(model, params);
  n_ctx_ = r.n_ctx;
  n_batch_ = r.n_batch;
  n_seq_max_ = r.n_seq_max;
  n_threads_ = r.n_threads;
  if (model.hparams().encoder) {
    pool_ = params.thread_pool ? params.thread_pool : shared_thread_pool(n_threads_);
    encoder_ = std::make_unique<EncoderPass>(model, n_batch_, n_ctx_, n_threads_);
    seqs_.reserve(static_cast<size_t>(n_batch_));
  } else {
    context_ = std::make_unique<Context>(model, decoder_context_params(model, r, params));
  }
  row_.resize(static_cast<size_t>(model.hparams().n_embd));
}

Embedder::~Embedder() = default;

PoolingType Embedder::default_pooling() const {
  return resolve_pooling(model_.hparams(), PoolingType::kUnspecified);
}

size_t Embedder::planned_bytes(const Model& model, const EmbedderParams& params) {
  const MemoryPlan m = plan_embedder_memory(model, params, RepackMode::kOff);
  return m.kv + m.scratch + m.logits;
}

EmbedderParams Embedder::resolved_params(const Model& model, const EmbedderParams& params) {
  const Resolved r = resolve(model, params);
  EmbedderParams p = params;
  p.n_ctx = r.n_ctx;
  p.n_batch = r.n_batch;
  p.n_seq_max = r.n_seq_max;
  p.n_threads = r.n_threads;
  return p;
}

ContextParams Embedder::context_params(const Model& model, const EmbedderParams& params) {
  return decoder_context_params(model, resolve(model, params), params);
}

size_t Embedder::trim() {
  if (encoder_) {
    const size_t bytes = encoder_->allocated_bytes();
    encoder_.reset();
    return bytes;
  }
  return context_ ? context_->trim() : 0;
}

size_t Embedder::allocated_bytes() const {
  if (context_) return context_->allocated_bytes();
  return encoder_ ? encoder_->allocated_bytes() : 0;
}

void Embedder::check_input(const EmbedInput& in, size_t index) const {
  const HParams& hp = model_.hparams();
  const std::string which = "input " + std::to_string(index);
  require(!in.tokens.empty(), ErrorCode::kInvalidArgument, which + " has no tokens");
  require(static_cast<int64_t>(in.tokens.size()) <= n_ctx_, ErrorCode::kInvalidArgument, [&] {
    return which + " has " + std::to_string(in.tokens.size()) + " tokens, more than the " + std::to_string(n_ctx_) +
           " this embedder takes (truncate it, or raise n_ctx)";
  });
  require(in.types.empty() || in.types.size() == in.tokens.size(), ErrorCode::kInvalidArgument,
          which + ": token types must be empty or one per token");
  for (const int32_t id : in.tokens) {
    require(id >= 0 && id < hp.n_vocab, ErrorCode::kInvalidArgument, [&] {
      return which + ": token id " + std::to_string(id) + " is outside [0, " + std::to_string(hp.n_vocab) + ")";
    });
  }
  for (const int32_t t : in.types) {
    require(t == 0 || t == 1, ErrorCode::kInvalidArgument,
            which + ": token type " + std::to_string(t) + " is not 0 (first text) or 1 (second text)");
  }
}

size_t Embedder::output_floats(const EmbedInput& input, PoolingType pooling) const {
  pooling = resolve_pooling(model_.hparams(), pooling);
  const auto dims = static_cast<size_t>(pooled_dims(model_.hparams(), pooling));
  return pooling == PoolingType::kNone ? dims * input.tokens.size() : dims;
}

void Embedder::embed(const std::vector<EmbedInput>& inputs, PoolingType pooling, int normalize,
                     std::vector<float>& out) {
  check_pooling(model_, resolve_pooling(model_.hparams(), pooling));
  std::vector<Job> jobs(inputs.size());
  size_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    jobs[i] = Job{&inputs[i], pooling, normalize, nullptr};
    total += output_floats(inputs[i], pooling);
  }
  const size_t base = out.size();
  out.resize(base + total);
  size_t at = base;
  for (Job& j : jobs) {
    j.out = out.data() + at;
    at += output_floats(*j.input, pooling);
  }
  try {
    run(jobs.data(), jobs.size());
  } catch (...) {
    out.resize(base);
    throw;
  }
}

void Embedder::run(Job* jobs, size_t n_jobs) {
  for (size_t i = 0; i < n_jobs; ++i) {
    jobs[i].pooling = resolve_pooling(model_.hparams(), jobs[i].pooling);
    check_pooling(model_, jobs[i].pooling);
    require(jobs[i].input != nullptr && jobs[i].out != nullptr, ErrorCode::kInvalidArgument,
            "embedder: job " + std::to_string(i) + " has no input or no output");
    check_normalize(jobs[i].normalize);
    check_input(*jobs[i].input, i);
  }
  size_t first = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < n_jobs; ++i) {
    const auto n = static_cast<int64_t>(jobs[i].input->tokens.size());
    if (i > first && (tokens + n > n_batch_ || static_cast<int32_t>(i - first) >= n_seq_max_)) {
      run_forward(jobs + first, i - first);
      first = i;
      tokens = 0;
    }
    tokens += n;
  }
  if (n_jobs > first) run_forward(jobs + first, n_jobs - first);
}

void Embedder::run_forward(const Job* jobs, size_t n) {
  if (model_.hparams().encoder) {
    run_encoder(jobs, n);
  } else {
    run_decoder(jobs, n);
  }
  ++forwards_;
  const int32_t dims = model_.hparams().n_embd;
  for (size_t j = 0; j < n; ++j) {
    if (jobs[j].pooling == PoolingType::kRank) continue;  // scores, not vectors
    const size_t rows = jobs[j].pooling == PoolingType::kNone ? jobs[j].input->tokens.size() : 1;
    for (size_t r = 0; r < rows; ++r)
      normalize_embedding(jobs[j].out + r * static_cast<size_t>(dims), dims, jobs[j].normalize);
  }
}

void Embedder::run_encoder(const Job* jobs, size_t n) {
  const HParams& hp = model_.hparams();
  if (!encoder_) encoder_ = std::make_unique<EncoderPass>(model_, n_batch_, n_ctx_, n_threads_);  // after trim()
  // A model with one token-type row (or none) has no second segment: HF then feeds type 0 for
  // every token, which is what a null types pointer does.
  const bool use_types = hp.n_token_types >= 2;
  seqs_.clear();
  for (size_t j = 0; j < n; ++j) {
    const EmbedInput& in = *jobs[j].input;
    seqs_.push_back({in.tokens.data(), use_types && !in.types.empty() ? in.types.data() : nullptr,
                     static_cast<int32_t>(in.tokens.size())});
  }
  encoder_->run(seqs_.data(), static_cast<int32_t>(seqs_.size()), *pool_, n_threads_, abort_);
  const int32_t E = hp.n_embd;
  int32_t t0 = 0;
  for (size_t j = 0; j < n; ++j) {
    const EncoderSequence& s = seqs_[j];
    const float* h = encoder_->hidden(t0);
    switch (jobs[j].pooling) {
      case PoolingType::kNone: std::copy(h, h + static_cast<int64_t>(s.n) * E, jobs[j].out); break;
      case PoolingType::kRank:
        rank_head(model_, h, jobs[j].out);  // the [CLS] state
        break;
      default: pool_hidden(jobs[j].pooling, h, s.n, E, jobs[j].out);
    }
    t0 += s.n;
  }
}

void Embedder::run_decoder(const Job* jobs, size_t n) {
  const HParams& hp = model_.hparams();
  Context& ctx = *context_;
  ctx.clear();
  Batch batch;
  for (size_t s = 0; s < n; ++s) {
    const std::vector<int32_t>& tokens = jobs[s].input->tokens;
    const PoolingType pooling = jobs[s].pooling;
    const auto len = static_cast<int32_t>(tokens.size());
    for (int32_t i = 0; i < len; ++i) {
      bool want = true;  // none, mean: every token's state
      if (pooling == PoolingType::kCls) want = i == 0;
      if (pooling == PoolingType::kLast || pooling == PoolingType::kRank) want = i == len - 1;
      batch.add(static_cast<int32_t>(s), tokens[static_cast<size_t>(i)], i, want);
    }
  }
  ctx.set_abort_check(abort_);
  try {
    ctx.decode(batch);
  } catch (...) {
    ctx.set_abort_check(AbortCheck{});
    ctx.clear();
    throw;
  }
  ctx.set_abort_check(AbortCheck{});
  const int32_t E = hp.n_embd;
  int32_t row = 0;
  for (size_t s = 0; s < n; ++s) {
    const auto len = static_cast<int32_t>(jobs[s].input->tokens.size());
    float* o = jobs[s].out;
    switch (jobs[s].pooling) {
      case PoolingType::kNone:
        for (int32_t i = 0; i < len; ++i, o += E) std::copy(ctx.embeddings(row + i), ctx.embeddings(row + i) + E, o);
        row += len;
        break;
      case PoolingType::kMean:  // this sequence's rows are consecutive in the output buffer
        pool_hidden(PoolingType::kMean, ctx.embeddings(row), len, E, o);
        row += len;
        break;
      case PoolingType::kRank: rank_head(model_, ctx.embeddings(row++), o); break;
      default:  // cls, last: the one output row of this sequence
        std::copy(ctx.embeddings(row), ctx.embeddings(row) + E, o);
        ++row;
    }
  }
  ctx.clear();
}

// ---------------------------------------------------------------------------------- inputs

namespace {

// Special tokens add_special puts after the text: [SEP] (WordPiece), EOS (add_eos).
size_t closing_specials(const Tokenizer& tok) {
  return static_cast<size_t>(tok.data().add_sep && tok.sep() >= 0) +
         static_cast<size_t>(tok.data().add_eos && tok.eos() >= 0);
}

std::string too_long(size_t n, int32_t max_tokens) {
  return "the input has " + std::to_string(n) + " tokens, more than the " + std::to_string(max_tokens) +
         " the embedding model takes (truncate: \"end\" cuts it)";
}

}  // namespace

EmbedInput token_input(std::vector<int32_t> tokens, int32_t max_tokens, Truncation truncation, bool* truncated) {
  require(!tokens.empty(), ErrorCode::kInvalidArgument, "the input has no tokens");
  const bool cut = static_cast<int64_t>(tokens.size()) > max_tokens;
  require(!cut || truncation == Truncation::kEnd, ErrorCode::kInvalidArgument,
          [&] { return too_long(tokens.size(), max_tokens); });
  if (cut) tokens.resize(static_cast<size_t>(max_tokens));
  if (truncated) *truncated = cut;
  return EmbedInput{std::move(tokens), {}};
}

EmbedInput text_input(const Tokenizer& tok, std::string_view text, int32_t max_tokens, Truncation truncation,
                      bool* truncated) {
  std::vector<int32_t> tokens = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  require(!tokens.empty(), ErrorCode::kInvalidArgument, "the input tokenizes to no tokens");
  const bool cut = static_cast<int64_t>(tokens.size()) > max_tokens;
  require(!cut || truncation == Truncation::kEnd, ErrorCode::kInvalidArgument,
          [&] { return too_long(tokens.size(), max_tokens); });
  if (cut) {
    const size_t tail = std::min(closing_specials(tok), static_cast<size_t>(max_tokens) - 1);
    std::vector<int32_t> kept(tokens.begin(), tokens.begin() + (max_tokens - static_cast<int64_t>(tail)));
    kept.insert(kept.end(), tokens.end() - static_cast<int64_t>(tail), tokens.end());
    tokens.swap(kept);
  }
  if (truncated) *truncated = cut;
  return EmbedInput{std::move(tokens), {}};
}

EmbedInput pair_input(const Tokenizer& tok, std::string_view query, std::string_view document, int32_t max_tokens,
                      Truncation truncation, bool* truncated) {
  std::vector<int32_t> q = tok.encode(query, false, false);
  std::vector<int32_t> d = tok.encode(document, false, false);
  // The frame around the two texts: [CLS] q [SEP] d [SEP] for WordPiece; otherwise llama-server's
  // generic rerank format: BOS? q EOS? SEP? d EOS?.
  std::vector<int32_t> head, middle, tail;
  if (tok.is_wordpiece()) {
    head = {tok.cls()};
    middle = {tok.sep()};
    tail = {tok.sep()};
  } else {
    if (tok.add_bos() && tok.bos() >= 0) head.push_back(tok.bos());
    if (tok.eos() >= 0) middle.push_back(tok.eos());
    if (tok.sep() >= 0) middle.push_back(tok.sep());
    if (tok.eos() >= 0) tail.push_back(tok.eos());
  }
  const int64_t frame = static_cast<int64_t>(head.size() + middle.size() + tail.size());
  const int64_t total = frame + static_cast<int64_t>(q.size() + d.size());
  const bool cut = total > max_tokens;
  require(!cut || truncation == Truncation::kEnd, ErrorCode::kInvalidArgument,
          [&] { return too_long(static_cast<size_t>(total), max_tokens); });
  require(max_tokens > frame, ErrorCode::kInvalidArgument, "max_tokens is too small for a query-document pair");
  if (cut) {  // the document first (queries are short), then the query
    const int64_t room = max_tokens - frame;
    const auto q_keep = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(q.size()), room));
    q.resize(q_keep);
    d.resize(
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(d.size()), room - static_cast<int64_t>(q_keep))));
  }
  EmbedInput in;
  for (const auto* part : {&head, &q, &middle}) in.tokens.insert(in.tokens.end(), part->begin(), part->end());
  in.types.assign(in.tokens.size(), 0);
  for (const auto* part : {&d, &tail}) in.tokens.insert(in.tokens.end(), part->begin(), part->end());
  in.types.resize(in.tokens.size(), 1);
  if (truncated) *truncated = cut;
  require(!in.tokens.empty(), ErrorCode::kInvalidArgument, "the query-document pair tokenizes to no tokens");
  return in;
}

}  // namespace edgellm
