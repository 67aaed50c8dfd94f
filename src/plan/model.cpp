// SPDX-License-Identifier: GPL-3.0-or-later
// Over 400 lines on purpose: the plan file format, both ways (to_json and its strict reader) side by side so a field
// cannot be added to one only.
#include "plan/model.hpp"

#include <boost/json.hpp>
#include <limits>

#include "diagnostics/format_version.hpp"

namespace pw::plan {
namespace json = boost::json;

static_assert(std::variant_size_v<StepAction> == kPhaseOrder.size());
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(StepKind::set_nic), StepAction>, SetNic>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(StepKind::prove_path), StepAction>, ProvePath>);

std::string_view to_string(StepKind kind) {
  switch (kind) {
    case StepKind::set_nic:
      return "set-nic";
    case StepKind::restart_vm:
      return "restart-vm";
    case StepKind::set_channels:
      return "set-channels";
    case StepKind::change_fstab:
      return "change-fstab";
    case StepKind::move_transport:
      return "move-transport";
    case StepKind::prove_path:
      return "prove-path";
  }
  return "?";
}

std::optional<StepKind> step_kind_from(std::string_view text) {
  for (auto k : kPhaseOrder) {
    if (to_string(k) == text) return k;
  }
  if (text == "verify") return StepKind::prove_path;  // its name before plan format 1.6
  return std::nullopt;
}

std::string_view to_string(PolicyState state) {
  switch (state) {
    case PolicyState::converged:
      return "converged";
    case PolicyState::changes:
      return "changes";
    case PolicyState::precondition_failed:
      return "precondition-failed";
    case PolicyState::unobserved:
      return "unobserved";
    case PolicyState::drift:
      return "drift";
  }
  return "unknown";
}

std::vector<std::string> ChangeFstab::entries() const {
  std::vector<std::string> out{mount_point};
  out.insert(out.end(), moved_entries.begin(), moved_entries.end());
  return out;
}

bool Plan::has_changes() const {
  for (const auto& p : policies) {
    if (p.state == PolicyState::changes || p.state == PolicyState::drift) return true;
  }
  return false;
}

bool Plan::has_blockers() const {
  for (const auto& p : policies) {
    if (p.state == PolicyState::precondition_failed || p.state == PolicyState::unobserved) return true;
  }
  return false;
}

