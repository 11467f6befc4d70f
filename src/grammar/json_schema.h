// JSON Schema -> GBNF: the grammar of the JSON texts a schema accepts (docs/structured-output.md
// lists the subset). What the grammar allows is always valid against the schema; where the
// schema allows more than a grammar can say, the grammar allows a documented part of it
// (properties in the schema's order, bounded whitespace, at most 16 integer digits), never
// something invalid. A keyword the converter cannot honour is an Error(kInvalidArgument) that
// names the keyword and where it is ("json_schema: /properties/when: format 'uri' is not
// supported ..."), never silently dropped; only annotations (title, description, examples,
// default, $comment, ...) are ignored.
//
//   {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}, "required": ["name"]}
//   ->  root ::= "{" space name-kv "}" space
//       name-kv ::= "\"name\"" space ":" space name
//       name ::= "\"" char{0,20} "\"" space
//       ...
//
// Supported: type (one or a list), object (properties, required, additionalProperties: false /
// true / a schema, minProperties / maxProperties without properties), array (items, prefixItems,
// minItems, maxItems, uniqueItems: false), enum, const, string (minLength, maxLength, pattern:
// json_regex.h, format: date, time, date-time, uuid, email, ipv4), integer (minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf 1), number (the same bounds when they are
// integers), boolean, null, anyOf, oneOf (as anyOf: exclusivity is up to the schema's branches),
// allOf with one branch, $ref to "#", "#/$defs/..", "#/definitions/.." or any JSON pointer into the
// document (recursion included), true / {} (any JSON value).
#pragma once

#include <memory>
#include <string>

#include "core/json.h"
#include "grammar/grammar_ast.h"

namespace edgellm::grammar {

struct JsonSchemaOptions {
  // JSON Schema's default for an object without "additionalProperties" is "any other key is
  // allowed"; like llama.cpp and XGrammar we default to allowing none (a model asked for a
  // schema's properties should not invent more). Set true for the specification's default.
  bool allow_additional_properties_by_default = false;
};

// Throws Error(kInvalidArgument) as described above.
std::string json_schema_to_gbnf(const Json& schema, const JsonSchemaOptions& options = {});

// Several schemas in one grammar (tool calls: one argument schema per tool), sharing the
// building blocks (space, string, number, ...):
//   JsonGrammarBuilder b;
//   const std::string args = b.add_schema(tool_parameters, "get-weather-args");   // a GBNF expression
//   std::string gbnf = "root ::= \"{\" ... " + args + " ...\n" + b.rules();
class JsonGrammarBuilder {
 public:
  explicit JsonGrammarBuilder(const JsonSchemaOptions& options = {});
  ~JsonGrammarBuilder();
  JsonGrammarBuilder(const JsonGrammarBuilder&) = delete;
  JsonGrammarBuilder& operator=(const JsonGrammarBuilder&) = delete;

  // The rules of `schema` (its $refs resolve within it); returns an expression matching it.
  // Throws as json_schema_to_gbnf. Rule names derive from name_hint and never collide.
  std::string add_schema(const Json& schema, const std::string& name_hint);
  // One of the building blocks by name ("space", "string", "char", "value", ...), added if needed.
  std::string builtin(const std::string& name);
  // Every rule added so far, as GBNF lines (no start rule).
  std::string rules() const;

 private:
  class Converter;
  std::unique_ptr<Converter> c_;
};
// Any JSON object (response_format "json_object").
std::string json_object_gbnf();
// Any JSON value.
std::string json_value_gbnf();

}  // namespace edgellm::grammar
