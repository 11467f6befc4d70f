// A small JSON DOM: parse (strict RFC 8259, depth-limited) and serialise.
// Used for tokenizer.json, chat messages, CLI --json output and the HTTP server.
// Objects keep insertion order because chat templates (tojson) and HF files depend on it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace edgellm {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : value_(b) {}
  Json(int v) : value_(static_cast<double>(v)) {}
  Json(int64_t v) : value_(static_cast<double>(v)) {}
  Json(uint64_t v) : value_(static_cast<double>(v)) {}
  Json(double v) : value_(v) {}
  Json(const char* s) : value_(std::string(s)) {}
  Json(std::string s) : value_(std::move(s)) {}
  Json(std::string_view s) : value_(std::string(s)) {}
  Json(Array a) : value_(std::move(a)) {}
  Json(Object o) : value_(std::move(o)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  // Throws Error(kInvalidFile) with the byte offset on malformed input.
  static Json parse(std::string_view text, int max_depth = 512);

  Type type() const { return static_cast<Type>(value_.index()); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_number() const { return type() == Type::kNumber; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Typed accessors throw Error(kInvalidArgument) on a type mismatch.
  bool as_bool() const;
  double as_number() const;
  int64_t as_int() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Object lookup: nullptr when absent (or when this is not an object).
  const Json* find(std::string_view key) const;
  // Object lookup that throws when absent.
  const Json& at(std::string_view key) const;
  const Json& at(size_t index) const;
  // Insert or replace (object only).
  Json& set(std::string key, Json value);
  // Append (array only).
  void push_back(Json value);
  size_t size() const;

  // Compact serialisation; ensure_ascii=false keeps UTF-8 as is (like Python's json.dumps(...,
  // ensure_ascii=False)). indent < 0 means one line with ", " and ": " separators (Python default).
  std::string dump(int indent = -1, bool ensure_ascii = false) const;

  bool operator==(const Json& other) const { return value_ == other.value_; }

 private:
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value_;
};

// Appends s as a JSON string literal (with quotes) to out.
void json_escape(std::string& out, std::string_view s, bool ensure_ascii = false);

}  // namespace edgellm