namespace {

json::object vm_json(const proxmox::VmRef& vm) {
  return {{"node", vm.node}, {"vmid", vm.vmid}};
}

json::array strings_json(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

json::array activations_json(const std::vector<guest::MountActivation>& v) {
  json::array a;
  for (const auto& m : v) {
    a.push_back(json::object{{"path", m.path},
                             {"source", m.source},
                             {"fstype", m.fstype},
                             {"options", strings_json(m.options)},
                             {"mount", m.mount}});
  }
  return a;
}

// Reading back: every accessor reports the missing or mistyped field by name.
class Reader {
 public:
  Reader(const json::value& v, std::string where) : where_(std::move(where)) {
    if (const auto* o = v.if_object()) obj_ = o;
  }
  bool ok() const { return obj_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }

  std::string str(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* s = v->if_string()) return std::string(*s);
      bad(key, "a string");
    }
    return {};
  }
  std::int64_t integer(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* i = v->if_int64()) return *i;
      bad(key, "an integer");
    }
    return 0;
  }
  std::uint64_t uinteger(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* u = v->if_uint64()) return *u;
      if (const auto* i = v->if_int64(); i != nullptr && *i >= 0) return static_cast<std::uint64_t>(*i);
      bad(key, "a non-negative integer");
    }
    return 0;
  }
  double number(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* d = v->if_double()) return *d;
      if (const auto* i = v->if_int64()) return static_cast<double>(*i);
      bad(key, "a number");
    }
    return 0;
  }
  bool boolean(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* b = v->if_bool()) return *b;
      bad(key, "true or false");
    }
    return false;
  }
  std::optional<std::int64_t> opt_integer(std::string_view key) {
    if (obj_ == nullptr || !obj_->contains(key) || obj_->at(key).is_null()) return std::nullopt;
    return integer(key);
  }
  // VM ids, queue and channel counts, milliseconds: a number that does not fit is a damaged file,
  // never truncated (vmid 4294967397 must not become VM 101).
  int int32(std::string_view key) { return fits_int(key, integer(key)).value_or(0); }
  std::optional<int> opt_int32(std::string_view key) {
    const auto n = opt_integer(key);
    return n ? fits_int(key, *n) : std::nullopt;
  }
  // A field newer plan files may leave out (older pathwarden versions did not write it).
  std::string str_or_empty(std::string_view key) {
    if (obj_ == nullptr || !obj_->contains(key)) return {};
    return str(key);
  }
  // The same for a field written as null when empty.
  std::string opt_str_or_empty(std::string_view key) {
    if (obj_ == nullptr || !obj_->contains(key)) return {};
    return opt_str(key).value_or("");
  }
  std::optional<std::string> opt_str(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* s = v->if_string()) return std::string(*s);
      if (!v->is_null()) bad(key, "a string or null");
    }
    return std::nullopt;
  }
  const json::array* array(std::string_view key) {
    if (const auto* v = find(key)) {
      if (const auto* a = v->if_array()) return a;
      bad(key, "a list");
    }
    return nullptr;
  }
  std::vector<std::string> strings(std::string_view key) {
    std::vector<std::string> out;
    if (const auto* v = find(key)) {
      const auto* a = v->if_array();
      if (a == nullptr) {
        bad(key, "a list");
        return out;
      }
      for (const auto& item : *a) {
        if (const auto* s = item.if_string())
          out.emplace_back(*s);
        else
          bad(key, "a list of strings");
      }
    }
    return out;
  }
  const json::value* value(std::string_view key) { return find(key); }
  // Fields added after format version 1 was first written: optional, absent in older plans.
  bool has(std::string_view key) const { return obj_ != nullptr && obj_->contains(key); }
  proxmox::VmRef vm(std::string_view key) {
    proxmox::VmRef ref;
    if (const auto* v = find(key)) {
      Reader r(*v, where_ + "." + std::string(key));
      ref.node = r.str("node");
      ref.vmid = r.int32("vmid");
      if (!r.ok()) error_ = r.error();
    }
    return ref;
  }
  std::vector<guest::MountActivation> activations(std::string_view key) {
    std::vector<guest::MountActivation> out;
    const auto* v = find(key);
    if (v == nullptr) return out;
    const auto* a = v->if_array();
    if (a == nullptr) {
      bad(key, "a list");
      return out;
    }
    for (const auto& item : *a) {
      Reader r(item, where_ + "." + std::string(key));
      guest::MountActivation m;
      m.path = r.str("path");
      m.source = r.str("source");
      m.fstype = r.str("fstype");
      m.options = r.strings("options");
      m.mount = r.boolean("mount");
      if (!r.ok()) error_ = r.error();
      out.push_back(std::move(m));
    }
    return out;
  }

 private:
  const json::value* find(std::string_view key) {
    if (obj_ == nullptr) {
      if (error_.empty()) error_ = where_ + ": expected an object";
      return nullptr;
    }
    const auto* v = obj_->if_contains(key);
    if (v == nullptr && error_.empty()) error_ = where_ + ": missing field '" + std::string(key) + "'";
    return v;
  }
  std::optional<int> fits_int(std::string_view key, std::int64_t n) {
    if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
      bad(key, "an integer of at most 32 bits");
      return std::nullopt;
    }
    return static_cast<int>(n);
  }
  void bad(std::string_view key, std::string_view what) {
    if (error_.empty()) error_ = where_ + ": field '" + std::string(key) + "' must be " + std::string(what);
  }

  const json::object* obj_ = nullptr;
  std::string where_;
  std::string error_;
};

}  // namespace

