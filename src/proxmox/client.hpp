// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Proxmox VE API client: Api over HTTPS (http_transport.hpp), with token or ticket auth,
// retries for reads (backoff with jitter), single-shot writes and typed errors.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>

#include "proxmox/api.hpp"
#include "proxmox/client_options.hpp"
#include "proxmox/http_transport.hpp"

namespace pw::proxmox {

// How one raw call (Client::async_call) is sent.
struct CallOptions {
  // Whether a failed read is sent again (with backoff) when the failure may pass. Agent calls
  // say no: a 500 there is the agent's own verdict ("QEMU guest agent is not running" after its
  // 3 s ping), and a repeated exec-status would find its pid forgotten.
  bool retry_transient_reads = true;
  // A non-GET the server may see twice without harm (an agent exec of a read-only script): it
  // may ride on a pooled connection like a read (HttpRequest::harmless_twice), and the transport
  // may send it again on a fresh one when the pooled one turns out closed. The client itself
  // never re-sends it.
  bool harmless_twice = false;
};

class Client final : public Api {
 public:
  // Checks the options (URL, credentials, TLS settings) and starts the transport. No request is
  // sent until the first call.
  static Result<std::unique_ptr<Client>> create(ClientOptions options);
  ~Client() override;

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ApiEndpoint& endpoint() const { return endpoint_; }

  ApiResult<std::string> version();
  ApiResult<std::vector<NodeSummary>> list_nodes();

  ApiResult<std::vector<GuestSummary>> list_guests() override;
  ApiResult<VmConfig> read_config(const VmRef& vm, ConfigView view = ConfigView::current) override;
  ApiResult<PendingConfig> read_pending(const VmRef& vm) override;
  ApiResult<VmStatus> vm_status(const VmRef& vm) override;
  std::vector<ApiResult<VmConfig>> read_configs(std::span<const VmRef> vms,
                                                ConfigView view = ConfigView::current) override;
  std::vector<ApiResult<PendingConfig>> read_pendings(std::span<const VmRef> vms) override;
  std::vector<ApiResult<VmStatus>> vm_statuses(std::span<const VmRef> vms) override;
  std::vector<ApiResult<std::vector<VmStatus>>> node_vm_statuses(std::span<const std::string> nodes) override;

  ApiResult<std::optional<Upid>> update_config(const VmRef& vm, const ConfigChange& change,
                                               WriteMode mode = WriteMode::sync_put) override;
  ApiResult<Upid> start(const VmRef& vm) override;
  ApiResult<Upid> shutdown(const VmRef& vm, std::optional<int> timeout_seconds = std::nullopt) override;
  ApiResult<Upid> stop(const VmRef& vm) override;
  ApiResult<Upid> reboot(const VmRef& vm, std::optional<int> timeout_seconds = std::nullopt) override;

  ApiResult<TaskStatus> task_status(const Upid& upid) override;
  ApiResult<TaskStatus> wait_task(const Upid& upid, const WaitOptions& wait = {}) override;
  ApiResult<VmStatus> wait_vm_status(const VmRef& vm, std::string_view status, const WaitOptions& wait = {},
                                     const RoundCheck& check = {}) override;
  ApiResult<std::vector<TaskStatus>> node_tasks(const std::string& node, const TaskQuery& query) override;
  ApiResult<std::vector<std::string>> task_log(const Upid& upid) override;
  ApiResult<std::map<std::string, std::string>> sdn_vnet_zones() override;
  std::vector<ApiResult<std::set<std::string>>> privileges(std::span<const std::string> paths) override;

  using Params = std::vector<std::pair<std::string, std::string>>;
  using BodyCallback = std::function<void(ApiResult<std::string>)>;

  // The raw call under every typed operation: `path` below /api2/json, params as query (GET) or
  // form body (others; a repeated name is an array, as Proxmox reads `command` of agent/exec). The
  // callback runs on the transport's I/O thread.
  void async_call(std::string method, std::string path, const Params& params, BodyCallback done,
                  CallOptions how = CallOptions{});
  ApiResult<std::string> call(std::string method, std::string path, const Params& params = {});
  // Runs fn on the transport's I/O thread after `delay` (polling without holding a thread).
  void schedule(std::chrono::milliseconds delay, std::function<void()> fn);
  timing::Monotonic now() const { return sleeper().now(); }

 private:
  timing::Sleeper& sleeper() const { return options_.sleeper ? *options_.sleeper : timing::real_sleeper(); }
  struct Call;

  Client(ClientOptions options, ApiEndpoint endpoint, std::unique_ptr<HttpTransport> transport);

  void send(const std::shared_ptr<Call>& call);
  void on_result(const std::shared_ptr<Call>& call, TransportResult result);
  ApiError transport_error(const Call& call, const TransportError& error) const;
  void add_auth_headers(HttpRequest& request);
  ApiStatus ensure_ticket();
  void async_login(std::function<void(ApiStatus)> done);
  std::chrono::milliseconds backoff(int attempt);

  template <class T, class Parse>
  std::vector<ApiResult<T>> read_many(std::span<const VmRef> vms, const std::function<std::string(const VmRef&)>& path,
                                      const Params& params, Parse parse);

  ClientOptions options_;
  ApiEndpoint endpoint_;

  std::mutex auth_mutex_;
  std::string ticket_;  // PVEAuthCookie value (ticket mode)
  std::string csrf_token_;
  std::chrono::steady_clock::time_point ticket_time_{};
  bool login_running_ = false;  // one login at a time; the others wait for its outcome
  std::vector<std::function<void(ApiStatus)>> login_waiters_;

  std::mutex rng_mutex_;
  std::mt19937 rng_;

  // Last, so it is destroyed first: its destructor joins the I/O thread, whose callbacks use the
  // members above.
  std::unique_ptr<HttpTransport> transport_;
};

}  // namespace pw::proxmox
