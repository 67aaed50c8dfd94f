// SPDX-License-Identifier: GPL-3.0-or-later
// Over 400 lines on purpose: one Api implementation, each endpoint a few lines; split by endpoint it would scatter the
// retry, auth and path rules they share.
#include "proxmox/client.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <regex>

#include "proxmox/api_json.hpp"
#include "proxmox/countdown.hpp"

namespace pw::proxmox {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTicketRenewAge = std::chrono::hours(1);  // tickets last 2 h

// One path segment; ':' '@' '!' stay (UPIDs and token ids carry them).
std::string segment(std::string_view s) {
  return json::percent_encode(s, ":@!");
}

std::string form(const Client::Params& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out += '&';
    out += json::form_encode(k) + "=" + json::form_encode(v);
  }
  return out;
}

std::string vm_path(const VmRef& vm) {
  return "/nodes/" + segment(vm.node) + "/qemu/" + std::to_string(vm.vmid);
}

ApiError invalid_request(std::string message, std::string where, std::string hint) {
  ApiError e;
  e.kind = ApiErrorKind::invalid_request;
  e.message = std::move(message);
  e.where = std::move(where);
  e.hint = std::move(hint);
  e.attempts = 0;
  return e;
}

ApiError protocol_error(const Error& error, std::string where) {
  ApiError e;
  e.kind = ApiErrorKind::protocol;
  e.message = error.what;
  e.hint = error.hint;
  e.where = std::move(where);
  return e;
}

template <class T>
ApiResult<T> lift(Result<T> r, const std::string& where) {
  if (!r) return api_fail(protocol_error(r.error(), where));
  return std::move(*r);
}

bool valid_token_id(const std::string& id) {
  static const std::regex re(R"(^[^@!\s]+@[^@!\s]+![A-Za-z][A-Za-z0-9._-]*$)");
  return std::regex_match(id, re);
}

}  // namespace

struct Client::Call {
  std::string method;
  std::string path;    // below /api2/json, for logs
  std::string target;  // full request target
  std::string body;
  std::string where;
  bool read = false;
  bool login = false;
  bool relogged = false;
  CallOptions how;
  int attempt = 0;
  BodyCallback done;
};

Result<std::unique_ptr<Client>> Client::create(ClientOptions options) {
  auto endpoint = parse_api_url(options.url);
  if (!endpoint) return std::unexpected(endpoint.error());
  const std::string where = "Proxmox settings for " + endpoint->url();
  if (!options.token_id.empty()) {
    if (!valid_token_id(options.token_id)) {
      return fail("token id '" + options.token_id + "' is not USER@REALM!TOKENNAME", where,
                  "e.g. pathwarden@pve!reconcile, as shown under Datacenter > Permissions > API Tokens");
    }
    if (options.token_secret.empty())
      return fail("the API token secret is empty", where, "name a secret file or variable");
  } else if (!options.user.empty()) {
    if (options.user.find('@') == std::string::npos) {
      return fail("user '" + options.user + "' has no realm", where, "write name@realm, e.g. root@pam");
    }
    if (options.password.empty()) return fail("the password is empty", where, "name a password file or variable");
  } else {
    return fail("no credentials", where, "set token_id with a secret file or variable (or user with a password)");
  }
  if (options.insecure_skip_verify && (!options.fingerprint.empty() || !options.ca_file.empty())) {
    return fail("insecure_skip_verify contradicts ca_file/fingerprint", where, "pin the fingerprint and drop insecure");
  }
  if (!options.fingerprint.empty()) {
    auto fp = normalize_fingerprint(options.fingerprint);
    if (!fp) return std::unexpected(fp.error().with_where(where));
    options.fingerprint = *fp;
  }
  if (options.insecure_skip_verify) {
    spdlog::warn(
        "TLS certificate verification is OFF for {}: anyone on the network path can read the API "
        "credentials and change VMs. Pin the certificate fingerprint instead.",
        endpoint->url());
  }
  TransportOptions t;
  t.host = endpoint->host;
  t.port = endpoint->port;
  t.ca_file = options.ca_file;
  t.fingerprint = options.fingerprint;
  t.insecure_skip_verify = options.insecure_skip_verify;
  t.max_in_flight = std::max(1, options.max_in_flight);
  t.timeout = options.timeout;
  auto transport = make_https_transport(std::move(t));
  if (!transport) return std::unexpected(transport.error());
  ApiEndpoint ep = *endpoint;
  return std::unique_ptr<Client>(new Client(std::move(options), std::move(ep), std::move(*transport)));
}

