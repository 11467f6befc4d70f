// The progress line of the long sub-commands (imatrix, quantize --target-*): one overwritten line
// on stderr, "  42% chunk 16/38, ppl 10.6". A stand-in until the shared progress display
// (tools/edgellm/progress.{h,cpp}) lands: it has the same (fraction, what) shape, so swapping it
// means replacing this one function.
#pragma once

#include <string>

namespace edgellm::cli {

// fraction in [0, 1]; a fraction of 1 ends the line.
void print_progress_line(double fraction, const std::string& what);

}  // namespace edgellm::cli