// A step as the plan file's JSON. Long because it is one visit over the six step types, each
// field written where it is named; step_from_json reads them back in the same order.
json::value step_to_json(const Step& step) {
  json::object o{{"kind", to_string(step.kind())}, {"disruptive", step.disruptive}, {"summary", step.summary}};
  struct Fill {
    json::object& o;
    void operator()(const SetNic& s) const {
      o["vm"] = vm_json(s.vm);
      o["device"] = s.device;
      o["from"] = s.from;
      o["to"] = s.to;
      o["digest"] = s.digest;
      o["hotplug"] = s.hotplug;
      o["queues_from"] = s.queues_from ? json::value(*s.queues_from) : json::value(nullptr);
      o["queues_to"] = s.queues_to;
      o["restart_window"] = s.restart_window.empty() ? json::value(nullptr) : json::value(s.restart_window);
    }
    void operator()(const RestartVm& s) const {
      o["vm"] = vm_json(s.vm);
      o["host"] = s.host;
      o["why"] = s.why;
      o["restart_window"] = s.restart_window.empty() ? json::value(nullptr) : json::value(s.restart_window);
    }
    void operator()(const SetChannels& s) const {
      o["host"] = s.host;
      o["mac"] = s.mac.str();
      o["interface"] = s.interface;
      o["from"] = s.from;
      o["to"] = s.to;
    }
    void operator()(const ChangeFstab& s) const {
      o["host"] = s.host;
      o["mount_point"] = s.mount_point;
      o["old_content"] = s.old_content;
      o["new_content"] = s.new_content;
      o["old_sha256"] = s.old_sha256;
      o["new_sha256"] = s.new_sha256;
      o["backup_path"] = s.backup_path;
      o["activations"] = activations_json(s.activations);
      o["inverse_activations"] = activations_json(s.inverse_activations);
      if (!s.writers.empty()) o["writers"] = strings_json(s.writers);
      if (!s.moved_entries.empty()) o["moved_entries"] = strings_json(s.moved_entries);
    }
    void operator()(const MoveTransport& s) const {
      o["host"] = s.host;
      o["mount_point"] = s.mount_point;
      o["mounted_as"] = s.mounted_as;
      o["from"] = s.from;
      o["to"] = s.to;
    }
    void operator()(const ProvePath& s) const {
      o["vm"] = vm_json(s.vm);
      o["nic"] = s.nic ? json::value(*s.nic) : json::value(nullptr);
      o["host"] = s.host;
      o["mount_point"] = s.mount_point;
      o["intended_mac"] = s.intended_mac.str();
      o["server"] = s.server;
      if (!s.server_name.empty()) o["server_name"] = s.server_name;
      o["nas_addresses"] = strings_json(s.nas_addresses);
      o["vers"] = s.vers ? json::value(*s.vers) : json::value(nullptr);
      o["nconnect"] = s.nconnect ? json::value(*s.nconnect) : json::value(nullptr);
      o["queues"] = s.queues ? json::value(*s.queues) : json::value(nullptr);
      o["probe_file"] = s.probe_file;
      o["probe_bytes"] = s.probe_bytes;
      o["max_probe_bytes"] = s.max_probe_bytes;
      o["min_share"] = s.min_share;
      o["write"] = s.direction == verify::ProbeDirection::write;
      if (s.probe_as_root) o["probe_as_root"] = true;
      o["baseline_ms"] = s.baseline_ms;
      if (s.commit_cycles > 0) o["commit_cycles"] = s.commit_cycles;
      if (s.min_commit_rate) o["min_commit_rate"] = *s.min_commit_rate;
      o["rollback_on_inconclusive"] = s.rollback_on_inconclusive;
      o["verify_restored"] = s.verify_restored;
    }
  };
  std::visit(Fill{o}, step.action);
  return o;
}

