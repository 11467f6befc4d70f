// libFuzzer target for the JSON parser (tokenizer.json, chat requests and HTTP bodies are
// untrusted). Any input must parse or throw edgellm::Error; what parses must survive a
// dump -> parse round trip (catches serialiser bugs such as unescaped control bytes), up to the
// documented lossy cases (see same_document).
//
// Seeds: when EDGELLM_FUZZ_SEED_DIR is set, LLVMFuzzerInitialize writes a few small documents.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/json.h"

namespace {

void write_seeds(const std::string& dir) {
  const char* seeds[] = {
      R"({"model": "x", "messages": [{"role": "user", "content": "hi \u00e9\ud83d\ude00\n"}], "stream": true})",
      R"([1, -2.5e-3, 1e308, 0, -0, true, false, null, "", {"a": {"b": [[]]}}])",
      R"({"added_tokens": [{"id": 151643, "content": "<|endoftext|>", "special": true}], "model": {"type": "BPE", "merges": ["a b"]}})",
      R"("\"\\\/\b\f\n\r\t\u0000")",
  };
  int i = 0;
  for (const char* s : seeds) {
    const std::string path = dir + "/seed-" + std::to_string(i++) + ".json";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fputs(s, f);
      std::fclose(f);
    }
  }
}

// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; }
    else return false;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

// Equality up to what the serialiser documents as lossy: non-finite numbers are written as null
// (JSON has no Inf/NaN) and, with ensure_ascii, invalid UTF-8 in strings becomes U+FFFD.
bool same_document(const edgellm::Json& a, const edgellm::Json& b, bool strings_may_be_replaced) {
  using T = edgellm::Json::Type;
  if (a.is_number() && !std::isfinite(a.as_number())) return b.is_null();
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case T::kNull: return true;
    case T::kBool: return a.as_bool() == b.as_bool();
    case T::kNumber: return a.as_number() == b.as_number();
    case T::kString:
      if (strings_may_be_replaced && !valid_utf8(a.as_string())) return true;
      return a.as_string() == b.as_string();
    case T::kArray: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!same_document(a.at(i), b.at(i), strings_may_be_replaced)) return false;
      }
      return true;
    }
    case T::kObject: {
      const auto& x = a.as_object();
      const auto& y = b.as_object();
      // Two keys that differ only in invalid bytes both become U+FFFD and then merge (the
      // last value wins), so such an object can only be checked for parsing again.
      if (strings_may_be_replaced) {
        for (const auto& kv : x) {
          if (!valid_utf8(kv.first)) return true;
        }
      }
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i].first != y[i].first) return false;
        if (!same_document(x[i].second, y[i].second, strings_may_be_replaced)) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR"); dir && *dir) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  edgellm::Json doc;
  try {
    doc = edgellm::Json::parse(text);
  } catch (const edgellm::Error&) {
    return 0;
  }
  for (bool ascii : {false, true}) {
    const std::string out = doc.dump(-1, ascii);
    if (ascii) {
      for (unsigned char c : out) {
        if (c >= 0x80) {
          std::fprintf(stderr, "dump(ensure_ascii=true) produced a non-ASCII byte\n");
          std::abort();
        }
      }
    }
    edgellm::Json again;
    try {
      again = edgellm::Json::parse(out);
    } catch (const edgellm::Error& e) {
      std::fprintf(stderr, "dump of a parsed document does not parse: %s\n", e.what());
      std::abort();
    }
    if (!same_document(doc, again, /*strings_may_be_replaced=*/ascii)) {
      std::fprintf(stderr, "JSON round trip (ensure_ascii=%d) changed the document\n", ascii ? 1 : 0);
      std::abort();
    }
  }
  return 0;
}
