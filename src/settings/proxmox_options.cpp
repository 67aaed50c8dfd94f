// SPDX-License-Identifier: GPL-3.0-or-later
#include "settings/proxmox_options.hpp"

namespace pw::settings {

Result<proxmox::ClientOptions> proxmox_client_options(const ControllerSettings& settings) {
  const auto& p = settings.proxmox;
  proxmox::ClientOptions o;
  o.url = p.url;
  o.token_id = p.token_id;
  o.user = p.user;
  o.ca_file = p.ca_file;
  o.fingerprint = p.fingerprint;
  o.insecure_skip_verify = p.insecure_skip_verify;
  o.max_in_flight = p.max_in_flight;
  o.timeout = p.timeout;
  // The decoder lets through exactly one of the file and the variable.
  auto secret = [](const std::string& file, const std::string& env) -> Result<proxmox::Secret> {
    if (!file.empty()) return proxmox::load_secret_file(file);
    return proxmox::load_secret_env(env);
  };
  if (!p.token_id.empty()) {
    auto s = secret(p.token_secret_file, p.token_secret_env);
    if (!s) return std::unexpected(s.error());
    o.token_secret = std::move(*s);
  } else {
    auto s = secret(p.password_file, p.password_env);
    if (!s) return std::unexpected(s.error());
    o.password = std::move(*s);
  }
  return o;
}

}  // namespace pw::settings
