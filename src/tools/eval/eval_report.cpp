#include "tools/eval/eval_report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

#include "core/sha256.h"

namespace edgellm::eval {
namespace {

std::string basename_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

Json prf_json(const PrfScore& s) {
  Json j = Json::object();
  j.set("precision", s.precision);
  j.set("recall", s.recall);
  j.set("fmeasure", s.fmeasure);
  return j;
}

Json case_score_json(const CaseScore& s) {
  Json j = Json::object();
  switch (s.metric) {
    case Metric::kRouge:
      j.set("rouge1", prf_json(s.rouge.rouge1));
      j.set("rouge2", prf_json(s.rouge.rouge2));
      j.set("rougeL", prf_json(s.rouge.rougeL));
      break;
    case Metric::kBleu: j.set("sentence_bleu_method1", s.sentence_bleu); break;
    case Metric::kQa:
      j.set("exact_match", s.exact_match);
      j.set("f1", s.f1);
      break;
    case Metric::kAccuracy:
      j.set("predicted_label", s.predicted_label);
      j.set("correct", s.correct);
      break;
  }
  j.set("primary", s.primary);
  return j;
}

Json bleu_json(const BleuResult& b, BleuSmoothing smoothing) {
  Json j = Json::object();
  j.set("bleu", b.bleu);
  j.set("smoothing", bleu_smoothing_name(smoothing));
  Json p = Json::array();
  for (size_t n = 0; n < 4; ++n) {
    Json e = Json::object();
    e.set("n", static_cast<int>(n + 1));
    e.set("matches", b.matches[n]);
    e.set("total", b.totals[n]);
    p.push_back(std::move(e));
  }
  j.set("precisions", std::move(p));
  j.set("brevity_penalty", b.brevity_penalty);
  j.set("hypothesis_length", b.hypothesis_length);
  j.set("reference_length", b.reference_length);
  return j;
}

Json model_json(const ModelEvaluation& m, BleuSmoothing smoothing) {
  Json j = Json::object();
  j.set("role", m.label);
  j.set("path", m.run.model_path);
  j.set("load_s", m.run.load_seconds);
  j.set("generate_s", m.run.generate_seconds);
  j.set("prompt_tokens", m.run.prompt_tokens);
  j.set("completion_tokens", m.run.completion_tokens);
  j.set("completion_tok_per_s",
        m.run.generate_seconds > 0 ? static_cast<double>(m.run.completion_tokens) / m.run.generate_seconds : 0.0);
  j.set("peak_rss_bytes", static_cast<uint64_t>(m.run.peak_rss_bytes));
  j.set("errors", static_cast<int>(m.run.errors));
  Json metrics = Json::object();
  for (const MetricValue& v : m.scores.metrics) {
    Json e = Json::object();
    e.set("value", v.value);
    e.set("cases", v.cases);
    metrics.set(v.name, std::move(e));
  }
  j.set("metrics", std::move(metrics));
  if (m.scores.has_bleu) j.set("corpus_bleu", bleu_json(m.scores.corpus_bleu, smoothing));
  return j;
}

const MetricValue* find_metric(const ScoreSet& s, const std::string& name) {
  for (const MetricValue& v : s.metrics) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

// One line of a Markdown table cell: '|' escaped, line breaks as <br>, at most max_bytes (cut at
// a character boundary).
std::string md_cell(const std::string& s, size_t max_bytes = 400) {
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (n >= max_bytes && (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      out += "…";
      break;
    }
    const char c = s[i];
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += "<br>";
    } else if (c == '\r') {
      continue;
    } else if (c == '<') {
      out += "&lt;";
    } else {
      out.push_back(c);
    }
    ++n;
  }
  return out;
}

std::string redacted(const std::string& text) {
  return "sha256:" + Sha256::hex_of(text).substr(0, 16) + " (" + std::to_string(text.size()) + " bytes)";
}

std::string shown(const std::string& text, bool redact) {
  return redact ? redacted(text) : text;
}

std::string references_text(const EvalCase& c, bool redact) {
  std::string s;
  for (size_t i = 0; i < c.references.size(); ++i) s += (i ? " / " : "") + shown(c.references[i], redact);
  return s;
}

std::string input_text(const EvalCase& c, bool redact) {
  if (c.messages.is_null()) return shown(c.prompt, redact);
  const Json& last = c.messages.at(c.messages.size() - 1);
  return "[chat] " + shown(last.at("content").as_string(), redact);
}

}  // namespace

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<ChangedCase> changed_cases(const EvalReport& report) {
  std::vector<ChangedCase> out;
  if (!report.base) return out;
  for (size_t i = 0; i < report.tasks.cases.size(); ++i) {
    if (report.base->run.outputs[i].text == report.model.run.outputs[i].text) continue;
    out.push_back({i, report.base->scores.cases[i].primary, report.model.scores.cases[i].primary});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ChangedCase& a, const ChangedCase& b) { return a.delta() < b.delta(); });
  return out;
}

