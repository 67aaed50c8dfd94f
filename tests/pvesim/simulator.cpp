// SPDX-License-Identifier: GPL-3.0-or-later
#include "simulator.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <boost/json.hpp>
#include <climits>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "acl.hpp"
#include "agent.hpp"
#include "hook.hpp"
#include "net_schema.hpp"
#include "pvedaemon_workers.hpp"

namespace pvesim {

namespace bj = boost::json;

namespace {

// A Perl `die` or PVE::Exception inside an API handler.
struct HttpError {
  int status = 500;
  std::string message;
  bj::object errors;
};

// A failure of the authentication check: 401, empty body, delayed.
struct AuthFailure {
  std::string reason;
};

[[noreturn]] void die(std::string message) {
  throw HttpError{500, std::move(message), {}};
}
[[noreturn]] void param_error(bj::object errors) {
  throw HttpError{400, "Parameter verification failed.", std::move(errors)};
}
[[noreturn]] void param_error(const std::string& key, const std::string& message) {
  bj::object e;
  e[key] = message;
  param_error(std::move(e));
}

std::int64_t now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

ApiResponse data_response(bj::value data) {
  ApiResponse r;
  bj::object o;
  o["data"] = std::move(data);
  r.body = bj::serialize(o);
  return r;
}

// set_result_attrib: attributes next to "data" (a list's "total").
ApiResponse data_response_with(bj::value data, const bj::object& attributes) {
  ApiResponse r;
  bj::object o = attributes;
  o["data"] = std::move(data);
  r.body = bj::serialize(o);
  return r;
}

ApiResponse error_response(const HttpError& e) {
  ApiResponse r;
  r.status = e.status;
  r.reason = first_line(e.message);
  bj::object o;
  o["data"] = nullptr;
  if (!e.errors.empty()) o["errors"] = e.errors;
  o["message"] = e.message + "\n";
  r.body = bj::serialize(o);
  return r;
}

std::string random_base64(std::size_t bytes) {
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> buf(bytes);
  RAND_bytes(buf.data(), static_cast<int>(buf.size()));
  std::string out;
  for (unsigned char c : buf) out += kB64[c & 63];
  return out;
}

std::string hex8(std::int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08llX", static_cast<unsigned long long>(v));
  return buf;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      out += static_cast<char>(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// Parameter values by name; a repeated form key is an array (RESTHandler), kept as several values.
using Params = std::map<std::string, std::vector<std::string>>;

void parse_urlencoded(std::string_view s, Params& out, bool override_existing) {
  Params found;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t amp = s.find('&', start);
    if (amp == std::string_view::npos) amp = s.size();
    std::string_view part = s.substr(start, amp - start);
    start = amp + 1;
    if (part.empty()) continue;
    const std::size_t eq = part.find('=');
    std::string key = percent_decode(part.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : percent_decode(part.substr(eq + 1), true);
    found[key].push_back(std::move(value));
  }
  for (auto& [k, v] : found) {
    if (override_existing || !out.contains(k)) out[k] = std::move(v);
  }
}

std::string json_text(const bj::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_bool()) return v.as_bool() ? "1" : "0";  // JSON booleans are accepted as booleans
  if (v.is_null()) return "";
  return bj::serialize(v);
}

void parse_json_body(const std::string& body, Params& out) {
  boost::system::error_code ec;
  bj::value v = bj::parse(body, ec);
  if (ec || !v.is_object()) throw HttpError{400, "malformed JSON body: " + (ec ? ec.message() : "not an object"), {}};
  for (const auto& [k, val] : v.as_object()) {
    std::vector<std::string> values;
    if (val.is_array()) {
      for (const auto& item : val.as_array()) values.push_back(json_text(item));
    } else {
      values.push_back(json_text(val));
    }
    out[std::string(k)] = std::move(values);
  }
}

std::optional<std::string> single(const Params& p, const std::string& key) {
  auto it = p.find(key);
  if (it == p.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

// pve-configid-list: values split on ',', ';' and whitespace; repeated keys are joined.
std::vector<std::string> id_list(const Params& p, const std::string& key) {
  std::vector<std::string> out;
  auto it = p.find(key);
  if (it == p.end()) return out;
  for (const auto& v : it->second) {
    std::string item;
    for (char c : v + ",") {
      if (c == ',' || c == ';' || std::isspace(static_cast<unsigned char>(c))) {
        if (!item.empty()) out.push_back(item);
        item.clear();
      } else {
        item += c;
      }
    }
  }
  return out;
}

struct ParamSpec {
  enum class Kind { string, boolean, integer, list, enumeration } kind = Kind::string;
  long long min = LLONG_MIN;
  long long max = LLONG_MAX;
  std::vector<std::string> choices;
  bool required = false;
  std::size_t max_length = 0;  // 0: any length (JSONSchema maxLength)
};

using Schema = std::map<std::string, ParamSpec>;

std::string check_value(const ParamSpec& spec, const std::vector<std::string>& values) {
  if (values.size() > 1 && spec.kind != ParamSpec::Kind::list)
    return "type check ('" +
           std::string(spec.kind == ParamSpec::Kind::boolean   ? "boolean"
                       : spec.kind == ParamSpec::Kind::integer ? "integer"
                                                               : "string") +
           "') failed - got ARRAY";
  const std::string v = values.empty() ? "" : values.back();
  switch (spec.kind) {
    case ParamSpec::Kind::boolean:
      // Top-level booleans are exactly 0 or 1 (JSONSchema check_type); "True" is refused.
      if (v != "0" && v != "1") return "type check ('boolean') failed - got '" + v + "'";
      return {};
    case ParamSpec::Kind::integer: {
      static const std::regex int_re("^-?\\d+$");
      if (!std::regex_match(v, int_re)) return "type check ('integer') failed - got '" + v + "'";
      const long long n = std::stoll(v);
      if (n < spec.min) return "value must have a minimum value of " + std::to_string(spec.min);
      if (n > spec.max) return "value must have a maximum value of " + std::to_string(spec.max);
      return {};
    }
    case ParamSpec::Kind::enumeration: {
      if (std::ranges::find(spec.choices, v) != spec.choices.end()) return {};
      std::string list;
      for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
      return "value '" + v + "' does not have a value in the enumeration '" + list + "'";
    }
    default:
      // pve-common PVE/JSONSchema.pm check_prop (l. 1645).
      if (spec.max_length > 0 && v.size() > spec.max_length) {
        return "value may only be " + std::to_string(spec.max_length) + " characters long";
      }
      return {};
  }
}

constexpr const char* kNotInSchema =
    "property is not defined in schema and the schema does not allow additional properties";

void validate(const Params& params, const Schema& schema) {
  bj::object errors;
  for (const auto& [k, v] : params) {
    auto it = schema.find(k);
    if (it == schema.end()) {
      errors[k] = kNotInSchema;
    } else if (auto msg = check_value(it->second, v); !msg.empty()) {
      errors[k] = msg;
    }
  }
  for (const auto& [k, spec] : schema) {
    if (spec.required && !params.contains(k)) errors[k] = "property is missing and it is not optional";  // l. 1581
  }
  if (!errors.empty()) param_error(std::move(errors));
}

ParamSpec boolean() {
  return {ParamSpec::Kind::boolean, LLONG_MIN, LLONG_MAX, {}};
}
ParamSpec integer(long long lo, long long hi) {
  return {ParamSpec::Kind::integer, lo, hi, {}};
}
ParamSpec text() {
  return {};
}
ParamSpec list() {
  return {ParamSpec::Kind::list, LLONG_MIN, LLONG_MAX, {}};
}

// Config keys pvesim accepts on PUT/POST config, with the privilege each needs
// (qemu-server's $check_vm_modify_config_perm).
std::optional<std::string> privilege_for_key(const std::string& key) {
  static const std::map<std::string, std::string> fixed = {
      {"name", "VM.Config.Options"},       {"description", "VM.Config.Options"}, {"onboot", "VM.Config.Options"},
      {"tags", "VM.Config.Options"},       {"boot", "VM.Config.Options"},        {"ostype", "VM.Config.Options"},
      {"protection", "VM.Config.Options"}, {"startup", "VM.Config.Options"},     {"agent", "VM.Config.Options"},
      {"cores", "VM.Config.CPU"},          {"sockets", "VM.Config.CPU"},         {"cpu", "VM.Config.CPU"},
      {"numa", "VM.Config.CPU"},           {"vcpus", "VM.Config.CPU"},           {"cpulimit", "VM.Config.CPU"},
      {"cpuunits", "VM.Config.CPU"},       {"memory", "VM.Config.Memory"},       {"balloon", "VM.Config.Memory"},
      {"shares", "VM.Config.Memory"},      {"hotplug", "VM.Config.HWType"},      {"machine", "VM.Config.HWType"},
      {"bios", "VM.Config.HWType"},        {"scsihw", "VM.Config.HWType"},       {"vga", "VM.Config.HWType"},
      {"tablet", "VM.Config.HWType"},      {"acpi", "VM.Config.HWType"},         {"kvm", "VM.Config.HWType"},
      {"smbios1", "VM.Config.HWType"},     {"vmgenid", "VM.Config.HWType"},      {"meta", "VM.Config.Options"},
      {"efidisk0", "VM.Config.Disk"},      {"ciuser", "VM.Config.Cloudinit"},    {"sshkeys", "VM.Config.Cloudinit"},
  };
  if (auto it = fixed.find(key); it != fixed.end()) return it->second;
  static const std::regex disk_re("^(scsi|virtio|ide|sata|unused)\\d+$");
  static const std::regex hw_re("^(serial|usb|hostpci)\\d+$");
  static const std::regex ci_re("^ipconfig\\d+$");
  if (is_net_key(key)) return "VM.Config.Network";
  if (std::regex_match(key, disk_re)) return "VM.Config.Disk";
  if (std::regex_match(key, hw_re)) return "VM.Config.HWType";
  if (std::regex_match(key, ci_re)) return "VM.Config.Cloudinit";
  return std::nullopt;
}

// Config keys Proxmox types as integers or booleans come back as JSON numbers (check_type).
bool is_numeric_key(const std::string& key) {
  static const std::set<std::string> keys = {"cores", "sockets", "numa",   "onboot",   "balloon",    "shares",  "vcpus",
                                             "kvm",   "acpi",    "tablet", "template", "protection", "cpuunits"};
  return keys.contains(key);
}

bj::value config_value(const std::string& key, const std::string& value) {
  static const std::regex int_re("^-?\\d{1,15}$");
  if (is_numeric_key(key) && std::regex_match(value, int_re)) return std::stoll(value);
  return bj::value(value);
}

// $fast_plug_option: applied to a running VM without any device work.
// qemu-server PVE/QemuServer.pm `$fast_plug_option` (read at e6352be6): committed at any write to
// a running VM, selected or not (pending sets only), plus every cloud-init option.
bool is_fast_plug(const std::string& key) {
  static const std::set<std::string> keys = {"description",   "hookscript",   "lock",       "migrate_downtime",
                                             "migrate_speed", "name",         "onboot",     "protection",
                                             "shares",        "startup",      "tags",       "vmstatestorage",
                                             "citype",        "ciuser",       "cipassword", "ciupgrade",
                                             "cicustom",      "searchdomain", "nameserver", "sshkeys"};
  static const std::regex ipconfig("^ipconfig\\d+$");
  return keys.contains(key) || std::regex_match(key, ipconfig);
}

struct HotplugFeatures {
  bool network = true, disk = true, usb = true, cpu = false, memory = false;
};

// pve-common PVE/ParseUtils.pm `split_list` (read at f665029e): `,` and `;` are spaces, then
// split on whitespace, empty items dropped ("disk;network", "disk, network", ",network,").
std::vector<std::string> split_list(const std::string& text) {
  std::string t = text;
  for (auto& c : t) {
    if (c == ',' || c == ';') c = ' ';
  }
  std::vector<std::string> out;
  std::istringstream in(t);
  for (std::string item; in >> item;) out.push_back(item);
  return out;
}

// qemu-server PVE/QemuServer.pm `parse_hotplug_features` (read at e6352be6): "0" none, "1" the
// default network,disk,usb, else the listed features; an unknown one is an error ("" when valid).
std::string hotplug_error(const std::string& value) {
  if (value == "0" || value == "1") return {};
  static const std::set<std::string> known{"network", "disk", "cpu", "memory", "usb", "cloudinit"};
  for (const auto& item : split_list(value)) {
    if (!known.contains(item)) return "invalid format - invalid hotplug feature '" + item + "'";
  }
  return {};
}

HotplugFeatures parse_hotplug(const Config& conf) {
  HotplugFeatures f;
  auto it = conf.find("hotplug");
  if (it == conf.end()) return f;
  const std::string& v = it->second;
  if (v == "1") return f;
  f = {false, false, false, false, false};
  if (v == "0") return f;
  for (const auto& item : split_list(v)) {
    if (item == "network") f.network = true;
    if (item == "disk") f.disk = true;
    if (item == "usb") f.usb = true;
    if (item == "cpu") f.cpu = true;
    if (item == "memory") f.memory = true;
  }
  return f;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) out.push_back(percent_decode(path.substr(start, slash - start), false));
    start = slash + 1;
  }
  return out;
}

std::string route_pattern(const std::vector<std::string>& seg) {
  std::string out;
  for (std::size_t i = 0; i < seg.size(); ++i) {
    std::string s = seg[i];
    if (i > 0 && (seg[i - 1] == "nodes")) s = "{node}";
    if (i > 0 && (seg[i - 1] == "qemu" || seg[i - 1] == "lxc")) s = "{vmid}";
    if (i > 0 && seg[i - 1] == "tasks") s = "{upid}";
    out += "/" + s;
  }
  return out.empty() ? "/" : out;
}

bool is_loopback_only_path(const std::string& s) {
  return s.starts_with("/pvesim");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Faults

bj::value Faults::to_json() const {
  bj::object o;
  o["latency_ms"] = latency_ms;
  o["slow_writes"] = slow_writes;
  o["slow_writes_after"] = slow_writes_after;
  o["slow_writes_ms"] = slow_writes_ms;
  o["error_rate"] = error_rate;
  o["error_status"] = error_status;
  o["fail_next"] = fail_next;
  o["drop_rate"] = drop_rate;
  o["drop_next"] = drop_next;
  bj::array edits;
  for (const auto& e : concurrent_edits) edits.push_back(bj::object{{"vmid", e.vmid}, {"after_reads", e.after_reads}});
  o["concurrent_edits"] = std::move(edits);
  bj::array failures;
  for (const auto& f : task_failures) {
    failures.push_back(bj::object{{"type", f.type}, {"vmid", f.vmid}, {"message", f.message}});
  }
  o["task_failures"] = std::move(failures);
  return o;
}

std::string Faults::merge(const bj::value& json) {
  if (!json.is_object()) return "faults must be a JSON object";
  const auto& o = json.as_object();
  try {
    for (const auto& [k, v] : o) {
      if (k == "latency_ms") {
        latency_ms = v.to_number<int>();
      } else if (k == "slow_writes") {
        slow_writes = v.to_number<int>();
      } else if (k == "slow_writes_after") {
        slow_writes_after = v.to_number<int>();
      } else if (k == "slow_writes_ms") {
        slow_writes_ms = v.to_number<int>();
      } else if (k == "error_rate") {
        error_rate = v.to_number<double>();
      } else if (k == "error_status") {
        error_status = v.to_number<int>();
      } else if (k == "fail_next") {
        fail_next = v.to_number<int>();
      } else if (k == "drop_rate") {
        drop_rate = v.to_number<double>();
      } else if (k == "drop_next") {
        drop_next = v.to_number<int>();
      } else if (k == "concurrent_edits") {
        concurrent_edits.clear();
        for (const auto& e : v.as_array()) {
          const auto& eo = e.as_object();
          ConcurrentEdit ce;
          ce.vmid = eo.at("vmid").to_number<int>();
          if (auto* r = eo.if_contains("after_reads")) ce.after_reads = r->to_number<int>();
          concurrent_edits.push_back(ce);
        }
      } else if (k == "task_failures") {
        task_failures.clear();
        for (const auto& e : v.as_array()) {
          const auto& eo = e.as_object();
          TaskFailure tf;
          tf.type = std::string(eo.at("type").as_string());
          if (auto* id = eo.if_contains("vmid")) tf.vmid = id->to_number<int>();
          if (auto* m = eo.if_contains("message")) tf.message = std::string(m->as_string());
          if (tf.message.empty()) tf.message = "pvesim: injected failure of " + tf.type;
          task_failures.push_back(tf);
        }
      } else {
        return "unknown fault '" + std::string(k) + "'";
      }
    }
  } catch (const std::exception& e) {
    return std::string("bad fault value: ") + e.what();
  }
  if (error_status < 500 || error_status > 599) return "error_status must be a 5xx status";
  return {};
}

// ---------------------------------------------------------------------------------------------
// Handlers: the API, one method per endpoint family.

struct Handlers {
  Simulator& sim;
  using Caller = Simulator::Caller;
  using Task = Simulator::Task;

  // ---- request plumbing ------------------------------------------------------------------------

  ApiResponse dispatch(const ApiRequest& req) {
    const std::size_t q = req.target.find('?');
    const std::string path = req.target.substr(0, q);
    const std::string query = q == std::string::npos ? "" : req.target.substr(q + 1);
    if (is_loopback_only_path(path)) return admin(req, path, query);

    const bool api = path.starts_with("/api2/json/") || path == "/api2/json";
    const std::string rel = api ? path.substr(10) : path;
    const auto seg = split_path(rel);
    bool drop = false, error = false;
    int latency = 0;
    {
      std::lock_guard lock(sim.mutex_);
      ++sim.request_counts_[req.method + " " + route_pattern(seg)];
      ++sim.api_requests_;
      auto& f = sim.faults_;
      std::uniform_real_distribution<double> u(0.0, 1.0);
      if (f.drop_next > 0) {
        --f.drop_next;
        drop = true;
      } else if (f.drop_rate > 0 && u(sim.rng_) < f.drop_rate) {
        drop = true;
      } else if (f.fail_next > 0) {
        --f.fail_next;
        error = true;
      } else if (f.error_rate > 0 && u(sim.rng_) < f.error_rate) {
        error = true;
      }
      if (drop) ++sim.injected_drops_;
      if (error) ++sim.injected_errors_;
      latency = f.latency_ms;
      if (api && req.method != "GET" && f.slow_writes > 0) {
        if (f.slow_writes_after > 0) {
          --f.slow_writes_after;
        } else {
          --f.slow_writes;
          ++sim.delayed_requests_;
          latency += f.slow_writes_ms;
        }
      }
    }
    ApiResponse resp;
    if (drop) {
      resp.drop = true;
    } else if (error) {
      std::lock_guard lock(sim.mutex_);
      resp = error_response(HttpError{sim.faults_.error_status, "pvesim: injected server error", {}});
    } else if (!api) {
      resp = error_response(HttpError{501, "Method '" + req.method + " " + path + "' not implemented", {}});
    } else {
      try {
        resp = route(req, seg, query);
      } catch (const HttpError& e) {
        resp = error_response(e);
      } catch (const AuthFailure& e) {
        resp = ApiResponse{};
        resp.status = 401;
        resp.reason = e.reason;
        resp.body.clear();
        resp.content_type.clear();
        resp.delay_ms = sim.options_.auth_failure_delay_ms;
      }
    }
    resp.delay_ms += latency;
    if (sim.options_.log_requests) {
      auto log = [line = "pvesim: " + req.method + " " + path + " -> "](const ApiResponse& r) {
        std::cerr << line << (r.drop ? std::string("dropped") : std::to_string(r.status) + " " + r.reason) << "\n";
      };
      if (!resp.deferred) {
        log(resp);
      } else {  // logged when the pvedaemon worker answers
        resp.deferred = [log, inner = std::move(resp.deferred)](ApiResponse::Respond respond) {
          inner([log, respond = std::move(respond)](ApiResponse&& r) {
            log(r);
            respond(std::move(r));
          });
        };
      }
    }
    return resp;
  }

  Params params_of(const ApiRequest& req, const std::string& query) {
    Params p;
    auto ct = req.headers.find("content-type");
    const std::string content_type = ct == req.headers.end() ? "" : ct->second;
    if (!req.body.empty()) {
      if (content_type.starts_with("application/json")) {
        parse_json_body(req.body, p);
      } else {
        parse_urlencoded(req.body, p, true);
      }
    }
    parse_urlencoded(query, p, true);  // query parameters override body ones (AnyEvent.pm)
    return p;
  }

  static std::optional<std::string> cookie(const std::string& header, const std::string& name) {
    std::size_t start = 0;
    while (start < header.size()) {
      std::size_t end = header.find(';', start);
      if (end == std::string::npos) end = header.size();
      std::string part = header.substr(start, end - start);
      start = end + 1;
      const std::size_t b = part.find_first_not_of(' ');
      if (b == std::string::npos) continue;
      part = part.substr(b);
      if (part.starts_with(name + "=")) return percent_decode(part.substr(name.size() + 1), false);
    }
    return std::nullopt;
  }

  Caller authenticate(const ApiRequest& req) {
    auto header = [&](const std::string& name) -> std::string {
      auto it = req.headers.find(name);
      return it == req.headers.end() ? "" : it->second;
    };
    const std::string authorization = header("authorization");
    std::lock_guard lock(sim.mutex_);
    static const std::regex token_re(R"(^PVEAPIToken[= ]([^!=\s]+@[^!=\s]+)!([^=\s]+)=(\S+)$)");
    std::smatch m;
    if (std::regex_match(authorization, m, token_re)) {
      const std::string user = m[1], name = m[2], secret = m[3];
      auto it = sim.tokens_.find(user + "!" + name);
      if (it == sim.tokens_.end()) throw AuthFailure{"no such token '" + name + "' for user '" + user + "'"};
      if (it->second.secret != secret) throw AuthFailure{"invalid token value!"};
      std::optional<Acl> user_acl;
      if (auto u = sim.users_.find(user); u != sim.users_.end()) user_acl = u->second.acl;
      if (user == "root@pam") user_acl = Acl{AclEntry{"/", kAllPrivileges, true}};
      return Caller{user, name, it->second.acl, std::move(user_acl)};  // tokens skip CSRF
    }
    std::optional<std::string> ticket = cookie(header("cookie"), "PVEAuthCookie");
    if (!ticket && authorization.starts_with("PVEAuthCookie=")) ticket = authorization.substr(14);
    if (!ticket) throw AuthFailure{"No ticket"};
    auto t = sim.tickets_.find(*ticket);
    if (t == sim.tickets_.end() || now() - t->second.second > 7200) {
      throw AuthFailure{"permission denied - invalid PVE ticket"};
    }
    const std::string user = t->second.first;
    if (req.method != "GET") {
      auto c = sim.csrf_tokens_.find(header("csrfpreventiontoken"));
      if (c == sim.csrf_tokens_.end() || c->second != user) throw AuthFailure{"Permission denied - invalid csrf token"};
    }
    auto u = sim.users_.find(user);
    if (u == sim.users_.end()) throw AuthFailure{"permission denied - invalid PVE ticket"};
    return Caller{user, "", u->second.acl, std::nullopt};
  }

  // RPCEnvironment.pm sub check / check_any: raise_perm_exc("$path, $priv") with the privileges
  // joined by '|' for an any-of check.
  static void require(const Caller& c, const std::string& path, const std::string& priv) {
    if (!c.has(path, priv)) throw HttpError{403, "Permission check failed (" + path + ", " + priv + ")", {}};
  }

  static void require_any(const Caller& c, const std::string& path, const std::vector<std::string>& privs) {
    const auto held = c.privileges(path);
    if (std::ranges::any_of(privs, [&](const std::string& p) { return held.contains(p); })) return;
    std::string joined;
    for (const auto& p : privs) joined += (joined.empty() ? "" : "|") + p;
    throw HttpError{403, "Permission check failed (" + path + ", " + joined + ")", {}};
  }

  static bool allowed(const Caller& c, const std::string& path, const std::string& priv) { return c.has(path, priv); }

  void require_node(const std::string& node) {
    if (std::ranges::find(sim.cluster_.nodes, node) == sim.cluster_.nodes.end()) {
      die("hostname lookup '" + node + "' failed - failed to get address info for: " + node +
          ": Name or service not known");
    }
  }

  Vm& vm_on(const std::string& node, const std::string& vmid_text) {
    static const std::regex vmid_re("^[1-9][0-9]{2,8}$");
    if (!std::regex_match(vmid_text, vmid_re))
      param_error("vmid", "invalid format - value does not look like a valid VM ID");
    require_node(node);
    Vm* vm = sim.cluster_.find(std::stoi(vmid_text));
    if (vm == nullptr || vm->node != node || vm->type != "qemu") {
      die("Configuration file 'nodes/" + node + "/qemu-server/" + vmid_text + ".conf' does not exist");
    }
    return *vm;
  }

  // ---- routing ---------------------------------------------------------------------------------

  ApiResponse route(const ApiRequest& req, const std::vector<std::string>& seg, const std::string& query) {
    Params p = params_of(req, query);
    const std::string& m = req.method;
    auto is = [&](std::initializer_list<const char*> parts) {
      if (parts.size() != seg.size()) return false;
      std::size_t i = 0;
      for (const char* s : parts) {
        if (std::string_view(s) != "*" && seg[i] != s) return false;
        ++i;
      }
      return true;
    };
    if (m == "POST" && is({"access", "ticket"})) return login(p);
    const Caller c = authenticate(req);

    if (m == "GET" && is({"version"})) return version(p);
    if (m == "GET" && is({"access", "permissions"})) return permissions(c, p);
    if (m == "GET" && is({"nodes"})) return nodes(p);
    if (m == "GET" && is({"cluster", "resources"})) return resources(c, p);
    if (m == "GET" && is({"nodes", "*"})) return node_index(seg[1], p);
    if (m == "GET" && is({"nodes", "*", "qemu"})) return qemu_list(c, seg[1], p);
    if (m == "GET" && is({"nodes", "*", "lxc"})) return lxc_list(c, seg[1], p);
    if (m == "GET" && is({"nodes", "*", "qemu", "*"})) return vm_index(c, seg[1], seg[3], p);
    if (m == "GET" && is({"nodes", "*", "qemu", "*", "config"})) return get_config(c, seg[1], seg[3], p);
    if ((m == "PUT" || m == "POST") && is({"nodes", "*", "qemu", "*", "config"})) {
      return update_config(c, seg[1], seg[3], p, m == "POST");
    }
    if (m == "GET" && is({"nodes", "*", "qemu", "*", "pending"})) return get_pending(c, seg[1], seg[3], p);
    if (m == "GET" && is({"nodes", "*", "qemu", "*", "status", "current"})) return status_current(c, seg[1], seg[3], p);
    if (m == "POST" && is({"nodes", "*", "qemu", "*", "status", "*"})) return power(c, seg[1], seg[3], seg[5], p);
    if (m == "GET" && is({"nodes", "*", "tasks"})) return task_list(c, seg[1], p);
    if (m == "GET" && is({"nodes", "*", "tasks", "*", "status"})) return task_status(c, seg[1], seg[3], p);
    if (m == "GET" && is({"nodes", "*", "tasks", "*", "log"})) return task_log(c, seg[1], seg[3], p);
    if (m == "GET" && is({"cluster", "sdn", "vnets"})) return sdn_vnets(c, p);
    if (is({"nodes", "*", "qemu", "*", "agent", "*"}) && find_agent_endpoint(m, seg[5]) != nullptr) {
      return agent(c, *find_agent_endpoint(m, seg[5]), seg[1], seg[3], p);
    }

    std::string rel;
    for (const auto& s : seg) rel += "/" + s;
    throw HttpError{501, "Method '" + m + " " + rel + "' not implemented", {}};
  }

  // ---- access ----------------------------------------------------------------------------------

  ApiResponse login(Params& p) {
    validate(p, {{"username", text()},
                 {"password", text()},
                 {"realm", text()},
                 {"otp", text()},
                 {"path", text()},
                 {"privs", text()},
                 {"new-format", boolean()},
                 {"tfa-challenge", text()}});
    std::string username = single(p, "username").value_or("");
    const std::string password = single(p, "password").value_or("");
    if (auto realm = single(p, "realm"); realm && username.find('@') == std::string::npos) username += "@" + *realm;
    std::lock_guard lock(sim.mutex_);
    auto u = sim.users_.find(username);
    bool ok = u != sim.users_.end() && !password.empty() && u->second.password == password;
    if (!ok && u != sim.users_.end()) {
      // A valid ticket of the same user works as the password: that is how tickets are renewed.
      auto t = sim.tickets_.find(password);
      ok = t != sim.tickets_.end() && t->second.first == username && now() - t->second.second <= 7200;
    }
    if (!ok) {
      // Not the auth check: a normal handler error, so the 401 has a JSON body.
      throw HttpError{401, "authentication failure", {}};
    }
    const std::string stamp = hex8(now());
    const std::string ticket = "PVE:" + username + ":" + stamp + "::" + random_base64(48);
    const std::string csrf = stamp + ":" + random_base64(32);
    sim.tickets_[ticket] = {username, now()};
    sim.csrf_tokens_[csrf] = username;
    bj::object d;
    d["username"] = username;
    d["ticket"] = ticket;
    d["CSRFPreventionToken"] = csrf;
    d["clustername"] = sim.cluster_.name;
    d["cap"] = bj::object{{"vms", bj::object{{"VM.Audit", 1}}}};
    return data_response(std::move(d));
  }

  // ---- read-only endpoints -----------------------------------------------------------------------

  // GET /access/permissions (pve-access-control PVE/API2/AccessControl.pm `permissions`, read at
  // 5ccd07d9): `path` → {privilege → propagate}. Anyone may ask about themselves or their own
  // tokens; another user needs Sys.Audit on /access. root@pam holds every privilege. pvesim's
  // privileges are one set per user or token, not ACLs by path: each path shows that set, as if
  // granted on / with propagation (path ACLs, pools and privsep intersection: tests/pvesim/README.md).
  // pve-access-control src/PVE/API2/AccessControl.pm, method permissions: with `path`, the
  // privileges there; without, get_effective_permissions over the fixed top paths and every ACL
  // path, keeping those where something is set.
  ApiResponse permissions(const Caller& c, Params& p) {
    validate(p, {{"path", text()}, {"userid", text()}});
    if (auto who = single(p, "userid"); who && *who != c.full_id() && !who->starts_with(c.user + "!")) {
      require(c, "/access", "Sys.Audit");
    }
    auto entry = [&](const std::string& path) {
      bj::object privs;
      for (const auto& [priv, propagate] : c.privileges(path)) privs[priv] = propagate ? 1 : 0;
      return privs;
    };
    bj::object out;
    if (auto path = single(p, "path")) {
      out[*path] = entry(*path);
      return data_response(std::move(out));
    }
    std::set<std::string> paths{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"};
    for (const Acl* acl : {&c.acl, c.user_acl ? &*c.user_acl : nullptr}) {
      if (acl == nullptr) continue;
      for (const auto& e : *acl) paths.insert(normalize_acl_path(e.path));
    }
    for (const auto& path : paths) {
      if (auto privs = entry(path); !privs.empty()) out[path] = std::move(privs);
    }
    return data_response(std::move(out));
  }

  ApiResponse version(Params& p) {
    validate(p, {});
    const std::string release = sim.options_.version.substr(0, sim.options_.version.rfind('.'));
    return data_response(bj::object{{"version", sim.options_.version}, {"release", release}, {"repoid", "pvesim"}});
  }

  bj::object node_entry(const std::string& node) {
    return bj::object{{"id", "node/" + node}, {"type", "node"},
                      {"node", node},         {"status", "online"},
                      {"cpu", 0.03},          {"maxcpu", 16},
                      {"mem", 8589934592LL},  {"maxmem", 68719476736LL},
                      {"disk", 3221225472LL}, {"maxdisk", 100931731456LL},
                      {"uptime", 864000},     {"level", ""}};
  }

  ApiResponse nodes(Params& p) {
    validate(p, {});
    std::lock_guard lock(sim.mutex_);
    bj::array out;
    for (const auto& n : sim.cluster_.nodes) {
      auto e = node_entry(n);
      e["ssl_fingerprint"] = sim.options_.fingerprint;
      out.push_back(std::move(e));
    }
    return data_response(std::move(out));
  }

  ApiResponse node_index(const std::string& node, Params& p) {
    validate(p, {{"node", text()}});
    std::lock_guard lock(sim.mutex_);
    require_node(node);
    bj::array out;
    for (const char* s : {"qemu", "lxc", "tasks", "status", "network"}) out.push_back(bj::object{{"name", s}});
    return data_response(std::move(out));
  }

  // The VM's taps as its node shows them: the node's real devices (--node-net-dev; read at most
  // once per request, into `devices`) or the simulated ones. Caller holds sim.mutex_.
  Taps taps_of(const Vm& vm, std::map<std::string, NetDev>& devices) {
    if (!sim.net_devs_.real(vm.node)) return synthetic_taps(vm);
    auto it = devices.find(vm.node);
    if (it == devices.end()) it = devices.emplace(vm.node, sim.net_devs_.read(vm.node).devices).first;
    return real_taps(it->second, vm.vmid);
  }

  // netin/netout are vmstatus's sums over the VM's taps. /cluster/resources takes them from the
  // RRD pvestatd broadcasts (pve-manager PVE/API2Tools.pm extract_vm_stats), up to one 10 s cycle
  // old in Proxmox; pvesim's are live. LXC guests' veth devices are not emulated: 0.
  bj::object guest_entry(const Vm& vm, const Taps& taps) {
    const Config c = vm.conf;
    auto get = [&](const char* k, const std::string& fallback) {
      auto it = c.find(k);
      return it == c.end() ? fallback : it->second;
    };
    const long long mem_mb = std::atoll(get("memory", "512").c_str());
    const long long cores =
        std::max(1LL, std::atoll(get("cores", "1").c_str())) * std::max(1LL, std::atoll(get("sockets", "1").c_str()));
    bj::object e;
    e["id"] = vm.type + "/" + std::to_string(vm.vmid);
    e["type"] = vm.type;
    e["vmid"] = vm.vmid;
    e["node"] = vm.node;
    e["name"] = vm.type == "lxc" ? get("hostname", "CT" + std::to_string(vm.vmid))
                                 : get("name", "VM " + std::to_string(vm.vmid));
    e["status"] = vm.running ? "running" : "stopped";
    e["template"] = 0;
    e["maxcpu"] = cores;
    e["cpu"] = vm.running ? 0.0123 : 0;
    e["maxmem"] = mem_mb * 1024 * 1024;
    e["mem"] = vm.running ? mem_mb * 1024 * 1024 / 3 : 0;
    e["maxdisk"] = 34359738368LL;
    e["disk"] = 0;
    e["uptime"] = vm.running ? std::max<std::int64_t>(1, now() - vm.started_at) : 0;
    const TapCounters net = total(taps);
    e["netin"] = net.netin;
    e["netout"] = net.netout;
    e["diskread"] = 0;
    e["diskwrite"] = 0;
    if (auto l = c.find("lock"); l != c.end()) e["lock"] = l->second;
    if (auto t = c.find("tags"); t != c.end()) e["tags"] = t->second;
    return e;
  }

  // pvestatd's broadcast as /cluster/resources reads it (pve-manager PVE/API2/Cluster.pm
  // resources → PVE::Cluster rrd data, fed by PVE/Service/pvestatd.pm every 10 s; read at
  // 14a22df3): the status of the last sample, `unknown` for a guest never sampled. Caller holds
  // sim.mutex_.
  void sample_if_due() {
    const int every = sim.options_.pvestatd_interval_ms;
    if (every <= 0) return;
    const auto t = std::chrono::steady_clock::now();
    if (sim.next_sample_ == std::chrono::steady_clock::time_point{}) {
      sim.next_sample_ = t + std::chrono::milliseconds(every);  // just started: no broadcast yet
      return;
    }
    if (t < sim.next_sample_) return;
    take_sample();
    while (sim.next_sample_ <= t) sim.next_sample_ += std::chrono::milliseconds(every);
  }
  void take_sample() {
    for (auto& [vmid, vm] : sim.cluster_.vms) vm->sampled_status = vm->running ? "running" : "stopped";
  }

  ApiResponse resources(const Caller& c, Params& p) {
    validate(p, {{"type", {ParamSpec::Kind::enumeration, 0, 0, {"vm", "storage", "node", "sdn"}}}});
    const std::string type = single(p, "type").value_or("");
    std::lock_guard lock(sim.mutex_);
    sample_if_due();
    std::map<std::string, NetDev> devices;
    bj::array out;
    if (type.empty() || type == "node") {
      for (const auto& n : sim.cluster_.nodes) out.push_back(node_entry(n));
    }
    if (type.empty() || type == "vm") {
      for (const auto& [vmid, vm] : sim.cluster_.vms) {
        // entries without VM.Audit are left out
        if (!allowed(c, "/vms/" + std::to_string(vmid), "VM.Audit")) continue;
        auto e = guest_entry(*vm, taps_of(*vm, devices));
        if (sim.options_.pvestatd_interval_ms > 0) e["status"] = vm->sampled_status.value_or("unknown");
        out.push_back(std::move(e));
      }
    }
    return data_response(std::move(out));
  }

  // GET /nodes/{node}/qemu (qemu-server PVE/API2/Qemu.pm, vmlist, read at e6352be6): VM.Audit
  // filters the entries; vmstatus(undef, $full) in PVE/QemuServer.pm gives each VM's pid and, only
  // with $full, "nics" (the per-tap counters, as status/current has them) and the QMP status.
  ApiResponse qemu_list(const Caller& c, const std::string& node, Params& p) {
    validate(p, {{"node", text()}, {"full", boolean()}});
    const bool full = single(p, "full").value_or("0") == "1";
    std::lock_guard lock(sim.mutex_);
    require_node(node);
    std::map<std::string, NetDev> devices;
    bj::array out;
    for (const auto& [vmid, vm] : sim.cluster_.vms) {
      if (vm->node != node || vm->type != "qemu" || !allowed(c, "/vms/" + std::to_string(vmid), "VM.Audit")) continue;
      const Taps taps = taps_of(*vm, devices);
      auto e = guest_entry(*vm, taps);
      e["cpus"] = e["maxcpu"];
      if (vm->running) {
        e["pid"] = vm->pid;
        if (full) e["qmpstatus"] = "running";
      }
      if (full && !taps.empty()) e["nics"] = nics_json(taps);
      out.push_back(std::move(e));
    }
    return data_response(std::move(out));
  }

  ApiResponse lxc_list(const Caller& c, const std::string& node, Params& p) {
    validate(p, {{"node", text()}});
    std::lock_guard lock(sim.mutex_);
    require_node(node);
    bj::array out;
    for (const auto& [vmid, vm] : sim.cluster_.vms) {
      if (vm->node == node && vm->type == "lxc" && allowed(c, "/vms/" + std::to_string(vmid), "VM.Audit"))
        out.push_back(guest_entry(*vm, {}));
    }
    return data_response(std::move(out));
  }

  ApiResponse vm_index(const Caller& c, const std::string& node, const std::string& vmid, Params& p) {
    validate(p, {{"node", text()}, {"vmid", text()}});
    std::lock_guard lock(sim.mutex_);
    audited_vm(c, node, vmid);
    bj::array out;
    for (const char* s : {"config", "pending", "status", "unlink", "vncproxy"})
      out.push_back(bj::object{{"subdir", s}});
    return data_response(std::move(out));
  }

  // The VM the caller may read (VM.Audit); caller holds sim.mutex_.
  Vm& audited_vm(const Caller& c, const std::string& node, const std::string& vmid) {
    Vm& vm = vm_on(node, vmid);
    require(c, "/vms/" + vmid, "VM.Audit");
    return vm;
  }

  // The answer to a config read, which counts towards an armed concurrent edit of that VM: the
  // edit lands after the answer is built, as if another admin saved between read and write.
  ApiResponse config_read(Vm& vm, bj::value data) {
    auto resp = data_response(std::move(data));
    count_read_for_concurrent_edit(vm);
    return resp;
  }

  void count_read_for_concurrent_edit(Vm& vm) {
    auto& edits = sim.faults_.concurrent_edits;
    for (auto it = edits.begin(); it != edits.end(); ++it) {
      if (it->vmid != vm.vmid) continue;
      if (--it->after_reads > 0) return;
      edits.erase(it);
      ++sim.concurrent_edits_done_;
      vm.conf["description"] =
          "edited by another admin (pvesim concurrent edit " + std::to_string(sim.concurrent_edits_done_) + ")";
      return;
    }
  }

  ApiResponse get_config(const Caller& c, const std::string& node, const std::string& vmid, Params& p) {
    validate(p, {{"node", text()}, {"vmid", text()}, {"current", boolean()}, {"snapshot", text()}});
    std::lock_guard lock(sim.mutex_);
    Vm& vm = audited_vm(c, node, vmid);
    const bool current = single(p, "current").value_or("0") == "1";
    if (auto snap = single(p, "snapshot")) {
      if (current) param_error("snapshot", "cannot use 'snapshot' parameter with 'current'");
      die("snapshot '" + *snap + "' does not exist");
    }
    const Config conf = current ? vm.conf : config_with_pending(vm);
    bj::object out;
    for (const auto& [k, v] : conf) out[k] = config_value(k, v);
    out["digest"] = config_digest(vm);
    return config_read(vm, std::move(out));
  }

  ApiResponse get_pending(const Caller& c, const std::string& node, const std::string& vmid, Params& p) {
    validate(p, {{"node", text()}, {"vmid", text()}});
    std::lock_guard lock(sim.mutex_);
    Vm& vm = audited_vm(c, node, vmid);
    std::set<std::string> keys;
    for (const auto& [k, v] : vm.conf) keys.insert(k);
    for (const auto& [k, v] : vm.pending) keys.insert(k);
    bj::array out;
    for (const auto& k : keys) {
      bj::object item;
      item["key"] = k;
      if (auto it = vm.conf.find(k); it != vm.conf.end()) item["value"] = config_value(k, it->second);
      if (auto it = vm.pending.find(k); it != vm.pending.end()) item["pending"] = config_value(k, it->second);
      for (const auto& d : vm.pending_delete) {
        if (d.key == k) item["delete"] = d.force ? 2 : 1;
      }
      out.push_back(std::move(item));
    }
    out.push_back(bj::object{{"key", "digest"}, {"value", config_digest(vm)}});
    return config_read(vm, std::move(out));
  }

  ApiResponse status_current(const Caller& c, const std::string& node, const std::string& vmid, Params& p) {
    validate(p, {{"node", text()}, {"vmid", text()}});
    std::lock_guard lock(sim.mutex_);
    Vm& vm = audited_vm(c, node, vmid);
    std::map<std::string, NetDev> devices;
    const Taps taps = taps_of(vm, devices);
    auto e = guest_entry(vm, taps);
    bj::object out;
    for (const char* k : {"vmid", "name", "status", "maxmem", "mem", "maxdisk", "disk", "uptime", "netin", "netout",
                          "diskread", "diskwrite", "cpu", "lock", "tags"}) {
      if (auto* v = e.if_contains(k)) out[k] = *v;
    }
    out["cpus"] = e["maxcpu"];
    out["ha"] = bj::object{{"managed", 0}};
    if (vm.running) {
      out["pid"] = vm.pid;
      out["qmpstatus"] = "running";
      out["running-machine"] = "pc-i440fx-9.0+pve0";
      out["running-qemu"] = "9.0.2";
    } else {
      out["qmpstatus"] = "stopped";
    }
    // vmstatus($vmid, 1) adds "nics" for every tap of the VM the node has, whatever the VM's state
    // (a stopped VM has none, so no "nics"; a paused one keeps its taps). Not in the returns
    // schema, which pve-common's RESTHandler does not check by default.
    if (!taps.empty()) out["nics"] = nics_json(taps);
    // vm_status (qemu-server PVE/API2/Qemu.pm l. 3487): the config in effect enables the agent.
    if (agent_enabled(vm.conf)) out["agent"] = 1;
    return data_response(std::move(out));
  }

  // ---- guest agent (agent.cpp does the work) -------------------------------------------------------

  // .../agent/{command} (qemu-server PVE/API2/Qemu/Agent.pm): the method's permission check comes
  // first, in pveproxy, before the call is proxied and whatever the VM (pve-manager
  // PVE/HTTPServer.pm rest_handler: check_api2_permissions, then proxyto); the handler runs in
  // one of the node's pvedaemon workers, which answers later (ApiResponse::deferred).
  ApiResponse agent(const Caller& c, const AgentEndpoint& endpoint, const std::string& node, const std::string& vmid,
                    Params& p) {
    {
      std::lock_guard lock(sim.mutex_);
      require_any(c, "/vms/" + vmid, endpoint.privileges);
    }
    ApiResponse deferred;
    deferred.deferred = [&s = sim, &endpoint, node, vmid, p](ApiResponse::Respond respond) {
      s.pvedaemon_->run(node, [&s, &endpoint, node, vmid, p, respond = std::move(respond)]() mutable {
        auto answer = std::make_shared<ApiResponse>(Handlers{s}.agent_call(endpoint, node, vmid, p));
        return PvedaemonWorkers::Deliver(
            [respond = std::move(respond), answer]() mutable { respond(std::move(*answer)); });
      });
    };
    return deferred;
  }

  // In the pvedaemon worker: the parameters (RESTHandler's schema check), load_config, then
  // AgentService::call. Answers every error itself: nothing up the stack catches here.
  ApiResponse agent_call(const AgentEndpoint& endpoint, const std::string& node, const std::string& vmid, Params& p) {
    try {
      Schema schema{{"node", text()}, {"vmid", text()}};
      for (const auto& param : endpoint.params) {
        static const std::map<AgentParam::Type, ParamSpec::Kind> kinds{
            {AgentParam::Type::string, ParamSpec::Kind::string},
            {AgentParam::Type::list, ParamSpec::Kind::list},
            {AgentParam::Type::integer, ParamSpec::Kind::integer},
            {AgentParam::Type::boolean, ParamSpec::Kind::boolean}};
        schema[param.name] = {kinds.at(param.type), param.min, param.max, {}, param.required, param.max_length};
      }
      validate(p, schema);
      AgentTarget target;
      {
        std::lock_guard lock(sim.mutex_);
        const Vm& vm = vm_on(node, vmid);  // load_config: "Configuration file ... does not exist"
        target = AgentTarget{vm.vmid, vm.conf, vm.running, vm.pid, vm.agent};
      }
      AgentOutcome out = sim.agent_->call(endpoint, target, p);
      if (!out.ok) die(out.message);
      return data_response(std::move(out.data));
    } catch (const HttpError& e) {
      return error_response(e);
    } catch (const std::exception& e) {
      return error_response(HttpError{500, std::string("pvesim internal error: ") + e.what(), {}});
    }
  }

  // ---- tasks -------------------------------------------------------------------------------------

  // Creates a running task; caller holds sim.mutex_.
  Task& new_task(const Caller& c, const std::string& node, const std::string& type, int vmid) {
    Task t;
    t.node = node;
    t.type = type;
    t.id = std::to_string(vmid);
    t.user = c.user;
    t.tokenid = c.tokenid;
    t.pid = 100000 + (++sim.next_pid_ % 800000);
    t.pstart = 5000000 + sim.next_pid_ * 13;
    t.starttime = now();
    const std::string user = c.tokenid.empty() ? c.user : c.user + "!" + c.tokenid;
    t.upid = "UPID:" + node + ":" + hex8(t.pid) + ":" + hex8(t.pstart) + ":" + hex8(t.starttime) + ":" + type + ":" +
             t.id + ":" + user + ":";
    auto [it, inserted] = sim.tasks_.emplace(t.upid, std::move(t));
    return it->second;
  }

  void finish_task(const std::string& upid, std::string exitstatus) {
    std::lock_guard lock(sim.mutex_);
    auto& t = sim.tasks_.at(upid);
    // Newlines become spaces in the exit status (RESTEnvironment.pm).
    std::ranges::replace(exitstatus, '\n', ' ');
    while (!exitstatus.empty() && exitstatus.back() == ' ') exitstatus.pop_back();
    t.log.push_back(exitstatus == "OK"                   ? "TASK OK"
                    : exitstatus.starts_with("WARNINGS") ? "TASK " + exitstatus
                                                         : "TASK ERROR: " + exitstatus);
    t.exitstatus = exitstatus;
    t.running = false;
    t.endtime = now();
  }

  void task_log_line(const std::string& upid, const std::string& line) {
    std::lock_guard lock(sim.mutex_);
    sim.tasks_.at(upid).log.push_back(line);
  }

  // An injected failure for this task, if one is armed; caller holds sim.mutex_.
  std::optional<std::string> take_task_failure(const std::string& type, int vmid) {
    auto& list = sim.faults_.task_failures;
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (it->type == type && (it->vmid == 0 || it->vmid == vmid)) {
        std::string msg = it->message;
        list.erase(it);
        return msg;
      }
    }
    return std::nullopt;
  }

  void spawn(std::function<void()> fn) {
    std::lock_guard lock(sim.threads_mutex_);
    sim.threads_.emplace_back(std::move(fn));
  }

  // pve-manager PVE/API2/Tasks.pm $check_task_user: a token sees only its own tasks, a user its
  // own and its tokens'.
  static bool owns(const Caller& c, const Task& t) {
    if (!t.tokenid.empty()) return c.full_id() == t.user + "!" + t.tokenid || c.full_id() == t.user;
    return c.full_id() == t.user;
  }

  // The task of a status or log request, with read_task_log's / read_task_status's check:
  // Sys.Audit on /nodes/NODE unless the caller owns the task. Caller holds sim.mutex_.
  const Task& readable_task(const Caller& c, const std::string& node, const std::string& upid) {
    static const std::regex upid_re(
        R"(^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$)");
    if (!std::regex_match(upid, upid_re)) param_error("upid", "unable to parse worker upid");
    auto it = sim.tasks_.find(upid);
    if (it == sim.tasks_.end() || it->second.node != node) param_error("upid", "no such task");
    if (!owns(c, it->second)) require(c, "/nodes/" + node, "Sys.Audit");
    return it->second;
  }

  static bj::object task_entry(const Task& t) {
    bj::object o;
    o["upid"] = t.upid;
    o["node"] = t.node;
    o["pid"] = t.pid;
    o["pstart"] = t.pstart;
    o["starttime"] = t.starttime;
    o["type"] = t.type;
    o["id"] = t.id;
    o["user"] = t.user;
    if (!t.tokenid.empty()) o["tokenid"] = t.tokenid;
    return o;
  }

  ApiResponse task_status(const Caller& c, const std::string& node, const std::string& upid, Params& p) {
    validate(p, {{"node", text()}, {"upid", text()}});
    std::lock_guard lock(sim.mutex_);
    const Task& t = readable_task(c, node, upid);
    bj::object o = task_entry(t);
    o["status"] = t.running ? "running" : "stopped";
    if (!t.running) o["exitstatus"] = t.exitstatus;
    return data_response(std::move(o));
  }

  // pve-common PVE/Tools.pm dump_logfile: lines numbered from 1, `start` skipped, `limit` taken
  // (0: all), "no content" for an empty log; the reply's `total` is the number of lines.
  ApiResponse task_log(const Caller& c, const std::string& node, const std::string& upid, Params& p) {
    validate(p, {{"node", text()},
                 {"upid", text()},
                 {"start", integer(0, LLONG_MAX)},
                 {"limit", integer(0, LLONG_MAX)},
                 {"download", boolean()}});
    std::lock_guard lock(sim.mutex_);
    const Task& t = readable_task(c, node, upid);
    const long long start = std::stoll(single(p, "start").value_or("0"));
    long long limit = std::stoll(single(p, "limit").value_or("50"));
    const bool all = limit == 0;
    bj::array out;
    long long n = 0;
    for (const auto& line : t.log) {
      if (n++ < start) continue;
      if (!all && limit-- <= 0) continue;
      out.push_back(bj::object{{"n", n}, {"t", line}});
    }
    if (n == 0) {
      n = 1;
      out.push_back(bj::object{{"n", 1}, {"t", "no content"}});
    }
    return data_response_with(std::move(out), {{"total", n}});
  }

  // GET /nodes/{node}/tasks (pve-manager PVE/API2/Tasks.pm, node_tasks): running tasks only with
  // source=active|all (status RUNNING), finished ones (source archive|all, the default archive)
  // newest first with endtime and status (the exit text); other users' tasks only with
  // Sys.Audit on /nodes/NODE. `total` counts every match, `start`/`limit` page them.
  ApiResponse task_list(const Caller& c, const std::string& node, Params& p) {
    const ParamSpec source_spec{ParamSpec::Kind::enumeration, 0, 0, {"archive", "active", "all"}};
    validate(p, {{"node", text()},
                 {"start", integer(0, LLONG_MAX)},
                 {"limit", integer(0, LLONG_MAX)},
                 {"userfilter", text()},
                 {"typefilter", text()},
                 {"vmid", integer(100, 999999999)},
                 {"errors", boolean()},
                 {"source", source_spec},
                 {"since", integer(LLONG_MIN, LLONG_MAX)},
                 {"until", integer(LLONG_MIN, LLONG_MAX)},
                 {"statusfilter", text()}});
    std::lock_guard lock(sim.mutex_);
    require_node(node);
    const long long start = std::stoll(single(p, "start").value_or("0"));
    long long limit = std::stoll(single(p, "limit").value_or("50"));
    const std::string source = single(p, "source").value_or("archive");
    const auto userfilter = single(p, "userfilter");
    const auto typefilter = single(p, "typefilter");
    const auto vmid = single(p, "vmid");
    const auto since = single(p, "since");
    const auto until = single(p, "until");
    const bool errors = single(p, "errors").value_or("0") == "1";
    std::set<std::string> wanted{"ok", "warning", "error", "unknown"};
    if (auto sf = single(p, "statusfilter"); sf && !errors) {
      wanted.clear();
      for (const auto& item : split_list(*sf)) {
        std::string lower = item;
        std::ranges::transform(lower, lower.begin(),
                               [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (lower != "ok" && lower != "warning" && lower != "error" && lower != "unknown") {
          param_error("statusfilter", "invalid format - value '" + item +
                                          "' does not have a value in the enumeration 'ok, warning, error, unknown'");
        }
        wanted.insert(lower);
      }
    } else if (errors) {
      wanted.erase("ok");
    }
    const bool auditor = c.has("/nodes/" + node, "Sys.Audit");
    auto lower = [](std::string v) {
      std::ranges::transform(v, v.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      return v;
    };
    long long count = 0;
    auto keep = [&](const Task& t, const std::string& status) {
      if (t.node != node) return false;
      if (userfilter && lower(t.user).find(lower(*userfilter)) == std::string::npos) return false;
      if (!(auditor || owns(c, t))) return false;
      if (typefilter && t.type != *typefilter) return false;
      if (vmid && t.id != *vmid) return false;
      if (since && t.starttime < std::stoll(*since)) return false;
      if (until && t.starttime > std::stoll(*until)) return false;
      if (!wanted.contains(status_type(status))) return false;
      if (count++ < start) return false;
      return limit > 0;
    };
    // Newest first, as the archive is read backwards; UPIDs of one second sort by their pid.
    std::vector<const Task*> tasks;
    for (const auto& [upid, t] : sim.tasks_) tasks.push_back(&t);
    std::ranges::sort(tasks, [](const Task* a, const Task* b) {
      return std::tie(a->starttime, a->pstart) > std::tie(b->starttime, b->pstart);
    });
    bj::array out;
    if (source == "active" || source == "all") {
      for (const Task* t : tasks) {
        if (!t->running || !keep(*t, "")) continue;
        bj::object o = task_entry(*t);
        o["status"] = "RUNNING";
        out.push_back(std::move(o));
        --limit;
      }
    }
    if (source != "active") {
      for (const Task* t : tasks) {
        if (t->running || !keep(*t, t->exitstatus)) continue;
        bj::object o = task_entry(*t);
        o["endtime"] = t->endtime;
        o["status"] = t->exitstatus;
        out.push_back(std::move(o));
        --limit;
      }
    }
    return data_response_with(std::move(out), {{"total", count}});
  }

  // pve-common PVE/UPID.pm normalize_status_type.
  static std::string status_type(const std::string& status) {
    if (status.empty() || status == "unexpected status") return "unknown";
    if (status == "OK") return "ok";
    static const std::regex warnings_re(R"(^WARNINGS: \d+$)");
    if (std::regex_match(status, warnings_re)) return "warning";
    return "error";
  }

  // GET /cluster/sdn/vnets (pve-network src/PVE/API2/Network/SDN/Vnets.pm, index): the VNets whose
  // /sdn/zones/ZONE/VNET path the caller holds SDN.Audit or SDN.Allocate on.
  ApiResponse sdn_vnets(const Caller& c, Params& p) {
    validate(p, {{"running", boolean()}, {"pending", boolean()}});
    std::lock_guard lock(sim.mutex_);
    bj::array out;
    for (const auto& [vnet, zone] : sim.cluster_.sdn_vnets) {
      const auto held = c.privileges("/sdn/zones/" + zone + "/" + vnet);
      if (!held.contains("SDN.Audit") && !held.contains("SDN.Allocate")) continue;
      out.push_back(bj::object{{"vnet", vnet}, {"zone", zone}, {"type", "vnet"}});
    }
    return data_response(std::move(out));
  }

  // ---- config writes -------------------------------------------------------------------------------

  // qemu-server PVE/QemuServer.pm sub check_bridge_access → pve-guest-common
  // PVE/GuestHelpers.pm sub check_vnet_access: SDN.Use on the bridge's zone path (an SDN VNet's
  // zone, else localnetwork), per tag or trunk VLAN; root@pam is not checked. Caller holds sim.mutex_.
  void check_bridge_access(const Caller& c, const std::string& net_value) {
    if (c.is_root()) return;
    auto parsed = parse_net("net0", net_value).value;
    if (!parsed) return;
    auto field = [&](const char* name) {
      auto it = parsed->fields.find(name);
      return it == parsed->fields.end() ? std::string() : it->second;
    };
    const std::string bridge = field("bridge");
    if (bridge.empty()) return;
    auto zone = sim.cluster_.sdn_vnets.find(bridge);
    for (const auto& path : vnet_access_paths(zone == sim.cluster_.sdn_vnets.end() ? "localnetwork" : zone->second,
                                              bridge, field("tag"), field("trunks"))) {
      require(c, path, "SDN.Use");
    }
  }

  struct Change {
    Config set;
    std::vector<std::string> remove;
    std::vector<std::string> revert;
    std::optional<std::string> digest;
    bool skiplock = false;
    bool force = false;
  };

  struct Outcome {
    std::vector<std::string> warnings;
    std::map<std::string, std::string> errors;  // hot-plug problems per key
  };

  // The checks of $update_vm_api that fail before anything is written; caller holds sim.mutex_.
  void check_digest_and_lock(const Vm& vm, const Change& ch) {
    if (ch.digest && *ch.digest != config_digest(vm)) {
      ++sim.digest_mismatches_;
      die("checksum mismatch (file change by other user?)");
    }
    if (!ch.skiplock) {
      if (auto l = vm.conf.find("lock"); l != vm.conf.end()) die("VM is locked (" + l->second + ")");
    }
  }

  ApiResponse update_config(const Caller& c, const std::string& node, const std::string& vmid, Params& p, bool async) {
    Schema meta = {{"node", text()},   {"vmid", text()},        {"digest", text()},  {"delete", list()},
                   {"revert", list()}, {"skiplock", boolean()}, {"force", boolean()}};
    if (async) meta["background_delay"] = integer(1, 30);
    // The method's own check runs before parameters are looked at (pve-manager PVE/HTTPServer.pm
    // rest_handler → check_api2_permissions): update_vm/update_vm_async declare
    // ['perm', '/vms/{vmid}', $vm_config_perm_list, any => 1] (qemu-server PVE/API2/Qemu.pm).
    require_any(c, "/vms/" + vmid,
                {"VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
                 "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"});
    Change ch;
    bj::object errors;
    for (const auto& [k, values] : p) {
      if (meta.contains(k)) {
        if (auto msg = check_value(meta.at(k), values); !msg.empty()) errors[k] = msg;
        continue;
      }
      if (!privilege_for_key(k)) {
        errors[k] = kNotInSchema;
        continue;
      }
      if (values.size() != 1) {
        errors[k] = "type check ('string') failed - got ARRAY";
        continue;
      }
      std::string value = values.front();
      if (is_net_key(k)) {
        auto parsed = parse_net(k, value);
        if (!parsed.value) {
          errors[k] = parsed.error;
          continue;
        }
        if (!parsed.value->fields.contains("macaddr")) {
          std::lock_guard lock(sim.mutex_);
          parsed.value->fields["macaddr"] = sim.cluster_.generate_mac();  // Proxmox invents a MAC
        }
        value = print_net(*parsed.value);
      } else if (k == "onboot" || k == "numa" || k == "protection" || k == "acpi" || k == "kvm" || k == "tablet") {
        if (auto msg = check_value(boolean(), {value}); !msg.empty()) {
          errors[k] = msg;
          continue;
        }
      } else if (k == "cores" || k == "sockets") {
        if (auto msg = check_value(integer(1, 1024), {value}); !msg.empty()) {
          errors[k] = msg;
          continue;
        }
      } else if (k == "hotplug") {
        if (auto msg = hotplug_error(value); !msg.empty()) {
          errors[k] = msg;
          continue;
        }
      }
      ch.set[k] = value;
    }
    if (!errors.empty()) param_error(std::move(errors));
    ch.remove = id_list(p, "delete");
    ch.revert = id_list(p, "revert");
    ch.digest = single(p, "digest");
    ch.skiplock = single(p, "skiplock").value_or("0") == "1";
    ch.force = single(p, "force").value_or("0") == "1";
    if (ch.set.empty() && ch.remove.empty() && ch.revert.empty()) die("no options specified");
    if (ch.skiplock && !(c.user == "root@pam" && c.tokenid.empty())) {
      param_error("skiplock", "Only root may use this option.");
    }
    for (const auto& k : ch.remove) {
      if (ch.set.contains(k)) param_error("delete", "cannot set and delete '" + k + "' at the same time");
      if (!privilege_for_key(k)) param_error("delete", "invalid configuration ID '" + k + "'");
    }
    for (const auto& k : ch.revert) {
      if (ch.set.contains(k) || std::ranges::find(ch.remove, k) != ch.remove.end()) {
        param_error("revert", "cannot revert and change '" + k + "' at the same time");
      }
    }
    Vm* vm_ptr = nullptr;
    {
      std::lock_guard lock(sim.mutex_);
      vm_ptr = &vm_on(node, vmid);
      const std::string path = "/vms/" + vmid;
      std::vector<std::string> keys;
      for (const auto& [k, v] : ch.set) keys.push_back(k);
      keys.insert(keys.end(), ch.remove.begin(), ch.remove.end());
      keys.insert(keys.end(), ch.revert.begin(), ch.revert.end());
      for (const auto& k : keys) require(c, path, *privilege_for_key(k));
      // check_bridge_access on the new values ($update_vm_api), then, in $updatefn, on the value
      // in effect of every netN set or deleted (qemu-server PVE/API2/Qemu.pm).
      for (const auto& [k, v] : ch.set) {
        if (is_net_key(k)) check_bridge_access(c, v);
      }
      check_digest_and_lock(*vm_ptr, ch);
      for (const auto& k : keys) {
        if (std::ranges::find(ch.revert, k) != ch.revert.end() || !is_net_key(k)) continue;
        if (auto old = vm_ptr->conf.find(k); old != vm_ptr->conf.end()) check_bridge_access(c, old->second);
      }
    }
    Vm& vm = *vm_ptr;
    if (!async) {
      std::unique_lock file(vm.file_lock, std::defer_lock);
      if (!file.try_lock_for(std::chrono::seconds(10))) {
        die("can't lock file '/var/lock/qemu-server/lock-" + vmid + ".conf' - got timeout");
      }
      Outcome out = apply_change(vm, ch);
      if (!out.errors.empty()) {
        bj::object e;
        for (const auto& [k, msg] : out.errors) e[k] = msg;
        param_error(std::move(e));
      }
      return data_response(nullptr);
    }
    std::string upid;
    {
      std::lock_guard lock(sim.mutex_);
      upid = new_task(c, node, "qmconfig", vm.vmid).upid;
    }
    // Handlers objects live for one request; the task thread makes its own.
    spawn([&s = sim, &vm, ch, upid, vmid] { Handlers{s}.run_config_task(vm, ch, upid, vmid); });
    return data_response(bj::value(upid));
  }

  void run_config_task(Vm& vm, const Change& ch, const std::string& upid, const std::string& vmid) {
    {
      std::this_thread::sleep_for(std::chrono::milliseconds(sim.options_.task_duration_ms));
      {
        std::unique_lock lock(sim.mutex_);
        if (auto fail = take_task_failure("qmconfig", vm.vmid)) {
          lock.unlock();
          return finish_task(upid, *fail);
        }
      }
      std::unique_lock file(vm.file_lock, std::defer_lock);
      if (!file.try_lock_for(std::chrono::seconds(10))) {
        return finish_task(upid, "can't lock file '/var/lock/qemu-server/lock-" + vmid + ".conf' - got timeout");
      }
      try {
        Outcome out = apply_change(vm, ch);
        for (const auto& w : out.warnings) task_log_line(upid, "WARN: " + w);
        if (!out.errors.empty()) {
          std::string msg = "400 Parameter verification failed.";
          for (const auto& [k, e] : out.errors) msg += " " + k + ": " + e;
          return finish_task(upid, msg);
        }
        finish_task(upid, out.warnings.empty() ? "OK" : "WARNINGS: " + std::to_string(out.warnings.size()));
      } catch (const HttpError& e) {
        finish_task(upid, e.message);
      }
    }
  }

  // Writes the change as pending and applies what can be applied: everything for a stopped VM,
  // hot-pluggable keys for a running one. Caller holds vm.file_lock, not sim.mutex_.
  Outcome apply_change(Vm& vm, const Change& ch) {
    Outcome out;
    bool running = false;
    {
      std::lock_guard lock(sim.mutex_);
      check_digest_and_lock(vm, ch);  // again, now under the config lock
      ++sim.config_writes_;
      if (!ch.digest) ++sim.config_writes_without_digest_;
      for (const auto& k : ch.remove) {
        if (!vm.conf.contains(k) && !vm.pending.contains(k)) {
          out.warnings.push_back("cannot delete '" + k + "' - not set in current configuration!");
          continue;
        }
        vm.pending.erase(k);
        if (vm.conf.contains(k) && !vm.pending_delete_has(k)) vm.pending_delete.push_back({k, ch.force});
      }
      for (const auto& k : ch.revert) {
        vm.pending.erase(k);
        vm.remove_pending_delete(k);
      }
      for (const auto& [k, v] : ch.set) {
        vm.pending[k] = v;
        vm.remove_pending_delete(k);
      }
      cleanup_pending(vm);
      running = vm.running;
      if (!running) {
        apply_pending(vm);
        return out;
      }
    }
    // $modified: the keys this request names (set, delete, revert); only they are hot-plugged.
    std::set<std::string> selection(ch.remove.begin(), ch.remove.end());
    selection.insert(ch.revert.begin(), ch.revert.end());
    for (const auto& [k, v] : ch.set) selection.insert(k);
    hotplug_pending(vm, out, selection);
    return out;
  }

  // vmconfig_hotplug_pending for a running VM (qemu-server QemuServer.pm, read at e6352be6):
  // fast-plug values are committed whatever the selection; every other pending key only when
  // this request named it (`next if $selection && !$selection->{$opt}`), so a NIC change left
  // pending by an earlier request stays pending through an unrelated write. NIC changes go
  // through the VM's hook.
  void hotplug_pending(Vm& vm, Outcome& out, const std::set<std::string>& selection) {
    std::vector<PendingDelete> deletes;
    Config pending;
    HotplugFeatures features;
    {
      std::lock_guard lock(sim.mutex_);
      deletes = vm.pending_delete;
      pending = vm.pending;
      features = parse_hotplug(vm.conf);
    }
    for (const auto& d : deletes) {
      if (!selection.contains(d.key)) continue;
      if (is_net_key(d.key)) {
        if (!features.network) continue;
        if (auto err = plug(vm, d.key, std::nullopt)) {
          out.errors[d.key] = "hotplug problem - " + *err;
          continue;
        }
      } else if (!is_fast_plug(d.key)) {
        continue;
      }
      std::lock_guard lock(sim.mutex_);
      vm.conf.erase(d.key);
      vm.remove_pending_delete(d.key);
    }
    for (const auto& [k, v] : pending) {
      if (!selection.contains(k) && !is_fast_plug(k)) continue;
      if (is_net_key(k)) {
        std::optional<std::string> old;
        {
          std::lock_guard lock(sim.mutex_);
          if (auto it = vm.conf.find(k); it != vm.conf.end()) old = it->second;
        }
        const bool replug = !old || needs_replug(*old, v);
        if (replug && !features.network) continue;  // stays pending until the next start
        if (auto err = plug(vm, k, v)) {
          out.errors[k] = "hotplug problem - " + *err;
          continue;
        }
      } else if (k == "hotplug") {
        // Skipped when the new or the current value names memory or cpu (l. 4805-4808).
        std::string current;
        {
          std::lock_guard lock(sim.mutex_);
          if (auto it = vm.conf.find("hotplug"); it != vm.conf.end()) current = it->second;
        }
        const auto names = [](const std::string& s) {
          return s.find("memory") != std::string::npos || s.find("cpu") != std::string::npos;
        };
        if (names(v) || names(current)) continue;
      } else if (!is_fast_plug(k)) {
        continue;
      }
      std::lock_guard lock(sim.mutex_);
      vm.conf[k] = v;
      vm.pending.erase(k);
    }
  }

  // Runs the hotplug-nic hook with the config as it will be after the change; the error text when
  // the hook fails.
  std::optional<std::string> plug(Vm& vm, const std::string& key, const std::optional<std::string>& value) {
    std::string hook, json;
    {
      std::lock_guard lock(sim.mutex_);
      hook = vm.hook;
      Config after = vm.conf;
      if (value) {
        after[key] = *value;
      } else {
        after.erase(key);
      }
      json = hook_json(vm, after);
    }
    if (hook.empty()) return std::nullopt;
    auto r = run_hook(hook, "hotplug-nic", vm.vmid, json, key, sim.options_.hook_timeout);
    if (r.ok) return std::nullopt;
    return r.last_error_line;
  }

  static std::string hook_json(const Vm& vm, const Config& conf) {
    bj::object config;
    for (const auto& [k, v] : conf) config[k] = v;
    return bj::serialize(bj::object{{"vmid", vm.vmid}, {"node", vm.node}, {"config", std::move(config)}});
  }

  // ---- power -------------------------------------------------------------------------------------------

  ApiResponse power(const Caller& c, const std::string& node, const std::string& vmid, const std::string& action,
                    Params& p) {
    Schema schema = {{"node", text()}, {"vmid", text()}, {"timeout", integer(0, LLONG_MAX)}};
    std::string type;
    if (action == "start") {
      schema["skiplock"] = boolean();
      schema["machine"] = text();
      type = "qmstart";
    } else if (action == "shutdown") {
      schema["skiplock"] = boolean();
      schema["forceStop"] = boolean();
      schema["keepActive"] = boolean();
      type = "qmshutdown";
    } else if (action == "stop") {
      schema["skiplock"] = boolean();
      schema["keepActive"] = boolean();
      schema["overrule-shutdown"] = boolean();
      type = "qmstop";
    } else if (action == "reboot") {
      type = "qmreboot";
    } else {
      throw HttpError{
          501, "Method 'POST /nodes/" + node + "/qemu/" + vmid + "/status/" + action + "' not implemented", {}};
    }
    {
      // ['perm', '/vms/{vmid}', ['VM.PowerMgmt']], checked before the parameters (HTTPServer.pm).
      std::lock_guard lock(sim.mutex_);
      require(c, "/vms/" + vmid, "VM.PowerMgmt");
    }
    validate(p, schema);
    PowerRequest req;
    req.type = type;
    req.skiplock = single(p, "skiplock").value_or("0") == "1";
    req.force_stop = single(p, "forceStop").value_or("0") == "1";
    if (auto t = single(p, "timeout")) req.timeout_s = std::stoll(*t);
    if (req.skiplock && !c.is_root()) param_error("skiplock", "Only root may use this option.");
    Vm* vm_ptr = nullptr;
    {
      std::lock_guard lock(sim.mutex_);
      vm_ptr = &vm_on(node, vmid);
      if (type == "qmreboot" && !vm_ptr->running) die("VM " + vmid + " not running");
      req.upid = new_task(c, node, type, vm_ptr->vmid).upid;
    }
    Vm& vm = *vm_ptr;
    const std::string upid = req.upid;
    spawn([&s = sim, &vm, req] { Handlers{s}.run_power_task(vm, req); });
    return data_response(bj::value(upid));
  }

  struct PowerRequest {
    std::string type;  // qmstart, qmshutdown, qmstop, qmreboot
    std::string upid;
    bool skiplock = false;
    bool force_stop = false;             // shutdown: stop the VM when the timeout passes
    std::optional<long long> timeout_s;  // shutdown/reboot: how long to wait for the guest
  };

  // Waits up to `seconds` (in short steps, so that a stopping pvesim does not wait it out).
  void wait_seconds(long long seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!sim.stopping_ && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  void run_power_task(Vm& vm, const PowerRequest& req) {
    const std::string& type = req.type;
    const std::string& upid = req.upid;
    std::this_thread::sleep_for(std::chrono::milliseconds(sim.options_.task_duration_ms));
    const std::string vmid = std::to_string(vm.vmid);
    {
      std::unique_lock lock(sim.mutex_);
      if (auto fail = take_task_failure(type, vm.vmid)) {
        lock.unlock();
        return finish_task(upid, *fail);
      }
    }
    std::unique_lock file(vm.file_lock, std::defer_lock);
    if (!file.try_lock_for(std::chrono::seconds(10))) {
      return finish_task(upid, "can't lock file '/var/lock/qemu-server/lock-" + vmid + ".conf' - got timeout");
    }
    std::string hook, json;
    bool ignores_shutdown = false;
    long long shutdown_timeout = 60;
    // Lock check, state check and pending application under the state mutex.
    std::optional<std::string> early;
    {
      std::lock_guard lock(sim.mutex_);
      if (!req.skiplock) {
        if (auto l = vm.conf.find("lock"); l != vm.conf.end()) early = "VM is locked (" + l->second + ")";
      }
      if (!early) {
        if (type == "qmstart") {
          if (vm.running) {
            early = "VM " + vmid + " already running";
          } else {
            apply_pending(vm);  // vm_start applies pending changes first
          }
        } else if (!vm.running) {
          early = "OK";  // shutdown/stop of a stopped VM has nothing to do
        }
      }
      hook = vm.hook;
      json = hook_json(vm, vm.conf);
      ignores_shutdown = vm.ignores_shutdown;
      shutdown_timeout = req.timeout_s.value_or(startup_down(vm.conf).value_or(60));
    }
    if (early) return finish_task(upid, *early);

    // _do_vm_stop with $shutdown (qemu-server PVE/QemuServer.pm): system_powerdown, then wait
    // `timeout` s (the request's, else startup down=, else 60). A guest that does not power down
    // fails the task with "VM quit/powerdown failed - got timeout" and keeps running, unless
    // forceStop (shutdown only) stops it with a warning.
    bool forced = false;
    if ((type == "qmshutdown" || type == "qmreboot") && ignores_shutdown) {
      wait_seconds(shutdown_timeout);
      if (!(type == "qmshutdown" && req.force_stop)) return finish_task(upid, "VM quit/powerdown failed - got timeout");
      task_log_line(upid, "VM quit/powerdown failed - terminating now with SIGTERM");
      forced = true;
    }

    const std::string event = type == "qmstart" ? "start" : (type == "qmstop" || forced) ? "stop" : "shutdown";
    if (!hook.empty()) {
      task_log_line(upid, "running hook: " + event);
      auto r = run_hook(hook, event, vm.vmid, json, "", sim.options_.hook_timeout);
      for (const auto& line : r.output) task_log_line(upid, line);
      if (!r.ok) return finish_task(upid, r.last_error_line);
    }
    {
      std::lock_guard lock(sim.mutex_);
      vm.running = type == "qmstart";
      vm.pid = vm.running ? 20000 + (++sim.next_pid_ % 100000) : 0;
      if (vm.running) vm.started_at = now();
    }
    if (type != "qmreboot") return finish_task(upid, forced ? "WARNINGS: 1" : "OK");

    // The reboot task ends with the shutdown (vm_reboot). QEMU's exit reaches qmeventd, which runs
    // `qm cleanup`; that finds the reboot request and calls vm_start as root@pam: a separate
    // qmstart task, whose failure is recorded there only (qemu-server PVE/CLI/qm.pm, cleanup).
    finish_task(upid, "OK");
    file.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(sim.options_.boot_delay_ms));
    PowerRequest start;
    start.type = "qmstart";
    {
      std::lock_guard lock(sim.mutex_);
      start.upid = new_task(Caller{"root@pam", "", {}, std::nullopt}, vm.node, "qmstart", vm.vmid).upid;
    }
    run_power_task(vm, start);
  }

  // The `down` of a VM's `startup` option (order=N,up=N,down=N), as _do_vm_stop reads it.
  static std::optional<long long> startup_down(const Config& conf) {
    auto it = conf.find("startup");
    if (it == conf.end()) return std::nullopt;
    static const std::regex down_re(R"((?:^|,)down=(\d+)(?:,|$))");
    std::smatch m;
    if (!std::regex_search(it->second, m, down_re)) return std::nullopt;
    const long long v = std::stoll(m[1]);
    return v > 0 ? std::optional<long long>(v) : std::nullopt;
  }

  // ---- admin (/pvesim/...) --------------------------------------------------------------------------

  ApiResponse admin(const ApiRequest& req, const std::string& path, const std::string& query) {
    (void)query;
    try {
      return admin_route(req, split_path(path));
    } catch (const HttpError& e) {
      return error_response(e);
    } catch (const std::exception& e) {
      return error_response(HttpError{400, std::string("bad request: ") + e.what(), {}});
    }
  }

  bj::value json_body(const ApiRequest& req) {
    if (req.body.empty()) return bj::object{};
    boost::system::error_code ec;
    bj::value v = bj::parse(req.body, ec);
    if (ec) throw HttpError{400, "body is not JSON: " + ec.message(), {}};
    return v;
  }

  // GET|PUT /pvesim/vms/{vmid}/nic-counters, POST .../nic-counters/advance: a VM's taps as
  // status/current shows them; setting or advancing is for simulated taps only.
  ApiResponse nic_counters(const ApiRequest& req, const std::vector<std::string>& seg) {
    const bool advance = seg.size() == 5 && seg[4] == "advance" && req.method == "POST";
    const bool set = seg.size() == 4 && req.method == "PUT";
    if (!advance && !set && !(seg.size() == 4 && req.method == "GET")) {
      throw HttpError{404, "unknown pvesim admin call " + req.method + " " + req.target, {}};
    }
    auto body = json_body(req);
    std::lock_guard lock(sim.mutex_);
    Vm* vm = sim.cluster_.find(std::stoi(seg[2]));
    if (vm == nullptr) throw HttpError{404, "no guest " + seg[2], {}};
    if ((advance || set) && sim.net_devs_.real(vm->node)) {
      throw HttpError{409,
                      "node " + vm->node + " has real taps (--node-net-dev " + *sim.net_devs_.path(vm->node) +
                          "): only bytes through them move their counters",
                      {}};
    }
    if (advance || set) {
      if (auto err = change_synthetic_taps(*vm, body, advance); !err.empty()) throw HttpError{400, err, {}};
    }
    std::map<std::string, NetDev> devices;
    return data_response(nics_json(taps_of(*vm, devices)));
  }

  ApiResponse admin_route(const ApiRequest& req, const std::vector<std::string>& seg) {
    const std::string& m = req.method;
    auto is = [&](std::initializer_list<const char*> parts) {
      if (parts.size() != seg.size()) return false;
      std::size_t i = 0;
      for (const char* s : parts) {
        if (std::string_view(s) != "*" && seg[i] != s) return false;
        ++i;
      }
      return true;
    };
    if (m == "GET" && is({"pvesim", "state"})) return data_response(sim.state_json());
    if (m == "POST" && is({"pvesim", "pvestatd"})) {  // a pvestatd sample now
      std::lock_guard lock(sim.mutex_);
      take_sample();
      return data_response(nullptr);
    }
    if (m == "POST" && is({"pvesim", "state", "save"})) {
      auto body = json_body(req);
      const std::string file(body.as_object().at("file").as_string());
      std::ofstream out(file);
      out << bj::serialize(sim.state_json()) << "\n";
      if (!out) die("cannot write " + file);
      return data_response(nullptr);
    }
    if (m == "GET" && is({"pvesim", "faults"})) {
      std::lock_guard lock(sim.mutex_);
      return data_response(sim.faults_.to_json());
    }
    if (m == "PUT" && is({"pvesim", "faults"})) {
      auto body = json_body(req);
      std::lock_guard lock(sim.mutex_);
      Faults f = sim.faults_;
      if (auto err = f.merge(body); !err.empty()) throw HttpError{400, err, {}};
      sim.faults_ = f;
      return data_response(sim.faults_.to_json());
    }
    if (m == "POST" && is({"pvesim", "faults", "reset"})) {
      std::lock_guard lock(sim.mutex_);
      sim.faults_ = Faults{};
      return data_response(sim.faults_.to_json());
    }
    if (m == "GET" && is({"pvesim", "stats"})) {
      std::lock_guard lock(sim.mutex_);
      bj::object counts;
      for (const auto& [k, v] : sim.request_counts_) counts[k] = v;
      return data_response(bj::object{{"requests", std::move(counts)},
                                      {"api_requests", sim.api_requests_},
                                      {"injected_errors", sim.injected_errors_},
                                      {"injected_drops", sim.injected_drops_},
                                      {"delayed_requests", sim.delayed_requests_},
                                      {"concurrent_edits", sim.concurrent_edits_done_},
                                      {"config_writes", sim.config_writes_},
                                      {"config_writes_without_digest", sim.config_writes_without_digest_},
                                      {"digest_mismatches", sim.digest_mismatches_},
                                      {"connections", sim.connections_.load()},
                                      {"pvedaemon", pvedaemon_stats()}});
    }
    if (m == "POST" && is({"pvesim", "stats", "reset"})) {
      std::lock_guard lock(sim.mutex_);
      sim.request_counts_.clear();
      sim.api_requests_ = sim.injected_errors_ = sim.injected_drops_ = sim.delayed_requests_ = 0;
      sim.config_writes_ = sim.config_writes_without_digest_ = sim.digest_mismatches_ = 0;
      sim.connections_ = 0;
      sim.pvedaemon_->reset_stats();
      return data_response(nullptr);
    }
    if (m == "POST" && is({"pvesim", "tickets", "reset"})) {
      // As if the node restarted with a new key: every ticket and CSRF token is invalid.
      std::lock_guard lock(sim.mutex_);
      sim.tickets_.clear();
      sim.csrf_tokens_.clear();
      return data_response(nullptr);
    }
    if (m == "GET" && is({"pvesim", "tasks"})) {
      std::lock_guard lock(sim.mutex_);
      bj::array out;
      for (const auto& [upid, t] : sim.tasks_) {
        out.push_back(
            bj::object{{"upid", upid}, {"status", t.running ? "running" : "stopped"}, {"exitstatus", t.exitstatus}});
      }
      return data_response(std::move(out));
    }
    if (m == "GET" && is({"pvesim", "nodes", "*", "net-dev"})) {
      // What pvesim reads as the node's /proc/net/dev: to check --node-net-dev points at the
      // right network namespace (the lab's taps are there).
      const std::string& node = seg[2];
      auto path = sim.net_devs_.path(node);
      if (!path) throw HttpError{404, "node " + node + " has no --node-net-dev (its taps are simulated)", {}};
      auto read = sim.net_devs_.read(node);
      bj::object devices;
      for (const auto& [name, line] : read.devices) {
        devices[name] = bj::object{{"receive", line.receive}, {"transmit", line.transmit}};
      }
      return data_response(bj::object{{"path", *path},
                                      {"error", read.error.empty() ? bj::value(nullptr) : bj::value(read.error)},
                                      {"devices", std::move(devices)}});
    }
    if (seg.size() >= 4 && seg[0] == "pvesim" && seg[1] == "vms" && seg[3] == "nic-counters") {
      return nic_counters(req, seg);
    }
    if (seg.size() == 4 && seg[0] == "pvesim" && seg[1] == "vms") {
      std::lock_guard lock(sim.mutex_);
      Vm* vm = sim.cluster_.find(std::stoi(seg[2]));
      if (vm == nullptr) throw HttpError{404, "no guest " + seg[2], {}};
      if (seg[3] == "lock" && m == "PUT") {
        auto body = json_body(req);
        vm->conf["lock"] = std::string(body.as_object().at("lock").as_string());
        return data_response(nullptr);
      }
      if (seg[3] == "lock" && m == "DELETE") {
        vm->conf.erase("lock");
        return data_response(nullptr);
      }
      if (seg[3] == "config" && m == "PUT") {
        // Another admin edits the config file directly: no checks, no pending, a new digest.
        auto body = json_body(req);
        for (const auto& [k, v] : body.as_object()) {
          if (v.is_null()) {
            vm->conf.erase(std::string(k));
          } else {
            vm->conf[std::string(k)] = v.is_string() ? std::string(v.as_string()) : bj::serialize(v);
          }
        }
        return data_response(bj::value(config_digest(*vm)));
      }
      if (seg[3] == "hook" && m == "PUT") {
        auto body = json_body(req);
        const auto& h = body.as_object().at("hook");
        vm->hook = h.is_null() ? "" : std::string(h.as_string());
        return data_response(nullptr);
      }
      if (seg[3] == "guest" && m == "PUT") {  // how the guest OS behaves: {"ignores_shutdown": bool, "agent": ...}
        auto body = json_body(req);
        const auto* i = body.is_object() ? body.as_object().if_contains("ignores_shutdown") : nullptr;
        const auto* a = body.is_object() ? body.as_object().if_contains("agent") : nullptr;
        if ((i == nullptr && a == nullptr) || (i != nullptr && !i->is_bool())) {
          throw HttpError{400, "want {\"ignores_shutdown\": true|false, \"agent\": {...}|null}", {}};
        }
        std::shared_ptr<const RecordedAgent> agent;
        if (a != nullptr && !a->is_null()) {
          std::string error;
          if (agent = parse_recorded_agent(*a, "agent", error); !agent) throw HttpError{400, error, {}};
        }
        if (i != nullptr) vm->ignores_shutdown = i->as_bool();
        if (a != nullptr) vm->agent = agent;
        return data_response(nullptr);
      }
    }
    throw HttpError{404, "unknown pvesim admin call " + m + " " + req.target, {}};
  }

  // GET /pvesim/stats "pvedaemon": per node, the agent calls running, waiting, the most at once.
  bj::object pvedaemon_stats() {
    bj::object out;
    for (const auto& [node, st] : sim.pvedaemon_->stats()) {
      out[node] = bj::object{
          {"active", st.active}, {"waiting", st.waiting}, {"max_active", st.max_active}, {"handled", st.handled}};
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------

Simulator::Simulator(Cluster cluster, SimOptions options, Faults faults, std::uint64_t seed)
    : cluster_(std::move(cluster)),
      options_(std::move(options)),
      net_devs_(options_.node_net_dev),
      faults_(std::move(faults)),
      rng_(seed),
      agent_(std::make_unique<AgentService>(
          AgentOptions{options_.qga_dir, std::chrono::milliseconds(options_.agent_ping_timeout_ms),
                       std::chrono::milliseconds(options_.agent_command_timeout_ms)})),
      pvedaemon_(std::make_unique<PvedaemonWorkers>(options_.pvedaemon_workers)) {}

Simulator::~Simulator() {
  stopping_ = true;
  stop_agent_calls();
  wait_for_tasks();
}

void Simulator::stop_agent_calls() {
  agent_->stop();
  pvedaemon_->stop();
}

std::map<std::string, bool> Simulator::Caller::privileges(const std::string& path) const {
  // root@pam has the Administrator role everywhere (RPCEnvironment.pm sub permissions).
  static const std::set<std::string> kAdministrator{"Datastore.Allocate",
                                                    "Datastore.AllocateSpace",
                                                    "Datastore.Audit",
                                                    "Permissions.Modify",
                                                    "Pool.Allocate",
                                                    "Pool.Audit",
                                                    "SDN.Allocate",
                                                    "SDN.Audit",
                                                    "SDN.Use",
                                                    "Sys.Audit",
                                                    "Sys.Console",
                                                    "Sys.Modify",
                                                    "Sys.PowerMgmt",
                                                    "VM.Allocate",
                                                    "VM.Audit",
                                                    "VM.Backup",
                                                    "VM.Clone",
                                                    "VM.Config.CDROM",
                                                    "VM.Config.CPU",
                                                    "VM.Config.Cloudinit",
                                                    "VM.Config.Disk",
                                                    "VM.Config.HWType",
                                                    "VM.Config.Memory",
                                                    "VM.Config.Network",
                                                    "VM.Config.Options",
                                                    "VM.Console",
                                                    "VM.GuestAgent.Audit",
                                                    "VM.GuestAgent.FileRead",
                                                    "VM.GuestAgent.FileSystemMgmt",
                                                    "VM.GuestAgent.FileWrite",
                                                    "VM.GuestAgent.Unrestricted",
                                                    "VM.Migrate",
                                                    "VM.PowerMgmt"};
  std::map<std::string, bool> out;
  if (is_root()) {
    for (const auto& p : kAdministrator) out[p] = true;
    return out;
  }
  out = privileges_at(acl, path);
  if (tokenid.empty() || !user_acl) return out;
  // A privilege-separated token: the intersection with its user's, propagated where both are.
  const auto theirs = privileges_at(*user_acl, path);
  std::map<std::string, bool> both;
  for (const auto& [priv, propagate] : out) {
    if (auto it = theirs.find(priv); it != theirs.end()) both[priv] = propagate && it->second;
  }
  return both;
}

void Simulator::add_token(Token token) {
  std::lock_guard lock(mutex_);
  tokens_[token.id] = std::move(token);
}

void Simulator::add_user(User user) {
  std::lock_guard lock(mutex_);
  users_[user.id] = std::move(user);
}

ApiResponse Simulator::handle(const ApiRequest& request) {
  Handlers h{*this};
  try {
    return h.dispatch(request);
  } catch (const std::exception& e) {
    return error_response(HttpError{500, std::string("pvesim internal error: ") + e.what(), {}});
  }
}

bj::value Simulator::state_json() {
  std::lock_guard lock(mutex_);
  return dump_state(cluster_);
}

void Simulator::wait_for_tasks() {
  while (true) {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(threads_mutex_);
      threads.swap(threads_);
    }
    if (threads.empty()) return;
    for (auto& t : threads) t.join();
  }
}

}  // namespace pvesim
