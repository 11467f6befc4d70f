#include "tools/bench/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/json.h"

namespace edgellm::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string params_label(uint64_t n) {
  return n >= 1000000000ULL ? fmt("%.2f B", static_cast<double>(n) / 1e9) : fmt("%.2f M", static_cast<double>(n) / 1e6);
}

struct Column {
  const char* title;
  bool right;  // numbers right-aligned
};

// The speculative columns, shown only when a record is speculative (bench --spec).
const std::vector<Column> kSpecColumns = {{"accept", true}, {"tok/fwd", true}, {"x plain", true}};
constexpr size_t kSpecColumnsAt = 10;  // after "t/s per CPU"

// A tg record whose tokens are one weight read each (not a speculative one): the bandwidth
// fields mean something.
bool has_bandwidth(const BenchRecord& r) { return r.is_generation && !r.is_speculative(); }

const std::vector<Column> kColumns = {
    {"model", false}, {"size", true},  {"params", true}, {"threads", true}, {"n_batch", true}, {"type_kv", false}, {"repack", false},
    {"test", true},   {"t/s", true},   {"t/s per CPU", true}, {"GB/tok", true}, {"eff GB/s", true}, {"% best bw", true}, {"% bw now", true},
    {"int8 GOPS", true}, {"% int8 peak", true}, {"% vector peak", true}, {"% peak per CPU", true}, {"peak RSS", true},
};

std::vector<Column> columns(bool spec) {
  std::vector<Column> c = kColumns;
  if (spec) c.insert(c.begin() + kSpecColumnsAt, kSpecColumns.begin(), kSpecColumns.end());
  return c;
}

std::vector<std::string> cells(const BenchRecord& r, bool spec) {
  std::vector<std::string> c;
  c.push_back(r.model_type);
  c.push_back(fmt("%.2f MiB", static_cast<double>(r.model_size) / kMiB));
  c.push_back(params_label(r.model_n_params));
  c.push_back(std::to_string(r.n_threads));
  c.push_back(std::to_string(r.n_batch));
  c.push_back(r.type_k == r.type_v ? r.type_k : r.type_k + "/" + r.type_v);  // K/V when they differ
  c.push_back(r.repacked_bytes > 0 ? fmt("%.0f MiB", static_cast<double>(r.repacked_bytes) / kMiB)
              : r.pack_bytes > 0  ? fmt("pack %.0f MiB", static_cast<double>(r.pack_bytes) / kMiB)
                                  : "off");
  c.push_back(r.test_name());
  c.push_back(fmt("%.2f", r.avg_ts) + " ± " + fmt("%.2f", r.stddev_ts));
  c.push_back(r.cpu_ts > 0 ? fmt("%.2f", r.cpu_ts) : "-");
  if (spec && r.is_speculative()) {
    c.push_back(fmt("%.0f%%", 100.0 * r.spec_acceptance_rate));
    c.push_back(fmt("%.2f", r.spec_tokens_per_forward));
    c.push_back(fmt("%.2f", r.spec_ratio_median) + (r.spec_tokens_match ? "" : " MISMATCH"));
  } else if (spec) {
    c.insert(c.end(), {"-", "-", "-"});
  }
  if (has_bandwidth(r)) {
    c.push_back(fmt("%.3f", r.bytes_per_token / 1e9));
    c.push_back(fmt("%.2f", r.effective_gbps));
    c.push_back(r.bandwidth_gbps > 0 ? fmt("%.0f%%", 100.0 * r.bandwidth_fraction) : "-");
    c.push_back(r.bandwidth_now_gbps > 0 ? fmt("%.0f%%", 100.0 * r.bandwidth_now_fraction) : "-");
  } else {
    c.insert(c.end(), {"-", "-", "-", "-"});
  }
  // pp tests: effective matmul ops/s (1 MAC = 2 ops) and their share of the int8 peak, shown
  // only when the weights are quantized (the matmuls then are int8 dot products).
  if (!r.is_generation && r.int8_weights) {
    c.push_back(fmt("%.1f", r.int8_ops_per_second / 1e9));
    c.push_back(r.int8_peak_ops_per_second > 0 ? fmt("%.0f%%", 100.0 * r.int8_peak_fraction) : "-");
    c.push_back(r.int8_vector_peak_fraction > 0 ? fmt("%.0f%%", 100.0 * r.int8_vector_peak_fraction) : "-");
    c.push_back(r.int8_peak_cpu_fraction > 0 ? fmt("%.0f%%", 100.0 * r.int8_peak_cpu_fraction) : "-");
  } else {
    c.insert(c.end(), {"-", "-", "-", "-"});
  }
  c.push_back(fmt("%.0f MiB", static_cast<double>(r.peak_rss_bytes) / kMiB));
  return c;
}

