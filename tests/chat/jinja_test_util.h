// Shared helper for the Jinja engine tests: render a template source with a JSON context.
#pragma once

#include <string>

#include "chat/jinja_template.h"
#include "core/json.h"

namespace edgellm::test {

inline std::string render_jinja(const std::string& source, const std::string& context_json = "{}") {
  jinja::RenderOptions options;
  options.fixed_time = 1721001600;  // 2024-07-15 00:00:00 UTC, for strftime_now
  return jinja::Template::parse(source).render(Json::parse(context_json), options);
}

}  // namespace edgellm::test
