#include "device/planner.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "model/model.h"
#include "registry/crash_loop_guard.h"
#include "registry/model_registry.h"

namespace edgellm {
namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

struct Ranked {
  PlanCandidate c;
  std::unique_ptr<Model> model;
  std::string weight_type;
  std::string load_error;
  size_t weights = 0;
};

// "q8_0" when K and V are one type, else "q8_0/q4_0" (K/V).
std::string kv_types_text(const PlanOption& o) {
  std::string t = tensor_type_name(o.kv_type);
  if (o.kv_type_v != o.kv_type) t += std::string("/") + tensor_type_name(o.kv_type_v);
  return t;
}

}  // namespace

const std::vector<KvTypePair>& plan_kv_ladder() {
  // Measured on tiny-zh-poems against F16 KV (docs/quantization.md, "KV cache types"): Q8_0 costs
  // nothing measurable (53 % of the bytes), Q8_0 K + Q4_0 V a mean KLD of 0.0019 (41 %), Q4_0
  // for both 0.0066 (28 %): 4-bit V before 4-bit K.
  static const std::vector<KvTypePair> ladder = {{TensorType::F16, TensorType::F16},
                                                 {TensorType::Q8_0, TensorType::Q8_0},
                                                 {TensorType::Q8_0, TensorType::Q4_0},
                                                 {TensorType::Q4_0, TensorType::Q4_0}};
  return ladder;
}

std::string plan_guard_key(const std::string& label, int32_t n_ctx, TensorType kv_type, TensorType kv_type_v) {
  std::string safe = label;
  for (auto& c : safe) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '@' || c == '=';
    if (!ok) c = '_';
  }
  if (safe.size() > 120) safe = safe.substr(safe.size() - 120);
  std::string key = safe + "/ctx=" + std::to_string(n_ctx) + "/kv=" + tensor_type_name(kv_type);
  // '-' joins K and V: the guard accepts only [A-Za-z0-9._@=/-] (the key names a marker file).
  if (kv_type_v != kv_type) key += std::string("-") + tensor_type_name(kv_type_v);
  return key;
}

