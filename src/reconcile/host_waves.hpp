// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Grouping a phase's runs for the ports. host_waves: the guest port answers per guest (guest::PerHost), so one call
// carries at most one request per guest. Several policies on one guest whose requests cannot be one (two NICs'
// channels, two mounts' probes) go in waves, in plan order: the first request of every guest in the first call, the
// second in the next. A fleet of one policy per guest is one wave, as before.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace pw::reconcile {

template <class T, class HostOf>
std::vector<std::vector<T>> host_waves(const std::vector<T>& items, HostOf host_of) {
  std::vector<std::vector<T>> waves;
  std::map<std::string, std::size_t, std::less<>> seen;  // host -> requests placed so far
  for (const auto& item : items) {
    const std::size_t wave = seen[std::string(host_of(item))]++;
    if (wave == waves.size()) waves.emplace_back();
    waves[wave].push_back(item);
  }
  return waves;
}

// The items with an equal key (one VM, one guest, one fstab write), in the order each key first
// appears: what one port call does for several policies at once.
template <class T, class KeyOf>
std::vector<std::vector<T>> grouped(const std::vector<T>& items, KeyOf key_of) {
  std::vector<std::vector<T>> groups;
  for (const auto& item : items) {
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return key_of(g.front()) == key_of(item); });
    if (it == groups.end()) it = groups.emplace(groups.end());
    it->push_back(item);
  }
  return groups;
}

}  // namespace pw::reconcile