Json report_json(const EvalReport& r) {
  Json j = Json::object();
  j.set("edgellm_eval_report", 1);
  j.set("date", r.date);
  Json task = Json::object();
  task.set("path", r.tasks.path);
  task.set("sha256", r.tasks.sha256);
  task.set("cases", static_cast<uint64_t>(r.tasks.cases.size()));
  std::map<std::string, int> by_metric;
  for (const EvalCase& c : r.tasks.cases) ++by_metric[metric_name(c.metric)];
  Json bm = Json::object();
  for (const auto& [k, v] : by_metric) bm.set(k, v);
  task.set("by_metric", std::move(bm));
  j.set("task_file", std::move(task));

  Json settings = Json::object();
  settings.set("max_tokens", static_cast<int>(r.settings.max_tokens));
  settings.set("temperature", static_cast<double>(r.settings.sampling.temperature));
  settings.set("seed", static_cast<uint64_t>(r.settings.sampling.seed));
  settings.set("parallel", static_cast<int>(r.settings.parallel));
  settings.set("bleu_smoothing", bleu_smoothing_name(r.smoothing));
  settings.set("inputs_redacted", r.redact_inputs);
  settings.set("tokenisation",
               "rouge: rouge-score + CJK characters; bleu: words, punctuation, CJK characters; "
               "qa: SQuAD v1.1 + MLQA (docs/eval.md)");
  j.set("settings", std::move(settings));

  Json models = Json::array();
  if (r.base) models.push_back(model_json(*r.base, r.smoothing));
  models.push_back(model_json(r.model, r.smoothing));
  j.set("models", std::move(models));

  const std::vector<ChangedCase> changed = changed_cases(r);
  if (r.base) {
    Json cmp = Json::object();
    Json metrics = Json::array();
    for (const MetricValue& v : r.model.scores.metrics) {
      const MetricValue* b = find_metric(r.base->scores, v.name);
      if (b == nullptr) continue;
      Json e = Json::object();
      e.set("name", v.name);
      e.set("base", b->value);
      e.set("model", v.value);
      e.set("delta", v.value - b->value);
      e.set("relative", b->value != 0 ? (v.value - b->value) / b->value : Json(nullptr));
      metrics.push_back(std::move(e));
    }
    cmp.set("metrics", std::move(metrics));
    cmp.set("changed_outputs", static_cast<uint64_t>(changed.size()));
    int64_t worse = 0, better = 0;
    Json cc = Json::array();
    for (const ChangedCase& c : changed) {
      worse += c.delta() < 0 ? 1 : 0;
      better += c.delta() > 0 ? 1 : 0;
      Json e = Json::object();
      e.set("id", r.tasks.cases[c.index].id);
      e.set("metric", metric_name(r.tasks.cases[c.index].metric));
      e.set("base", c.base_primary);
      e.set("model", c.model_primary);
      e.set("delta", c.delta());
      cc.push_back(std::move(e));
    }
    cmp.set("changed_worse", worse);
    cmp.set("changed_better", better);
    cmp.set("changed_cases", std::move(cc));
    j.set("comparison", std::move(cmp));
  }

  Json cases = Json::array();
  for (size_t i = 0; i < r.tasks.cases.size(); ++i) {
    const EvalCase& c = r.tasks.cases[i];
    Json e = Json::object();
    e.set("id", c.id);
    e.set("line", static_cast<int>(c.line));
    e.set("metric", metric_name(c.metric));
    if (c.messages.is_null()) {
      e.set("prompt", shown(c.prompt, r.redact_inputs));
    } else {
      e.set("messages", r.redact_inputs ? Json(redacted(c.messages.dump())) : c.messages);
    }
    Json refs = Json::array();
    for (const std::string& ref : c.references) refs.push_back(shown(ref, r.redact_inputs));
    e.set("references", std::move(refs));
    Json outs = Json::object();
    for (const ModelEvaluation* m : {r.base ? &*r.base : nullptr, &r.model}) {
      if (m == nullptr) continue;
      const CaseOutput& o = m->run.outputs[i];
      Json oj = Json::object();
      oj.set("text", o.text);
      oj.set("finish_reason", finish_reason_name(o.finish_reason));
      if (!o.error.empty()) oj.set("error", o.error);
      oj.set("completion_tokens", static_cast<int>(o.completion_tokens));
      oj.set("score", case_score_json(m->scores.cases[i]));
      outs.set(m->label, std::move(oj));
    }
    e.set("outputs", std::move(outs));
    cases.push_back(std::move(e));
  }
  j.set("cases", std::move(cases));
  return j;
}