Client::Client(ClientOptions options, ApiEndpoint endpoint, std::unique_ptr<HttpTransport> transport)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      rng_(std::random_device{}()),
      transport_(std::move(transport)) {}

Client::~Client() = default;

void Client::async_call(std::string method, std::string path, const Params& params, BodyCallback done,
                        CallOptions how) {
  auto call = std::make_shared<Call>();
  call->method = std::move(method);
  call->read = call->method == "GET";
  call->how = how;
  call->login = path == "/access/ticket";
  call->target = endpoint_.base_path + path;
  if (call->read || call->method == "DELETE") {
    if (!params.empty()) call->target += "?" + form(params);
  } else {
    call->body = form(params);
  }
  call->where = call->method + " " + endpoint_.url() + call->target;
  call->path = std::move(path);
  call->done = std::move(done);

  bool need_login = false;
  if (options_.token_id.empty() && !call->login) {
    std::lock_guard lock(auth_mutex_);
    need_login = ticket_.empty() || Clock::now() - ticket_time_ > kTicketRenewAge;
  }
  if (!need_login) return send(call);
  async_login([this, call](ApiStatus st) {
    if (!st) return call->done(std::unexpected(st.error()));
    send(call);
  });
}

ApiResult<std::string> Client::call(std::string method, std::string path, const Params& params) {
  auto promise = std::make_shared<std::promise<ApiResult<std::string>>>();
  auto future = promise->get_future();
  async_call(std::move(method), std::move(path), params,
             [promise](ApiResult<std::string> r) { promise->set_value(std::move(r)); });
  return future.get();
}

void Client::schedule(std::chrono::milliseconds delay, std::function<void()> fn) {
  transport_->schedule(delay, std::move(fn));
}

void Client::add_auth_headers(HttpRequest& request) {
  request.headers.emplace_back("Accept", "application/json");
  if (request.method != "GET") request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  if (!options_.token_id.empty()) {
    request.headers.emplace_back("Authorization",
                                 "PVEAPIToken=" + options_.token_id + "=" + options_.token_secret.reveal());
    return;
  }
  std::lock_guard lock(auth_mutex_);
  if (ticket_.empty()) return;
  request.headers.emplace_back("Cookie", "PVEAuthCookie=" + ticket_);
  if (request.method != "GET") request.headers.emplace_back("CSRFPreventionToken", csrf_token_);
}

void Client::send(const std::shared_ptr<Call>& call) {
  ++call->attempt;
  HttpRequest req;
  req.method = call->method;
  req.target = call->target;
  req.body = call->body;
  req.harmless_twice = call->how.harmless_twice;
  if (call->login) {
    req.headers.emplace_back("Accept", "application/json");
    req.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  } else {
    add_auth_headers(req);
  }
  transport_->async_send(std::move(req), [this, call](TransportResult r) { on_result(call, std::move(r)); });
}

ApiError Client::transport_error(const Call& call, const TransportError& error) const {
  ApiError e;
  e.where = call.where;
  e.message = error.message;
  e.seen_fingerprint = error.seen_fingerprint;
  switch (error.kind) {
    case TransportErrorKind::tls:
      e.kind = ApiErrorKind::tls;
      e.expected_fingerprint = error.expected_fingerprint;
      if (!error.expected_fingerprint.empty()) {
        e.hint =
            "if the node's certificate was replaced on purpose, pin the new fingerprint (see 'pvenode cert "
            "info' on the node); otherwise something is intercepting the connection: do not connect";
      } else if (!error.seen_fingerprint.empty()) {
        e.hint =
            "trust the cluster CA (ca_file, e.g. /etc/pve/pve-root-ca.pem) or pin the certificate "
            "(fingerprint " +
            error.seen_fingerprint + ") after checking it on the node";
      } else {
        e.hint = "check that the URL points at the Proxmox API (port 8006)";
      }
      break;
    case TransportErrorKind::timeout:
      e.kind = ApiErrorKind::timeout;
      break;
    case TransportErrorKind::protocol:
      e.kind = ApiErrorKind::protocol;
      break;
    default:
      e.kind = ApiErrorKind::transport;
      if (error.kind == TransportErrorKind::connect || error.kind == TransportErrorKind::resolve) {
        e.hint = "check the URL and that pveproxy runs and is reachable from here";
      }
  }
  if (!call.read && error.request_sent) {
    e.may_have_applied = true;
    e.hint =
        "the write may or may not have been applied: re-read the VM config before deciding anything "
        "(writes are never sent twice)";
  }
  return e;
}

