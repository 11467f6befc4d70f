#include "tools/quant/recipe_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"

namespace edgellm::quant {
namespace {

uint64_t padded(uint64_t bytes, uint32_t alignment) {
  return alignment == 0 ? bytes : (bytes + alignment - 1) / alignment * alignment;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<int> choose_min_cost(const std::vector<std::vector<SizedOption>>& items, uint64_t budget,
                                 uint64_t max_units) {
  require(max_units >= 1, ErrorCode::kInvalidArgument, "choose_min_cost: max_units must be >= 1");
  const uint64_t unit = std::max<uint64_t>(1, (budget + max_units - 1) / max_units);
  const size_t n_units = static_cast<size_t>(budget / unit);
  uint64_t smallest = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    require(!items[i].empty(), ErrorCode::kInvalidArgument,
            "choose_min_cost: item " + std::to_string(i) + " has no option");
    uint64_t m = std::numeric_limits<uint64_t>::max();
    for (const SizedOption& o : items[i]) m = std::min(m, o.bytes);
    smallest += m;
  }
  require(smallest <= budget, ErrorCode::kInvalidArgument,
          "the size budget of " + std::to_string(budget) + " bytes is below the smallest choice, " +
              std::to_string(smallest) + " bytes");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[u]: least cost of the items so far within u units; pick[i][u]: item i's option there.
  std::vector<double> best(n_units + 1, 0.0), next(n_units + 1);
  std::vector<std::vector<uint8_t>> pick(items.size(), std::vector<uint8_t>(n_units + 1, 0));
  for (size_t i = 0; i < items.size(); ++i) {
    require(items[i].size() <= 255, ErrorCode::kInvalidArgument, "choose_min_cost: more than 255 options");
    std::fill(next.begin(), next.end(), kInf);
    for (size_t k = 0; k < items[i].size(); ++k) {
      const uint64_t units = (items[i][k].bytes + unit - 1) / unit;
      if (units > n_units) continue;
      const double cost = items[i][k].cost;
      for (size_t u = static_cast<size_t>(units); u <= n_units; ++u) {
        const double c = best[u - static_cast<size_t>(units)] + cost;
        if (c < next[u]) {
          next[u] = c;
          pick[i][u] = static_cast<uint8_t>(k);
        }
      }
    }
    best.swap(next);
  }
  // Rounding every option up to whole units can make the smallest choice exceed the units even
  // though its bytes fit: then the budget is too tight for this resolution.
  require(std::isfinite(best[n_units]), ErrorCode::kInvalidArgument,
          "the size budget of " + std::to_string(budget) + " bytes leaves no room at a resolution of " +
              std::to_string(unit) + " bytes; raise the budget");
  std::vector<int> choice(items.size());
  size_t u = n_units;
  for (size_t i = items.size(); i-- > 0;) {
    const int k = pick[i][u];
    choice[i] = k;
    u -= static_cast<size_t>((items[i][static_cast<size_t>(k)].bytes + unit - 1) / unit);
  }
  return choice;
}

RecipeObjective parse_recipe_objective(const std::string& text) {
  if (text == "kld") return RecipeObjective::kKld;
  if (text == "kld+nll") return RecipeObjective::kKldAndNll;
  throw Error(ErrorCode::kInvalidArgument, "unknown recipe objective '" + text + "' (kld, kld+nll)");
}

MixedRecipe choose_recipe(const SensitivityTable& table, uint64_t budget, uint32_t alignment,
                          RecipeObjective objective) {
  std::vector<std::vector<SizedOption>> items;
  for (const TensorSensitivity& t : table.tensors) {
    std::vector<SizedOption> opts;
    for (const TypeCost& c : t.costs) {
      opts.push_back(
          {padded(c.bytes, alignment), c.kld + (objective == RecipeObjective::kKldAndNll ? c.nll_delta : 0.0)});
    }
    items.push_back(std::move(opts));
  }
  const std::vector<int> pick = choose_min_cost(items, budget);
  MixedRecipe r;
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    const TypeCost& c = table.tensors[i].costs[static_cast<size_t>(pick[i])];
    r.choices.push_back({table.tensors[i].name, c.type, padded(c.bytes, alignment), c.kld, c.nll_delta});
    r.bytes += padded(c.bytes, alignment);
    r.predicted_kld += c.kld;
    r.predicted_nll_delta += c.nll_delta;
  }
  return r;
}

AbnormalReport find_abnormal(const SensitivityTable& table, double ratio) {
  AbnormalReport rep;
  // The reference: smallest bytes per weight among the types every tensor has.
  std::vector<TensorType> common;
  if (!table.tensors.empty()) {
    for (const TypeCost& c : table.tensors.front().costs) common.push_back(c.type);
    for (const TensorSensitivity& t : table.tensors) {
      std::erase_if(common, [&](TensorType q) { return t.find(q) == nullptr; });
    }
  }
  if (common.empty()) return rep;
  const auto per_weight = [](TensorType q) {
    const auto& tr = tensor_type_traits(q);
    return static_cast<double>(tr.block_bytes) / static_cast<double>(tr.block_size);
  };
  rep.reference = common.front();
  for (TensorType q : common) {
    if (per_weight(q) < per_weight(rep.reference)) rep.reference = q;
  }

  std::map<std::string, std::vector<double>> by_kind;
  int32_t n_layer = 0;
  for (const TensorSensitivity& t : table.tensors) {
    if (t.layer >= 0) by_kind[t.kind].push_back(t.find(rep.reference)->kld);
    n_layer = std::max(n_layer, t.layer + 1);
  }
  rep.layer_kld.assign(static_cast<size_t>(n_layer), 0.0);
  for (const TensorSensitivity& t : table.tensors) {
    const double kld = t.find(rep.reference)->kld;
    if (t.layer >= 0) rep.layer_kld[static_cast<size_t>(t.layer)] += kld;
    const auto& peers = by_kind[t.kind];
    if (t.layer < 0 || peers.size() < 3) continue;
    const double m = median(peers);
    if (kld > ratio * m) rep.tensors.push_back({t.name, t.kind, t.layer, kld, m});
  }
  if (n_layer >= 3) {
    const double m = median(rep.layer_kld);
    for (int32_t l = 0; l < n_layer; ++l) {
      if (rep.layer_kld[static_cast<size_t>(l)] > ratio * m)
        rep.layers.push_back({l, rep.layer_kld[static_cast<size_t>(l)], m});
    }
  }
  std::sort(rep.tensors.begin(), rep.tensors.end(),
            [](const AbnormalTensor& a, const AbnormalTensor& b) { return a.kld / a.median > b.kld / b.median; });
  std::sort(rep.layers.begin(), rep.layers.end(),
            [](const AbnormalLayer& a, const AbnormalLayer& b) { return a.kld / a.median > b.kld / b.median; });
  return rep;
}

}  // namespace edgellm::quant
