// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Errors of the Proxmox API as values a caller can branch on: a digest conflict means "re-read and
// re-plan", a locked VM means "try later", a missing privilege names the privilege. None of them
// ever carries a secret.
#include <expected>
#include <map>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::proxmox {

enum class ApiErrorKind {
  transport,        // no connection, or the connection broke
  tls,              // certificate not trusted, or not the pinned fingerprint
  timeout,          // no complete answer in time
  auth,             // 401: bad token, password, ticket or CSRF token
  permission,       // 403: a privilege is missing
  not_found,        // the VM, node or path does not exist
  digest_conflict,  // 500 "checksum mismatch": someone changed the config since it was read
  locked,           // 500 "VM is locked (backup)"
  busy,             // 500 "can't lock file ... got timeout": another task holds the config lock
  parameter,        // 400: Proxmox rejected parameters (see field_errors)
  task_failed,      // a task ended with an error exit status
  http,             // any other HTTP error status
  protocol,         // an answer that is not what the API returns
  invalid_request,  // refused by this client before sending (e.g. a netN without its MAC)
};

std::string_view to_string(ApiErrorKind kind);

struct ApiError {
  ApiErrorKind kind = ApiErrorKind::http;
  std::string message;  // what is wrong, in Proxmox's words where it has them
  std::string where;    // "GET https://pve1:8006/api2/json/nodes/pve1/qemu/101/config"
  std::string hint;     // what to do about it

  int http_status = 0;
  std::string reason;                               // Proxmox's reason phrase
  std::map<std::string, std::string> field_errors;  // 400: parameter -> message
  std::string permission_path;                      // 403: "/vms/101"
  std::string missing_privilege;                    // 403: "VM.Config.Network"
  std::string lock;                                 // locked: "backup"
  std::string expected_fingerprint;                 // tls: the pinned one
  std::string seen_fingerprint;                     // tls: the server's certificate
  std::string task_exitstatus;                      // task_failed: Proxmox's exit status text
  bool may_have_applied = false;                    // a write whose answer was lost: re-read before deciding anything
  int attempts = 1;                                 // how many times the request was sent

  // Every user-facing message takes this form: "where: what (hint)".
  Error to_error() const;
  std::string to_string() const { return to_error().to_string(); }
};

template <class T>
using ApiResult = std::expected<T, ApiError>;
using ApiStatus = std::expected<void, ApiError>;

inline std::unexpected<ApiError> api_fail(ApiError e) {
  return std::unexpected<ApiError>(std::move(e));
}

// Maps an HTTP error answer (status >= 400) of the Proxmox API to a typed error. `body` is the raw
// response body (JSON with data/errors/message, or empty for auth failures).
ApiError error_from_response(int status, std::string_view reason, std::string_view body, std::string where);

// Whether a failed read may be sent again: transport trouble, timeouts and 5xx answers that are not
// one of Proxmox's definite refusals. Writes are never retried this way.
bool is_retryable_read_error(const ApiError& error);

}  // namespace pw::proxmox
