// Attribute and item access with jinja2's rules (attribute first for `a.b`, item first for
// `a[b]`), Python slicing, and the methods of str, dict and list that chat templates call
// (message.content.split('</think>'), tool.get('name'), ...). Lists are immutable, as in the
// ImmutableSandboxedEnvironment Hugging Face renders with, so there is no list.append.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace edgellm::jinja {

// obj.name: a bound method, a dict entry, or undefined.
Value get_attr(const Value& obj, const std::string& name);
// obj[key]: list/str index (negative from the end), dict entry, or undefined.
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on a list, tuple or string (null Values mean "omitted").
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Python str helpers shared with the filters (ASCII case mapping; other text passes through).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
std::string py_lower(std::string s);
std::string py_upper(std::string s);
std::string py_capitalize(const std::string& s);
std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement,
                       int64_t count);
std::vector<std::string> py_split(const std::string& s, const Value& sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(const std::string& s);
size_t py_len(const Value& v);  // len(): code points for str; ValueError for unsized values

// Elements of an iterable as a for loop sees them: list items, dict keys, string characters;
// undefined iterates as empty. ValueError for other types.
std::vector<Value> iterate(const Value& v);

}  // namespace edgellm::jinja
