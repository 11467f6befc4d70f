// Who may drive the server from a browser (docs/server.md, "Security model"). Pure functions,
// thread-safe.
//
//   DNS rebinding  a page on evil.example re-points its name at 127.0.0.1 and calls the server
//                  as "same origin"; its requests still say "Host: evil.example". A keyless
//                  server answers only Host values that name this machine's loopback or the
//                  bound address, plus --allowed-hosts (what llama-server's and Ollama's host
//                  checks do).
//   cross-site     any page may send a "simple" POST (text/plain, form-encoded) to localhost
//                  without a CORS preflight. Browsers add Origin to such requests: one from
//                  another origin than the server's own, and not --cors-origin, is refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm::server {

// The host part of a Host header value, lower-case, without the port or a trailing dot:
// "LocalHost:8080" -> "localhost", "[::1]:80" -> "[::1]". Empty when malformed.
std::string host_name_of(std::string_view host_header);

// The Host names a keyless server bound to `bind_host` answers: localhost, 127.0.0.1, [::1],
// the bound address (IPv6 in brackets) and `extra` (--allowed-hosts; "*" allows any).
std::vector<std::string> allowed_host_names(const std::string& bind_host, const std::vector<std::string>& extra);

// True when `host_header` names one of `allowed` (any port). An absent Host (HTTP/1.0) is
// allowed: every browser sends one.
bool host_allowed(std::string_view host_header, const std::vector<std::string>& allowed);

// True when a request with this Origin header may be served: no Origin (not a browser, or a
// same-origin GET), the server's own origin (the scheme://host[:port] the request's Host
// names), or `cors_origin` ("*": any).
bool origin_allowed(std::string_view origin, std::string_view host_header, std::string_view cors_origin);

// application/json, or any type/subtype+json, parameters allowed.
bool is_json_content_type(std::string_view content_type);

}  // namespace edgellm::server
