// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/report_json.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "diagnostics/format_version.hpp"
#include "diagnostics/suggest.hpp"

namespace pw::report {
namespace json = boost::json;

namespace {

// Format 1 named itself only so; format 2 on adds "format" and "format_version".
constexpr std::string_view kSchemaV1 = "pathwarden-report/v1";
constexpr verify::ProbeDirection kDirections[] = {verify::ProbeDirection::read, verify::ProbeDirection::write};

// Reads fields into the structs, remembering the first problem with its JSON path. Missing keys
// and nulls keep the defaults: a report of a policy that was never verified has no numbers.
class FieldReader {
 public:
  explicit FieldReader(std::string_view where) : where_(where) {}

  const json::object* object(const json::value& v, const std::string& path) {
    if (const auto* o = v.if_object()) return o;
    bad(path, "expected an object");
    return nullptr;
  }

  void text(const json::object& o, std::string_view key, const std::string& path, std::string& into) {
    if (const auto* v = present(o, key)) {
      if (const auto* s = v->if_string())
        into = std::string(*s);
      else
        bad(path + "." + std::string(key), "expected a string");
    }
  }

  void text(const json::object& o, std::string_view key, const std::string& path, std::optional<std::string>& into) {
    if (present(o, key)) text(o, key, path, into.emplace());
  }

  // A string naming one of an enum's values (`all`, spelt by its to_string), with a did-you-mean.
  template <class Enum, std::size_t N>
  void choice(const json::object& o, std::string_view key, const std::string& path, Enum& into, const Enum (&all)[N]) {
    if (present(o, key) == nullptr) return;
    std::string text;
    this->text(o, key, path, text);
    if (error_) return;
    std::vector<std::string_view> names;
    for (const auto v : all) {
      if (to_string(v) == text) {
        into = v;
        return;
      }
      names.push_back(to_string(v));
    }
    bad(path + "." + std::string(key), "unknown value '" + text + "'" + did_you_mean(text, names));
  }

  template <class Enum, std::size_t N>
  void choice(const json::object& o, std::string_view key, const std::string& path, std::optional<Enum>& into,
              const Enum (&all)[N]) {
    if (present(o, key)) choice(o, key, path, into.emplace(), all);
  }

  void flag(const json::object& o, std::string_view key, const std::string& path, bool& into) {
    if (const auto* v = present(o, key)) {
      if (const auto* b = v->if_bool())
        into = *b;
      else
        bad(path + "." + std::string(key), "expected true or false");
    }
  }

  template <class Int>
  void integer(const json::object& o, std::string_view key, const std::string& path, Int& into) {
    const auto* v = present(o, key);
    if (v == nullptr) return;
    const auto value = whole_number(*v);
    if (value && *value >= static_cast<long double>(std::numeric_limits<Int>::min()) &&
        *value <= static_cast<long double>(std::numeric_limits<Int>::max())) {
      into = static_cast<Int>(*value);
    } else {
      bad(path + "." + std::string(key), value ? "number out of range" : "expected a whole number");
    }
  }

  template <class Int>
  void integer(const json::object& o, std::string_view key, const std::string& path, std::optional<Int>& into) {
    if (present(o, key)) integer(o, key, path, into.emplace());
  }

  void number(const json::object& o, std::string_view key, const std::string& path, std::optional<double>& into) {
    const auto* v = present(o, key);
    if (v == nullptr) return;
    if (v->is_number())
      into = v->to_number<double>();
    else
      bad(path + "." + std::string(key), "expected a number");
  }

  void texts(const json::object& o, std::string_view key, const std::string& path, std::vector<std::string>& into) {
    const auto* v = present(o, key);
    if (v == nullptr) return;
    const auto* a = v->if_array();
    if (a == nullptr) return bad(path + "." + std::string(key), "expected a list of strings");
    for (std::size_t i = 0; i < a->size(); ++i) {
      if (const auto* s = (*a)[i].if_string())
        into.emplace_back(*s);
      else
        bad(path + "." + std::string(key) + "[" + std::to_string(i) + "]", "expected a string");
    }
  }

