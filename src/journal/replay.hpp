// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reading a journal back: which records are intact, which were torn by a crash, and what an
// interrupted run had done — the input of `pathwarden recover`.
#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "journal/record.hpp"
#include "journal/storage.hpp"

namespace pw::journal {

struct BadRecord {
  std::size_t line = 0;  // 1-based
  std::string reason;
};

struct JournalReadout {
  std::vector<JournalRecord> records;
  std::vector<std::size_t> record_lines;  // the line of each record
  // Damaged records followed by intact ones: not a crash mid-write but damage; whoever reads
  // the journal must be told, never have them silently dropped.
  std::vector<BadRecord> corrupt;
  // The last record, cut short (no newline, bad checksum, zeros from a lost block): the write
  // never completed, so the step it announced never started. Ignored.
  std::optional<BadRecord> torn_tail;
  std::uint64_t valid_size = 0;  // bytes up to the end of the last intact record
};

// `where` prefixes line numbers in messages ("…/run.journal:7").
JournalReadout read_journal(std::string_view text, std::string_view where);

enum class StepState { in_flight, done, failed };
std::string_view to_string(StepState s);

struct StepReplay {
  StepPhase phase = StepPhase::apply;
  std::size_t step = 0;
  std::string kind;
  std::optional<std::string> guest;
  boost::json::object data;    // what step-begin recorded for the inverse
  boost::json::object result;  // what step-done recorded
  StepState state = StepState::in_flight;
  std::string error;  // step-failed's message
  std::string began_at, ended_at;
  bool changed_nothing = false;  // step-failed: it failed before changing anything
};

enum class RollbackState { none, in_progress, done, failed };
std::string_view to_string(RollbackState s);

struct RunReplay {
  std::string run_id;
  std::string plan_id;
  std::string started_at;
  boost::json::object info;
  std::vector<StepReplay> steps;           // apply phase, in the order they began
  std::vector<StepReplay> rollback_steps;  // inverses, in the order they began
  RollbackState rollback = RollbackState::none;
  std::string rollback_reason;
  bool finished = false;
  boost::json::object verdicts;
  std::size_t resumed = 0;  // how often recover took the run over
  std::uint64_t last_seq = 0;
  std::optional<BadRecord> torn_tail;

  bool interrupted() const { return !finished; }
  // Apply steps that completed, by step index, in order.
  std::vector<std::size_t> completed_steps() const;
  // Steps begun and never ended (apply or rollback); after a crash at most one per guest.
  std::vector<const StepReplay*> in_flight() const;
  const StepReplay* find(StepPhase phase, std::size_t step) const;
};

// Fails (naming file:line) on a corrupt middle record or records that contradict each other
// (a step done that never began, a sequence gap, records after run-finished); a torn last
// record is only noted in torn_tail.
Result<RunReplay> replay(std::string_view run_id, const JournalReadout& readout, std::string_view where);
Result<RunReplay> replay(std::string_view run_id, std::string_view text, std::string_view where);

struct JournalScan {
  std::vector<RunReplay> interrupted;  // unfinished runs, for recover
  std::vector<Error> unreadable;       // journals that cannot be trusted, each with its reason
  std::size_t finished = 0;
};

// Which journals a scan replays.
enum class ScanScope {
  // recover: every journal replayed whole, so damage anywhere in one is found and reported.
  every_journal,
  // A run looking for unfinished runs before it changes anything: a journal whose last record
  // is an intact run-finished is counted as finished from its tail alone (finished journals are
  // kept, so they are most of the store); only the others are read whole and replayed. Damage in
  // the middle of a finished journal goes unseen here: that run ended, so it left no guest
  // half-changed; recover still reports it.
  unfinished_only,
};

// Whether journal `id` ended with an intact run-finished record, read from its tail alone; false
// when it did not, or cannot be read.
bool journal_finished(JournalStore& store, std::string_view id);

// The journals of the store, replayed (all of them, or only those not finished).
JournalScan scan_journals(JournalStore& store, ScanScope scope = ScanScope::every_journal);

}  // namespace pw::journal