Plan make_plan(const DeviceProfile& device, const std::vector<PlanCandidate>& candidates, const PlanOptions& o) {
  require(!candidates.empty(), ErrorCode::kInvalidArgument, "the planner needs at least one candidate model");
  require(o.min_ctx >= 16 && o.max_ctx >= o.min_ctx && o.max_ctx <= (1 << 20), ErrorCode::kInvalidArgument,
          "plan: need 16 <= min_ctx <= max_ctx <= 1048576");
  require(o.n_parallel >= 1 && o.n_parallel <= 256, ErrorCode::kInvalidArgument, "plan: n_parallel must be 1-256");
  Plan plan;
  plan.device = device;
  plan.headroom = o.headroom;
  plan.budget_bytes = device.budget_bytes(o.headroom);
  plan.power = o.power;
  plan.threads = plan_threads(device, o.power);
  plan.estimate_prompt_tokens = o.estimate_prompt_tokens;
  plan.estimate_answer_tokens = o.estimate_answer_tokens;
  require(o.min_decode_tokens_per_second >= 0 && o.estimate_prompt_tokens >= 0 && o.estimate_answer_tokens >= 0,
          ErrorCode::kInvalidArgument, "plan: speeds and token counts must be >= 0");

  // Companions (an embedder, a reranker) run beside whichever candidate is chosen: their memory
  // comes off the budget first.
  for (const PlanCompanion& c : o.companions) {
    CompanionPlan cp;
    cp.label = c.label.empty() ? c.path : c.label;
    cp.path = c.path;
    try {
      ModelLoadParams lp;
      lp.repack = RepackMode::kOff;
      const auto model = Model::load(c.path, lp);
      cp.memory = plan_embedder_memory(*model, c.embedder, RepackMode::kAuto);
      plan.companion_bytes += cp.memory.total();
    } catch (const Error& e) {
      cp.error = e.what();
    }
    plan.companions.push_back(std::move(cp));
  }
  const uint64_t budget = plan.budget_bytes > plan.companion_bytes ? plan.budget_bytes - plan.companion_bytes : 0;

  // A draft model beside every candidate: loaded once (mmap, no repacking), counted per
  // configuration (its KV is one sequence of the configuration's n_ctx per parallel sequence:
  // the service keeps a draft context per sequence slot).
  plan.draft_model = o.draft_model;
  std::unique_ptr<Model> draft;
  if (!o.draft_model.empty()) {
    try {
      ModelLoadParams lp;
      lp.repack = RepackMode::kOff;
      draft = Model::load(o.draft_model, lp);
    } catch (const Error& e) {
      throw Error(e.code(), "plan: draft model '" + o.draft_model + "': " + e.what());
    }
  }

  // Load each candidate's index and views (mmap, no repacking: cheap) to run the formula.
  std::vector<Ranked> ranked;
  for (const auto& c : candidates) {
    Ranked r;
    r.c = c;
    try {
      ModelLoadParams lp;
      lp.repack = RepackMode::kOff;
      r.model = Model::load(c.path, lp);
      r.weight_type = dominant_weight_type(c.path);
      r.weights = plan_memory(*r.model, ContextParams{}, RepackMode::kOff).weights_touched;
    } catch (const Error& e) {
      r.load_error = e.what();
    }
    ranked.push_back(std::move(r));
  }
  const bool all_scored =
      std::all_of(ranked.begin(), ranked.end(), [](const Ranked& r) { return r.c.task_score.has_value(); });
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Ranked& a, const Ranked& b) {
    if (all_scored && *a.c.task_score != *b.c.task_score) return *a.c.task_score > *b.c.task_score;
    return a.weights > b.weights;
  });

  for (const Ranked& r : ranked) {
    PlanOption best;
    best.label = r.c.label;
    best.path = r.c.path;
    best.weight_type = r.weight_type;
    best.prefill_tokens_per_second = r.c.prefill_tokens_per_second;
    best.decode_tokens_per_second = r.c.decode_tokens_per_second;
    if (!r.model) {
      best.rejected = "cannot be loaded: " + r.load_error;
      plan.considered.push_back(best);
      continue;
    }
    const int32_t top = std::min(o.max_ctx, std::max(r.model->hparams().n_ctx_train, o.min_ctx));
    std::string last_unfit;
    PlanOption smallest;  // the least demanding configuration, reported when nothing fits
    bool found = false;
    std::vector<int32_t> contexts;  // top, top / 2, ... down to min_ctx
    for (int32_t c = top; c > o.min_ctx; c /= 2) contexts.push_back(c);
    contexts.push_back(o.min_ctx);
    for (int32_t ctx : contexts) {
      for (const KvTypePair& kv : plan_kv_ladder()) {
        // Q8_0 and Q4_0 rows are whole 32-value blocks.
        if ((kv.k != TensorType::F16 || kv.v != TensorType::F16) && r.model->hparams().head_dim % 32 != 0) continue;
        for (int32_t batch : {512, 256, 128}) {
          ContextParams cp;
          cp.n_ctx = ctx;
          cp.n_batch = batch;
          cp.n_seq_max = o.n_parallel;
          cp.kv_type = kv.k;
          if (kv.v != kv.k) cp.kv_type_v = kv.v;
          apply_thread_plan(plan.threads, cp);  // counts and placements (a decode pool of its own counts)
          PlanOption opt = best;
          opt.n_ctx = ctx;
          opt.kv_type = kv.k;
          opt.kv_type_v = kv.v;
          opt.n_batch = batch;
          opt.memory = plan_memory(*r.model, cp, RepackMode::kAuto, draft.get());
          opt.guard_key = plan_guard_key(r.c.label, ctx, kv.k, kv.v);
          smallest = opt;
          if (opt.memory.total() > budget) continue;
          std::string why;
          if (o.guard && o.guard->is_unfit(opt.guard_key, &why)) {
            last_unfit = opt.guard_key + ": " + why;
            break;  // a smaller batch does not change what was killed: try the next KV / context
          }
          opt.fits = true;
          best = opt;
          found = true;
          break;
        }
        if (found) break;
      }
      if (found) break;
    }
    if (!found) {
      best = smallest;
      best.fits = false;
      best.rejected = !last_unfit.empty()
                          ? "every configuration that fits is marked unfit (" + last_unfit + ")"
                          : "needs " + mib(smallest.memory.total()) + " even at ctx " + std::to_string(smallest.n_ctx) +
                                ", " + kv_types_text(smallest) + " KV, batch " + std::to_string(smallest.n_batch) +
                                "; the budget is " + mib(budget) +
                                (plan.companion_bytes ? " after " + mib(plan.companion_bytes) + " of companions" : "");
    }
    const double tg = r.c.decode_tokens_per_second;
    if (best.fits && tg > 0 && tg < o.min_decode_tokens_per_second) {
      char why[160];
      std::snprintf(why, sizeof why, "measured %.1f tok/s decode on this device, below the %.1f tok/s wanted", tg,
                    o.min_decode_tokens_per_second);
      best.fits = false;
      best.rejected = why;
    }
    if (best.fits && !plan.choice) plan.choice = best;
    plan.considered.push_back(best);
  }
  return plan;
}

