// Jinja tests (`x is defined`, `n is divisibleby 3`, ...) with jinja2's semantics.
#pragma once

#include <string>

#include "chat/jinja_value.h"

namespace edgellm::jinja {

bool has_test(const std::string& name);
// args holds the test's arguments (not the tested value). ValueError for an unknown test.
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);

}  // namespace edgellm::jinja
