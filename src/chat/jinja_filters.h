// Jinja filters (`x | trim`, `tools | tojson(indent=4)`, ...). Semantics follow jinja2 3.x, except
// tojson which is Hugging Face's override: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) without HTML escaping.
#pragma once

#include <string>

#include "chat/jinja_value.h"

namespace edgellm::jinja {

bool has_filter(const std::string& name);
// args holds the filter's arguments (not the input). ValueError for an unknown filter.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);

}  // namespace edgellm::jinja
