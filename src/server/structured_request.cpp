#include "server/structured_request.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "server/api_error.h"

namespace edgellm::server {
namespace {

// A JSON Schema is an object or a boolean (true: anything, false: nothing).
bool is_schema(const Json& v) {
  return v.is_object() || v.is_bool();
}

// Records the request's one constraint; a second one is refused naming both.
class OneConstraint {
 public:
  void add(const std::string& name) {
    if (!first_.empty()) {
      throw ApiError::bad_field(name, "only one output constraint per request, and " + first_ +
                                          " is given too (response_format json_object / json_schema, grammar, "
                                          "json_schema, tools: pick one)");
    }
    first_ = name;
  }

 private:
  std::string first_;
};

// An Error(kInvalidArgument) of the tool-calls library (its message names the tool or field) as
// a 400 on `param`.
ApiError tools_error(const Error& e, const char* param) {
  return ApiError(400, "invalid_request_error", "invalid_value", e.what(), param);
}

}  // namespace

std::string parse_output_constraint(const Json& body, bool tools_active, ServiceRequest& r) {
  OneConstraint one;
  std::string param;  // the field that holds the constraint's text
  if (tools_active) one.add("tools");
  if (const Json* rf = given_field(body, "response_format")) {
    const Json* type = rf->is_object() ? rf->find("type") : nullptr;
    if (type == nullptr || !type->is_string()) {
      throw ApiError::bad_field("response_format",
                                "expected an object {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}");
    }
    const std::string& t = type->as_string();
    if (t == "json_object") {
      one.add("response_format");
      // llama-server's form: a json_object with a "schema" is that schema.
      if (const Json* schema = given_field(*rf, "schema")) {
        if (!is_schema(*schema)) throw ApiError::bad_field("response_format.schema", "expected a JSON Schema object");
        r.json_schema = schema->dump();
        param = "response_format.schema";
      } else {
        r.json_object = true;
        param = "response_format";
      }
    } else if (t == "json_schema") {
      one.add("response_format");
      const Json* js = given_field(*rf, "json_schema");
      if (js == nullptr || !js->is_object()) {
        throw ApiError::bad_field("response_format.json_schema",
                                  "expected an object {\"name\", \"schema\", \"strict\"?}");
      }
      if (const Json* name = given_field(*js, "name")) {
        bool ok = name->is_string() && !name->as_string().empty() && name->as_string().size() <= 64;
        for (const char c : ok ? name->as_string() : std::string()) {
          ok = ok &&
               ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
        }
        if (!ok) {
          throw ApiError::bad_field("response_format.json_schema.name",
                                    "expected 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'");
        }
      }
      // strict: OpenAI's promise that the output follows the schema. EdgeLLM's grammar keeps it
      // either way (what the converter cannot hold is refused, never loosened), so false changes
      // nothing; it is still checked for its type.
      if (const Json* strict = given_field(*js, "strict"); strict != nullptr && !strict->is_bool()) {
        throw ApiError::bad_field("response_format.json_schema.strict", "expected true or false");
      }
      const Json* schema = given_field(*js, "schema");
      if (schema == nullptr) throw ApiError::bad_field("response_format.json_schema.schema", "required");
      if (!is_schema(*schema)) {
        throw ApiError::bad_field("response_format.json_schema.schema", "expected a JSON Schema object");
      }
      r.json_schema = schema->dump();
      param = "response_format.json_schema.schema";
    } else if (t != "text") {
      throw ApiError::bad_field("response_format.type",
                                "expected \"text\", \"json_object\" or \"json_schema\", got \"" + t + "\"");
    }
  }
  if (const Json* g = given_field(body, "grammar")) {
    if (!g->is_string()) throw ApiError::bad_field("grammar", "expected a GBNF grammar as a string");
    if (!g->as_string().empty()) {  // llama-server's clients send "" for none
      one.add("grammar");
      r.grammar_gbnf = g->as_string();
      param = "grammar";
    }
  }
  if (const Json* s = given_field(body, "json_schema")) {
    if (!is_schema(*s)) throw ApiError::bad_field("json_schema", "expected a JSON Schema object");
    one.add("json_schema");
    r.json_schema = s->dump();
    param = "json_schema";
  }
  return param;
}

ToolRequest parse_tool_request(const Json& body) {
  ToolRequest out;
  if (const Json* tools = given_field(body, "tools")) {
    try {
      check_tools(*tools);
    } catch (const Error& e) {
      throw tools_error(e, "tools");
    }
    out.tools = *tools;
  }
  if (const Json* choice = given_field(body, "tool_choice")) {
    try {
      out.choice = parse_tool_choice(*choice);
    } catch (const Error& e) {
      throw tools_error(e, "tool_choice");
    }
  }
  if (const Json* p = given_field(body, "parallel_tool_calls")) {
    if (!p->is_bool()) throw ApiError::bad_field("parallel_tool_calls", "expected true or false");
    out.parallel = p->as_bool();
  }
  try {
    check_tool_choice(out);
  } catch (const Error& e) {
    throw tools_error(e, "tool_choice");
  }
  return out;
}

Json parse_message_tool_calls(const Json& calls, const std::string& where) {
  if (!calls.is_array())
    throw ApiError::bad_field(where, "expected an array of {id, type, function: {name, arguments}}");
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const Json& c = calls.at(i);
    if (!c.is_object()) throw ApiError::bad_field(at, "expected an object {id, type, function: {name, arguments}}");
    const Json* type = given_field(c, "type");
    if (type != nullptr && !(type->is_string() && type->as_string() == "function")) {
      throw ApiError::bad_field(at + ".type", "only \"function\" calls are supported");
    }
    const Json* id = given_field(c, "id");
    if (id != nullptr && !id->is_string()) throw ApiError::bad_field(at + ".id", "expected a string");
    const Json* fn = given_field(c, "function");
    if (fn == nullptr || !fn->is_object())
      throw ApiError::bad_field(at + ".function", "expected an object {name, arguments}");
    const Json* name = given_field(*fn, "name");
    if (name == nullptr || !name->is_string() || name->as_string().empty()) {
      throw ApiError::bad_field(at + ".function.name", "expected a non-empty string");
    }
    const Json* args = given_field(*fn, "arguments");
    if (args != nullptr && !args->is_string() && !args->is_object()) {
      throw ApiError::bad_field(at + ".function.arguments", "expected the arguments as a JSON string");
    }
    Json f = Json::object();
    f.set("name", name->as_string());
    f.set("arguments", args == nullptr ? Json("{}") : args->is_string() ? *args : Json(args->dump()));
    Json call = Json::object();
    if (id != nullptr) call.set("id", id->as_string());
    call.set("type", "function");
    call.set("function", std::move(f));
    out.push_back(std::move(call));
  }
  return out;
}

ToolCallFormat prepare_tool_request_400(const ChatTemplate& chat_template, const ToolRequest& tools, ServiceRequest& r) {
  try {
    return prepare_tool_request(chat_template, tools, r);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) throw;
    throw tools_error(e, "tools");
  }
}

}  // namespace edgellm::server