std::string report_markdown(const EvalReport& r, size_t max_rows) {
  std::string md;
  const std::string model_name = basename_of(r.model.run.model_path);
  const std::string base_name = r.base ? basename_of(r.base->run.model_path) : "";
  md += "# Task evaluation: " + model_name + (r.base ? " vs " + base_name : "") + "\n\n";
  md += "- task file: `" + basename_of(r.tasks.path) + "` (sha256 `" + r.tasks.sha256.substr(0, 16) + "…`), " +
        std::to_string(r.tasks.cases.size()) + " cases\n";
  md += "- generation: " +
        (r.settings.sampling.temperature <= 0 ? std::string("greedy")
                                              : "temperature " + fmt("%g", r.settings.sampling.temperature) +
                                                    ", seed " + std::to_string(r.settings.sampling.seed)) +
        ", max " + std::to_string(r.settings.max_tokens) + " tokens unless a case says otherwise, " +
        std::to_string(r.settings.parallel) + " sequences per batch\n";
  md += "- BLEU: corpus BLEU (NLTK corpus_bleu, smoothing " + std::string(bleu_smoothing_name(r.smoothing)) +
        "); ROUGE: mean F-measure (rouge-score, CJK per character); tokenisation in docs/eval.md\n";
  md += "- date: " + r.date + "\n";
  if (r.redact_inputs) md += "- prompts and references are shown as SHA-256 prefixes (--redact-inputs)\n";
  md += "\n";

  md += "## Scores\n\n";
  if (r.base) {
    md += "| metric | cases | " + base_name + " (base) | " + model_name + " | delta | relative |\n";
    md += "|---|--:|--:|--:|--:|--:|\n";
    for (const MetricValue& v : r.model.scores.metrics) {
      const MetricValue* b = find_metric(r.base->scores, v.name);
      if (b == nullptr) continue;
      md += "| " + v.name + " | " + std::to_string(v.cases) + " | " + fmt("%.4f", b->value) + " | " +
            fmt("%.4f", v.value) + " | " + fmt("%+.4f", v.value - b->value) + " | " +
            (b->value != 0 ? fmt("%+.1f %%", 100.0 * (v.value - b->value) / b->value) : std::string("—")) + " |\n";
    }
  } else {
    md += "| metric | cases | " + model_name + " |\n|---|--:|--:|\n";
    for (const MetricValue& v : r.model.scores.metrics) {
      md += "| " + v.name + " | " + std::to_string(v.cases) + " | " + fmt("%.4f", v.value) + " |\n";
    }
  }
  md += "\n";
  md +=
      "| model | generated tokens | generation time | tokens/s | process peak RSS so far | errors "
      "|\n|---|--:|--:|--:|--:|--:|\n";
  for (const ModelEvaluation* m : {r.base ? &*r.base : nullptr, &r.model}) {
    if (m == nullptr) continue;
    md += "| " + basename_of(m->run.model_path) + " | " + std::to_string(m->run.completion_tokens) + " | " +
          fmt("%.2f s", m->run.generate_seconds) + " | " +
          fmt("%.1f", m->run.generate_seconds > 0
                          ? static_cast<double>(m->run.completion_tokens) / m->run.generate_seconds
                          : 0.0) +
          " | " + fmt("%.1f MiB", static_cast<double>(m->run.peak_rss_bytes) / 1048576.0) + " | " +
          std::to_string(m->run.errors) + " |\n";
  }
  md += "\n";

  if (r.base) {
    const std::vector<ChangedCase> changed = changed_cases(r);
    md += "## Cases whose output changed\n\n";
    md += std::to_string(changed.size()) + " of " + std::to_string(r.tasks.cases.size()) +
          " cases generated different text; sorted by the change of their score (ROUGE-L F, sentence BLEU, F1 or "
          "correct), largest loss first.\n\n";
    if (!changed.empty()) {
      md += "| id | metric | base | model | delta | base output | model output |\n|---|---|--:|--:|--:|---|---|\n";
      for (size_t k = 0; k < changed.size() && k < max_rows; ++k) {
        const ChangedCase& c = changed[k];
        md += "| " + md_cell(r.tasks.cases[c.index].id) + " | " + metric_name(r.tasks.cases[c.index].metric) + " | " +
              fmt("%.3f", c.base_primary) + " | " + fmt("%.3f", c.model_primary) + " | " + fmt("%+.3f", c.delta()) +
              " | " + md_cell(r.base->run.outputs[c.index].text) + " | " + md_cell(r.model.run.outputs[c.index].text) +
              " |\n";
      }
      if (changed.size() > max_rows)
        md += "\n(" + std::to_string(changed.size() - max_rows) + " more in the JSON report)\n";
    }
    md += "\n";
  }

  md += "## Every case\n\n";
  md += "| id | metric | input | reference | " + (r.base ? std::string("base output | base score | ") : "") +
        "output | score |\n";
  md += std::string("|---|---|---|---|") + (r.base ? "---|--:|" : "") + "---|--:|\n";
  for (size_t i = 0; i < r.tasks.cases.size() && i < max_rows; ++i) {
    const EvalCase& c = r.tasks.cases[i];
    md += "| " + md_cell(c.id) + " | " + metric_name(c.metric) + " | " + md_cell(input_text(c, r.redact_inputs), 200) +
          " | " + md_cell(references_text(c, r.redact_inputs)) + " | ";
    if (r.base) {
      md += md_cell(r.base->run.outputs[i].text) + " | " + fmt("%.3f", r.base->scores.cases[i].primary) + " | ";
    }
    md += md_cell(r.model.run.outputs[i].text) + " | " + fmt("%.3f", r.model.scores.cases[i].primary) + " |\n";
  }
  if (r.tasks.cases.size() > max_rows) {
    md += "\n(" + std::to_string(r.tasks.cases.size() - max_rows) + " more in the JSON report)\n";
  }
  return md;
}

}  // namespace edgellm::eval