void Client::on_result(const std::shared_ptr<Call>& call, TransportResult result) {
  ApiError err;
  if (!result) {
    err = transport_error(*call, result.error());
  } else if (result->status >= 200 && result->status < 300) {
    spdlog::debug("{} {} -> {}", call->method, call->path, result->status);
    return call->done(std::move(result->body));
  } else {
    err = error_from_response(result->status, result->reason, result->body, call->where);
    if (call->login && err.kind == ApiErrorKind::auth) {
      err.message = "login as " + options_.user + " failed: " + err.message;
      err.hint = "check the user name (name@realm) and the password";
    }
  }
  spdlog::debug("{} {} failed (attempt {}): {}", call->method, call->path, call->attempt, err.message);
  const bool ticket_mode = options_.token_id.empty();
  if (err.kind == ApiErrorKind::auth && ticket_mode && !call->login && !call->relogged) {
    // The ticket may have expired or the node restarted; log in again once. The request was refused
    // by the auth check, so sending it again cannot apply it twice.
    call->relogged = true;
    {
      std::lock_guard lock(auth_mutex_);
      ticket_.clear();
    }
    async_login([this, call](ApiStatus st) {
      if (!st) return call->done(std::unexpected(st.error()));
      send(call);
    });
    return;
  }
  if (call->read && call->how.retry_transient_reads && is_retryable_read_error(err) &&
      call->attempt < options_.retry.max_attempts) {
    transport_->schedule(backoff(call->attempt), [this, call] { send(call); });
    return;
  }
  err.attempts = call->attempt;
  call->done(std::unexpected(std::move(err)));
}

std::chrono::milliseconds Client::backoff(int attempt) {
  const auto base = options_.retry.base_delay.count();
  const auto cap = options_.retry.max_delay.count();
  long long delay = base;
  for (int i = 1; i < attempt && delay < cap; ++i) delay *= 2;
  delay = std::min<long long>(delay, cap);
  // Half fixed, half random: spreads retries of many clients without ever retrying at once.
  std::lock_guard lock(rng_mutex_);
  std::uniform_int_distribution<long long> jitter(delay / 2, std::max(delay / 2, delay));
  return std::chrono::milliseconds(jitter(rng_));
}

void Client::async_login(std::function<void(ApiStatus)> done) {
  {
    std::lock_guard lock(auth_mutex_);
    login_waiters_.push_back(std::move(done));
    if (login_running_) return;
    login_running_ = true;
  }
  Params params{{"username", options_.user}, {"password", options_.password.reveal()}};
  async_call("POST", "/access/ticket", params, [this](ApiResult<std::string> body) {
    ApiStatus status;
    if (!body) {
      status = std::unexpected(body.error());
    } else if (auto t = json::parse_ticket(*body); !t) {
      status = api_fail(protocol_error(t.error(), "POST " + endpoint_.url() + endpoint_.base_path + "/access/ticket"));
    } else {
      std::lock_guard lock(auth_mutex_);
      ticket_ = t->ticket;
      csrf_token_ = t->csrf_token;
      ticket_time_ = Clock::now();
    }
    std::vector<std::function<void(ApiStatus)>> waiters;
    {
      std::lock_guard lock(auth_mutex_);
      waiters.swap(login_waiters_);
      login_running_ = false;
    }
    for (auto& w : waiters) w(status);
  });
}