Json Plan::to_json() const {
  Json j = Json::object();
  j.set("device", device.to_json());
  j.set("headroom", headroom);
  j.set("budget_bytes", budget_bytes);
  j.set("power_mode", power_mode_name(power));
  Json t = Json::object();
  t.set("prefill", threads.prefill);
  t.set("decode", threads.decode);
  t.set("decode_on_efficiency_cores", threads.decode_on_efficiency_cores);
  t.set("prefill_placement", threads.prefill_placement.to_string());
  t.set("decode_placement", threads.decode_placement.to_string());
  j.set("threads", t);
  auto option_json = [this](const PlanOption& o) {
    Json x = Json::object();
    x.set("model", o.label);
    x.set("path", o.path);
    x.set("weight_type", o.weight_type);
    x.set("fits", o.fits);
    if (o.prefill_tokens_per_second > 0 && o.decode_tokens_per_second > 0) {
      Json sp = Json::object();
      sp.set("prefill_tokens_per_second", o.prefill_tokens_per_second);
      sp.set("decode_tokens_per_second", o.decode_tokens_per_second);
      sp.set("estimate_prefill_seconds", estimate_prompt_tokens / o.prefill_tokens_per_second);
      sp.set("estimate_decode_seconds", estimate_answer_tokens / o.decode_tokens_per_second);
      x.set("measured", sp);
    }
    if (!o.rejected.empty()) x.set("rejected", o.rejected);
    if (o.n_ctx > 0) {
      x.set("n_ctx", o.n_ctx);
      x.set("kv_type", tensor_type_name(o.kv_type));
      x.set("kv_type_v", tensor_type_name(o.kv_type_v));
      x.set("n_batch", o.n_batch);
      x.set("guard_key", o.guard_key);
      x.set("memory", o.memory.to_json());
    }
    return x;
  };
  Json comps = Json::array();
  for (const CompanionPlan& c : companions) {
    Json x = Json::object();
    x.set("model", c.label);
    x.set("path", c.path);
    if (c.error.empty()) {
      x.set("memory", c.memory.to_json());
    } else {
      x.set("error", c.error);
    }
    comps.push_back(std::move(x));
  }
  j.set("companions", std::move(comps));
  j.set("companion_bytes", companion_bytes);
  j.set("draft_model", draft_model.empty() ? Json(nullptr) : Json(draft_model));
  j.set("choice", choice ? option_json(*choice) : Json(nullptr));
  Json c = Json::array();
  for (const auto& o : considered) c.push_back(option_json(o));
  j.set("considered", c);
  return j;
}

