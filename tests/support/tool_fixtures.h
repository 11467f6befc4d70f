#pragma once
// The two tools the tool-calling tests of every face send (the server's, the C ABI's; the node
// tests spell them in JS), and the JSON Schema a call {"name", "arguments"} of one of them
// satisfies, for python3-jsonschema (support/json_validator.h). Header-only: the C ABI tests see
// no library internals.
namespace edgellm::test {

inline constexpr const char* kTwoTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "minLength": 1, "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7},
      "unit": {"enum": ["celsius", "fahrenheit"]}},
      "required": ["city", "days", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "set_alarm", "description": "An alarm",
    "parameters": {"type": "object", "properties": {
      "hour": {"type": "integer", "minimum": 0, "maximum": 23},
      "label": {"type": "string", "maxLength": 8}},
      "required": ["hour"], "additionalProperties": false}}}
])";

// "One of kTwoTools, by name, with arguments that follow its parameters" (written out, not
// derived from kTwoTools by code under test).
inline constexpr const char* kTwoToolsCallSchema = R"({"anyOf": [
  {"type": "object", "required": ["name", "arguments"], "properties": {"name": {"const": "get_weather"},
    "arguments": {"type": "object", "properties": {
      "city": {"type": "string", "minLength": 1, "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7},
      "unit": {"enum": ["celsius", "fahrenheit"]}},
      "required": ["city", "days", "unit"], "additionalProperties": false}}},
  {"type": "object", "required": ["name", "arguments"], "properties": {"name": {"const": "set_alarm"},
    "arguments": {"type": "object", "properties": {
      "hour": {"type": "integer", "minimum": 0, "maximum": 23},
      "label": {"type": "string", "maxLength": 8}},
      "required": ["hour"], "additionalProperties": false}}}]})";

}  // namespace edgellm::test
