#include "server/auth.h"

#include <arpa/inet.h>

#include <cstdint>
#include <string>

namespace edgellm::server {

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

bool constant_time_equals(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited whatever the contents; the length difference is
  // folded into the result instead of returning early.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff |= static_cast<uint8_t>(x ^ y);
  }
  // volatile: the compiler may not turn the loop into an early-exit comparison.
  volatile uint8_t result = diff;
  return result == 0;
}

bool authorized(std::string_view header, std::string_view api_key) {
  if (api_key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (header.size() < kBearer.size() || header.substr(0, kBearer.size()) != kBearer) {
    // Still compare, so a missing prefix costs the same time as a wrong key.
    (void)constant_time_equals(header, api_key);
    return false;
  }
  return constant_time_equals(header.substr(kBearer.size()), api_key);
}

}  // namespace edgellm::server
