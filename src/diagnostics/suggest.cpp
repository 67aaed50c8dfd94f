// SPDX-License-Identifier: GPL-3.0-or-later
#include "diagnostics/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace pw {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance: typos are mostly one swapped, missing or extra letter.
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const auto ca = std::tolower(static_cast<unsigned char>(a[i - 1]));
      const auto cb = std::tolower(static_cast<unsigned char>(b[j - 1]));
      const std::size_t cost = ca == cb ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && ca == std::tolower(static_cast<unsigned char>(b[j - 2])) &&
          std::tolower(static_cast<unsigned char>(a[i - 2])) == cb) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> closest_match(std::string_view word, std::span<const std::string_view> candidates) {
  if (word.size() > 64) return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  const std::size_t limit = std::max<std::size_t>(1, std::min<std::size_t>(3, word.size() / 3 + 1));
  for (auto c : candidates) {
    const auto dist = edit_distance(word, c);
    if (dist <= limit && (!best || dist < best_distance)) {
      best = std::string(c);
      best_distance = dist;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
  if (auto m = closest_match(word, candidates)) return ", did you mean '" + *m + "'?";
  return {};
}

}  // namespace pw
