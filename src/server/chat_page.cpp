#include "server/chat_page.h"

namespace edgellm::server {

std::string_view chat_page_html() {
  // chat_page_html.inc is a raw string literal generated from chat_page.html (CMakeLists.txt).
  static constexpr std::string_view kPage =
#include "server/chat_page_html.inc"
      ;
  return kPage;
}

}  // namespace edgellm::server
