#include "progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace edgellm::cli {

void print_progress_line(double fraction, const std::string& what) {
  const int percent = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 100.0);
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (tty) {  // one line, overwritten: \r and ESC[K clear the previous (possibly longer) text
    std::fprintf(stderr, "\r%4d%% %s\033[K%s", percent, what.c_str(), fraction >= 1.0 ? "\n" : "");
  } else {  // a log: one line per report
    std::fprintf(stderr, "%4d%% %s\n", percent, what.c_str());
  }
  std::fflush(stderr);
}

}  // namespace edgellm::cli
