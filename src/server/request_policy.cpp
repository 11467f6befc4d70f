#include "server/request_policy.h"

#include <algorithm>

#include "server/http_message.h"

namespace edgellm::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string host_name_of(std::string_view value) {
  std::string_view h = trim(value);
  std::string_view name;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return {};
    name = h.substr(0, close + 1);
    std::string_view rest = h.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) return {};
  } else {
    const size_t colon = h.find(':');
    name = h.substr(0, colon);
    if (colon != std::string_view::npos && !all_digits(h.substr(colon + 1))) return {};
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return lower(name);
}

std::vector<std::string> allowed_host_names(const std::string& bind_host, const std::vector<std::string>& extra) {
  std::vector<std::string> names = {"localhost", "127.0.0.1", "[::1]"};
  if (!bind_host.empty()) {
    const bool v6 = bind_host.find(':') != std::string::npos && bind_host.front() != '[';
    names.push_back(lower(v6 ? "[" + bind_host + "]" : bind_host));
  }
  for (const std::string& e : extra) {
    if (e == "*") {
      names.push_back("*");
      continue;
    }
    const bool v6 = e.find(':') != std::string::npos && e.front() != '[' && e.find(']') == std::string::npos &&
                    std::count(e.begin(), e.end(), ':') > 1;
    const std::string name = host_name_of(v6 ? "[" + e + "]" : e);
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

bool host_allowed(std::string_view host_header, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), "*") != allowed.end()) return true;
  if (trim(host_header).empty()) return true;
  const std::string name = host_name_of(host_header);
  return !name.empty() && std::find(allowed.begin(), allowed.end(), name) != allowed.end();
}

bool origin_allowed(std::string_view origin, std::string_view host_header, std::string_view cors_origin) {
  origin = trim(origin);
  if (origin.empty()) return true;
  if (cors_origin == "*" || (!cors_origin.empty() && iequals(origin, trim(cors_origin)))) return true;
  // Same origin: "http://" or "https://" followed by exactly what the Host header says.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.size() > scheme.size() && iequals(origin.substr(0, scheme.size()), scheme)) {
      return iequals(origin.substr(scheme.size()), trim(host_header));
    }
  }
  return false;  // "null" (sandboxed frames, file: pages) and anything else
}

bool is_json_content_type(std::string_view content_type) {
  const std::string type = lower(trim(content_type.substr(0, content_type.find(';'))));
  return type == "application/json" || (type.size() > 5 && type.compare(type.size() - 5, 5, "+json") == 0);
}

}  // namespace edgellm::server
