// Tree-walking interpreter for parsed Jinja templates: scopes (a for-loop iteration, a macro call
// and a with-block get their own; if does not, as in jinja2), the loop object, macros and call
// blocks, namespace assignment, and the globals Hugging Face chat templates use (range,
// namespace, dict, raise_exception, strftime_now). Every runtime error carries line and column.
#pragma once

#include <string>

#include "chat/jinja_ast.h"
#include "chat/jinja_template.h"

namespace edgellm::jinja {

// Renders `body` with the variables of the dict `context` (plus the globals above).
std::string interpret(const StmtList& body, const Value& context, const RenderOptions& options);

}  // namespace edgellm::jinja
