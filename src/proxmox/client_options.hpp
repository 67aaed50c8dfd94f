// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How to reach and authenticate to a Proxmox VE cluster. The controller maps its settings file
// onto this; secrets are read from a file or the environment, never from the command line.
#include <chrono>
#include <optional>
#include <string>

#include "diagnostics/error.hpp"
#include "timing/sleeper.hpp"

namespace pw::proxmox {

// A secret value that does not print: no stream operator, no implicit conversion.
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret&) = default;
  Secret& operator=(const Secret&) = default;
  Secret(Secret&&) noexcept = default;
  Secret& operator=(Secret&&) noexcept = default;
  ~Secret();  // wipes the bytes

  bool empty() const { return value_.empty(); }
  const std::string& reveal() const { return value_; }

 private:
  std::string value_;
};

// Reads a secret from a file (first line, trailing whitespace dropped) or an environment variable.
// Errors name the file or variable, never the value.
Result<Secret> load_secret_file(const std::string& path);
Result<Secret> load_secret_env(const std::string& variable);

struct RetryPolicy {
  int max_attempts = 4;  // reads only; writes go out once
  std::chrono::milliseconds base_delay{200};
  std::chrono::milliseconds max_delay{5000};
};

struct ClientOptions {
  std::string url;  // https://host[:8006][/api2/json]

  // API token: token_id "user@realm!name" plus its secret.
  std::string token_id;
  Secret token_secret;
  // Ticket: user "name@realm" plus password (used when no token is set).
  std::string user;
  Secret password;

  std::string ca_file;                // PEM with the CA that signed the server certificate
  std::string fingerprint;            // pinned SHA-256 of the server certificate (colon-hex); wins over ca_file
  bool insecure_skip_verify = false;  // turns TLS verification off; logged as a warning on every connect

  int max_in_flight = 16;
  std::chrono::milliseconds timeout{30000};  // per HTTP request
  RetryPolicy retry;
  // Waits between task polls (wait_task, reboot_and_wait); nullptr: real time.
  timing::Sleeper* sleeper = nullptr;
};

// The parts of a Proxmox URL: https only; the port defaults to 8006; a trailing /api2/json is allowed.
struct ApiEndpoint {
  std::string host;  // without IPv6 brackets
  std::string port;
  std::string base_path;  // "/api2/json"

  std::string url() const;  // "https://host:port" for messages
};

Result<ApiEndpoint> parse_api_url(std::string_view url);

// "AA:BB:..:FF" (32 octets, upper case) from colon-hex in any case, or 64 bare hex digits.
Result<std::string> normalize_fingerprint(std::string_view text);

}  // namespace pw::proxmox
