#include "support/greedy_reference.h"

#include <string_view>

#include "core/json.h"
#include "support/test_env.h"

namespace edgellm::test {

std::vector<GreedyReference> load_greedy_references(const std::string& file) {
  std::vector<GreedyReference> refs;
  const std::string all = read_file(shared_testdata("reference/" + file));
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    if (end > start) {
      const Json j = Json::parse(std::string_view(all).substr(start, end - start));
      GreedyReference r;
      for (const auto& v : j.at("prompt_ids").as_array()) r.prompt.push_back(static_cast<int32_t>(v.as_int()));
      for (const auto& v : j.at("output_ids").as_array()) r.output.push_back(static_cast<int32_t>(v.as_int()));
      r.text = j.at("output_text").as_string();
      refs.push_back(std::move(r));
    }
    start = end + 1;
  }
  return refs;
}

}  // namespace edgellm::test
