// Who may talk to the server: the bind-address rule and the API key check.
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace edgellm::server {

// True for addresses that only this machine can reach: 127.0.0.0/8, ::1, "localhost".
bool is_loopback_host(std::string_view host);

// Compares in time that depends only on the lengths, never on where the bytes first differ, so a
// client cannot find the key byte by byte from response times.
bool constant_time_equals(std::string_view a, std::string_view b);

// Checks an "Authorization" header value against `api_key` ("Bearer <key>"). An empty api_key
// accepts every request.
bool authorized(std::string_view authorization_header, std::string_view api_key);

}  // namespace edgellm::server
