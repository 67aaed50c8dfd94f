// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/api_error.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <regex>

namespace pw::proxmox {
namespace {

std::string first_line(std::string_view s) {
  auto nl = s.find('\n');
  std::string out(s.substr(0, nl));
  while (!out.empty() && (out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string strip_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  for (auto& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

struct BodyParts {
  std::string message;
  std::map<std::string, std::string> errors;
};

BodyParts parse_body(std::string_view body) {
  BodyParts parts;
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return parts;
  const auto& obj = v.as_object();
  if (auto* m = obj.if_contains("message"); m && m->is_string()) parts.message = std::string(m->as_string());
  if (auto* e = obj.if_contains("errors"); e && e->is_object()) {
    for (const auto& [k, msg] : e->as_object()) {
      parts.errors[std::string(k)] =
          msg.is_string() ? strip_newlines(std::string(msg.as_string())) : boost::json::serialize(msg);
    }
  }
  return parts;
}

}  // namespace

std::string_view to_string(ApiErrorKind kind) {
  switch (kind) {
    case ApiErrorKind::transport:
      return "transport";
    case ApiErrorKind::tls:
      return "tls";
    case ApiErrorKind::timeout:
      return "timeout";
    case ApiErrorKind::auth:
      return "auth";
    case ApiErrorKind::permission:
      return "permission";
    case ApiErrorKind::not_found:
      return "not-found";
    case ApiErrorKind::digest_conflict:
      return "digest-conflict";
    case ApiErrorKind::locked:
      return "locked";
    case ApiErrorKind::busy:
      return "busy";
    case ApiErrorKind::parameter:
      return "parameter";
    case ApiErrorKind::task_failed:
      return "task-failed";
    case ApiErrorKind::http:
      return "http";
    case ApiErrorKind::protocol:
      return "protocol";
    case ApiErrorKind::invalid_request:
      return "invalid-request";
  }
  return "unknown";
}

Error ApiError::to_error() const {
  std::string what = message;
  if (http_status != 0 && kind != ApiErrorKind::task_failed) what = "HTTP " + std::to_string(http_status) + ": " + what;
  for (const auto& [field, msg] : field_errors) what += "; " + field + ": " + msg;
  if (attempts > 1) what += " (after " + std::to_string(attempts) + " attempts)";
  return Error{what, where, hint};
}

// An HTTP answer of the API as a typed error with a hint. Long because it is one classification:
// status first, then the texts Proxmox sends (the only way it names a digest conflict or a lock).
ApiError error_from_response(int status, std::string_view reason, std::string_view body, std::string where) {
  ApiError e;
  e.where = std::move(where);
  e.http_status = status;
  e.reason = first_line(reason);
  BodyParts parts = parse_body(body);
  e.field_errors = std::move(parts.errors);
  // Proxmox puts the message's first line in the reason phrase; newer versions also send it whole.
  std::string full = strip_newlines(!parts.message.empty() ? parts.message : e.reason);
  e.message = full.empty() ? "no reason given" : full;

  static const std::regex permission_re(R"(Permission check failed \(([^,]+), ([^)]+)\))");
  static const std::regex locked_re(R"((?:VM|CT) is locked \(([^)]+)\))");
  std::smatch m;
  // std::regex recurses per character: a megabyte-long message would overflow the stack. The
  // messages matched here are short; only their start is searched.
  const std::string text = e.message.substr(0, 4096);

  if (status == 401) {
    e.kind = ApiErrorKind::auth;
    if (e.message == "no reason given") e.message = "authentication failed";
    e.hint = "check the API token id (USER@REALM!NAME) and its secret, or the user name and password";
  } else if (status == 403) {
    e.kind = ApiErrorKind::permission;
    if (std::regex_search(text, m, permission_re)) {
      e.permission_path = m[1];
      e.missing_privilege = m[2];
      // An any-of check (the method's own, RPCEnvironment.pm check_any) joins them with '|'.
      std::string privs = e.missing_privilege;
      const bool any = privs.find('|') != std::string::npos;
      std::ranges::replace(privs, '|', ' ');
      e.hint = "grant " + (any ? "one of " + privs : privs) + " on " + e.permission_path +
               " to the API token (and to its user when the token has privilege separation)";
    } else {
      e.hint = "the user or API token lacks a privilege for this call";
    }
  } else if (status == 400) {
    e.kind = ApiErrorKind::parameter;
    e.hint = "Proxmox refused the parameters listed; fix them and plan again";
  } else if (status == 404) {
    e.kind = ApiErrorKind::not_found;
  } else if (text.find("checksum mismatch") != std::string::npos ||
             text.find("file change by other user") != std::string::npos ||
             text.find("detected modified configuration") != std::string::npos) {
    e.kind = ApiErrorKind::digest_conflict;
    e.hint = "the VM config changed since it was read; re-read it and plan again (nothing was written)";
  } else if (std::regex_search(text, m, locked_re)) {
    e.kind = ApiErrorKind::locked;
    e.lock = m[1];
    e.hint = "the VM is locked by a '" + e.lock + "' operation; try again once it has finished";
  } else if (text.find("can't lock file") != std::string::npos && text.find("got timeout") != std::string::npos) {
    e.kind = ApiErrorKind::busy;
    e.hint = "another task holds the VM's config lock; try again later";
  } else if (text.find("does not exist") != std::string::npos) {
    e.kind = ApiErrorKind::not_found;
    e.hint = "check the node and vmid (a VM is only found on the node that owns it)";
  } else if (status == 501) {
    e.kind = ApiErrorKind::not_found;
    e.hint = "this Proxmox version does not offer this call";
  } else {
    e.kind = ApiErrorKind::http;
    if (status == 500 && full.empty()) {
      e.hint = "Proxmox gave no reason; a config lock timeout answers this way, so try again later";
    }
  }
  return e;
}

bool is_retryable_read_error(const ApiError& error) {
  switch (error.kind) {
    case ApiErrorKind::transport:
    case ApiErrorKind::timeout:
    case ApiErrorKind::busy:
      return true;
    case ApiErrorKind::http:
      return error.http_status >= 500;
    default:
      return false;
  }
}

}  // namespace pw::proxmox
