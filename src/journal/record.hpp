// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One journal record: a JSON object with fixed fields (seq, time, type, step, ...) read through
// typed accessors, and free-form payloads (a step's data for its inverse, its result, the run's
// verdicts) that the planner and executor define. On disk one record is one line:
//   <crc32 of the JSON, 8 hex digits> <JSON>\n
// so a record cut short by power loss, or damaged later, is recognised.
#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::journal {

enum class RecordType {
  run_started,     // plan, journal format
  run_resumed,     // `pathwarden recover` took the run over
  step_begin,      // phase, step, kind, data the inverse needs, guest
  step_done,       // phase, step, result
  step_failed,     // phase, step, error; changed_nothing when the step failed before any change
  rollback_begin,  // reason
  rollback_done,   // ok, detail
  run_finished,    // verdicts
};

std::string_view to_string(RecordType t);  // "run-started", ...
std::optional<RecordType> record_type_from(std::string_view name);

// A step of the plan runs forward in the apply phase; its inverse runs in the rollback phase
// under the same step index.
enum class StepPhase { apply, rollback };
std::string_view to_string(StepPhase p);

class JournalRecord {
 public:
  static JournalRecord run_started(std::string_view plan_id, boost::json::object info = {});
  static JournalRecord run_resumed(boost::json::object info = {});
  static JournalRecord step_begin(StepPhase phase, std::size_t step, std::string_view kind, std::string_view guest,
                                  boost::json::object data);
  static JournalRecord step_done(StepPhase phase, std::size_t step, boost::json::object result = {});
  // changed_nothing: the step failed (or refused) before it changed anything, so recover has
  // nothing of it to undo. A record without the field may have changed something.
  static JournalRecord step_failed(StepPhase phase, std::size_t step, std::string_view error,
                                   bool changed_nothing = false);
  static JournalRecord rollback_begin(std::string_view reason);
  static JournalRecord rollback_done(bool ok, std::string_view detail = {});
  static JournalRecord run_finished(boost::json::object verdicts);

  // Checks the fixed fields of a decoded object; `where` names the record in messages.
  static Result<JournalRecord> from_json(boost::json::object json, std::string_view where);

  RecordType type() const { return type_; }
  std::uint64_t seq() const;
  std::string time() const;
  std::optional<std::string> plan_id() const;
  std::optional<StepPhase> phase() const;
  std::optional<std::size_t> step() const;
  std::optional<std::string> kind() const;
  std::optional<std::string> guest() const;  // empty guest is absent
  std::optional<std::string> error() const;
  bool changed_nothing() const;               // step-failed
  std::optional<std::string> reason() const;  // rollback-begin's reason, rollback-done's detail
  std::optional<bool> ok() const;
  const boost::json::object& data() const;      // step-begin: what the inverse needs
  const boost::json::object& result() const;    // step-done
  const boost::json::object& verdicts() const;  // run-finished
  const boost::json::object& info() const;      // run-started, run-resumed

  const boost::json::object& json() const { return json_; }

  // Stamped by the journal as it appends.
  void stamp(std::uint64_t seq, std::string_view time);

 private:
  JournalRecord(RecordType type, boost::json::object json) : type_(type), json_(std::move(json)) {}
  std::optional<std::string> string_field(std::string_view key) const;
  const boost::json::object& object_field(std::string_view key) const;

  RecordType type_;
  boost::json::object json_;
};

std::uint32_t crc32(std::string_view bytes);

// "<crc> <json>\n"
std::string encode_line(const JournalRecord& record);

// One line without its '\n'. Errors say what is wrong with it (checksum, JSON, fields).
Result<JournalRecord> decode_line(std::string_view line, std::string_view where);

}  // namespace pw::journal
