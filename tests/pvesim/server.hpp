// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// pvesim's HTTPS server (Boost.Beast, in server.cpp only): TLS on loopback, keep-alive, requests
// handed to the Simulator on a worker pool so that slow handlers (hooks, config locks) never
// stall the I/O threads.
#include <memory>
#include <string>

namespace pvesim {

class Simulator;

struct ServerOptions {
  std::string address = "127.0.0.1";
  unsigned short port = 0;  // 0 = any free port
  int io_threads = 2;
  int workers = 8;
};

class Server {
 public:
  // Binds and listens; throws std::runtime_error with a readable message on failure.
  Server(const ServerOptions& options, const std::string& cert_pem, const std::string& key_pem, Simulator& simulator);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  unsigned short port() const;
  // Serves until SIGINT or SIGTERM (or stop()).
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pvesim
