// SPDX-License-Identifier: GPL-3.0-or-later
#include "settings/loader.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "ansible/playbooks.hpp"
#include "diagnostics/suggest.hpp"
#include "policy/model.hpp"
#include "policy/yaml_schema.hpp"

namespace pw::settings {
namespace {

using namespace policy::schema;
using policy::kMetadataKeys;
using policy::parse_duration;

constexpr std::array<std::string_view, 6> kControllerSpecKeys{"proxmox",  "ansible",   "state_dir",
                                                              "policies", "retention", "observe"};
constexpr std::array<std::string_view, 4> kObserveKeys{"via", "agent_access", "agent_timeout", "agent_per_node"};
constexpr std::array<std::string_view, 3> kRetentionKeys{"journals", "guest_backups", "days"};
// The inline secret keys are accepted by the schema only so that they get their own message.
constexpr std::array<std::string_view, 16> kProxmoxKeys{
    "url",     "token_id",    "token_secret_file",    "token_secret_env", "user",    "password_file", "password_env",
    "ca_file", "fingerprint", "insecure_skip_verify", "max_in_flight",    "timeout", "token_secret",  "password",
    "secret",  "token"};
constexpr std::array<std::string_view, 13> kAnsibleKeys{
    "inventory",          "playbook_command", "forks",       "timeout",       "private_key_file",  "known_hosts_file",
    "remote_user",        "become",           "become_user", "become_method", "share_connections", "guest_timeout",
    "vault_password_file"};
// Inline secrets are refused with a pointer to the file/env variants.
constexpr std::array<std::string_view, 4> kInlineSecretKeys{"token_secret", "password", "secret", "token"};

bool is_fingerprint(std::string_view s) {
  if (s.size() != 32 * 3 - 1) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i % 3 == 2 ? s[i] != ':' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

bool is_env_name(std::string_view s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s.front())) &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

class ControllerDecoder {
 public:
  ControllerDecoder(Decoder& d, ControllerSettings& out) : d_(d), out_(out) {
    // Absolute: ansible-playbook runs in each phase's own work directory, so a path relative to
    // where pathwarden was started (a settings file given as `--config pw.yaml`) would break there.
    std::error_code ec;
    const auto file = std::filesystem::path(d.file());
    const auto absolute = file.empty() ? file : std::filesystem::absolute(file, ec);
    base_ = (ec ? file : absolute).parent_path();
  }

  void decode(const Section& top) {
    if (auto md = top.get("metadata")) Section(d_, *md, "metadata", kMetadataKeys, top.value_pos("metadata"));
    auto spec_node = top.require("spec");
    if (!spec_node) return;
    Section spec(d_, *spec_node, "spec", kControllerSpecKeys, top.value_pos("spec"));
    if (!spec.valid()) return;
    if (auto n = spec.require("proxmox")) proxmox(*n, spec.value_pos("proxmox"));
    if (auto n = spec.require("ansible")) ansible(*n, spec.value_pos("ansible"));
    if (auto v = spec.get("state_dir")) {
      if (auto p = read_string(d_, *v, "spec.state_dir")) out_.state_dir = resolve(*p);
    }
    if (auto v = spec.get("policies")) {
      if (auto p = read_string(d_, *v, "spec.policies")) out_.policies_dir = resolve(*p);
    }
    if (auto n = spec.get("retention")) retention(*n, spec.value_pos("retention"));
    if (auto n = spec.get("observe")) observe(*n, spec.value_pos("observe"));
  }

 private:
  std::string resolve(const std::string& p) const {
    if (p.empty() || p.front() == '/' || base_.empty()) return p;
    return (base_ / p).lexically_normal().string();
  }

  std::string file_field(const Section& s, std::string_view key) {
    if (auto v = s.get(key)) {
      if (auto p = read_string(d_, *v, s.child(key))) return resolve(*p);
    }
    return {};
  }

  std::string env_field(const Section& s, std::string_view key) {
    if (auto v = s.get(key)) {
      if (auto p = read_string(d_, *v, s.child(key))) {
        if (is_env_name(*p)) return *p;
        d_.error(d_.pos(*v), "'" + s.child(key) + "' must name an environment variable, like PATHWARDEN_TOKEN");
      }
    }
    return {};
  }

