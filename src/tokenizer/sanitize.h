// Input hygiene for user-supplied text before it is tokenized or put into a prompt.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace edgellm {

// Rule: malformed UTF-8 becomes U+FFFD (maximal-subpart rule, see unicode.h); NUL, the other
// C0 controls except TAB, LF and CR, DEL (U+007F) and the C1 controls U+0080..U+009F are
// removed. Everything else (including format characters such as ZWJ, needed by emoji) is kept.
// *n_changed receives the number of replaced or removed characters.
std::string sanitize_user_text(std::string_view text, size_t* n_changed = nullptr);

}  // namespace edgellm
