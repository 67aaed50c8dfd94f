// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/record.hpp"

#include <array>
#include <boost/crc.hpp>
#include <cstdio>

namespace pw::journal {
namespace json = boost::json;

namespace {

constexpr std::int64_t kFormat = 1;  // journal format written by this version

constexpr std::array<std::pair<RecordType, std::string_view>, 8> kTypeNames{{
    {RecordType::run_started, "run-started"},
    {RecordType::run_resumed, "run-resumed"},
    {RecordType::step_begin, "step-begin"},
    {RecordType::step_done, "step-done"},
    {RecordType::step_failed, "step-failed"},
    {RecordType::rollback_begin, "rollback-begin"},
    {RecordType::rollback_done, "rollback-done"},
    {RecordType::run_finished, "run-finished"},
}};

const json::object& empty_object() {
  static const json::object empty;
  return empty;
}

json::object base(RecordType t) {
  json::object o;
  o["seq"] = 0;
  o["time"] = "";
  o["type"] = to_string(t);
  return o;
}

json::object step_base(RecordType t, StepPhase phase, std::size_t step) {
  json::object o = base(t);
  o["phase"] = to_string(phase);
  o["step"] = static_cast<std::uint64_t>(step);
  return o;
}

std::optional<std::uint64_t> as_unsigned(const json::value* v) {
  if (!v) return std::nullopt;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return std::nullopt;
}

std::optional<StepPhase> phase_from(std::string_view s) {
  if (s == "apply") return StepPhase::apply;
  if (s == "rollback") return StepPhase::rollback;
  return std::nullopt;
}

// The checks from_json runs, one per fixed field.
struct FieldCheck {
  const json::object& o;
  std::string_view where;

