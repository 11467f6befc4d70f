// The Jinja value model: errors, size and depth limits, the containers (DictData, CallArgs) and
// Value's construction, truthiness and type names. Printing, comparison, arithmetic, JSON and
// code point helpers live in jinja_value_*.cpp (one concern each), all declared in jinja_value.h.
#include "chat/jinja_value.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace edgellm::jinja {

void fail_at(SourcePos pos, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "template error at line " + std::to_string(pos.line) +
                                               ", column " + std::to_string(pos.column) + ": " +
                                               message);
}

void value_error(const std::string& message) { throw ValueError{message}; }

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes) {
    value_error("string of " + std::to_string(bytes) + " bytes exceeds the template limit of " +
                std::to_string(kMaxStringBytes));
  }
}

void check_collection_size(size_t count) {
  if (count > kMaxCollectionSize) {
    value_error("list of " + std::to_string(count) + " items exceeds the template limit of " +
                std::to_string(kMaxCollectionSize));
  }
}

void check_value_depth(int depth) {
  if (depth > kMaxValueDepth) value_error("value nested too deeply (or contains itself)");
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& kv : items) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

void DictData::set(const std::string& key, Value value) {
  for (auto& kv : items) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  check_collection_size(items.size() + 1);
  items.emplace_back(key, std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  return keyword_arg(name);
}

int64_t CallArgs::int_or(size_t index, std::string_view name, int64_t dflt) const {
  const Value* v = get(index, name);
  if (!v || v->is_none()) return dflt;
  if (!v->is_intlike()) value_error("argument '" + std::string(name) + "' must be an integer, got " + v->type_name());
  return v->as_intlike();
}

const Value* CallArgs::keyword_arg(std::string_view name) const {
  for (const auto& kv : keyword) {
    if (kv.first == name) return &kv.second;
  }
  return nullptr;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->is_tuple = is_tuple;
  return Value(std::move(l));
}

Value Value::dict() { return Value(std::make_shared<DictData>()); }

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value(std::move(c));
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::kBool:
      return as_bool() ? 1.0 : 0.0;
    case Kind::kInt:
      return static_cast<double>(as_int());
    case Kind::kFloat:
      return as_float();
    default:
      value_error(std::string("expected a number, got ") + type_name());
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !items().empty();
    case Kind::kDict:
      return dict_ptr()->is_namespace || !dict_ptr()->items.empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return list_ptr()->is_tuple ? "tuple" : "list";
    case Kind::kDict:
      return dict_ptr()->is_namespace ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

namespace {

int depth_of(const Value& v, const DictData* self, int level,
             std::unordered_map<const void*, int>& memo) {
  check_value_depth(level);
  const void* key = nullptr;
  if (v.is_list()) key = v.list_ptr().get();
  if (v.is_dict()) key = v.dict_ptr().get();
  if (!key) return 0;
  if (key == self) value_error("a namespace cannot contain itself");
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  int deepest = 0;
  if (v.is_list()) {
    for (const auto& e : v.items()) deepest = std::max(deepest, depth_of(e, self, level + 1, memo));
  } else {
    for (const auto& kv : v.dict_ptr()->items) {
      deepest = std::max(deepest, depth_of(kv.second, self, level + 1, memo));
    }
  }
  memo[key] = deepest + 1;
  return deepest + 1;
}

}  // namespace

int checked_depth(const Value& v, const DictData* self) {
  std::unordered_map<const void*, int> memo;
  return depth_of(v, self, 0, memo);
}

}  // namespace edgellm::jinja