template <class T, class Parse>
std::vector<ApiResult<T>> Client::read_many(std::span<const VmRef> vms,
                                            const std::function<std::string(const VmRef&)>& path, const Params& params,
                                            Parse parse) {
  struct Batch : Countdown {
    std::vector<std::optional<ApiResult<T>>> slots;
  };
  auto batch = std::make_shared<Batch>();
  batch->left = vms.size();
  batch->slots.resize(vms.size());
  for (std::size_t i = 0; i < vms.size(); ++i) {
    const std::string p = path(vms[i]);
    const std::string where = "GET " + endpoint_.url() + endpoint_.base_path + p;
    async_call("GET", p, params, [batch, i, vm = vms[i], where, parse](ApiResult<std::string> body) {
      if (!body) {
        batch->slots[i] = std::unexpected(body.error());
      } else {
        batch->slots[i] = lift(parse(*body, vm), where);
      }
      batch->done();
    });
  }
  if (!vms.empty()) batch->wait();
  std::vector<ApiResult<T>> out;
  out.reserve(vms.size());
  for (auto& s : batch->slots) out.push_back(std::move(*s));
  return out;
}

ApiResult<std::string> Client::version() {
  auto body = call("GET", "/version");
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_version(*body), endpoint_.url() + "/version");
}

ApiResult<std::vector<NodeSummary>> Client::list_nodes() {
  auto body = call("GET", "/nodes");
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_nodes(*body), endpoint_.url() + "/nodes");
}

ApiResult<std::vector<GuestSummary>> Client::list_guests() {
  auto body = call("GET", "/cluster/resources", {{"type", "vm"}});
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_guests(*body), endpoint_.url() + "/cluster/resources");
}

ApiResult<VmConfig> Client::read_config(const VmRef& vm, ConfigView view) {
  return std::move(read_configs(std::span(&vm, 1), view).front());
}

std::vector<ApiResult<VmConfig>> Client::read_configs(std::span<const VmRef> vms, ConfigView view) {
  const bool current = view == ConfigView::current;
  Params params;
  if (current) params.emplace_back("current", "1");
  return read_many<VmConfig>(
      vms, [](const VmRef& vm) { return vm_path(vm) + "/config"; }, params,
      [current](std::string_view body, const VmRef& vm) { return json::parse_config(body, vm, current); });
}

ApiResult<PendingConfig> Client::read_pending(const VmRef& vm) {
  return std::move(read_pendings(std::span(&vm, 1)).front());
}

std::vector<ApiResult<PendingConfig>> Client::read_pendings(std::span<const VmRef> vms) {
  return read_many<PendingConfig>(
      vms, [](const VmRef& vm) { return vm_path(vm) + "/pending"; }, {},
      [](std::string_view body, const VmRef& vm) { return json::parse_pending(body, vm); });
}

std::vector<ApiResult<std::set<std::string>>> Client::privileges(std::span<const std::string> paths) {
  std::vector<ApiResult<std::set<std::string>>> out;
  out.reserve(paths.size());
  for (const auto& path : paths) {
    auto body = call("GET", "/access/permissions", {{"path", path}});
    if (!body) {
      out.emplace_back(std::unexpected(body.error()));
      continue;
    }
    out.push_back(lift(json::parse_permissions(*body, path), endpoint_.url() + "/access/permissions"));
  }
  return out;
}

ApiResult<VmStatus> Client::vm_status(const VmRef& vm) {
  return std::move(vm_statuses(std::span(&vm, 1)).front());
}

std::vector<ApiResult<VmStatus>> Client::vm_statuses(std::span<const VmRef> vms) {
  return read_many<VmStatus>(
      vms, [](const VmRef& vm) { return vm_path(vm) + "/status/current"; }, {},
      [](std::string_view body, const VmRef& vm) { return json::parse_vm_status(body, vm); });
}

std::vector<ApiResult<std::vector<VmStatus>>> Client::node_vm_statuses(std::span<const std::string> nodes) {
  // All nodes at once, over the pooled connections; a node is named by a VmRef of vmid 0 here.
  std::vector<VmRef> keys;
  keys.reserve(nodes.size());
  for (const auto& n : nodes) keys.push_back(VmRef{n, 0});
  return read_many<std::vector<VmStatus>>(
      keys, [](const VmRef& n) { return "/nodes/" + segment(n.node) + "/qemu"; }, {{"full", "1"}},
      [](std::string_view body, const VmRef& n) { return json::parse_vm_list(body, n.node); });
}