// Display width in characters (UTF-8 continuation bytes do not count: "±").
size_t width(const std::string& s) {
  size_t w = 0;
  for (const unsigned char ch : s) w += (ch & 0xC0) != 0x80;
  return w;
}

std::string pad(const std::string& s, size_t w, bool right) {
  const size_t n = width(s);
  if (n >= w) return s;
  return right ? std::string(w - n, ' ') + s : s + std::string(w - n, ' ');
}

std::string format_grid(const std::vector<BenchRecord>& records, bool markdown) {
  const bool spec = std::any_of(records.begin(), records.end(), [](const BenchRecord& r) { return r.is_speculative(); });
  const std::vector<Column> cols = columns(spec);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : records) rows.push_back(cells(r, spec));
  std::vector<size_t> w(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) {
    w[i] = width(cols[i].title);
    for (const auto& row : rows) w[i] = std::max(w[i], width(row[i]));
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      out << (markdown ? "| " : (i ? "  " : "")) << pad(v[i], w[i], cols[i].right) << (markdown ? " " : "");
    }
    out << (markdown ? "|\n" : "\n");
  };
  std::vector<std::string> titles;
  for (const auto& c : cols) titles.emplace_back(c.title);
  line(titles);
  if (markdown) {
    for (size_t i = 0; i < cols.size(); ++i) {
      out << "| " << (cols[i].right ? std::string(w[i] - 1, '-') + ":" : std::string(w[i], '-')) << " ";
    }
    out << "|\n";
  } else {
    size_t total = 0;
    for (size_t i = 0; i < w.size(); ++i) total += w[i] + (i ? 2 : 0);
    out << std::string(total, '-') << "\n";
  }
  for (const auto& row : rows) line(row);
  return out.str();
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (const char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string join_samples(const std::vector<double>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ' ';
    s += fmt("%.6g", v[i]);
  }
  return s;
}

}  // namespace

ReportFormat parse_report_format(const std::string& name) {
  if (name == "table") return ReportFormat::kTable;
  if (name == "md") return ReportFormat::kMarkdown;
  if (name == "csv") return ReportFormat::kCsv;
  if (name == "json") return ReportFormat::kJson;
  throw Error(ErrorCode::kInvalidArgument, "unknown output format '" + name + "' (-o): use table, md, csv or json");
}

