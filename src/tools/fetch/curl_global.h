#pragma once
// curl_global_init once per process, before the first handle (libcurl requires it and it is not
// thread-safe itself): shared by the downloader and the HTTPS transport.
#include <curl/curl.h>

#include <mutex>

namespace edgellm {

inline void curl_global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace edgellm