std::string Plan::to_text() const {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof line, "device %s: %s RAM, %s available, app limit %s, %d cores in %zu clusters, %s\n",
                device.name.c_str(), mib(device.ram_total_bytes).c_str(), mib(device.ram_available_bytes).c_str(),
                device.app_limit_bytes ? mib(device.app_limit_bytes).c_str() : "none", device.total_cores(),
                device.clusters.size(), device.isa.c_str());
  s += line;
  std::snprintf(line, sizeof line, "budget %s (the smaller of limit and available, less %.0f %% headroom)\n",
                mib(budget_bytes).c_str(), headroom * 100);
  s += line;
  std::snprintf(line, sizeof line, "power mode %s: prefill on %d threads (%s), decode on %d%s (%s)\n\n",
                power_mode_name(power), threads.prefill, threads.prefill_placement.to_string().c_str(), threads.decode,
                threads.decode_on_efficiency_cores ? " efficiency cores" : "",
                threads.decode_placement.to_string().c_str());
  s += line;
  for (const CompanionPlan& c : companions) {
    if (!c.error.empty()) {
      s += "beside it: " + c.label + ": cannot be planned (" + c.error + "), counted as 0\n";
      continue;
    }
    const MemoryPlan& m = c.memory;
    std::snprintf(line, sizeof line,
                  "beside it: %s (embedder): weights %s + KV %s + scratch %s + tokenizer %s + runtime %s = %s\n",
                  c.label.c_str(), mib(m.weights_touched).c_str(), mib(m.kv).c_str(), mib(m.scratch + m.logits).c_str(),
                  mib(m.tokenizer).c_str(), mib(m.runtime).c_str(), mib(m.total()).c_str());
    s += line;
  }
  if (!companions.empty()) {
    std::snprintf(line, sizeof line, "budget for the model: %s\n\n",
                  mib(budget_bytes > companion_bytes ? budget_bytes - companion_bytes : 0).c_str());
    s += line;
  }
  for (const auto& o : considered) {
    const bool chosen = choice && choice->label == o.label;
    std::snprintf(line, sizeof line, "%s %s (%s)\n",
                  chosen   ? "=> CHOSEN"
                  : o.fits ? "   fits  "
                           : "   no    ",
                  o.label.c_str(), o.weight_type.empty() ? "?" : o.weight_type.c_str());
    s += line;
    if (o.n_ctx > 0) {
      const MemoryPlan& m = o.memory;
      std::snprintf(line, sizeof line,
                    "      ctx %d x %d seq, %s KV, batch %d:\n"
                    "        weights   %12s\n        KV        %12s\n        scratch   %12s\n"
                    "        logits    %12s\n        tokenizer %12s\n        runtime   %12s\n",
                    o.n_ctx, m.n_seq_max, kv_types_text(o).c_str(), o.n_batch, mib(m.weights_touched).c_str(),
                    mib(m.kv).c_str(), mib(m.scratch).c_str(), mib(m.logits).c_str(), mib(m.tokenizer).c_str(),
                    mib(m.runtime).c_str());
      s += line;
      if (!draft_model.empty()) {
        std::snprintf(line, sizeof line,
                      "        draft     %12s  (weights; KV of one sequence and scratch per parallel sequence: ",
                      mib(m.draft).c_str());
        s += line + draft_model + ")\n";
      }
      std::snprintf(line, sizeof line, "        total     %12s  %s budget %s\n", mib(m.total()).c_str(),
                    m.total() + companion_bytes <= budget_bytes ? "<=" : ">",
                    mib(budget_bytes > companion_bytes ? budget_bytes - companion_bytes : 0).c_str());
      s += line;
    }
    if (o.prefill_tokens_per_second > 0 && o.decode_tokens_per_second > 0) {
      const double pp_s = estimate_prompt_tokens / o.prefill_tokens_per_second;
      const double tg_s = estimate_answer_tokens / o.decode_tokens_per_second;
      std::snprintf(line, sizeof line,
                    "      measured here: prefill %.1f tok/s, decode %.1f tok/s\n"
                    "        %d-token prompt %.2f s + %d-token answer %.2f s = %.2f s\n",
                    o.prefill_tokens_per_second, o.decode_tokens_per_second, estimate_prompt_tokens, pp_s,
                    estimate_answer_tokens, tg_s, pp_s + tg_s);
      s += line;
    } else {
      s += "      speed not measured here (edgellm registry bench)\n";
    }
    if (!o.rejected.empty()) s += "      " + o.rejected + "\n";
  }
  if (!choice) s += "\nno candidate fits this device\n";
  return s;
}

}  // namespace edgellm
