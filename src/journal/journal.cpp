// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/journal.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

namespace pw::journal {

Result<Journal> Journal::start(JournalStore& store, const Clock& clock, std::string_view run_id,
                               std::string_view plan_id, boost::json::object info) {
  if (plan_id.empty()) return fail("a run needs a plan id", "journal " + std::string(run_id));
  auto storage = store.create(run_id);
  if (!storage) return std::unexpected(storage.error());
  Journal j(std::move(*storage), clock, std::string(run_id), 0);
  if (auto s = j.append(JournalRecord::run_started(plan_id, std::move(info))); !s) return std::unexpected(s.error());
  return j;
}

Result<Journal> Journal::resume(JournalStore& store, const Clock& clock, std::string_view run_id, RunReplay* replayed,
                                boost::json::object info) {
  auto storage = store.open(run_id);
  if (!storage) return std::unexpected(storage.error());
  auto text = (*storage)->read_all();
  if (!text) return std::unexpected(text.error());
  const auto where = (*storage)->describe();
  const auto readout = read_journal(*text, where);
  auto run = replay(run_id, readout, where);
  if (!run) return std::unexpected(run.error());
  if (run->finished) return fail("the run finished; there is nothing to resume", where);
  if (readout.records.empty())
    return fail("the run crashed before it recorded anything", where, "nothing was changed; remove the journal");
  if (readout.valid_size < text->size())
    if (auto s = (*storage)->truncate(readout.valid_size); !s) return std::unexpected(s.error());
  Journal j(std::move(*storage), clock, std::string(run_id), run->last_seq);
  if (auto s = j.append(JournalRecord::run_resumed(std::move(info))); !s) return std::unexpected(s.error());
  if (replayed) *replayed = std::move(*run);
  return j;
}

Status Journal::append(JournalRecord record) {
  record.stamp(last_seq_ + 1, format_utc(clock_->now()));
  if (auto s = storage_->append(encode_line(record)); !s) return s;
  ++last_seq_;
  return {};
}

Status Journal::step_begin(StepStart start) {
  return append(JournalRecord::step_begin(start.phase, start.step, start.kind, start.guest, std::move(start.data)));
}

Status Journal::step_done(StepPhase phase, std::size_t step, boost::json::object result) {
  return append(JournalRecord::step_done(phase, step, std::move(result)));
}

Status Journal::step_failed(StepPhase phase, std::size_t step, std::string_view error, bool changed_nothing) {
  return append(JournalRecord::step_failed(phase, step, error, changed_nothing));
}

Status Journal::rollback_begin(std::string_view reason) {
  return append(JournalRecord::rollback_begin(reason));
}

Status Journal::rollback_done(bool ok, std::string_view detail) {
  return append(JournalRecord::rollback_done(ok, detail));
}

Status Journal::run_finished(boost::json::object verdicts) {
  return append(JournalRecord::run_finished(std::move(verdicts)));
}

std::string make_run_id(const Clock& clock) {
  std::string t = format_utc(clock.now());  // 2024-05-05T02:00:00.123Z
  t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '-' || c == ':'; }), t.end());
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(rd() & 0xFFFF));
  return t + "-" + std::to_string(::getpid()) + "-" + suffix;
}

}  // namespace pw::journal