Json record_to_json(const BenchRecord& r) {
  Json j = Json::object();
  j.set("model_filename", r.model_filename);
  j.set("model_type", r.model_type);
  j.set("model_size", r.model_size);
  j.set("model_n_params", r.model_n_params);
  j.set("n_batch", static_cast<int64_t>(r.n_batch));
  j.set("n_threads", static_cast<int64_t>(r.n_threads));
  j.set("type_k", r.type_k);
  j.set("type_v", r.type_v);
  j.set("n_prompt", static_cast<int64_t>(r.n_prompt));
  j.set("n_gen", static_cast<int64_t>(r.n_gen));
  j.set("n_depth", static_cast<int64_t>(r.n_depth));
  j.set("test_time", r.test_time);
  j.set("avg_ns", static_cast<uint64_t>(r.avg_ns + 0.5));
  j.set("stddev_ns", static_cast<uint64_t>(r.stddev_ns + 0.5));
  j.set("avg_ts", r.avg_ts);
  j.set("stddev_ts", r.stddev_ts);
  Json samples_ns = Json::array();
  for (const double v : r.samples_ns) samples_ns.push_back(static_cast<uint64_t>(v + 0.5));
  j.set("samples_ns", samples_ns);
  Json samples_ts = Json::array();
  for (const double v : r.samples_ts) samples_ts.push_back(v);
  j.set("samples_ts", samples_ts);
  if (has_bandwidth(r)) {
    j.set("bytes_per_token", r.bytes_per_token);
    j.set("effective_gbps", r.effective_gbps);
    j.set("bandwidth_gbps", r.bandwidth_gbps > 0 ? Json(r.bandwidth_gbps) : Json(nullptr));
    j.set("bandwidth_fraction", r.bandwidth_gbps > 0 ? Json(r.bandwidth_fraction) : Json(nullptr));
    j.set("bandwidth_now_gbps", r.bandwidth_now_gbps > 0 ? Json(r.bandwidth_now_gbps) : Json(nullptr));
    j.set("bandwidth_now_fraction", r.bandwidth_now_gbps > 0 ? Json(r.bandwidth_now_fraction) : Json(nullptr));
  } else {
    j.set("bytes_per_token", nullptr);
    j.set("effective_gbps", nullptr);
    j.set("bandwidth_gbps", nullptr);
    j.set("bandwidth_fraction", nullptr);
    j.set("bandwidth_now_gbps", nullptr);
    j.set("bandwidth_now_fraction", nullptr);
  }
  if (!r.is_generation) {
    j.set("matmul_ops_per_token", r.matmul_ops_per_token);
    j.set("attention_ops", r.attention_ops);
    j.set("int8_weights", r.int8_weights);
    j.set("int8_ops_per_second", r.int8_ops_per_second);
    j.set("int8_peak_kernel", r.int8_peak_kernel.empty() ? Json(nullptr) : Json(r.int8_peak_kernel));
    j.set("int8_peak_ops_per_second", r.int8_peak_ops_per_second > 0 ? Json(r.int8_peak_ops_per_second) : Json(nullptr));
    j.set("int8_peak_fraction", r.int8_peak_ops_per_second > 0 ? Json(r.int8_peak_fraction) : Json(nullptr));
    j.set("int8_vector_peak_kernel",
          r.int8_vector_peak_kernel.empty() ? Json(nullptr) : Json(r.int8_vector_peak_kernel));
    j.set("int8_vector_peak_fraction",
          r.int8_vector_peak_fraction > 0 ? Json(r.int8_vector_peak_fraction) : Json(nullptr));
    j.set("int8_ops_per_cpu_second", r.int8_ops_per_cpu_second);
    j.set("int8_peak_cpu_fraction", r.int8_peak_cpu_fraction > 0 ? Json(r.int8_peak_cpu_fraction) : Json(nullptr));
  } else {
    for (const char* k : {"matmul_ops_per_token", "attention_ops", "int8_weights", "int8_ops_per_second",
                          "int8_peak_kernel", "int8_peak_ops_per_second", "int8_peak_fraction", "int8_ops_per_cpu_second",
                          "int8_peak_cpu_fraction", "int8_vector_peak_kernel", "int8_vector_peak_fraction"}) {
      j.set(k, nullptr);
    }
  }
  j.set("peak_rss_bytes", r.peak_rss_bytes);
  j.set("avg_cpu_ns", static_cast<uint64_t>(r.avg_cpu_ns + 0.5));
  j.set("cpu_ts", r.cpu_ts);
  j.set("isa", r.isa);
  j.set("repack", r.repack);
  j.set("repacked_bytes", r.repacked_bytes);
  j.set("pack_bytes", r.pack_bytes);
  if (r.paired_ratio_depth >= 0) {
    j.set("paired_ratio_depth", static_cast<int64_t>(r.paired_ratio_depth));
    j.set("paired_ratio_median", r.paired_ratio_median);
    j.set("paired_ratio_min", r.paired_ratio_min);
    j.set("paired_ratio_max", r.paired_ratio_max);
  }
  if (r.is_speculative()) {
    j.set("spec_mode", r.spec_mode);
    j.set("spec_draft_max", static_cast<int64_t>(r.spec_draft_max));
    j.set("spec_drafted", static_cast<int64_t>(r.spec_drafted));
    j.set("spec_accepted", static_cast<int64_t>(r.spec_accepted));
    j.set("spec_acceptance_rate", r.spec_acceptance_rate);
    j.set("spec_tokens_per_forward", r.spec_tokens_per_forward);
    j.set("spec_plain_avg_ts", r.spec_plain_avg_ts);
    Json plain = Json::array();
    for (const double v : r.spec_plain_samples_ts) plain.push_back(v);
    j.set("spec_plain_samples_ts", plain);
    j.set("spec_ratio_median", r.spec_ratio_median);
    j.set("spec_ratio_min", r.spec_ratio_min);
    j.set("spec_ratio_max", r.spec_ratio_max);
    j.set("spec_tokens_match", r.spec_tokens_match);
  }
  return j;
}

