// The CLI's progress display for long work (pack, quantize, perplexity, registry downloads and
// hashing, bench, synth; convert and imatrix use it the same way). One line on stderr:
//
//   on a terminal   a bar redrawn in place at most 10 times a second, with the percentage, the
//                   current step and, for byte counts, MiB and MiB/s:
//                     quantize [##########----------]  50.0%  blk.11.ffn_down.weight
//   otherwise       (logs, CI, pipes) a plain line at every 10 % and at the end, never a
//                   carriage return:
//                     quantize: 50%  blk.11.ffn_down.weight
//
// Fed by the library's plain callback (core/progress.h: fraction done, what):
//   ProgressDisplay bar("quantize");
//   params.progress = bar.callback();
//   ...
//   bar.finish("32 tensors, 1.2 s");
// Not thread-safe: call it from the thread that does the work (as the library's callbacks are).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/progress.h"

namespace edgellm::cli {

class ProgressDisplay {
 public:
  // `label` starts the line. `interactive`: -1 = decide from isatty(fileno(out)).
  explicit ProgressDisplay(std::string label, std::FILE* out = stderr, int interactive = -1);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  void update(double fraction, std::string_view what = {});
  // Byte counts: the fraction (when total > 0) plus MiB done and MiB/s. total 0 = unknown.
  void update_bytes(uint64_t done, uint64_t total, std::string_view what = {});
  // Clears the bar from a terminal line so that other output can be printed; the next update
  // draws it again. A no-op for plain lines.
  void clear();
  // Ends the display: "label: summary (12.3 s)" on a line of its own. Called by the destructor
  // (without a summary) if not before.
  void finish(std::string_view summary = {});

  // The library callback that feeds update().
  ProgressFn callback();
  bool interactive() const { return interactive_; }

 private:
  void draw(double fraction, const std::string& detail, bool force);

  std::string label_;
  std::FILE* out_;
  bool interactive_;
  bool drawn_ = false;     // a bar is on the terminal line
  bool finished_ = false;
  int last_decile_ = -1;   // plain mode: the last 10 % step printed
  double last_fraction_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace edgellm::cli
