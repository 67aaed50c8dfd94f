// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/client_options.hpp"

#include <sys/stat.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace pw::proxmox {

Secret::~Secret() {
  // Best effort: the bytes do not outlive the value in this buffer.
  volatile char* p = value_.data();
  for (std::size_t i = 0; i < value_.size(); ++i) p[i] = 0;
}

namespace {

Result<Secret> first_line_secret(std::string text, const std::string& origin, const std::string& hint) {
  if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty()) return fail("the secret is empty", origin, hint);
  return Secret(std::move(text));
}

}  // namespace

Result<Secret> load_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read the secret file", path, "check that it exists and is readable by this user");
  // As ssh refuses a private key others can read: a token every local user can read is no secret.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(std::string("the secret file is readable by every user (mode ") + mode + ")", path,
                "chmod o-r " + path + " (0600, or 0640 with a group of its own)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return first_line_secret(std::move(text).str(), path, "put the secret on the file's first line");
}

Result<Secret> load_secret_env(const std::string& variable) {
  char* v = std::getenv(variable.c_str());
  if (v == nullptr) {
    return fail("environment variable is not set", "$" + variable, "export it, or name a secret file instead");
  }
  auto secret = first_line_secret(v, "$" + variable, "set it to the secret");
  // Taken once, then gone: no child (git, ansible-playbook, ssh) inherits it, and the bytes in the
  // process's original environment block (what /proc/PID/environ shows) are overwritten.
  for (char* p = v; *p != '\0'; ++p) *p = 'x';
  ::unsetenv(variable.c_str());
  return secret;
}

std::string ApiEndpoint::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return "https://" + (v6 ? "[" + host + "]" : host) + ":" + port;
}

Result<ApiEndpoint> parse_api_url(std::string_view url) {
  const std::string where = "Proxmox URL '" + std::string(url) + "'";
  const std::string example = "e.g. https://pve1.example.com:8006";
  constexpr std::string_view scheme = "https://";
  if (!url.starts_with(scheme)) {
    if (url.starts_with("http://"))
      return fail("plain http is not allowed", where, "Proxmox serves https on port 8006");
    return fail("the URL must start with https://", where, example);
  }
  std::string_view rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return fail("credentials do not belong in the URL", where, "use token_id with a secret file or variable");
  }
  ApiEndpoint ep;
  ep.port = "8006";
  if (authority.starts_with("[")) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("unclosed '[' in the IPv6 address", where, example);
    ep.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(":")) return fail("unexpected text after the IPv6 address", where, example);
      ep.port = std::string(after.substr(1));
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) ep.port = std::string(authority.substr(colon + 1));
  }
  if (ep.host.empty()) return fail("no host name", where, example);
  int port = 0;
  auto [end, ec] = std::from_chars(ep.port.data(), ep.port.data() + ep.port.size(), port);
  if (ec != std::errc{} || end != ep.port.data() + ep.port.size() || port < 1 || port > 65535) {
    return fail("port '" + ep.port + "' is not a number from 1 to 65535", where, example);
  }
  while (path.ends_with("/")) path.remove_suffix(1);
  if (!path.empty() && path != "/api2/json") {
    return fail("unexpected path '" + std::string(path) + "'", where, "give only scheme, host and port; " + example);
  }
  ep.base_path = "/api2/json";
  return ep;
}

Result<std::string> normalize_fingerprint(std::string_view text) {
  std::string hex;
  for (char c : text) {
    if (c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return fail("fingerprint has a character that is not hex: '" + std::string(1, c) + "'", "fingerprint",
                  "copy it from 'openssl x509 -noout -fingerprint -sha256' or the node's ssl_fingerprint");
    }
    hex += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (hex.size() != 64) {
    return fail("a SHA-256 fingerprint has 32 octets, this one has " + std::to_string(hex.size() / 2), "fingerprint",
                "use the SHA-256 fingerprint (AA:BB:...), not SHA-1");
  }
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    if (i != 0) out += ':';
    out += hex.substr(i, 2);
  }
  return out;
}

}  // namespace pw::proxmox