  void reject_inline_secrets(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const auto& key = it->first.Scalar();
      if (std::find(kInlineSecretKeys.begin(), kInlineSecretKeys.end(), key) != kInlineSecretKeys.end()) {
        d_.error(d_.pos(it->first),
                 "'" + path + "." + key + "': secrets are not accepted inline (policy files live in git); use " +
                     (key == "password" ? "password_file or password_env" : "token_secret_file or token_secret_env"));
      }
    }
  }

  // A word from a closed list, with a did-you-mean when it is near one.
  template <class T, std::size_t N>
  std::optional<T> read_word(const Section& s, std::string_view key, std::optional<T> (*parse)(std::string_view),
                             const std::string_view (&names)[N]) {
    auto v = s.get(key);
    if (!v) return std::nullopt;
    auto text = read_string(d_, *v, s.child(key));
    if (!text) return std::nullopt;
    if (auto value = parse(*text)) return value;
    std::string list;
    for (auto n : names) list += (list.empty() ? "" : ", ") + std::string(n);
    d_.error(d_.pos(*v), "'" + s.child(key) + "' is '" + *text + "'; it is one of " + list +
                             did_you_mean(*text, std::span<const std::string_view>(names, N)));
    return std::nullopt;
  }

  void observe(const YAML::Node& node, const SourcePos& where) {
    Section s(d_, node, "spec.observe", kObserveKeys, where);
    if (!s.valid()) return;
    auto& o = out_.observe;
    if (auto v = read_word(s, "via", &observe::via_from, observe::kViaNames)) o.via = *v;
    if (auto v = read_word(s, "agent_access", &observe::access_from, observe::kAccessNames)) o.agent_access = *v;
    if (auto v = s.get("agent_timeout")) {
      if (auto ms = read_parsed(d_, *v, "spec.observe.agent_timeout", parse_duration)) {
        if (*ms < std::chrono::seconds(10) || *ms > std::chrono::hours(1)) {
          d_.error(d_.pos(*v), "'spec.observe.agent_timeout' is " + v->Scalar() +
                                   "; it must be between 10s (the guest ends the script 5 s before) and 1h");
        } else {
          o.agent_timeout = *ms;
        }
      }
    }
    if (auto v = s.get("agent_per_node")) {
      if (auto n = read_int(d_, *v, "spec.observe.agent_per_node", 1, 64)) o.agent_per_node = static_cast<int>(*n);
    }
    for (std::string_view key : {"agent_access", "agent_timeout", "agent_per_node"}) {
      if (s.has(key) && o.via == observe::Via::ansible) {
        d_.error(s.value_pos(key), "'spec.observe." + std::string(key) +
                                       "' has no effect with via: ansible; set via: agent or auto, or remove it");
      }
    }
  }

  void retention(const YAML::Node& node, const SourcePos& where) {
    Section s(d_, node, "spec.retention", kRetentionKeys, where);
    if (!s.valid()) return;
    if (auto v = s.get("journals")) {
      if (auto n = read_int(d_, *v, "spec.retention.journals", 1, 1000000))
        out_.keep_journals = static_cast<std::size_t>(*n);
    }
    if (auto v = s.get("guest_backups")) {
      if (auto n = read_int(d_, *v, "spec.retention.guest_backups", 1, 100000))
        out_.keep_guest_backups = static_cast<int>(*n);
    }
    if (auto v = s.get("days")) {
      if (auto n = read_int(d_, *v, "spec.retention.days", 1, 3650)) out_.keep_days = static_cast<int>(*n);
    }
  }