// The plan file's step back, every field checked. Long because it mirrors step_to_json field
// by field, so the two are read side by side.
Result<Step> step_from_json(const json::value& v) {
  Reader r(v, "step");
  Step step;
  const std::string kind = r.str("kind");
  step.disruptive = r.boolean("disruptive");
  step.summary = r.str("summary");
  if (kind == "set-nic") {
    SetNic s;
    s.vm = r.vm("vm");
    s.device = r.str("device");
    s.from = r.str("from");
    s.to = r.str("to");
    s.digest = r.str("digest");
    s.hotplug = r.boolean("hotplug");
    s.queues_from = r.opt_int32("queues_from");
    s.queues_to = r.int32("queues_to");
    s.restart_window = r.opt_str_or_empty("restart_window");
    step.action = s;
  } else if (kind == "restart-vm") {
    step.action = RestartVm{r.vm("vm"), r.str("host"), r.str("why"), r.opt_str_or_empty("restart_window")};
  } else if (kind == "set-channels") {
    SetChannels s;
    s.host = r.str("host");
    s.mac = r.str("mac");
    s.interface = r.str("interface");
    s.from = r.int32("from");
    s.to = r.int32("to");
    step.action = s;
  } else if (kind == "change-fstab") {
    ChangeFstab s;
    s.host = r.str("host");
    s.mount_point = r.str("mount_point");
    s.old_content = r.str("old_content");
    s.new_content = r.str("new_content");
    s.old_sha256 = r.str("old_sha256");
    s.new_sha256 = r.str("new_sha256");
    s.backup_path = r.str("backup_path");
    s.activations = r.activations("activations");
    s.inverse_activations = r.activations("inverse_activations");
    if (r.has("writers")) s.writers = r.strings("writers");                    // 1.3 on
    if (r.has("moved_entries")) s.moved_entries = r.strings("moved_entries");  // 1.7 on
    step.action = s;
  } else if (kind == "move-transport") {
    step.action = MoveTransport{r.str("host"), r.str("mount_point"), r.str("mounted_as"), r.str("from"), r.str("to")};
  } else if (step_kind_from(kind) == StepKind::prove_path) {
    ProvePath s;
    s.vm = r.vm("vm");
    s.nic = r.opt_int32("nic");
    s.host = r.str("host");
    s.mount_point = r.str("mount_point");
    s.intended_mac = r.str("intended_mac");
    s.server = r.str("server");
    s.server_name = r.str_or_empty("server_name");
    s.nas_addresses = r.strings("nas_addresses");
    s.vers = r.opt_str("vers");
    s.nconnect = r.opt_int32("nconnect");
    s.queues = r.opt_int32("queues");
    s.probe_file = r.str("probe_file");
    s.probe_bytes = r.uinteger("probe_bytes");
    s.max_probe_bytes = r.uinteger("max_probe_bytes");
    s.min_share = r.number("min_share");
    s.direction = r.boolean("write") ? verify::ProbeDirection::write : verify::ProbeDirection::read;
    if (r.has("probe_as_root")) s.probe_as_root = r.boolean("probe_as_root");
    s.baseline_ms = r.int32("baseline_ms");
    if (r.has("commit_cycles")) s.commit_cycles = r.int32("commit_cycles");
    if (r.has("min_commit_rate")) s.min_commit_rate = r.number("min_commit_rate");
    s.rollback_on_inconclusive = r.boolean("rollback_on_inconclusive");
    s.verify_restored = r.boolean("verify_restored");
    step.action = s;
  } else if (r.ok()) {
    return fail("unknown step kind '" + kind + "'", "plan file", "the plan was written by another pathwarden version");
  }
  if (!r.ok()) return fail(r.error(), "plan file", "the plan file is damaged; run 'pathwarden plan' again");
  return step;
}

