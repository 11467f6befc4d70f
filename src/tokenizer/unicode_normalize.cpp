#include "tokenizer/unicode_normalize.h"

#include <algorithm>

namespace edgellm::unicode {
namespace {

// Hangul syllable decomposition (The Unicode Standard, section 3.12): a syllable S in
// [SBase, SBase + SCount) is L V (T), with L = LBase + SIndex / NCount, V = VBase + (SIndex %
// NCount) / TCount, T = TBase + SIndex % TCount (absent when 0).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kTCount = 28, kNCount = 21 * 28, kSCount = 19 * 21 * 28;

const MappingEntry* find_mapping(const MappingEntry* table, size_t count, uint32_t cp) {
  const MappingEntry* end = table + count;
  const MappingEntry* it = std::lower_bound(table, end, cp, [](const MappingEntry& e, uint32_t c) { return e.cp < c; });
  return it != end && it->cp == cp ? it : nullptr;
}

}  // namespace

bool is_nonspacing_mark(uint32_t cp) {
  if (cp < 0x300) return false;
  const CodepointSpan* end = kNonspacingMarks + kNonspacingMarkCount;
  const CodepointSpan* it =
      std::upper_bound(kNonspacingMarks, end, cp, [](uint32_t c, const CodepointSpan& s) { return c < s.first; });
  return it != kNonspacingMarks && cp <= (it - 1)->last;
}

uint8_t combining_class(uint32_t cp) {
  const CombiningClassRun* end = kCombiningClasses + kCombiningClassCount;
  const CombiningClassRun* it =
      std::upper_bound(kCombiningClasses, end, cp, [](uint32_t c, const CombiningClassRun& r) { return c < r.start; });
  return it == kCombiningClasses ? 0 : (it - 1)->ccc;
}

std::vector<uint32_t> to_nfd(const std::vector<uint32_t>& cps) {
  std::vector<uint32_t> out;
  out.reserve(cps.size() + cps.size() / 4);
  for (const uint32_t cp : cps) {
    if (cp >= kSBase && cp < kSBase + kSCount) {
      const uint32_t s = cp - kSBase;
      out.push_back(kLBase + s / kNCount);
      out.push_back(kVBase + (s % kNCount) / kTCount);
      if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    } else if (const MappingEntry* m = find_mapping(kDecompositions, kDecompositionsCount, cp)) {
      out.insert(out.end(), kDecompositionsPool + m->offset, kDecompositionsPool + m->offset + m->length);
    } else {
      out.push_back(cp);
    }
  }
  // Canonical ordering: every maximal run of code points with a non-zero class is sorted by
  // class, keeping the order of equal classes (the decompositions above are ordered already;
  // marks from neighbouring characters may not be).
  for (size_t i = 0; i < out.size();) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && combining_class(out[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(j),
                       [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    }
    i = j;
  }
  return out;
}

void append_lower(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp < 0x80) {  // ASCII, the common case
    out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  if (const MappingEntry* m = find_mapping(kLowercase, kLowercaseCount, cp)) {
    out.insert(out.end(), kLowercasePool + m->offset, kLowercasePool + m->offset + m->length);
  } else {
    out.push_back(cp);
  }
}

}  // namespace edgellm::unicode
