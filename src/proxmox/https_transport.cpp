// SPDX-License-Identifier: GPL-3.0-or-later
// The only translation unit of pw_proxmox that includes Boost.Beast (it compiles slowly).
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <deque>
#include <list>
#include <optional>
#include <set>
#include <thread>

#include "diagnostics/stop_signals_blocked.hpp"
#include "proxmox/asio_beast.hpp"
#include "proxmox/client_options.hpp"
#include "proxmox/http_transport.hpp"

namespace pw::proxmox {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr auto kMaxIdleAge = std::chrono::seconds(50);

std::string sha256_fingerprint(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (cert == nullptr || X509_digest(cert, EVP_sha256(), md, &len) != 1) return {};
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    if (i != 0) out += ':';
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xF];
  }
  return out;
}

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

struct Connection {
  Connection(asio::io_context& ioc, ssl::context& ctx) : stream(asio::make_strand(ioc), ctx) {}
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  std::string seen_fingerprint;
  std::string verify_error;
  bool fingerprint_mismatch = false;
  Clock::time_point idle_since{};

  void close() {
    boost::system::error_code ec;
    beast::get_lowest_layer(stream).socket().close(ec);
  }
};

struct Exchange {
  HttpRequest request;
  TransportCallback done;
  std::unique_ptr<Connection> conn;
  http::request<http::string_body> message;
  std::optional<http::response_parser<http::string_body>> parser;
  Clock::time_point deadline{};
  bool reused = false;
  bool retried_fresh = false;
  bool sent = false;
};
using ExchangePtr = std::shared_ptr<Exchange>;

bool connection_went_away(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == ssl::error::stream_truncated;
}

class HttpsTransport final : public HttpTransport {
 public:
  HttpsTransport(TransportOptions options, ssl::context ctx)
      : options_(std::move(options)), ctx_(std::move(ctx)), work_(asio::make_work_guard(ioc_)), resolver_(ioc_) {
    thread_ = thread_without_stop_signals([this] { ioc_.run(); });  // stop signals are the main thread's
  }

  HttpsTransport(const HttpsTransport&) = delete;
  HttpsTransport& operator=(const HttpsTransport&) = delete;

  // post() throws only std::bad_alloc and join() only for a thread that is not joinable (the
  // constructor started it): std::terminate is the right end of either, in a destructor.
  ~HttpsTransport() override {  // NOLINT(bugprone-exception-escape)
    asio::post(ioc_, [this] {
      shutting_down_ = true;
      auto queued = std::move(queue_);
      for (auto& ex : queued) complete(ex, shutdown_error(), /*counted=*/false);
      idle_.clear();
      for (auto* ex : active_) {
        if (ex->conn) ex->conn->close();
      }
      for (auto& t : timers_) t->cancel();
      resolver_.cancel();
    });
    work_.reset();
    thread_.join();
  }

  void async_send(HttpRequest request, TransportCallback done) override {
    auto ex = std::make_shared<Exchange>();
    ex->request = std::move(request);
    ex->done = std::move(done);
    asio::post(ioc_, [this, ex] {
      if (shutting_down_) return complete(ex, shutdown_error(), false);
      queue_.push_back(ex);
      pump();
    });
  }

  void schedule(std::chrono::milliseconds delay, std::function<void()> fn) override {
    asio::post(ioc_, [this, delay, fn = std::move(fn)]() mutable {
      auto timer = std::make_shared<asio::steady_timer>(ioc_, delay);
      timers_.insert(timer);
      // Cancelled timers still run fn: a pending operation must always reach its callback.
      timer->async_wait([this, timer, fn = std::move(fn)](const boost::system::error_code&) {
        timers_.erase(timer);
        fn();
      });
    });
  }

 private:
  static std::unexpected<TransportError> shutdown_error() {
    return std::unexpected(
        TransportError{TransportErrorKind::shutdown, "the Proxmox client is shutting down", {}, {}, false});
  }

  void pump() {
    while (in_flight_ < options_.max_in_flight && !queue_.empty()) {
      auto ex = queue_.front();
      queue_.pop_front();
      ++in_flight_;
      active_.insert(ex.get());
      ex->deadline = Clock::now() + options_.timeout;
      start(ex);
    }
  }

  void complete(const ExchangePtr& ex, TransportResult result, bool counted) {
    if (counted) {
      --in_flight_;
      active_.erase(ex.get());
    }
    auto done = std::move(ex->done);
    ex->done = nullptr;
    if (done) done(std::move(result));
    if (counted && !shutting_down_) pump();
  }

