// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs tests/pvesim as a child process on a free loopback port for one test, and talks to its
// admin API (/pvesim/...) to inject faults and read what it saw. (The Python tests' counterpart:
// tests/pwtest/pvesim_process.py.)
#include <sys/types.h>

#include <boost/json/value.hpp>
#include <memory>
#include <string>
#include <vector>

#include "proxmox/client.hpp"
#include "proxmox/http_transport.hpp"

namespace pw::proxmox::testing {

class PvesimProcess {
 public:
  // Starts pvesim with the given extra arguments and waits until it listens.
  explicit PvesimProcess(std::vector<std::string> args);
  ~PvesimProcess();
  PvesimProcess(const PvesimProcess&) = delete;
  PvesimProcess& operator=(const PvesimProcess&) = delete;

  const std::string& url() const { return url_; }
  const std::string& fingerprint() const { return fingerprint_; }
  const std::string& ca_file() const { return ca_file_; }
  const std::string& dir() const { return dir_; }

  // Options for a client with the default test token (root@pam!pw=s3cret unless args say otherwise),
  // verifying TLS with pvesim's certificate, fast retries.
  ClientOptions client_options(std::string token_id = "root@pam!pw", std::string secret = "s3cret") const;

  // One HTTPS request as given (TLS pinned to pvesim's certificate), for protocol-level checks.
  HttpResponse raw(HttpRequest request);
  // Admin API: JSON in, the "data" member out. Throws on failure (test setup errors).
  boost::json::value admin(const std::string& method, const std::string& path, const std::string& body = "");
  // How many requests matching "METHOD /pattern" pvesim has seen, e.g. "PUT /nodes/{node}/qemu/{vmid}/config".
  int request_count(const std::string& key);
  boost::json::value guest_state(int vmid);

  // SIGTERM, then waits; returns pvesim's exit status (0 = clean shutdown, state dumped).
  int stop();

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::string url_;
  std::string fingerprint_;
  std::string ca_file_;
};

// The fleet pvesim generates with --vms: guest 100+i lives on node pve(1 + i % 3).
inline VmRef fleet_vm(int vmid) {
  return VmRef{"pve" + std::to_string(1 + (vmid - 100) % 3), vmid};
}

// A client with these options; throws std::runtime_error with the reason when it cannot be made.
std::unique_ptr<Client> make_client(const ClientOptions& options);

// Default arguments most tests use: a token with every privilege, a user, no auth delay, short tasks.
std::vector<std::string> default_pvesim_args();

// A hook script that appends "EVENT VMID EXTRA CONFIG_JSON" lines to `log`, and fails when the file
// `fail_flag` exists (printing its content to stderr). Returns the script's path.
std::string write_recording_hook(const std::string& dir, const std::string& log, const std::string& fail_flag);

std::string read_file(const std::string& path);

}  // namespace pw::proxmox::testing
