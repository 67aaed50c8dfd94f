// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The write side of a run's journal: every record is stamped (sequence, time), checksummed and
// on stable storage before the call returns, so the executor writes step-begin, acts, then
// writes step-done, and a crash anywhere leaves a journal that tells what may have happened.
#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"
#include "journal/clock.hpp"
#include "journal/record.hpp"
#include "journal/replay.hpp"
#include "journal/storage.hpp"

namespace pw::journal {

struct StepStart {
  StepPhase phase = StepPhase::apply;
  std::size_t step = 0;
  std::string kind;          // the plan's step kind (plan::to_string(StepKind)): "set-nic", "change-fstab", ...
  std::string guest;         // the guest it acts on (its lock's name); may be empty
  boost::json::object data;  // everything its inverse needs: previous values, digests, backups
};

class Journal {
 public:
  // A new run: creates the journal and writes run-started.
  static Result<Journal> start(JournalStore& store, const Clock& clock, std::string_view run_id,
                               std::string_view plan_id, boost::json::object info = {});
  // An interrupted run taken over by recover: cuts a torn last record, then writes
  // run-resumed. Refuses a damaged or finished journal. `replayed` receives the run as it was.
  static Result<Journal> resume(JournalStore& store, const Clock& clock, std::string_view run_id,
                                RunReplay* replayed = nullptr, boost::json::object info = {});

  Status step_begin(StepStart start);
  Status step_done(StepPhase phase, std::size_t step, boost::json::object result = {});
  Status step_failed(StepPhase phase, std::size_t step, std::string_view error, bool changed_nothing = false);
  Status rollback_begin(std::string_view reason);
  Status rollback_done(bool ok, std::string_view detail = {});
  Status run_finished(boost::json::object verdicts);

  Status append(JournalRecord record);

  const std::string& run_id() const { return run_id_; }
  std::uint64_t last_seq() const { return last_seq_; }
  std::string describe() const { return storage_->describe(); }

 private:
  Journal(std::unique_ptr<JournalFile> storage, const Clock& clock, std::string run_id, std::uint64_t last_seq)
      : storage_(std::move(storage)), clock_(&clock), run_id_(std::move(run_id)), last_seq_(last_seq) {}

  std::unique_ptr<JournalFile> storage_;
  const Clock* clock_;
  std::string run_id_;
  std::uint64_t last_seq_ = 0;
};

// "20240505T020000.123Z-4711-3f9a": sortable by start time, unique per process and moment.
std::string make_run_id(const Clock& clock);

}  // namespace pw::journal