  void fail(const ExchangePtr& ex, TransportErrorKind kind, std::string message) {
    TransportError err{kind, std::move(message), {}, {}, ex->sent};
    if (ex->conn) {
      err.seen_fingerprint = ex->conn->seen_fingerprint;
      ex->conn->close();
      ex->conn.reset();
    }
    complete(ex, std::unexpected(std::move(err)), true);
  }

  std::unique_ptr<Connection> take_idle() {
    const auto now = Clock::now();
    while (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      if (now - conn->idle_since < kMaxIdleAge) return conn;
      conn->close();
    }
    return nullptr;
  }

  void start(const ExchangePtr& ex) {
    if (shutting_down_) return complete(ex, shutdown_error(), true);
    // Writes never ride on a pooled connection: if that connection turned out to be dead we could
    // not tell whether Proxmox saw the request, and writes must not be sent twice.
    if (ex->request.idempotent() && !ex->retried_fresh) {
      if (auto conn = take_idle()) {
        ex->conn = std::move(conn);
        ex->reused = true;
        return write(ex);
      }
    }
    ex->reused = false;
    ex->conn = std::make_unique<Connection>(ioc_, ctx_);
    configure_verification(*ex->conn);
    resolver_.async_resolve(
        options_.host, options_.port, tcp::resolver::numeric_service,
        [this, ex](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
          if (ec) {
            return fail(ex, shutting_down_ ? TransportErrorKind::shutdown : TransportErrorKind::resolve,
                        "cannot resolve '" + options_.host + "': " + ec.message());
          }
          connect(ex, results);
        });
  }

  void configure_verification(Connection& conn) {
    auto& stream = conn.stream;
    if (!is_ip_address(options_.host)) SSL_set_tlsext_host_name(stream.native_handle(), options_.host.c_str());
    if (options_.insecure_skip_verify) {
      stream.set_verify_mode(ssl::verify_none);
      return;
    }
    stream.set_verify_mode(ssl::verify_peer);
    Connection* c = &conn;
    if (!options_.fingerprint.empty()) {
      // Pinned: only the server certificate's SHA-256 counts, like Proxmox's own API client.
      stream.set_verify_callback([c, pinned = options_.fingerprint](bool, ssl::verify_context& vc) {
        X509_STORE_CTX* store = vc.native_handle();
        c->seen_fingerprint = sha256_fingerprint(X509_STORE_CTX_get0_cert(store));
        if (c->seen_fingerprint == pinned) return true;
        c->fingerprint_mismatch = true;
        return false;
      });
      return;
    }
    stream.set_verify_callback([c, host = options_.host](bool preverified, ssl::verify_context& vc) {
      X509_STORE_CTX* store = vc.native_handle();
      c->seen_fingerprint = sha256_fingerprint(X509_STORE_CTX_get0_cert(store));
      if (!preverified) {
        c->verify_error = X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
        return false;
      }
      if (!ssl::host_name_verification(host)(preverified, vc)) {
        c->verify_error = "the certificate is not valid for '" + host + "'";
        return false;
      }
      return true;
    });
  }

  void connect(const ExchangePtr& ex, const tcp::resolver::results_type& results) {
    auto& layer = beast::get_lowest_layer(ex->conn->stream);
    layer.expires_at(ex->deadline);
    layer.async_connect(results, [this, ex](const boost::system::error_code& ec, const tcp::endpoint&) {
      if (ec == beast::error::timeout) return fail(ex, TransportErrorKind::timeout, timeout_message("connecting"));
      if (ec) {
        return fail(ex, TransportErrorKind::connect,
                    "cannot connect to " + options_.host + ":" + options_.port + ": " + ec.message());
      }
      handshake(ex);
    });
  }

  void handshake(const ExchangePtr& ex) {
    beast::get_lowest_layer(ex->conn->stream).expires_at(ex->deadline);
    ex->conn->stream.async_handshake(ssl::stream_base::client, [this, ex](const boost::system::error_code& ec) {
      if (!ec) return write(ex);
      if (ec == beast::error::timeout) return fail(ex, TransportErrorKind::timeout, timeout_message("TLS handshake"));
      Connection& c = *ex->conn;
      TransportError err{TransportErrorKind::tls, {}, c.seen_fingerprint, {}, false};
      if (c.fingerprint_mismatch) {
        err.expected_fingerprint = options_.fingerprint;
        err.message = "the server certificate's SHA-256 fingerprint is " + c.seen_fingerprint + ", not the pinned " +
                      options_.fingerprint;
      } else if (!c.verify_error.empty()) {
        err.message = "the server certificate is not trusted: " + c.verify_error;
      } else {
        err.message = "TLS handshake failed: " + ec.message();
      }
      c.close();
      ex->conn.reset();
      complete(ex, std::unexpected(std::move(err)), true);
    });
  }

