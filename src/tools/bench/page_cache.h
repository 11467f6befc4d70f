// The page cache's hold on a model file, for cold-start measurements: how much of the file is
// resident (mincore over a mapping that touches nothing) and asking the kernel to drop it
// (posix_fadvise POSIX_FADV_DONTNEED: no root needed; only clean pages that no process has
// mapped are dropped, so a model loaded anywhere keeps its pages; resident_fraction tells).
#pragma once

#include <string>

namespace edgellm::bench {

// Fraction of the file's pages in the page cache now, in [0, 1]; -1 when it cannot be measured
// (cannot open or map the file). An empty file counts as resident (1).
double page_cache_resident_fraction(const std::string& path);

// Writes the file's dirty pages back (fdatasync), then asks the kernel to drop its cached pages.
// Returns "" on success, else why not.
std::string drop_page_cache(const std::string& path);

}  // namespace edgellm::bench
