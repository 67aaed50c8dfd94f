// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/replay.hpp"

#include <algorithm>

namespace pw::journal {
namespace {

std::string at_line(std::string_view where, std::size_t line) {
  return std::string(where) + ":" + std::to_string(line);
}

const char* const kDamagedHint =
    "the journal was damaged after it was written (not torn by a crash), so what the run did cannot be "
    "known from it: check the guest and its VM config by hand, then move the journal away";

struct Step {
  StepReplay replay;
  std::size_t generation = 0;  // how many run-resumed records preceded its begin
};

// The tail a scan reads to tell a finished journal: a run-finished record is about 150 bytes
// and the policy's name, so 4 KiB hold it with room; a longer last line is read whole.
constexpr std::uint64_t kTailBytes = 4096;

// Whether the last record of a journal is an intact run-finished, from its last bytes alone
// (`whole`: they are the whole journal). False when the tail cannot tell: no intact last line,
// or one that may begin before the tail.
bool ends_finished(std::string_view tail, bool whole, std::string_view where) {
  if (tail.empty() || tail.back() != '\n') return false;  // torn, or empty
  const auto body = tail.substr(0, tail.size() - 1);
  const auto nl = body.rfind('\n');
  if (nl == std::string_view::npos && !whole) return false;
  const auto line = nl == std::string_view::npos ? body : body.substr(nl + 1);
  auto record = decode_line(line, where);
  return record && record->type() == RecordType::run_finished;
}

}  // namespace

std::string_view to_string(StepState s) {
  switch (s) {
    case StepState::in_flight:
      return "in-flight";
    case StepState::done:
      return "done";
    case StepState::failed:
      return "failed";
  }
  return "?";
}

std::string_view to_string(RollbackState s) {
  switch (s) {
    case RollbackState::none:
      return "none";
    case RollbackState::in_progress:
      return "in-progress";
    case RollbackState::done:
      return "done";
    case RollbackState::failed:
      return "failed";
  }
  return "?";
}

JournalReadout read_journal(std::string_view text, std::string_view where) {
  struct Line {
    std::size_t number;
    std::uint64_t end;  // offset after the line's '\n' (or the end of text)
    Result<JournalRecord> record;
  };
  std::vector<Line> lines;
  std::size_t pos = 0, number = 0;
  while (pos < text.size()) {
    ++number;
    const auto nl = text.find('\n', pos);
    const bool terminated = nl != std::string_view::npos;
    const auto end = terminated ? nl : text.size();
    const auto where_line = at_line(where, number);
    auto record = terminated ? decode_line(text.substr(pos, end - pos), where_line)
                             : Result<JournalRecord>(fail("record is cut short (no end of line)", where_line));
    lines.push_back({number, terminated ? end + 1 : end, std::move(record)});
    pos = terminated ? end + 1 : end;
  }

  JournalReadout out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto& l = lines[i];
    if (l.record) {
      out.records.push_back(std::move(*l.record));
      out.record_lines.push_back(l.number);
      out.valid_size = l.end;
    } else if (i + 1 == lines.size()) {
      // Only the last write can be torn: nothing was appended after it.
      out.torn_tail = BadRecord{l.number, l.record.error().what};
    } else {
      out.corrupt.push_back(BadRecord{l.number, l.record.error().what});
    }
  }
  return out;
}