  void write(const ExchangePtr& ex) {
    auto& msg = ex->message;
    msg = {};
    msg.method_string(ex->request.method);
    msg.target(ex->request.target);
    msg.version(11);
    msg.set(http::field::host,
            options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host);
    msg.set(http::field::user_agent, "pathwarden/" PW_VERSION);
    for (const auto& [name, value] : ex->request.headers) msg.set(name, value);
    msg.body() = ex->request.body;
    msg.keep_alive(true);
    msg.prepare_payload();
    beast::get_lowest_layer(ex->conn->stream).expires_at(ex->deadline);
    ex->sent = true;
    http::async_write(ex->conn->stream, msg, [this, ex](const boost::system::error_code& ec, std::size_t) {
      if (!ec) return read(ex);
      if (retry_on_fresh_connection(ex, ec)) return;
      if (ec == beast::error::timeout) return fail(ex, TransportErrorKind::timeout, timeout_message("sending"));
      fail(ex, TransportErrorKind::closed, "connection lost while sending: " + ec.message());
    });
  }

  void read(const ExchangePtr& ex) {
    ex->parser.emplace();
    ex->parser->body_limit(options_.max_body_bytes);
    beast::get_lowest_layer(ex->conn->stream).expires_at(ex->deadline);
    http::async_read(ex->conn->stream, ex->conn->buffer, *ex->parser,
                     [this, ex](const boost::system::error_code& ec, std::size_t bytes) {
                       if (ec) {
                         if (bytes == 0 && retry_on_fresh_connection(ex, ec)) return;
                         if (ec == beast::error::timeout) {
                           return fail(ex, TransportErrorKind::timeout, timeout_message("waiting for the answer"));
                         }
                         if (connection_went_away(ec)) {
                           return fail(ex, TransportErrorKind::closed,
                                       "the server closed the connection before answering (" + ec.message() + ")");
                         }
                         return fail(ex, TransportErrorKind::protocol, "unreadable HTTP answer: " + ec.message());
                       }
                       finish(ex);
                     });
  }

  // A pooled connection the server already closed fails at once; a GET may go again on a new one.
  bool retry_on_fresh_connection(const ExchangePtr& ex, const boost::system::error_code& ec) {
    if (!ex->reused || ex->retried_fresh || !ex->request.idempotent() || !connection_went_away(ec)) return false;
    ex->conn->close();
    ex->conn.reset();
    ex->retried_fresh = true;
    ex->sent = false;
    start(ex);
    return true;
  }

  void finish(const ExchangePtr& ex) {
    auto res = ex->parser->release();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    out.reason = std::string(res.reason());
    out.content_type = std::string(res[http::field::content_type]);
    out.body = std::move(res.body());
    auto conn = std::move(ex->conn);
    if (res.keep_alive() && !shutting_down_ && static_cast<int>(idle_.size()) < options_.max_in_flight) {
      conn->idle_since = Clock::now();
      idle_.push_back(std::move(conn));
    } else {
      conn->close();
    }
    complete(ex, std::move(out), true);
  }

  std::string timeout_message(std::string_view stage) const {
    const auto ms = options_.timeout.count();
    std::string limit = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
    return "no answer within " + limit + " (" + std::string(stage) + ")";
  }

  TransportOptions options_;
  asio::io_context ioc_;
  ssl::context ctx_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::resolver resolver_;
  std::thread thread_;
  // Everything below is touched only on the I/O thread.
  std::deque<ExchangePtr> queue_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::set<Exchange*> active_;
  std::set<std::shared_ptr<asio::steady_timer>> timers_;
  int in_flight_ = 0;
  bool shutting_down_ = false;
};

}  // namespace

Result<std::unique_ptr<HttpTransport>> make_https_transport(TransportOptions options) {
  if (options.host.empty()) return fail("no host given", "Proxmox URL");
  if (options.max_in_flight < 1) options.max_in_flight = 1;
  if (!options.fingerprint.empty()) {
    auto fp = normalize_fingerprint(options.fingerprint);
    if (!fp) return std::unexpected(fp.error());
    options.fingerprint = *fp;
  }
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (!options.insecure_skip_verify && options.fingerprint.empty()) {
    boost::system::error_code ec;
    if (!options.ca_file.empty()) {
      ctx.load_verify_file(options.ca_file, ec);
      if (ec) {
        return fail("cannot load CA certificates: " + ec.message(), options.ca_file,
                    "ca_file must name a readable PEM file with the CA (or the server's self-signed certificate)");
      }
    } else {
      ctx.set_default_verify_paths(ec);
      if (ec) return fail("cannot load the system CA certificates: " + ec.message());
    }
  }
  return std::unique_ptr<HttpTransport>(new HttpsTransport(std::move(options), std::move(ctx)));
}

}  // namespace pw::proxmox