  void proxmox(const YAML::Node& node, const SourcePos& where) {
    reject_inline_secrets(node, "spec.proxmox");
    Section s(d_, node, "spec.proxmox", kProxmoxKeys, where);
    if (!s.valid()) return;
    auto& p = out_.proxmox;
    if (auto v = s.require("url")) {
      if (auto url = read_string(d_, *v, "spec.proxmox.url")) {
        if (url->starts_with("http://")) {
          d_.error(d_.pos(*v),
                   "'spec.proxmox.url' uses plain http, which would send the API token in clear; use https://");
        } else if (!url->starts_with("https://") || url->size() <= 8) {
          d_.error(d_.pos(*v), "'spec.proxmox.url' is '" + *url + "'; write it like https://pve1.example.org:8006");
        } else {
          p.url = *url;
        }
      }
    }
    if (auto v = s.get("token_id")) {
      if (auto id = read_string(d_, *v, "spec.proxmox.token_id")) {
        const auto at = id->find('@');
        const auto bang = id->find('!');
        if (at == std::string::npos || bang == std::string::npos || bang < at || at == 0 || bang + 1 == id->size()) {
          d_.error(d_.pos(*v), "'spec.proxmox.token_id' is '" + *id + "'; write it as USER@REALM!TOKENNAME");
        } else {
          p.token_id = *id;
        }
      }
    }
    p.token_secret_file = file_field(s, "token_secret_file");
    p.token_secret_env = env_field(s, "token_secret_env");
    if (auto v = s.get("user")) {
      if (auto u = read_string(d_, *v, "spec.proxmox.user")) {
        if (u->find('@') == std::string::npos) {
          d_.error(d_.pos(*v), "'spec.proxmox.user' is '" + *u + "'; write it as USER@REALM, e.g. pathwarden@pve");
        } else {
          p.user = *u;
        }
      }
    }
    p.password_file = file_field(s, "password_file");
    p.password_env = env_field(s, "password_env");
    p.ca_file = file_field(s, "ca_file");
    if (auto v = s.get("fingerprint")) {
      if (auto f = read_string(d_, *v, "spec.proxmox.fingerprint")) {
        if (is_fingerprint(*f)) {
          p.fingerprint = *f;
        } else {
          d_.error(d_.pos(*v),
                   "'spec.proxmox.fingerprint' must be a SHA-256 fingerprint in colon-hex "
                   "(32 pairs like AB:CD:...), as 'pvenode cert info' prints it");
        }
      }
    }
    if (auto v = s.get("insecure_skip_verify")) {
      if (auto b = read_bool(d_, *v, "spec.proxmox.insecure_skip_verify")) p.insecure_skip_verify = *b;
    }
    if (auto v = s.get("max_in_flight")) {
      if (auto n = read_int(d_, *v, "spec.proxmox.max_in_flight", 1, 256)) p.max_in_flight = static_cast<int>(*n);
    }
    if (auto v = s.get("timeout")) {
      if (auto ms = read_parsed(d_, *v, "spec.proxmox.timeout", parse_duration)) p.timeout = *ms;
    }
    const bool token = s.has("token_id");
    const bool ticket = s.has("user");
    if (token && ticket) {
      d_.error(s.pos(), "'spec.proxmox' sets both token_id and user; choose API token or ticket authentication");
    } else if (!token && !ticket) {
      d_.error(s.pos(), "'spec.proxmox' needs token_id (API token, recommended) or user (ticket authentication)");
    }
    if (token && s.has("token_secret_file") == s.has("token_secret_env")) {
      d_.error(s.pos(), "'spec.proxmox' needs exactly one of token_secret_file and token_secret_env");
    }
    if (ticket && s.has("password_file") == s.has("password_env")) {
      d_.error(s.pos(), "'spec.proxmox' needs exactly one of password_file and password_env");
    }
    if (p.insecure_skip_verify && (s.has("ca_file") || s.has("fingerprint"))) {
      d_.error(
          s.value_pos("insecure_skip_verify"),
          "'spec.proxmox.insecure_skip_verify' contradicts ca_file/fingerprint; remove it to keep verification on");
    }
  }

