// Shared helpers for the Jinja engine tests: render a template source with a JSON context, and
// check tables of (source, expected output, context) cases.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/jinja_template.h"
#include "core/json.h"

namespace edgellm::test {

inline std::string render_jinja(const std::string& source, const std::string& context_json = "{}") {
  jinja::RenderOptions options;
  options.fixed_time = 1721001600;  // 2024-07-15 00:00:00 UTC, for strftime_now
  return jinja::Template::parse(source).render(Json::parse(context_json), options);
}

// `source` rendered with the JSON object `context` must give `expected`.
struct JinjaCase {
  const char* source;
  const char* expected;
  const char* context = "{}";
};

// Checks every case; a mismatch names its template source and the remaining cases still run.
inline void expect_renders(const std::vector<JinjaCase>& cases) {
  for (const auto& c : cases) EXPECT_EQ(render_jinja(c.source, c.context), c.expected) << c.source;
}

}  // namespace edgellm::test