  const json::array* list(const json::object& o, std::string_view key, const std::string& path) {
    const auto* v = present(o, key);
    if (v == nullptr) return nullptr;
    if (const auto* a = v->if_array()) return a;
    bad(path + "." + std::string(key), "expected a list");
    return nullptr;
  }

  void bad(const std::string& path, const std::string& what) {
    if (!error_)
      error_ = Error{path + ": " + what, where_, "is this a report written by 'pathwarden ... --report-file'?"};
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  static const json::value* present(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  static std::optional<long double> whole_number(const json::value& v) {
    if (const auto* i = v.if_int64()) return static_cast<long double>(*i);
    if (const auto* u = v.if_uint64()) return static_cast<long double>(*u);
    if (const auto* d = v.if_double(); d && std::isfinite(*d) && std::floor(*d) == *d) return *d;
    return std::nullopt;
  }

  std::string where_;
  std::optional<Error> error_;
};

void read_verification(FieldReader& r, const json::object& o, const std::string& path, Verification& v) {
  // Long because it mirrors verification_json (run_report.cpp) field by field, nested objects
  // included, so that the two are read side by side.
  r.choice(o, "verdict", path, v.verdict, kVerdicts);
  r.text(o, "summary", path, v.summary);
  r.choice(o, "direction", path, v.direction, kDirections);
  r.integer(o, "probe_bytes", path, v.probe_bytes);
  r.integer(o, "probes", path, v.probes);
  if (const auto* ifs = r.list(o, "interfaces", path)) {
    for (std::size_t i = 0; i < ifs->size(); ++i) {
      const std::string at = path + ".interfaces[" + std::to_string(i) + "]";
      const auto* io = r.object((*ifs)[i], at);
      if (io == nullptr) continue;
      auto& out = v.interfaces.emplace_back();
      r.text(*io, "name", at, out.name);
      r.text(*io, "mac", at, out.mac);
      r.flag(*io, "intended", at, out.intended);
      r.integer(*io, "rx_bytes", at, out.rx_bytes);
      r.integer(*io, "tx_bytes", at, out.tx_bytes);
      r.integer(*io, "net_bytes", at, out.net_bytes);
      r.integer(*io, "speed_mbps", at, out.speed_mbps);
    }
  }
  r.number(o, "intended_share", path, v.intended_share);
  r.number(o, "throughput_bytes_per_second", path, v.throughput);
  r.text(o, "exactly_old_number", path, v.exactly_old_number);
  r.text(o, "diagnosis", path, v.diagnosis);
  r.texts(o, "remedies", path, v.remedies);
  r.texts(o, "failed_preconditions", path, v.failed_preconditions);
  if (const auto* sigs = r.list(o, "signals", path)) {
    for (std::size_t i = 0; i < sigs->size(); ++i) {
      const std::string at = path + ".signals[" + std::to_string(i) + "]";
      const auto* so = r.object((*sigs)[i], at);
      if (so == nullptr) continue;
      auto& out = v.signals.emplace_back();
      r.choice(*so, "signal", at, out.signal, verify::kSignals);
      r.choice(*so, "state", at, out.state, verify::kSignalStates);
      r.text(*so, "detail", at, out.detail);
    }
  }
  r.choice(o, "decided_by", path, v.decided_by, verify::kSignals);
  r.text(o, "carried_by", path, v.carried_by);
  r.text(o, "server_address", path, v.server_address);
  r.text(o, "server_name", path, v.server_name);
  if (const auto* c = o.if_contains("commit"); c != nullptr && !c->is_null()) {
    if (const auto* co = r.object(*c, path + ".commit")) {
      auto& f = v.commit.emplace();
      const std::string at = path + ".commit";
      r.integer(*co, "cycles", at, f.cycles);
      r.integer(*co, "block_bytes", at, f.block_bytes);
      std::optional<double> seconds;
      r.number(*co, "seconds", at, seconds);
      f.seconds = seconds.value_or(0);
      r.number(*co, "minimum", at, f.minimum);
      r.text(*co, "error", at, f.error);
    }
  }
  if (const auto* t = o.if_contains("transports"); t != nullptr && !t->is_null()) {  // 3.6 on
    if (const auto* to = r.object(*t, path + ".transports")) {
      auto& out = v.transports.emplace();
      const std::string at = path + ".transports";
      r.integer(*to, "asked", at, out.asked);
      r.integer(*to, "nconnect", at, out.nconnect);
      r.integer(*to, "mountstats", at, out.mountstats);
      r.integer(*to, "kernel", at, out.kernel);
      r.texts(*to, "addresses", at, out.addresses);
    }
  }
}

// Structured changes (format 3: planned and changes; format 2: changes), or strings (the older
// formats' lists), read as changes with only their text.
void read_changes(FieldReader& r, const json::object& o, std::string_view key, const std::string& path,
                  std::vector<Change>& into) {
  const auto* cs = r.list(o, key, path);
  if (cs == nullptr) return;
  for (std::size_t i = 0; i < cs->size(); ++i) {
    const std::string at = path + "." + std::string(key) + "[" + std::to_string(i) + "]";
    auto& out = into.emplace_back();
    if (const auto* text = (*cs)[i].if_string()) {
      out.text = std::string(*text);
      continue;
    }
    const auto* co = r.object((*cs)[i], at);
    if (co == nullptr) continue;
    r.text(*co, "action", at, out.action);
    r.text(*co, "target", at, out.target);
    r.text(*co, "before", at, out.before);
    r.text(*co, "after", at, out.after);
    r.text(*co, "text", at, out.text);
    r.flag(*co, "disruptive", at, out.disruptive);  // from 3.4
  }
}

void read_policy(FieldReader& r, const json::object& o, const std::string& path, PolicyReport& p) {
  r.text(o, "policy", path, p.policy);
  r.text(o, "source", path, p.source);
  r.text(o, "node", path, p.node);
  r.integer(o, "vmid", path, p.vmid);
  r.text(o, "host", path, p.host);
  r.text(o, "nas", path, p.nas);
  r.choice(o, "verdict", path, p.verdict, kVerdicts);
  r.choice(o, "cause", path, p.cause, kRollbackCauses);
  read_changes(r, o, "planned", path, p.planned);
  read_changes(r, o, "changes", path, p.changes);
  r.texts(o, "rolled_back", path, p.rolled_back);
  if (const auto* v = o.if_contains("verification"); v && !v->is_null()) {
    if (const auto* vo = r.object(*v, path + ".verification"))
      read_verification(r, *vo, path + ".verification", p.verification.emplace());
  }
  r.texts(o, "restored_checks", path, p.restored_checks);
  r.texts(o, "warnings", path, p.warnings);
  r.texts(o, "errors", path, p.errors);
  r.texts(o, "notes", path, p.notes);
  if (o.contains("remedy")) r.texts(o, "remedy", path, p.remedy);
  if (o.contains("rests_on")) r.text(o, "rests_on", path, p.rests_on);                 // format 3.1
  if (const auto* v = o.if_contains("observed_via"); v != nullptr && !v->is_null()) {  // format 3.5
    const auto* text = v->if_string();
    auto channel = text != nullptr ? guest::facts_channel_from(*text) : std::nullopt;
    if (!channel) {
      r.bad(path + ".observed_via", "is neither \"ansible\" nor \"agent\"");
    } else {
      p.observed_via = channel;
    }
  }
  if (o.contains("agent_unused")) r.text(o, "agent_unused", path, p.agent_unused);
  if (p.policy.empty() && !r.error()) r.bad(path + ".policy", "missing: every policy entry names its policy");
}

// Format 1 ("schema": "pathwarden-report/v1"), or "format": "pathwarden-report" with a
// format_version whose major this pathwarden reads (any minor: added fields are ignored).
Status check_format(const json::object& o, std::string_view where) {
  const auto* format = o.if_contains("format");
  const auto* version = o.if_contains("format_version");
  if (format == nullptr) {
    const auto* schema = o.if_contains("schema");
    if (schema != nullptr && schema->is_string() && schema->get_string() == kSchemaV1) return {};
    return fail("not a pathwarden run report (no \"format\": \"pathwarden-report\", nor \"schema\": \"" +
                    std::string(kSchemaV1) + "\")",
                std::string(where), "write one with 'pathwarden reconcile --report-file FILE' (or --output json)");
  }
  if (!format->is_string() || format->get_string() != "pathwarden-report") {
    return fail("not a pathwarden run report (\"format\" is not \"pathwarden-report\")", std::string(where),
                "write one with 'pathwarden reconcile --report-file FILE' (or --output json)");
  }
  const std::string text = version != nullptr && version->is_string() ? std::string(version->get_string()) : "";
  const auto parsed = parse_format_version(text);
  if (!parsed) {
    return fail("report format_version '" + text + "' is not MAJOR.MINOR", std::string(where),
                "is this a report written by 'pathwarden ... --report-file'?");
  }
  if (parsed->major < 2 || parsed->major > kFormatMajor) {
    const auto* writer = o.if_contains("pathwarden_version");
    std::string reads;
    for (int major = kFormatMajor; major >= 2; --major) reads += std::to_string(major) + ".x, ";
    return fail("report format_version " + text + " is not one this pathwarden (" PW_VERSION ") reads: it reads " +
                    reads + "and format 1" +
                    (writer != nullptr && writer->is_string()
                         ? "; the report was written by pathwarden " + std::string(writer->get_string())
                         : std::string()),
                std::string(where), "read it with a pathwarden of that version, or upgrade this one");
  }
  return {};
}

}  // namespace

Result<PolicyReport> policy_report_from_json(const json::value& v, std::string_view where) {
  FieldReader r(where);
  PolicyReport p;
  if (const auto* o = r.object(v, "policy")) read_policy(r, *o, "policy", p);
  if (r.error()) return std::unexpected(*r.error());
  return p;
}

Result<Verification> verification_from_json(const json::value& v, std::string_view where) {
  FieldReader r(where);
  Verification out;
  if (const auto* o = r.object(v, "verification")) read_verification(r, *o, "verification", out);
  if (r.error()) return std::unexpected(*r.error());
  return out;
}

Result<RunReport> run_report_from_json(const json::value& v, std::string_view where) {
  FieldReader r(where);
  const auto* o = r.object(v, "report");
  if (o == nullptr) return std::unexpected(*r.error());
  if (auto st = check_format(*o, where); !st) return std::unexpected(st.error());
  RunReport rep;
  r.text(*o, "run_id", "report", rep.run_id);
  r.text(*o, "plan_id", "report", rep.plan_id);
  r.choice(*o, "mode", "report", rep.mode, kRunModes);
  r.text(*o, "started_at", "report", rep.started_at);
  r.text(*o, "finished_at", "report", rep.finished_at);
  r.text(*o, "policies_revision", "report", rep.policies_revision);
  r.flag(*o, "policies_dirty", "report", rep.policies_dirty);
  r.flag(*o, "journal_left", "report", rep.journal_left);
  std::optional<std::string> stopped;
  r.text(*o, "stopped_by", "report", stopped);
  if (stopped) {
    rep.stopped_by_signal = signal_number(*stopped);
    if (rep.stopped_by_signal == 0) r.bad("report.stopped_by", "expected a signal name such as SIGTERM");
  }
  if (const auto* ps = r.list(*o, "policies", "report")) {
    for (std::size_t i = 0; i < ps->size(); ++i) {
      const std::string at = "policies[" + std::to_string(i) + "]";
      if (const auto* po = r.object((*ps)[i], at)) read_policy(r, *po, at, rep.policies.emplace_back());
    }
  }
  if (r.error()) return std::unexpected(*r.error());
  return rep;
}

Result<json::value> parse_json_text(std::string_view text, std::string_view where) {
  json::stream_parser parser;
  boost::system::error_code ec;
  std::size_t used = parser.write_some(text.data(), text.size(), ec);
  if (!ec) {
    // Only whitespace may follow the value.
    const auto rest = text.substr(used);
    if (rest.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      ec = json::error::extra_data;
      used += rest.find_first_not_of(" \t\r\n");
    } else {
      parser.finish(ec);
    }
  }
  if (ec) {
    SourcePos pos{std::string(where), 1, 1};
    for (std::size_t i = 0; i < used && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++pos.line;
        pos.column = 1;
      } else {
        ++pos.column;
      }
    }
    return fail("not JSON: " + ec.message(), pos.to_string(), "is this a report written by --report-file?");
  }
  return parser.release();
}

}  // namespace pw::report