  void ansible(const YAML::Node& node, const SourcePos& where) {
    Section s(d_, node, "spec.ansible", kAnsibleKeys, where);
    if (!s.valid()) return;
    auto& a = out_.ansible;
    if (s.require("inventory")) a.inventory = file_field(s, "inventory");
    if (auto v = s.get("playbook_command")) {
      if (auto c = read_string(d_, *v, "spec.ansible.playbook_command")) a.playbook_command = *c;
    }
    if (auto v = s.get("forks")) {
      if (auto n = read_int(d_, *v, "spec.ansible.forks", 1, 1000)) a.forks = static_cast<int>(*n);
    }
    if (auto v = s.get("timeout")) {
      if (auto ms = read_parsed(d_, *v, "spec.ansible.timeout", parse_duration)) a.timeout = *ms;
    }
    // Each guest's own limit, below the run's by time for Ansible's own limit (15 s after the
    // guest's) and the run's end: one hung guest then fails alone.
    if (auto v = s.get("guest_timeout")) {
      if (auto ms = read_parsed(d_, *v, "spec.ansible.guest_timeout", parse_duration)) {
        if (*ms < std::chrono::seconds(1) || *ms + std::chrono::seconds(30) > a.timeout) {
          d_.error(d_.pos(*v), "'spec.ansible.guest_timeout' is " + v->Scalar() +
                                   "; it must be at least 1s and 30s below spec.ansible.timeout (" +
                                   std::to_string(a.timeout.count() / 1000) + "s), so that one hung guest fails alone");
        } else {
          a.guest_timeout = *ms;
        }
      }
    } else {
      a.guest_timeout = std::max<std::chrono::milliseconds>(std::chrono::seconds(1), a.timeout / 2);
    }
    a.private_key_file = file_field(s, "private_key_file");
    a.known_hosts_file = file_field(s, "known_hosts_file");
    a.vault_password_file = file_field(s, "vault_password_file");
    if (auto v = s.get("remote_user")) {
      if (auto u = read_string(d_, *v, "spec.ansible.remote_user")) a.remote_user = *u;
    }
    if (auto v = s.get("become")) {
      if (auto b = read_bool(d_, *v, "spec.ansible.become")) a.become = *b;
    }
    if (auto v = s.get("share_connections")) {
      if (auto b = read_bool(d_, *v, "spec.ansible.share_connections")) a.share_connections = *b;
    }
    // Each checked on its own, so the message points at the key that is wrong.
    auto become_field = [&](const char* key, std::string ansible::Become::*field, std::string& into) {
      auto v = s.get(key);
      if (!v) return;
      auto text = read_string(d_, *v, std::string("spec.ansible.") + key);
      if (!text) return;
      ansible::Become one;
      one.*field = *text;
      if (auto ok = ansible::validate_become(one); !ok) {
        d_.error(s.value_pos(key), ok.error().what + " (" + ok.error().hint + ")");
      } else if (!a.become) {
        d_.error(s.value_pos(key), std::string("'spec.ansible.") + key +
                                       "' has no effect without 'become: true'; add that, or remove this key");
      } else {
        into = *text;
      }
    };
    become_field("become_user", &ansible::Become::user, a.become_user);
    become_field("become_method", &ansible::Become::method, a.become_method);
  }

  Decoder& d_;
  ControllerSettings& out_;
  std::filesystem::path base_;
};

}  // namespace

std::vector<policy::KeyTable> controller_key_tables() {
  return {{"", policy::kDocumentKeys},    {"metadata", kMetadataKeys},    {"spec", kControllerSpecKeys},
          {"spec.proxmox", kProxmoxKeys}, {"spec.ansible", kAnsibleKeys}, {"spec.retention", kRetentionKeys},
          {"spec.observe", kObserveKeys}};
}

std::span<const std::string_view> inline_secret_keys() {
  return kInlineSecretKeys;
}

policy::DocumentKind controller_kind(std::vector<ControllerSettings>& into) {
  return {"Controller", [&into](Decoder& d, const Section& top, const SourcePos& doc) {
            decode_document(d, doc, into, [&](ControllerSettings& c) { ControllerDecoder(d, c).decode(top); });
          }};
}

LoadResult load_text(std::string_view text, const std::string& file_name) {
  LoadResult r;
  const std::array kinds{controller_kind(r.controllers)};
  static_cast<policy::LoadResult&>(r) = policy::load_text(text, file_name, kinds);
  return r;
}

LoadResult load_paths(std::span<const std::filesystem::path> inputs) {
  LoadResult r;
  const std::array kinds{controller_kind(r.controllers)};
  static_cast<policy::LoadResult&>(r) = policy::load_paths(inputs, kinds);
  return r;
}

Result<ControllerSettings> load_controller_settings(const std::filesystem::path& file) {
  std::array<std::filesystem::path, 1> inputs{file};
  auto r = load_paths(inputs);
  if (!r.diagnostics.empty()) {
    Error e{r.diagnostics.front().message, r.diagnostics.front().pos.to_string(), {}};
    if (r.diagnostics.size() > 1) {
      e.hint = std::to_string(r.diagnostics.size() - 1) + " more problem(s); run 'pathwarden validate " +
               file.string() + "' to see all";
    }
    return std::unexpected(e);
  }
  if (r.controllers.size() != 1 || !r.paths.empty()) {
    return fail("expected exactly one 'kind: Controller' document", file.string(),
                "controller settings live in their own file, apart from policies");
  }
  return r.controllers.front();
}

}  // namespace pw::settings
