#include "tools/bench/ttft_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>

#include "tools/bench/bench_runner.h"
#include "tools/bench/page_cache.h"
#include "tools/bench/service_request.h"
#include "core/error.h"
#include "core/json.h"
#include "service/inference_service.h"

namespace edgellm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct FirstToken {
  double ttft_ms = 0;         // RequestStats::ttft_ms: submit -> first token sampled
  int32_t cached_tokens = 0;
};

FirstToken first_token(InferenceService& service, const std::vector<int32_t>& prompt) {
  const ServiceRun run = run_greedy_request(service, prompt, 1);
  return {run.stats.ttft_ms, run.stats.cached_tokens};
}

class RandomTokens {
 public:
  RandomTokens(uint64_t seed, int32_t n_vocab) : rng_(seed), dist_(0, n_vocab - 1) {}
  std::vector<int32_t> next(int32_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = dist_(rng_);
    return t;
  }

 private:
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int32_t> dist_;
};

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void summarize(TtftRecord& r) {
  r.median_ttft_ms = median(r.ttft_ms);
  if (!r.ttft_ms.empty()) {
    r.min_ttft_ms = *std::min_element(r.ttft_ms.begin(), r.ttft_ms.end());
    r.max_ttft_ms = *std::max_element(r.ttft_ms.begin(), r.ttft_ms.end());
  }
  r.median_load_ms = median(r.load_ms);
  r.median_start_ms = median(r.start_ms);
  r.median_first_token_ms = median(r.first_token_ms);
  r.median_resident_before = r.resident_before.empty() ? -1.0 : median(r.resident_before);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

Json samples(const std::vector<double>& v) {
  Json a = Json::array();
  for (const double x : v) a.push_back(x);
  return a;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<TtftRecord> run_ttft_bench(const TtftParams& params, const std::function<void(const std::string&)>& log) {
  require(!params.models.empty(), ErrorCode::kInvalidArgument, "no model given (-m)");
  require(!params.prompts.empty(), ErrorCode::kInvalidArgument, "no prompt length given (--ttft-prompts)");
  for (const int32_t n : params.prompts) {
    require(n >= 1, ErrorCode::kInvalidArgument, "prompt lengths must be >= 1, got " + std::to_string(n));
  }
  require(params.system_tokens >= 0, ErrorCode::kInvalidArgument,
          "system prompt tokens must be >= 0, got " + std::to_string(params.system_tokens));
  require(params.repetitions >= 1, ErrorCode::kInvalidArgument,
          "repetitions must be >= 1, got " + std::to_string(params.repetitions));
  const auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  const int32_t max_prompt = *std::max_element(params.prompts.begin(), params.prompts.end());

  ServiceParams sp;
  // Room for the system prompt, the longest prompt and the sampled token; two sequences, so the
  // blocks of the request that populated the prefix cache are still cached (not evicted for the
  // next request's) when the request sharing its system prompt comes.
  sp.context.n_ctx = params.system_tokens + max_prompt + 8;
  sp.context.n_seq_max = 2;
  sp.context.n_threads = params.n_threads;
  sp.context.n_threads_batch = params.n_threads;
  sp.context.kv_type = params.kv_type;
  sp.load.repack = params.repack;
  sp.max_queued = 1;

  std::vector<TtftRecord> out;
  for (const std::string& path : params.models) {
    RandomTokens tokens(params.seed, 1);  // replaced once the vocabulary size is known
    std::string model_type;
    int32_t n_threads = 0;
    bool pack_mapped = false;  // the load maps a pack file (model/pack_file.h) instead of repacking
    {
      // The model's type and vocabulary, and the service's resolved thread count, from a first
      // load (also the process's first: thread pool, kernel tables) that no row counts.
      const std::shared_ptr<const Model> model = Model::load(path, sp.load);
      model_type = describe_model_type(*model);
      pack_mapped = model->pack_mapped_tensors() > 0;
      tokens = RandomTokens(params.seed, model->hparams().n_vocab);
      InferenceService service(model, sp);
      n_threads = service.context_params().n_threads_batch;
    }
    const auto new_record = [&](const std::string& scenario, int32_t prompt, int32_t system) {
      TtftRecord r;
      r.model_filename = path;
      r.model_type = model_type;
      r.scenario = scenario;
      r.prompt_tokens = prompt;
      r.system_tokens = system;
      r.n_threads = n_threads;
      r.repack = std::string(repack_mode_name(params.repack)) + (pack_mapped ? " + pack file" : "");
      return r;
    };

    // Cold starts first, with no model of this file loaded in the process (a mapping would keep
    // its pages in the page cache whatever DONTNEED asks).
    if (params.cold) {
      std::vector<TtftRecord> rows;
      for (const int32_t n : params.prompts) {
        rows.push_back(new_record("cold", n, 0));
        if (params.drop_page_cache) rows.push_back(new_record("cold, page cache dropped", n, 0));
      }
      for (int32_t rep = 0; rep < params.repetitions; ++rep) {
        for (TtftRecord& r : rows) {
          const bool drop = r.scenario != "cold";
          if (drop) {
            const std::string why = drop_page_cache(path);
            require(why.empty(), ErrorCode::kIo, why);
          }
          const double resident = page_cache_resident_fraction(path);
          const std::vector<int32_t> prompt = tokens.next(r.prompt_tokens);
          const auto t0 = Clock::now();
          std::shared_ptr<const Model> model = Model::load(path, sp.load);
          const double load = ms_since(t0);
          auto service = std::make_unique<InferenceService>(model, sp);
          const double start = ms_since(t0) - load;
          const double before_submit = ms_since(t0);
          const FirstToken ft = first_token(*service, prompt);
          service.reset();
          model.reset();
          r.load_ms.push_back(load);
          r.start_ms.push_back(start);
          r.first_token_ms.push_back(ft.ttft_ms);
          r.ttft_ms.push_back(before_submit + ft.ttft_ms);
          r.resident_before.push_back(resident);
          r.cached_tokens = ft.cached_tokens;
          say(file_name_of(path) + ": " + r.scenario + ", prompt " + std::to_string(r.prompt_tokens) + ": load " +
              fmt("%.1f", load) + " ms, start " + fmt("%.1f", start) + " ms, first token " + fmt("%.1f", ft.ttft_ms) +
              " ms (" + fmt("%.0f", 100.0 * resident) + "% of the file cached before)");
        }
      }
      for (TtftRecord& r : rows) {
        summarize(r);
        out.push_back(std::move(r));
      }
    }

    // Warm: one service for every warm row, warmed up by an untimed request as long as the
    // longest one (every weight page touched, scratch at its largest).
    std::shared_ptr<const Model> model = Model::load(path, sp.load);
    InferenceService service(model, sp);
    (void)first_token(service, tokens.next(params.system_tokens + max_prompt));
    std::vector<TtftRecord> rows;
    for (const int32_t n : params.prompts) {
      rows.push_back(new_record("warm", n, 0));
      if (params.system_tokens > 0) {
        rows.push_back(new_record("warm + system", n, params.system_tokens));
        rows.push_back(new_record("warm + system cached", n, params.system_tokens));
      }
    }
    for (int32_t rep = 0; rep < params.repetitions; ++rep) {
      std::vector<int32_t> system;
      for (TtftRecord& r : rows) {
        if (r.scenario == "warm + system") system = tokens.next(params.system_tokens);  // fresh: not cached
        const std::vector<int32_t> prompt = r.system_tokens > 0 ? concat(system, tokens.next(r.prompt_tokens))
                                                                : tokens.next(r.prompt_tokens);
        const FirstToken ft = first_token(service, prompt);
        r.first_token_ms.push_back(ft.ttft_ms);
        r.ttft_ms.push_back(ft.ttft_ms);
        r.cached_tokens = ft.cached_tokens;
        say(file_name_of(path) + ": " + r.scenario + ", prompt " + std::to_string(r.prompt_tokens) + ": " +
            fmt("%.1f", ft.ttft_ms) + " ms (" + std::to_string(ft.cached_tokens) + " tokens from the prefix cache)");
      }
    }
    for (TtftRecord& r : rows) {
      summarize(r);
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::string format_ttft_markdown(const std::vector<TtftRecord>& records) {
  std::ostringstream o;
  o << "| model | repack | threads | scenario | system | prompt | cached | file in page cache | load ms | start ms "
       "| first token ms | TTFT ms (median) | TTFT range ms | reps |\n";
  o << "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const TtftRecord& r : records) {
    const bool cold = !r.load_ms.empty();
    o << "| " << r.model_type << " | " << r.repack << " | " << r.n_threads << " | " << r.scenario << " | "
      << r.system_tokens << " | " << r.prompt_tokens << " | " << r.cached_tokens << " | "
      << (cold && r.median_resident_before >= 0 ? fmt("%.0f%%", 100.0 * r.median_resident_before) : "-") << " | "
      << (cold ? fmt("%.1f", r.median_load_ms) : "-") << " | " << (cold ? fmt("%.1f", r.median_start_ms) : "-")
      << " | " << fmt("%.1f", r.median_first_token_ms) << " | " << fmt("%.1f", r.median_ttft_ms) << " | "
      << fmt("%.1f", r.min_ttft_ms) << "–" << fmt("%.1f", r.max_ttft_ms) << " | " << r.ttft_ms.size() << " |\n";
  }
  return o.str();
}

std::string format_ttft_json(const std::vector<TtftRecord>& records) {
  Json arr = Json::array();
  for (const TtftRecord& r : records) {
    Json j = Json::object();
    j.set("model_filename", r.model_filename);
    j.set("model_type", r.model_type);
    j.set("scenario", r.scenario);
    j.set("prompt_tokens", static_cast<int64_t>(r.prompt_tokens));
    j.set("system_tokens", static_cast<int64_t>(r.system_tokens));
    j.set("cached_tokens", static_cast<int64_t>(r.cached_tokens));
    j.set("n_threads", static_cast<int64_t>(r.n_threads));
    j.set("repack", r.repack);
    j.set("median_ttft_ms", r.median_ttft_ms);
    j.set("min_ttft_ms", r.min_ttft_ms);
    j.set("max_ttft_ms", r.max_ttft_ms);
    j.set("median_first_token_ms", r.median_first_token_ms);
    j.set("ttft_ms", samples(r.ttft_ms));
    j.set("first_token_ms", samples(r.first_token_ms));
    const bool cold = !r.load_ms.empty();
    j.set("median_load_ms", cold ? Json(r.median_load_ms) : Json(nullptr));
    j.set("median_start_ms", cold ? Json(r.median_start_ms) : Json(nullptr));
    j.set("load_ms", cold ? samples(r.load_ms) : Json(nullptr));
    j.set("start_ms", cold ? samples(r.start_ms) : Json(nullptr));
    j.set("page_cache_resident_before", cold ? samples(r.resident_before) : Json(nullptr));
    arr.push_back(j);
  }
  return arr.dump(2) + "\n";
}

}  // namespace edgellm::bench
