// Stop-string holdback: text that could start a stop string waits for the next piece; the stop
// string itself is never emitted, even when it spans several pieces (tokens).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "generation/stop_strings.h"

namespace edgellm {
namespace {

TEST(StopStringFilter, PassesTextThroughWithoutStops) {
  StopStringFilter f;
  EXPECT_EQ(f.push("Once"), "Once");
  EXPECT_EQ(f.push(" upon"), " upon");
  EXPECT_EQ(f.flush(), "");
  EXPECT_FALSE(f.matched());
}

TEST(StopStringFilter, HoldsBackAPossibleStartAcrossPieces) {
  StopStringFilter f({"The end"});
  EXPECT_EQ(f.push("happy. Th"), "happy. ");  // "Th" may begin "The end"
  EXPECT_EQ(f.held_bytes(), 2u);
  EXPECT_EQ(f.push("e e"), "");  // "The e" still may
  EXPECT_EQ(f.push("nd"), "");   // completes: nothing of it is released
  EXPECT_TRUE(f.matched());
  EXPECT_EQ(f.matched_stop(), "The end");
  EXPECT_EQ(f.push(" more"), "");
  EXPECT_EQ(f.flush(), "");
}

TEST(StopStringFilter, ReleasesHeldTextWhenItStopsMatching) {
  StopStringFilter f({"The end"});
  EXPECT_EQ(f.push("Th"), "");
  EXPECT_EQ(f.push("ey"), "They");
  EXPECT_EQ(f.push(" The"), " ");
  EXPECT_EQ(f.flush(), "The");  // generation ended for another reason: the tail is real text
}

TEST(StopStringFilter, StopInsideOnePieceCutsBeforeIt) {
  StopStringFilter f({"\n\n", "END"});
  EXPECT_EQ(f.push("abc\n\ndef"), "abc");
  EXPECT_EQ(f.matched_stop(), "\n\n");
  StopStringFilter g({"b", "abc"});
  EXPECT_EQ(g.push("xabc"), "x");  // both start... "abc" starts earlier than "b"
  EXPECT_EQ(g.matched_stop(), "abc");
}

TEST(StopStringFilter, RejectsAnEmptyStop) { EXPECT_THROW(StopStringFilter({"ok", ""}), Error); }

// Random pieces against a direct reference: the concatenation, cut at the earliest stop string
// found once the first stop has completed.
TEST(StopStringFilter, RandomPiecesMatchTheReference) {
  std::mt19937 gen(17);
  const std::string alphabet = "ab\n.";
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::string> stops;
    const int n_stops = 1 + static_cast<int>(gen() % 3);
    for (int i = 0; i < n_stops; ++i) {
      std::string s;
      const int len = 1 + static_cast<int>(gen() % 4);
      for (int j = 0; j < len; ++j) s += alphabet[gen() % alphabet.size()];
      stops.push_back(s);
    }
    std::string all;
    std::vector<std::string> pieces;
    const int n_pieces = 1 + static_cast<int>(gen() % 12);
    for (int i = 0; i < n_pieces; ++i) {
      std::string p;
      const int len = static_cast<int>(gen() % 4);
      for (int j = 0; j < len; ++j) p += alphabet[gen() % alphabet.size()];
      pieces.push_back(p);
      all += p;
    }
    // Generation stops after the first piece that completes any stop string; the text is cut at
    // the earliest stop string present at that moment.
    size_t cut = std::string::npos;
    std::string prefix;
    for (const auto& p : pieces) {
      prefix += p;
      for (const auto& s : stops) cut = std::min(cut, prefix.find(s));
      if (cut != std::string::npos) break;
    }
    const std::string expected = cut == std::string::npos ? all : all.substr(0, cut);

    StopStringFilter f(stops);
    std::string out;
    std::string seen;
    for (const auto& p : pieces) {
      seen += p;
      out += f.push(p);
      // Never released beyond what the reference allows, and (while unmatched) only the part
      // that could start a stop string is held.
      ASSERT_EQ(expected.compare(0, out.size(), out), 0) << "trial " << trial;
      if (!f.matched()) {
        ASSERT_EQ(out.size() + f.held_bytes(), seen.size());
        const std::string held = seen.substr(out.size());
        bool could_start = held.empty();
        for (const auto& s : stops) could_start = could_start || s.compare(0, held.size(), held) == 0;
        ASSERT_TRUE(could_start) << "trial " << trial << " held '" << held << "'";
      }
    }
    out += f.flush();
    EXPECT_EQ(out, expected) << "trial " << trial;
    EXPECT_EQ(f.matched(), cut != std::string::npos);
  }
}

}  // namespace
}  // namespace edgellm
