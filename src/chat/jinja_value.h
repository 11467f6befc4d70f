// The dynamic value type of the Jinja interpreter, with Python semantics: printing (str/repr),
// truthiness, equality and ordering, arithmetic, and json.dumps-compatible serialisation.
// Lists and dicts are shared by reference like Python objects; strings are immutable and shared
// so copying a Value never copies text.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/json.h"

namespace edgellm::jinja {

class Value;

// Position in the template source, 1-based; every runtime error names one.
struct SourcePos {
  int line = 1;
  int column = 1;
};

// Throws Error(kInvalidArgument) "template error at line L, column C: message".
[[noreturn]] void fail_at(SourcePos pos, const std::string& message);

// A value-level error without a position yet; the interpreter catches it and adds the position
// of the expression being evaluated.
struct ValueError {
  std::string message;
};
[[noreturn]] void value_error(const std::string& message);

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
};

// Insertion-ordered mapping with string keys (JSON objects and template dict literals).
struct DictData {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // jinja2's namespace(): the only object whose attributes can be set

  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// Arguments of a call: positional, then keyword arguments in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // Argument `index` or keyword `name`; nullptr when neither was given.
  const Value* get(size_t index, std::string_view name) const;
  const Value* keyword_arg(std::string_view name) const;
  // Integer argument `index` or `name` (bools count, as in Python); `dflt` when absent or None.
  int64_t int_or(size_t index, std::string_view name, int64_t dflt) const;
};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  struct Undefined {
    std::string name;  // what was looked up, for error messages
  };
  using ListPtr = std::shared_ptr<ListData>;
  using DictPtr = std::shared_ptr<DictData>;
  using StrPtr = std::shared_ptr<const std::string>;
  using FnPtr = std::shared_ptr<Callable>;

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string name = {}) { return Value(Undefined{std::move(name)}); }
  static Value none() { return Value(nullptr); }
  Value(std::nullptr_t) : v_(nullptr) {}
  Value(bool b) : v_(b) {}
  Value(int v) : v_(static_cast<int64_t>(v)) {}
  Value(int64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(const char* s) : v_(std::make_shared<const std::string>(s)) {}
  Value(std::string s) : v_(std::make_shared<const std::string>(std::move(s))) {}
  Value(std::string_view s) : v_(std::make_shared<const std::string>(s)) {}
  Value(ListPtr l) : v_(std::move(l)) {}
  Value(DictPtr d) : v_(std::move(d)) {}
  Value(FnPtr f) : v_(std::move(f)) {}

  static Value list(std::vector<Value> items = {}, bool is_tuple = false);
  static Value dict();
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);
  // JSON → Value: integral numbers within ±2^53 become ints (Python's json.loads would give int
  // for "1" and float for "1.0"; the DOM does not keep that distinction).
  static Value from_json(const Json& j);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  // Python's bool is an int subclass: True + 1 == 2, "ab" * True == "ab".
  bool is_intlike() const { return is_int() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_namespace() const { return is_dict() && dict_ptr()->is_namespace; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // An int or a bool (0 / 1) as int64_t.
  int64_t as_intlike() const { return is_bool() ? (as_bool() ? 1 : 0) : as_int(); }
  // Any number (bool, int, float) as double.
  double to_double() const;
  const std::string& str() const { return *std::get<StrPtr>(v_); }
  const std::vector<Value>& items() const { return std::get<ListPtr>(v_)->items; }
  const ListPtr& list_ptr() const { return std::get<ListPtr>(v_); }
  const DictPtr& dict_ptr() const { return std::get<DictPtr>(v_); }
  const FnPtr& fn_ptr() const { return std::get<FnPtr>(v_); }
  const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }

  // Python truthiness; undefined is false.
  bool truthy() const;
  // Python's type name, for error messages.
  const char* type_name() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, StrPtr, ListPtr, DictPtr, FnPtr> v_;
};

// Deepest container nesting the interpreter accepts in any value it prints, compares or stores in
// a namespace; protects the native stack from values like ns.x = [ns.x] repeated in a loop.
inline constexpr int kMaxValueDepth = 256;
// Throws ValueError when a recursive walk over a value reaches `depth` > kMaxValueDepth.
void check_value_depth(int depth);

// Python str(value); undefined prints as "".
std::string to_str(const Value& v);
// Python repr(value): strings quoted, used inside printed lists and dicts.
std::string to_repr(const Value& v);
// Python float repr: shortest round-trip digits, "1.0", "1e-05", "inf".
std::string float_repr(double d);

// Python ==; numbers compare across int/float/bool.
bool values_equal(const Value& a, const Value& b);
// Python <; throws ValueError for unordered type pairs.
bool values_less(const Value& a, const Value& b);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::string indent;  // empty with has_indent=true means newlines only (Python indent=0)
  bool has_indent = false;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// Python json.dumps(value, ...) byte for byte; undefined and callables are not serialisable.
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

// Depth of nested lists/dicts reachable from v (0 for scalars); throws ValueError when deeper than
// kMaxValueDepth or when `self` (a namespace being assigned to) is reachable: that would be a cycle.
int checked_depth(const Value& v, const DictData* self);

// Size caps on values built by a template (string and list repetition, concatenation, join, ...):
// a hostile template must fail with an error, not exhaust memory.
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;
inline constexpr size_t kMaxCollectionSize = size_t{1} << 20;
void check_string_size(size_t bytes);
void check_collection_size(size_t count);

// Python binary operators (+ - * / // % **) and unary minus; ValueError on unsupported types.
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);

// UTF-8 helpers for Python's code-point indexing of strings (jinja_value_codepoints.cpp). A byte
// that does not belong to a well-formed sequence decodes to 0x110000 + byte, so slicing and
// re-encoding keeps it intact; utf8_append writes such a value back as that byte and any other
// non-scalar value (a surrogate from a "\ud800" escape) as U+FFFD.
std::vector<uint32_t> utf8_decode(std::string_view s);
std::string utf8_encode(const std::vector<uint32_t>& cps, size_t begin, size_t end);
void utf8_append(std::string& out, uint32_t cp);

}  // namespace edgellm::jinja
