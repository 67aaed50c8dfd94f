// SPDX-License-Identifier: GPL-3.0-or-later
// Finished journals are pruned by count and age; an unfinished one (recover's) never is.
#include "journal/retention.hpp"

#include <catch2/catch.hpp>

#include "journal/journal.hpp"

using namespace pw::journal;

namespace {

// A journal started at `t` (its id carries the time, as make_run_id's do), finished or not.
std::string journal_at(InMemoryJournalStore& store, TimePoint t, bool finished) {
  ManualClock at(t);
  const auto id = make_run_id(at) + ".movies";
  auto j = Journal::start(store, at, id, "plan");
  REQUIRE(j);
  if (finished) REQUIRE(j->run_finished({{"policy", "movies"}}));
  return id;
}

}  // namespace

TEST_CASE("finished journals beyond the count or the age are removed; an unfinished one stays") {
  InMemoryJournalStore store;
  const TimePoint now = std::chrono::sys_days{std::chrono::year{2026} / 12 / 6};
  ManualClock clock(now);
  const auto old_unfinished = journal_at(store, now - std::chrono::days(90), false);
  const auto old_finished = journal_at(store, now - std::chrono::days(40), true);
  std::vector<std::string> recent;
  for (int h = 10; h >= 1; --h) recent.push_back(journal_at(store, now - std::chrono::hours(h), true));

  auto pruned = prune_finished(store, Retention{4, std::chrono::days(30)}, clock);
  CHECK(pruned.errors.empty());
  CHECK(pruned.removed == 7);  // the 40-day-old one, and 6 recent ones beyond the newest 4
  CHECK(pruned.kept == 4);
  const auto left = store.list().value();
  CHECK(left == std::vector<std::string>{old_unfinished, recent[6], recent[7], recent[8], recent[9]});

  // Within both limits nothing more goes.
  CHECK(prune_finished(store, Retention{4, std::chrono::days(30)}, clock).removed == 0);
}
