#pragma once
// The guest port answers per guest (guest::PerHost), so one call carries at most one request per
// guest. Several policies on one guest whose requests cannot be one (two NICs' channels, two
// mounts' probes) go in waves, in plan order: the first request of every guest in the first call,
// the second in the next. A fleet of one policy per guest is one wave, as before.
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

}  // namespace pw::reconcile
