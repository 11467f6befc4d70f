// Output formats of `edgellm bench`: an aligned text table, a Markdown table (llama-bench's
// default look), CSV and JSON (llama-bench's field names plus the bandwidth fields).
#pragma once

#include <string>
#include <vector>

#include "tools/bench/bench_runner.h"

namespace edgellm {
class Json;
}

namespace edgellm::bench {

enum class ReportFormat { kTable, kMarkdown, kCsv, kJson };

// "table", "md", "csv", "json"; throws Error(kInvalidArgument) naming the value.
ReportFormat parse_report_format(const std::string& name);

// One JSON object with llama-bench's field names; tg-only fields are null for pp tests.
Json record_to_json(const BenchRecord& r);

// A header line about the machine (CPU, threads, measured bandwidth) for the text formats.
std::string format_machine(const BenchMachine& m);
// One line per --interleave-depths tg record past the first depth: its paired ratio to the first
// depth (median, min, max); "" when there is none. The table and markdown reports end with these.
std::string format_paired_ratios(const std::vector<BenchRecord>& records);

std::string format_report(ReportFormat format, const std::vector<BenchRecord>& records, const BenchMachine& machine);

}  // namespace edgellm::bench
