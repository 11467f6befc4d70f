// How long-running library work (quantize, pack, perplexity, bench, downloads, synth, convert,
// imatrix) reports its progress: a plain callback with the fraction done and what is being done.
// The library never draws anything; the CLI's display is tools/edgellm/progress.h, an app may
// forward the calls to its own UI.
#pragma once

#include <functional>
#include <string_view>

namespace edgellm {

// fraction in [0, 1], non-decreasing over one piece of work, 1 at the end; `what` names the
// current step ("blk.3.ffn_up.weight", "chunk 4/12") and may be empty. Called on the thread that
// does the work, so it must be quick (a display throttles itself).
using ProgressFn = std::function<void(double fraction, std::string_view what)>;

}  // namespace edgellm