  Status require_string(std::string_view key, bool non_empty) const {
    const auto* v = o.if_contains(key);
    if (!v || !v->is_string()) return fail("record has no text field '" + std::string(key) + "'", std::string(where));
    if (non_empty && v->as_string().empty())
      return fail("record's '" + std::string(key) + "' is empty", std::string(where));
    return {};
  }
  Status optional_string(std::string_view key) const {
    const auto* v = o.if_contains(key);
    if (v && !v->is_string()) return fail("record's '" + std::string(key) + "' is not text", std::string(where));
    return {};
  }
  Status optional_object(std::string_view key) const {
    const auto* v = o.if_contains(key);
    if (v && !v->is_object()) return fail("record's '" + std::string(key) + "' is not an object", std::string(where));
    return {};
  }
  Status require_step() const {
    if (!as_unsigned(o.if_contains("step"))) return fail("record has no step number", std::string(where));
    const auto* p = o.if_contains("phase");
    if (!p || !p->is_string() || !phase_from(p->as_string()))
      return fail("record's phase is not 'apply' or 'rollback'", std::string(where));
    return {};
  }
};

}  // namespace

std::string_view to_string(RecordType t) {
  for (const auto& [type, name] : kTypeNames)
    if (type == t) return name;
  return "?";
}

std::optional<RecordType> record_type_from(std::string_view name) {
  for (const auto& [type, n] : kTypeNames)
    if (n == name) return type;
  return std::nullopt;
}

std::string_view to_string(StepPhase p) {
  return p == StepPhase::apply ? "apply" : "rollback";
}

JournalRecord JournalRecord::run_started(std::string_view plan_id, json::object info) {
  json::object o = base(RecordType::run_started);
  o["format"] = kFormat;
  o["plan"] = plan_id;
  o["info"] = std::move(info);
  return {RecordType::run_started, std::move(o)};
}

JournalRecord JournalRecord::run_resumed(json::object info) {
  json::object o = base(RecordType::run_resumed);
  o["info"] = std::move(info);
  return {RecordType::run_resumed, std::move(o)};
}

JournalRecord JournalRecord::step_begin(StepPhase phase, std::size_t step, std::string_view kind,
                                        std::string_view guest, json::object data) {
  json::object o = step_base(RecordType::step_begin, phase, step);
  o["kind"] = kind;
  if (!guest.empty()) o["guest"] = guest;
  o["data"] = std::move(data);
  return {RecordType::step_begin, std::move(o)};
}

JournalRecord JournalRecord::step_done(StepPhase phase, std::size_t step, json::object result) {
  json::object o = step_base(RecordType::step_done, phase, step);
  o["result"] = std::move(result);
  return {RecordType::step_done, std::move(o)};
}

JournalRecord JournalRecord::step_failed(StepPhase phase, std::size_t step, std::string_view error,
                                         bool changed_nothing) {
  json::object o = step_base(RecordType::step_failed, phase, step);
  o["error"] = error;
  if (changed_nothing) o["changed_nothing"] = true;
  return {RecordType::step_failed, std::move(o)};
}

JournalRecord JournalRecord::rollback_begin(std::string_view reason) {
  json::object o = base(RecordType::rollback_begin);
  o["reason"] = reason;
  return {RecordType::rollback_begin, std::move(o)};
}

JournalRecord JournalRecord::rollback_done(bool ok, std::string_view detail) {
  json::object o = base(RecordType::rollback_done);
  o["ok"] = ok;
  o["reason"] = detail;
  return {RecordType::rollback_done, std::move(o)};
}

JournalRecord JournalRecord::run_finished(json::object verdicts) {
  json::object o = base(RecordType::run_finished);
  o["verdicts"] = std::move(verdicts);
  return {RecordType::run_finished, std::move(o)};
}

Result<JournalRecord> JournalRecord::from_json(json::object o, std::string_view where) {
  const auto seq = as_unsigned(o.if_contains("seq"));
  if (!seq || *seq == 0) return fail("record has no sequence number", std::string(where));
  const FieldCheck check{o, where};
  if (auto s = check.require_string("time", false); !s) return std::unexpected(s.error());
  const auto* t = o.if_contains("type");
  if (!t || !t->is_string()) return fail("record has no type", std::string(where));
  const auto type = record_type_from(t->as_string());
  if (!type)
    return fail("unknown record type '" + std::string(t->as_string()) + "'", std::string(where),
                "the journal may come from a newer pathwarden");
  Status s;
  switch (*type) {
    case RecordType::run_started: {
      if (s = check.require_string("plan", true); !s) break;
      const auto format = as_unsigned(o.if_contains("format"));
      if (!format || static_cast<std::int64_t>(*format) > kFormat)
        s = fail("journal format " + (format ? std::to_string(*format) : std::string("?")) +
                     " is not one this pathwarden reads",
                 std::string(where), "recover with the pathwarden version that wrote it");
      else
        s = check.optional_object("info");
      break;
    }
    case RecordType::run_resumed:
      s = check.optional_object("info");
      break;
    case RecordType::step_begin:
      if (s = check.require_step(); !s) break;
      if (s = check.require_string("kind", true); !s) break;
      if (s = check.optional_string("guest"); !s) break;
      s = check.optional_object("data");
      break;
    case RecordType::step_done:
      if (s = check.require_step(); !s) break;
      s = check.optional_object("result");
      break;
    case RecordType::step_failed:
      if (s = check.require_step(); !s) break;
      s = check.require_string("error", false);
      if (const auto* c = o.if_contains("changed_nothing"); s && c != nullptr && !c->is_bool())
        s = fail("step-failed record's 'changed_nothing' is not true or false", std::string(where));
      break;
    case RecordType::rollback_begin:
      s = check.optional_string("reason");
      break;
    case RecordType::rollback_done: {
      const auto* ok = o.if_contains("ok");
      if (!ok || !ok->is_bool())
        s = fail("rollback-done record has no 'ok'", std::string(where));
      else
        s = check.optional_string("reason");
      break;
    }
    case RecordType::run_finished:
      s = check.optional_object("verdicts");
      break;
  }
  if (!s) return std::unexpected(s.error());
  return JournalRecord(*type, std::move(o));
}

std::uint64_t JournalRecord::seq() const {
  return as_unsigned(json_.if_contains("seq")).value_or(0);
}

std::string JournalRecord::time() const {
  return string_field("time").value_or("");
}

std::optional<std::string> JournalRecord::string_field(std::string_view key) const {
  if (const auto* v = json_.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}

const json::object& JournalRecord::object_field(std::string_view key) const {
  if (const auto* v = json_.if_contains(key); v && v->is_object()) return v->as_object();
  return empty_object();
}

std::optional<std::string> JournalRecord::plan_id() const {
  return string_field("plan");
}

std::optional<StepPhase> JournalRecord::phase() const {
  if (auto p = string_field("phase")) return phase_from(*p);
  return std::nullopt;
}

std::optional<std::size_t> JournalRecord::step() const {
  if (auto s = as_unsigned(json_.if_contains("step"))) return static_cast<std::size_t>(*s);
  return std::nullopt;
}

std::optional<std::string> JournalRecord::kind() const {
  return string_field("kind");
}

std::optional<std::string> JournalRecord::guest() const {
  auto g = string_field("guest");
  if (g && g->empty()) return std::nullopt;
  return g;
}

std::optional<std::string> JournalRecord::error() const {
  return string_field("error");
}
bool JournalRecord::changed_nothing() const {
  const auto* v = json_.if_contains("changed_nothing");
  return v != nullptr && v->is_bool() && v->as_bool();
}
std::optional<std::string> JournalRecord::reason() const {
  return string_field("reason");
}

std::optional<bool> JournalRecord::ok() const {
  if (const auto* v = json_.if_contains("ok"); v && v->is_bool()) return v->as_bool();
  return std::nullopt;
}

const json::object& JournalRecord::data() const {
  return object_field("data");
}
const json::object& JournalRecord::result() const {
  return object_field("result");
}
const json::object& JournalRecord::verdicts() const {
  return object_field("verdicts");
}
const json::object& JournalRecord::info() const {
  return object_field("info");
}

void JournalRecord::stamp(std::uint64_t seq, std::string_view time) {
  json_["seq"] = seq;
  json_["time"] = time;
}

std::uint32_t crc32(std::string_view bytes) {
  boost::crc_32_type crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

std::string encode_line(const JournalRecord& record) {
  const std::string body = json::serialize(record.json());
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", crc32(body));
  return std::string(crc) + " " + body + "\n";
}

Result<JournalRecord> decode_line(std::string_view line, std::string_view where) {
  const std::string w(where);
  if (line.size() < 10 || line[8] != ' ') return fail("record has no checksum", w);
  std::uint32_t want = 0;
  for (char c : line.substr(0, 8)) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return fail("record has no checksum", w);
    want = want * 16 + static_cast<std::uint32_t>(v);
  }
  const std::string_view body = line.substr(9);
  if (crc32(body) != want) return fail("record checksum mismatch", w);
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return fail("record is not valid JSON: " + ec.message(), w);
  if (!v.is_object()) return fail("record is not a JSON object", w);
  return JournalRecord::from_json(std::move(v.as_object()), where);
}

}  // namespace pw::journal
