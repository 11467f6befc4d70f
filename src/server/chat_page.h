// The web chat page served at "/": one self-contained HTML file (src/server/chat_page.html,
// inline CSS and JS, no CDN) compiled into the binary by CMake.
#pragma once

#include <string_view>

namespace edgellm::server {

std::string_view chat_page_html();

}  // namespace edgellm::server
