#include "chat/jinja_template.h"

#include "chat/jinja_interpreter.h"
#include "chat/jinja_parser.h"
#include "core/error.h"

namespace edgellm::jinja {

Template Template::parse(std::string_view source) {
  Template t;
  t.body_ = std::make_shared<const StmtList>(parse_template(source));
  return t;
}

std::string Template::render(const Json& context, const RenderOptions& options) const {
  require(context.is_object(), ErrorCode::kInvalidArgument, "template context must be a JSON object");
  return render(Value::from_json(context), options);
}

std::string Template::render(const Value& context, const RenderOptions& options) const {
  require(body_ != nullptr, ErrorCode::kInvalidArgument, "rendering an empty (moved-from) template");
  require(context.is_dict(), ErrorCode::kInvalidArgument, "template context must be a dict");
  return interpret(*body_, context, options);
}

}  // namespace edgellm::jinja
