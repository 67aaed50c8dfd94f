// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/retention.hpp"

#include <algorithm>
#include <string>

#include "journal/replay.hpp"

namespace pw::journal {
namespace {

// The time a journal's id starts with (make_run_id: "20240505T020000.123Z-..."), as the same
// fixed-width text, so ids and a cutoff compare as strings.
std::string id_time(TimePoint t) {
  std::string s = format_utc(t);  // 2024-05-05T02:00:00.123Z
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '-' || c == ':'; }), s.end());
  return s;
}

}  // namespace

Pruned prune_finished(JournalStore& store, const Retention& keep, const Clock& clock) {
  Pruned out;
  auto ids = store.list();  // sorted: oldest first
  if (!ids) {
    out.errors.push_back(ids.error());
    return out;
  }
  std::vector<std::string> finished;
  for (const auto& id : *ids) {
    if (journal_finished(store, id)) finished.push_back(id);
  }
  const auto cutoff = id_time(clock.now() - keep.age);
  for (std::size_t i = 0; i < finished.size(); ++i) {
    const auto& id = finished[i];
    const bool beyond_count = finished.size() - i > keep.journals;
    const bool too_old = id.size() >= cutoff.size() && id.compare(0, cutoff.size(), cutoff) < 0;
    if (!beyond_count && !too_old) {
      ++out.kept;
      continue;
    }
    if (auto st = store.remove(id); !st) {
      out.errors.push_back(st.error());
      ++out.kept;
    } else {
      ++out.removed;
    }
  }
  return out;
}

}  // namespace pw::journal