std::vector<std::size_t> RunReplay::completed_steps() const {
  std::vector<std::size_t> out;
  for (const auto& s : steps)
    if (s.state == StepState::done) out.push_back(s.step);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const StepReplay*> RunReplay::in_flight() const {
  std::vector<const StepReplay*> out;
  for (const auto* list : {&steps, &rollback_steps})
    for (const auto& s : *list)
      if (s.state == StepState::in_flight) out.push_back(&s);
  return out;
}

const StepReplay* RunReplay::find(StepPhase phase, std::size_t step) const {
  for (const auto& s : phase == StepPhase::apply ? steps : rollback_steps)
    if (s.step == step) return &s;
  return nullptr;
}

// A journal's records folded into what the run did. Long because it is one switch over the
// record types, each checking the record against the state before it (a replay is a parser).
Result<RunReplay> replay(std::string_view run_id, const JournalReadout& readout, std::string_view where) {
  if (!readout.corrupt.empty()) {
    const auto& first = readout.corrupt.front();
    std::string what = first.reason + " in the middle of the journal";
    if (readout.corrupt.size() > 1)
      what += " (and " + std::to_string(readout.corrupt.size() - 1) + " more damaged record(s))";
    return fail(what, at_line(where, first.line), kDamagedHint);
  }
  RunReplay run;
  run.run_id = std::string(run_id);
  run.torn_tail = readout.torn_tail;
  if (readout.records.empty()) return run;  // created, crashed before run-started: nothing happened

  std::vector<Step> apply, rollback;
  std::size_t generation = 0;
  for (std::size_t i = 0; i < readout.records.size(); ++i) {
    const auto& r = readout.records[i];
    const std::string here = at_line(where, readout.record_lines[i]);
    auto bad = [&](std::string what) { return fail(std::move(what), here, kDamagedHint); };
    if (r.seq() != run.last_seq + 1)
      return bad("record has sequence number " + std::to_string(r.seq()) + ", expected " +
                 std::to_string(run.last_seq + 1));
    run.last_seq = r.seq();
    if (i == 0 && r.type() != RecordType::run_started) return bad("the journal does not begin with run-started");
    if (i > 0 && r.type() == RecordType::run_started) return bad("a second run-started record");
    if (run.finished) return bad(std::string(to_string(r.type())) + " after run-finished");

    auto& list = r.phase() == StepPhase::rollback ? rollback : apply;
    auto find = [&](std::size_t step) -> Step* {
      for (auto& s : list)
        if (s.replay.step == step) return &s;
      return nullptr;
    };
    const auto describe = [&] { return std::string(to_string(*r.phase())) + " step " + std::to_string(*r.step()); };
    switch (r.type()) {
      case RecordType::run_started:
        run.plan_id = *r.plan_id();
        run.started_at = r.time();
        run.info = r.info();
        break;
      case RecordType::run_resumed:
        ++run.resumed;
        ++generation;
        break;
      case RecordType::step_begin: {
        Step* s = find(*r.step());
        // Beginning again is a retry: after a failure, or after recover took the run over.
        if (s && s->replay.state == StepState::in_flight && s->generation == generation)
          return bad(describe() + " began again while still in flight");
        if (s && s->replay.state == StepState::done && s->generation == generation)
          return bad(describe() + " began again after it was done");
        if (!s) {
          list.push_back(Step{});
          s = &list.back();
        }
        s->generation = generation;
        s->replay = StepReplay{*r.phase(),           *r.step(), *r.kind(), r.guest(), r.data(), {},
                               StepState::in_flight, {},        r.time(),  {}};
        break;
      }
      case RecordType::step_done:
      case RecordType::step_failed: {
        Step* s = find(*r.step());
        if (!s || s->replay.state != StepState::in_flight)
          return bad(std::string(to_string(r.type())) + " for " + describe() + ", which is not in flight");
        s->replay.state = r.type() == RecordType::step_done ? StepState::done : StepState::failed;
        s->replay.result = r.result();
        s->replay.error = r.error().value_or("");
        s->replay.changed_nothing = r.changed_nothing();
        s->replay.ended_at = r.time();
        break;
      }
      case RecordType::rollback_begin:
        run.rollback = RollbackState::in_progress;
        run.rollback_reason = r.reason().value_or("");
        break;
      case RecordType::rollback_done:
        if (run.rollback != RollbackState::in_progress) return bad("rollback-done without rollback-begin");
        run.rollback = *r.ok() ? RollbackState::done : RollbackState::failed;
        break;
      case RecordType::run_finished:
        run.finished = true;
        run.verdicts = r.verdicts();
        break;
    }
  }
  for (auto& s : apply) run.steps.push_back(std::move(s.replay));
  for (auto& s : rollback) run.rollback_steps.push_back(std::move(s.replay));
  return run;
}

Result<RunReplay> replay(std::string_view run_id, std::string_view text, std::string_view where) {
  return replay(run_id, read_journal(text, where), where);
}

bool journal_finished(JournalStore& store, std::string_view id) {
  auto storage = store.open(id);
  if (!storage) return false;
  auto tail = (*storage)->read_tail(kTailBytes);
  return tail && ends_finished(*tail, tail->size() < kTailBytes, (*storage)->describe());
}

JournalScan scan_journals(JournalStore& store, ScanScope scope) {
  JournalScan scan;
  auto ids = store.list();
  if (!ids) {
    scan.unreadable.push_back(ids.error());
    return scan;
  }
  for (const auto& id : *ids) {
    auto storage = store.open(id);
    if (!storage) {
      scan.unreadable.push_back(storage.error());
      continue;
    }
    if (scope == ScanScope::unfinished_only) {
      auto tail = (*storage)->read_tail(kTailBytes);
      if (!tail) {
        scan.unreadable.push_back(tail.error());
        continue;
      }
      if (ends_finished(*tail, tail->size() < kTailBytes, (*storage)->describe())) {
        ++scan.finished;
        continue;
      }
    }
    auto text = (*storage)->read_all();
    if (!text) {
      scan.unreadable.push_back(text.error());
      continue;
    }
    auto run = replay(id, *text, (*storage)->describe());
    if (!run)
      scan.unreadable.push_back(run.error());
    else if (run->finished)
      ++scan.finished;
    else
      scan.interrupted.push_back(std::move(*run));
  }
  return scan;
}

}  // namespace pw::journal