ApiResult<std::optional<Upid>> Client::update_config(const VmRef& vm, const ConfigChange& change, WriteMode mode) {
  const std::string where = vm.to_string();
  if (change.digest.empty()) {
    return api_fail(invalid_request("refusing to write a VM config without the digest it was planned from", where,
                                    "read the config first and pass its digest"));
  }
  if (change.set.empty() && change.remove.empty()) {
    return api_fail(invalid_request("nothing to change", where, {}));
  }
  Params params;
  for (const auto& [key, value] : change.set) {
    if (is_net_key(key)) {
      auto nic = NetDeviceSpec::parse(value);
      if (!nic) return api_fail(invalid_request(key + ": " + nic.error().what, where, nic.error().hint));
      if (!nic->mac()) {
        return api_fail(invalid_request(key + " has no MAC address: Proxmox would generate a new one and the "
                                              "guest would see a different NIC",
                                        where, "keep the MAC of the config that was read, e.g. virtio=BC:24:11:..."));
      }
    }
    params.emplace_back(key, value);
  }
  if (!change.remove.empty()) {
    std::string joined;
    for (const auto& k : change.remove) joined += (joined.empty() ? "" : ",") + k;
    params.emplace_back("delete", joined);
  }
  params.emplace_back("digest", change.digest);
  const std::string method = mode == WriteMode::sync_put ? "PUT" : "POST";
  auto body = call(method, vm_path(vm) + "/config", params);
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_optional_upid(*body), method + " " + vm_path(vm) + "/config");
}

namespace {

ApiResult<Upid> required_upid(ApiResult<std::string> body, const std::string& where) {
  if (!body) return std::unexpected(body.error());
  auto upid = lift(json::parse_optional_upid(*body), where);
  if (!upid) return std::unexpected(upid.error());
  if (!*upid) return api_fail(protocol_error(Error{"expected a task id, got null", {}, {}}, where));
  return std::move(**upid);
}

}  // namespace

ApiResult<Upid> Client::start(const VmRef& vm) {
  return required_upid(call("POST", vm_path(vm) + "/status/start"), vm.to_string() + " start");
}

ApiResult<Upid> Client::shutdown(const VmRef& vm, std::optional<int> timeout_seconds) {
  Params p;
  if (timeout_seconds) p.emplace_back("timeout", std::to_string(*timeout_seconds));
  return required_upid(call("POST", vm_path(vm) + "/status/shutdown", p), vm.to_string() + " shutdown");
}

ApiResult<Upid> Client::stop(const VmRef& vm) {
  return required_upid(call("POST", vm_path(vm) + "/status/stop"), vm.to_string() + " stop");
}

ApiResult<Upid> Client::reboot(const VmRef& vm, std::optional<int> timeout_seconds) {
  Params p;
  if (timeout_seconds) p.emplace_back("timeout", std::to_string(*timeout_seconds));
  return required_upid(call("POST", vm_path(vm) + "/status/reboot", p), vm.to_string() + " reboot");
}

ApiResult<TaskStatus> Client::task_status(const Upid& upid) {
  auto body = call("GET", "/nodes/" + segment(upid.node) + "/tasks/" + segment(upid.text) + "/status");
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_task_status(*body), upid.text);
}

ApiResult<std::vector<TaskStatus>> Client::node_tasks(const std::string& node, const TaskQuery& query) {
  Params p{{"source", "all"}, {"limit", "100"}};
  if (query.vmid) p.emplace_back("vmid", std::to_string(*query.vmid));
  if (query.since) p.emplace_back("since", std::to_string(*query.since));
  if (!query.typefilter.empty()) p.emplace_back("typefilter", query.typefilter);
  const std::string path = "/nodes/" + segment(node) + "/tasks";
  auto body = call("GET", path, p);
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_task_list(*body), endpoint_.url() + path);
}

