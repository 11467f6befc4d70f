// Where tests find shared data: $EDGELLM_TESTDATA (set by .ci/run and the Makefile), which is
// the read-only shared/ folder; defaults to ../shared relative to the repository root.
#pragma once

#include <string>

namespace edgellm::test {

// Root of shared/ (contains models/ and testdata/).
std::string shared_dir();
std::string shared_model(const std::string& name);      // shared/models/<name>
std::string shared_testdata(const std::string& rel);    // shared/testdata/<rel>
// A fresh temporary directory for this test process (removed at exit).
std::string temp_dir();
bool file_exists(const std::string& path);
// Whether an atomic write of `path` left a temporary file beside it ("<path>.tmp" or
// "<path>.tmp.XXXXXX", core/atomic_file.h).
bool temp_file_left(const std::string& path);
std::string read_file(const std::string& path);

}  // namespace edgellm::test
