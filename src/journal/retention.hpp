// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Finished journals are kept for inspection, not forever: after each run that wrote journals the
// oldest finished ones beyond a count, and those older than an age, are removed. A journal that
// did not finish (it waits for `pathwarden recover`) or cannot be read is never removed.
#include <chrono>
#include <cstddef>
#include <vector>

#include "diagnostics/error.hpp"
#include "journal/clock.hpp"
#include "journal/storage.hpp"

namespace pw::journal {

struct Retention {
  std::size_t journals = 200;  // finished journals kept: a week of an hourly timer over 1-2 policies
  std::chrono::days age{30};   // and none older than this
};

struct Pruned {
  std::size_t removed = 0;
  std::size_t kept = 0;       // finished journals left
  std::vector<Error> errors;  // journals that could not be removed (each said once)
};

Pruned prune_finished(JournalStore& store, const Retention& keep, const Clock& clock);

}  // namespace pw::journal
