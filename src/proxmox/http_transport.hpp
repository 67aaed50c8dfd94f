// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTTPS layer under the Proxmox client, as a small interface: callers hand over requests and
// get callbacks; connection pooling, TLS verification and the bound on requests in flight live
// behind it (https_transport.cpp, the only file that includes Boost.Beast).
#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::proxmox {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, DELETE
  std::string target;  // path and query, already percent-encoded
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // A POST the server may see twice without harm (the caller knows: an agent exec of a read-only
  // script). Saves a TLS handshake per request when thousands go out.
  bool harmless_twice = false;

  // Whether the server may see it twice without harm. Non-idempotent requests always go out on a
  // fresh connection and are never re-sent by the transport.
  bool idempotent() const { return method == "GET" || harmless_twice; }
};

struct HttpResponse {
  int status = 0;
  std::string reason;
  std::string content_type;
  std::string body;
};

enum class TransportErrorKind {
  resolve,   // host name did not resolve
  connect,   // TCP connect failed
  tls,       // handshake failed (certificate, fingerprint, protocol)
  timeout,   // no complete answer before the deadline
  closed,    // connection closed or reset before a complete answer
  protocol,  // not HTTP
  shutdown,  // the transport is shutting down
};

struct TransportError {
  TransportErrorKind kind = TransportErrorKind::connect;
  std::string message;
  std::string seen_fingerprint;      // SHA-256 of the server certificate, when one was seen
  std::string expected_fingerprint;  // the pinned one, for fingerprint mismatches
  bool request_sent = false;         // some bytes of the request reached the socket
};

using TransportResult = std::expected<HttpResponse, TransportError>;
using TransportCallback = std::function<void(TransportResult)>;

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Queues a request; the callback runs once, on the transport's I/O thread. Keep it short.
  virtual void async_send(HttpRequest request, TransportCallback done) = 0;
  // Runs fn on the I/O thread after a delay (retry backoff, task polling).
  virtual void schedule(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

struct TransportOptions {
  std::string host;  // name or address; IPv6 without brackets
  std::string port = "8006";
  std::string ca_file;                // trust these CAs (PEM), with host name verification
  std::string fingerprint;            // pinned SHA-256 of the server certificate, colon-hex; overrides ca_file
  bool insecure_skip_verify = false;  // no verification at all; the caller logs it loudly
  int max_in_flight = 16;
  std::chrono::milliseconds timeout{30000};  // per request, from the moment it leaves the queue
  std::size_t max_body_bytes = 256u << 20;
};

// Builds the Boost.Beast + OpenSSL transport and starts its I/O thread. Fails on unreadable CA
// files or malformed fingerprints; nothing is sent until the first request.
Result<std::unique_ptr<HttpTransport>> make_https_transport(TransportOptions options);

}  // namespace pw::proxmox
