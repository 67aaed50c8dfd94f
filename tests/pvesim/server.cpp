// SPDX-License-Identifier: GPL-3.0-or-later
// The only pvesim translation unit that includes Boost.Beast.
#include "server.hpp"

#include <cctype>
#include <ctime>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "proxmox/asio_beast.hpp"
#include "simulator.hpp"

namespace pvesim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

std::string http_date() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ssl::context& ctx, asio::thread_pool& workers, Simulator& sim)
      : stream_(std::move(socket), ctx), timer_(stream_.get_executor()), workers_(workers), sim_(sim) {}

  void start() {
    sim_.note_connection();
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->handshake(); });
  }

 private:
  void handshake() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
    stream_.async_handshake(ssl::stream_base::server, [self = shared_from_this()](const beast::error_code& ec) {
      if (!ec) self->read();
    });
  }

  void read() {
    parser_.emplace();
    parser_->body_limit(64u << 20);
    // pveproxy drops idle keep-alive connections too; clients must cope.
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(60));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
      if (ec) return self->close();
      self->on_request();
    });
  }

  void on_request() {
    auto& msg = parser_->get();
    ApiRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& f : msg) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[name] = std::string(f.value());
    }
    req.body = std::move(msg.body());
    keep_alive_ = msg.keep_alive();
    beast::get_lowest_layer(stream_).expires_never();
    asio::post(workers_, [self = shared_from_this(), req = std::move(req)] {
      ApiResponse resp = self->sim_.handle(req);
      auto answer = [self](ApiResponse&& r) {
        asio::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable { self->respond(std::move(r)); });
      };
      if (!resp.deferred) return answer(std::move(resp));
      // A pvedaemon worker answers later, from its own thread; this worker is free at once.
      auto start = std::move(resp.deferred);
      start([answer, delay = resp.delay_ms](ApiResponse&& r) {
        r.delay_ms += delay;
        answer(std::move(r));
      });
    });
  }

  void respond(ApiResponse resp) {
    if (resp.delay_ms <= 0) return send(std::move(resp));
    timer_.expires_after(std::chrono::milliseconds(resp.delay_ms));
    timer_.async_wait([self = shared_from_this(), resp = std::move(resp)](const beast::error_code&) mutable {
      self->send(std::move(resp));
    });
  }

  void send(ApiResponse resp) {
    if (resp.drop) return close();  // no answer, no TLS close_notify: a connection that just died
    res_ = {};
    res_.result(static_cast<unsigned>(resp.status));
    res_.reason(resp.reason);
    res_.version(11);
    res_.set(http::field::server, "pve-api-daemon/3.0");
    res_.set(http::field::date, http_date());
    res_.set(http::field::cache_control, "max-age=0");
    res_.set(http::field::pragma, "no-cache");
    res_.set(http::field::expires, http_date());
    if (!resp.content_type.empty()) res_.set(http::field::content_type, resp.content_type);
    res_.body() = std::move(resp.body);
    res_.keep_alive(keep_alive_);
    res_.prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
    http::async_write(stream_, res_, [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
      if (ec || !self->keep_alive_) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(stream_).close();
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  asio::steady_timer timer_;
  asio::thread_pool& workers_;
  Simulator& sim_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  bool keep_alive_ = true;
};

}  // namespace

struct Server::Impl {
  Impl(const ServerOptions& server_options, Simulator& simulator)
      : options(server_options),
        ctx(ssl::context::tls_server),
        acceptor(ioc),
        signals(ioc, SIGINT, SIGTERM),
        workers(static_cast<std::size_t>(std::max(1, server_options.workers))),
        sim(simulator) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](const beast::error_code& ec, tcp::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted) accept();
        return;
      }
      std::make_shared<Session>(std::move(socket), ctx, workers, sim)->start();
      accept();
    });
  }

  ServerOptions options;
  asio::io_context ioc;
  ssl::context ctx;
  tcp::acceptor acceptor;
  asio::signal_set signals;
  asio::thread_pool workers;
  Simulator& sim;
};

Server::Server(const ServerOptions& options, const std::string& cert_pem, const std::string& key_pem,
               Simulator& simulator)
    : impl_(std::make_unique<Impl>(options, simulator)) {
  auto& ctx = impl_->ctx;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  ctx.use_certificate_chain(asio::buffer(cert_pem));
  ctx.use_private_key(asio::buffer(key_pem), ssl::context::pem);

  beast::error_code ec;
  const auto address = asio::ip::make_address(options.address, ec);
  if (ec) throw std::runtime_error("--listen '" + options.address + "' is not an IP address");
  if (!address.is_loopback()) {
    throw std::runtime_error("--listen " + options.address + " is not a loopback address; pvesim serves loopback only");
  }
  tcp::endpoint endpoint(address, options.port);
  auto& acc = impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + options.address + ":" + std::to_string(options.port) + ": " +
                             ec.message());
  }
}

Server::~Server() {
  stop();
  impl_->workers.join();
}

unsigned short Server::port() const {
  return impl_->acceptor.local_endpoint().port();
}

void Server::run() {
  impl_->accept();
  impl_->signals.async_wait([this](const beast::error_code& ec, int) {
    if (!ec) stop();
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, impl_->options.io_threads); ++i) threads.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (auto& t : threads) t.join();
}

void Server::stop() {
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->signals.cancel(ec);
  });
  impl_->ioc.stop();
}

}  // namespace pvesim