// "tg64 @ d4096 / tg64 @ d0, paired over 10 repetitions: median 0.853 (min 0.840, max 0.871)" per
// interleaved record past the first depth; "" when there is none.
std::string format_paired_ratios(const std::vector<BenchRecord>& records) {
  std::ostringstream out;
  for (const auto& r : records) {
    if (r.paired_ratio_depth < 0 || r.paired_ratio_depth == r.n_depth) continue;
    BenchRecord first = r;
    first.n_depth = r.paired_ratio_depth;
    out << r.model_type << ", kv " << (r.type_k == r.type_v ? r.type_k : r.type_k + "/" + r.type_v) << ", "
        << r.n_threads << " thread(s): " << r.test_name() << " / " << first.test_name() << ", paired over "
        << r.samples_ts.size() << " repetitions: median " << fmt("%.3f", r.paired_ratio_median) << " (min "
        << fmt("%.3f", r.paired_ratio_min) << ", max " << fmt("%.3f", r.paired_ratio_max) << ")\n";
  }
  for (const auto& r : records) {
    if (!r.is_speculative()) continue;
    BenchRecord plain = r;
    plain.spec_mode.clear();
    out << r.model_type << ", kv " << (r.type_k == r.type_v ? r.type_k : r.type_k + "/" + r.type_v) << ", "
        << r.n_threads << " thread(s): " << r.test_name() << " / " << plain.test_name() << " greedy ("
        << fmt("%.2f", r.spec_plain_avg_ts) << " t/s), paired over " << r.samples_ts.size()
        << " repetitions: median " << fmt("%.3f", r.spec_ratio_median) << " (min " << fmt("%.3f", r.spec_ratio_min)
        << ", max " << fmt("%.3f", r.spec_ratio_max) << "); " << r.spec_accepted << " of " << r.spec_drafted
        << " drafts accepted, " << fmt("%.2f", r.spec_tokens_per_forward) << " tokens per forward"
        << (r.spec_tokens_match ? "" : "; TOKENS DIFFER FROM PLAIN DECODING") << "\n";
  }
  return out.str();
}

std::string format_machine(const BenchMachine& m) {
  std::string s = "CPU: " + m.cpu + ", " + std::to_string(m.hardware_threads) + " hardware threads";
  if (m.bandwidth_measured) {
    s += "; memory read bandwidth " + fmt("%.2f", m.bandwidth_1.gbps) + " GB/s (1 thread), " +
         fmt("%.2f", m.bandwidth_all.gbps) + " GB/s (" + std::to_string(m.bandwidth_all.n_threads) + " threads), " +
         fmt("%.0f", static_cast<double>(m.bandwidth_1.bytes) / kMiB) + " MiB buffer";
  }
  if (!m.int8_peak.empty()) {
    s += "\nint8 peak (register-resident dot-product loop, 1 MAC = 2 ops), G MAC/s:";
    for (const auto& r : m.int8_peak) {
      s += "\n  " + r.kernel + " (" + r.instruction + "), " + std::to_string(r.n_threads) + " thread(s): " +
           fmt("%.1f", r.macs_per_second / 1e9) + " total, " + fmt("%.1f", r.macs_per_second_per_thread() / 1e9) +
           " per thread (wall time), " + fmt("%.1f", r.macs_per_cpu_second / 1e9) + " per CPU-second";
    }
  }
  return s;
}