json::value to_json(const Plan& plan) {
  json::array policies;
  for (const auto& p : plan.policies) {
    json::array steps;
    for (const auto& s : p.steps) steps.push_back(step_to_json(s));
    policies.push_back(json::object{{"policy", p.policy},
                                    {"source", p.source},
                                    {"vm", vm_json(p.vm)},
                                    {"host", p.host},
                                    {"nas", p.nas},
                                    {"state", std::string(to_string(p.state))},
                                    {"steps", std::move(steps)},
                                    {"blockers", strings_json(p.blockers)},
                                    {"warnings", strings_json(p.warnings)},
                                    {"notes", strings_json(p.notes)},
                                    {"remedy", strings_json(p.remedy)}});
  }
  return json::object{{"format", "pathwarden-plan"},
                      {"format_version", FormatVersion{Plan::kFormatMajor, Plan::kFormatMinor}.str()},
                      {"pathwarden_version", PW_VERSION},
                      {"version", Plan::kFormatMajor},
                      {"id", plan.id},
                      {"created_at", plan.created_at},
                      {"policies_revision", plan.policies_revision},
                      {"policies_dirty", plan.policies_dirty},
                      {"policies", std::move(policies)}};
}

// The plan file back, format and fields checked. Long because each field is checked where it is
// read, so a bad plan file is refused with the field's name.
Result<Plan> plan_from_json(const json::value& v) {
  Reader r(v, "plan");
  if (r.str("format") != "pathwarden-plan" || !r.ok()) {
    return fail("not a pathwarden plan file", {}, "write one with 'pathwarden plan --out FILE'");
  }
  // format_version "MAJOR.MINOR" (1.1 on); a plan of format 1.0 has only "version": 1.
  const std::string version =
      r.has("format_version") ? r.str("format_version") : std::to_string(r.integer("version")) + ".0";
  const auto parsed = parse_format_version(version);
  if (!r.ok() || !parsed) {
    return fail("plan format_version '" + version + "' is not MAJOR.MINOR", {}, "run 'pathwarden plan' again");
  }
  if (parsed->major != Plan::kFormatMajor) {
    const std::string writer =
        r.has("pathwarden_version") ? " (written by pathwarden " + r.str("pathwarden_version") + ")" : "";
    return fail("plan format_version " + version + writer +
                    " is not one this pathwarden (" PW_VERSION ") reads: it reads " +
                    std::to_string(Plan::kFormatMajor) + ".x",
                {}, "apply it with the pathwarden that wrote it, or run 'pathwarden plan' again");
  }
  Plan plan;
  plan.id = r.str("id");
  plan.created_at = r.str("created_at");
  plan.policies_revision = r.str("policies_revision");
  plan.policies_dirty = r.boolean("policies_dirty");
  const auto* list = r.value("policies");
  if (!r.ok()) return fail(r.error(), "plan file");
  if (list == nullptr || !list->is_array()) return fail("'policies' must be a list", "plan file");
  for (const auto& item : list->get_array()) {
    Reader pr(item, "plan.policies[]");
    PolicyPlan p;
    p.policy = pr.str("policy");
    p.source = pr.str("source");
    p.vm = pr.vm("vm");
    p.host = pr.str("host");
    p.nas = pr.opt_str_or_empty("nas");  // 1.2 on
    const auto state = pr.str("state");
    if (state == "converged")
      p.state = PolicyState::converged;
    else if (state == "changes")
      p.state = PolicyState::changes;
    else if (state == "precondition-failed")
      p.state = PolicyState::precondition_failed;
    else if (state == "unobserved")
      p.state = PolicyState::unobserved;
    else if (state == "drift")
      p.state = PolicyState::drift;
    else if (pr.ok())
      return fail("unknown policy state '" + state + "'", "plan file");
    p.blockers = pr.strings("blockers");
    p.warnings = pr.strings("warnings");
    p.notes = pr.strings("notes");
    if (pr.has("remedy")) p.remedy = pr.strings("remedy");
    if (const auto* steps = pr.array("steps")) {
      for (const auto& s : *steps) {
        auto step = step_from_json(s);
        if (!step) return std::unexpected(step.error());
        p.steps.push_back(std::move(*step));
      }
    }
    if (!pr.ok()) return fail(pr.error(), "plan file");
    plan.policies.push_back(std::move(p));
  }
  return plan;
}

}  // namespace pw::plan