ApiResult<std::vector<std::string>> Client::task_log(const Upid& upid) {
  // limit=0 reads to the end (pve-common Tools.pm dump_logfile_by_filehandle).
  const std::string path = "/nodes/" + segment(upid.node) + "/tasks/" + segment(upid.text) + "/log";
  auto body = call("GET", path, {{"start", "0"}, {"limit", "0"}});
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_task_log(*body), upid.text);
}

ApiResult<std::map<std::string, std::string>> Client::sdn_vnet_zones() {
  auto body = call("GET", "/cluster/sdn/vnets");
  if (!body) return std::unexpected(body.error());
  return lift(json::parse_sdn_vnets(*body), endpoint_.url() + "/cluster/sdn/vnets");
}

namespace {

template <class Poll>
auto poll_until(timing::Sleeper& sleeper, const WaitOptions& wait, Poll poll) -> decltype(poll()) {
  const auto deadline = sleeper.now() + wait.timeout;
  auto interval = wait.first_poll;
  while (true) {
    auto r = poll();
    if (!r || r->has_value()) return r;
    const auto now = sleeper.now();
    if (now >= deadline) return r;
    sleeper.sleep(std::chrono::ceil<std::chrono::milliseconds>(std::min<Clock::duration>(interval, deadline - now)));
    interval = std::min(interval * 2, wait.max_poll);
  }
}

std::string seconds(std::chrono::milliseconds ms) {
  return std::to_string((ms.count() + 999) / 1000) + " s";
}

}  // namespace

ApiResult<TaskStatus> Client::wait_task(const Upid& upid, const WaitOptions& wait) {
  auto r = poll_until(sleeper(), wait, [&]() -> ApiResult<std::optional<TaskStatus>> {
    auto st = task_status(upid);
    if (!st) return std::unexpected(st.error());
    if (st->running) return std::optional<TaskStatus>();
    return std::optional<TaskStatus>(std::move(*st));
  });
  if (!r) return std::unexpected(r.error());
  if (!r->has_value()) {
    ApiError e;
    e.kind = ApiErrorKind::timeout;
    e.message = "task " + upid.type + " " + upid.id + " still running after " + seconds(wait.timeout);
    e.where = upid.text;
    e.hint = "it may still finish: look at the task on the node before trying again";
    return api_fail(std::move(e));
  }
  TaskStatus st = std::move(**r);
  if (st.succeeded()) return st;
  ApiError e;
  e.kind = ApiErrorKind::task_failed;
  e.message = "task " + upid.type + " " + upid.id + " failed: " + st.exitstatus;
  e.where = upid.text;
  e.task_exitstatus = st.exitstatus;
  static const std::regex locked_re(R"((?:VM|CT) is locked \(([^)]+)\))");
  if (std::smatch m; std::regex_search(st.exitstatus, m, locked_re)) {
    e.lock = m[1];
    e.hint = "the VM is locked by a '" + e.lock + "' operation; try again once it has finished";
  } else {
    e.hint = "see the task log on the node for details";
  }
  return api_fail(std::move(e));
}

ApiResult<VmStatus> Client::wait_vm_status(const VmRef& vm, std::string_view status, const WaitOptions& wait,
                                           const RoundCheck& check) {
  std::optional<VmStatus> last;
  auto r = poll_until(sleeper(), wait, [&]() -> ApiResult<std::optional<VmStatus>> {
    auto st = vm_status(vm);
    if (!st) return std::unexpected(st.error());
    last = *st;
    if (st->status != status) {
      if (check) {
        if (auto ok = check(); !ok) return std::unexpected(ok.error());
      }
      return std::optional<VmStatus>();
    }
    return std::optional<VmStatus>(std::move(*st));
  });
  if (!r) return std::unexpected(r.error());
  if (!r->has_value()) {
    ApiError e;
    e.kind = ApiErrorKind::timeout;
    e.message = "still '" + (last ? last->status : std::string("?")) + "' after " + seconds(wait.timeout) +
                ", waiting for '" + std::string(status) + "'";
    e.where = vm.to_string();
    e.hint = "check the VM on the node (console, task log)";
    return api_fail(std::move(e));
  }
  return std::move(**r);
}

}  // namespace pw::proxmox