std::string format_report(ReportFormat format, const std::vector<BenchRecord>& records, const BenchMachine& machine) {
  switch (format) {
    case ReportFormat::kTable:
    case ReportFormat::kMarkdown: {
      const std::string paired = format_paired_ratios(records);
      return format_machine(machine) + "\n\n" + format_grid(records, format == ReportFormat::kMarkdown) +
             (paired.empty() ? "" : "\n" + paired);
    }
    case ReportFormat::kCsv: {
      std::ostringstream out;
      out << "model_filename,model_type,model_size,model_n_params,n_batch,n_threads,type_k,type_v,n_prompt,n_gen,"
             "n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts,samples_ns,samples_ts,bytes_per_token,"
             "effective_gbps,bandwidth_gbps,bandwidth_fraction,bandwidth_now_gbps,bandwidth_now_fraction,peak_rss_bytes,avg_cpu_ns,cpu_ts,repack,repacked_bytes,"
             "matmul_ops_per_token,attention_ops,int8_weights,int8_ops_per_second,int8_peak_kernel,"
             "int8_peak_ops_per_second,int8_peak_fraction,int8_ops_per_cpu_second,int8_peak_cpu_fraction,"
             "int8_vector_peak_kernel,int8_vector_peak_fraction,spec_mode,spec_draft_max,spec_acceptance_rate,"
             "spec_tokens_per_forward,spec_plain_avg_ts,spec_ratio_median,spec_ratio_min,spec_ratio_max,"
             "spec_tokens_match\n";
      for (const auto& r : records) {
        out << csv_escape(file_name_of(r.model_filename)) << ',' << csv_escape(r.model_type) << ',' << r.model_size << ','
            << r.model_n_params << ',' << r.n_batch << ',' << r.n_threads << ',' << r.type_k << ',' << r.type_v << ','
            << r.n_prompt << ',' << r.n_gen << ',' << r.n_depth << ',' << r.test_time << ','
            << fmt("%.0f", r.avg_ns) << ',' << fmt("%.0f", r.stddev_ns) << ',' << fmt("%.6f", r.avg_ts) << ','
            << fmt("%.6f", r.stddev_ts) << ',' << csv_escape(join_samples(r.samples_ns)) << ','
            << csv_escape(join_samples(r.samples_ts)) << ',';
        if (has_bandwidth(r)) {
          out << fmt("%.0f", r.bytes_per_token) << ',' << fmt("%.4f", r.effective_gbps) << ','
              << (r.bandwidth_gbps > 0 ? fmt("%.4f", r.bandwidth_gbps) : "") << ','
              << (r.bandwidth_gbps > 0 ? fmt("%.4f", r.bandwidth_fraction) : "") << ','
              << (r.bandwidth_now_gbps > 0 ? fmt("%.4f", r.bandwidth_now_gbps) : "") << ','
              << (r.bandwidth_now_gbps > 0 ? fmt("%.4f", r.bandwidth_now_fraction) : "") << ',';
        } else {
          out << ",,,,,,";
        }
        out << r.peak_rss_bytes << ',' << fmt("%.0f", r.avg_cpu_ns) << ',' << fmt("%.4f", r.cpu_ts) << ',' << r.repack << ','
            << r.repacked_bytes << ',';
        if (r.is_generation) {
          out << ",,,,,,,,,,";
        } else {
          out << fmt("%.0f", r.matmul_ops_per_token) << ',' << fmt("%.0f", r.attention_ops) << ','
              << (r.int8_weights ? "true" : "false") << ',' << fmt("%.0f", r.int8_ops_per_second) << ','
              << r.int8_peak_kernel << ',' << (r.int8_peak_ops_per_second > 0 ? fmt("%.0f", r.int8_peak_ops_per_second) : "")
              << ',' << (r.int8_peak_ops_per_second > 0 ? fmt("%.4f", r.int8_peak_fraction) : "") << ','
              << fmt("%.0f", r.int8_ops_per_cpu_second) << ','
              << (r.int8_peak_cpu_fraction > 0 ? fmt("%.4f", r.int8_peak_cpu_fraction) : "") << ','
              << r.int8_vector_peak_kernel << ','
              << (r.int8_vector_peak_fraction > 0 ? fmt("%.4f", r.int8_vector_peak_fraction) : "");
        }
        if (r.is_speculative()) {
          out << ',' << r.spec_mode << ',' << r.spec_draft_max << ',' << fmt("%.4f", r.spec_acceptance_rate) << ','
              << fmt("%.4f", r.spec_tokens_per_forward) << ',' << fmt("%.6f", r.spec_plain_avg_ts) << ','
              << fmt("%.4f", r.spec_ratio_median) << ',' << fmt("%.4f", r.spec_ratio_min) << ','
              << fmt("%.4f", r.spec_ratio_max) << ',' << (r.spec_tokens_match ? "true" : "false");
        } else {
          out << ",,,,,,,,,";
        }
        out << '\n';
      }
      return out.str();
    }
    case ReportFormat::kJson: {
      Json arr = Json::array();
      for (const auto& r : records) arr.push_back(record_to_json(r));
      return arr.dump(2) + "\n";
    }
  }
  return {};
}

}  // namespace edgellm::bench
