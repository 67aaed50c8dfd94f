// SPDX-License-Identifier: GPL-3.0-or-later
// The Proxmox client against tests/pvesim over real HTTPS on loopback: every operation and every
// error kind the client promises. Each test case runs its own pvesim.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "proxmox/api_json.hpp"
#include "proxmox/client.hpp"
#include "pvesim_process.hpp"

using namespace pw::proxmox;
using pw::proxmox::testing::default_pvesim_args;
using pw::proxmox::testing::fleet_vm;
using pw::proxmox::testing::make_client;
using pw::proxmox::testing::PvesimProcess;

namespace {

namespace bj = boost::json;

std::vector<std::string> fleet_args(int vms, std::vector<std::string> extra = {}) {
  auto args = default_pvesim_args();
  args.insert(args.end(), {"--vms", std::to_string(vms)});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

const WaitOptions kWait{std::chrono::seconds(60), std::chrono::milliseconds(10), std::chrono::milliseconds(100)};

NetDeviceSpec nic(const VmConfig& config, const std::string& key) {
  auto text = config.get(key);
  REQUIRE(text);
  auto spec = NetDeviceSpec::parse(*text);
  REQUIRE(spec);
  return *spec;
}

VmConfig read(Client& client, const VmRef& ref, ConfigView view = ConfigView::current) {
  auto c = client.read_config(ref, view);
  if (!c) FAIL(c.error().to_string());
  return *c;
}

// Sets a config directly in pvesim (as if an admin edited the file), so tests do not depend on the
// generated fleet's details.
void set_config(PvesimProcess& sim, int vmid, const std::string& json) {
  sim.admin("PUT", "/pvesim/vms/" + std::to_string(vmid) + "/config", json);
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The config JSON a hook was given, from a recorded "EVENT VMID EXTRA {json}" line.
bj::object hook_config(const std::string& line) {
  return bj::parse(line.substr(line.find('{'))).as_object().at("config").as_object();
}

}  // namespace

TEST_CASE("lists guests (QEMU and LXC), nodes and the version") {
  PvesimProcess sim(fleet_args(20));
  auto client = make_client(sim.client_options());

  auto version = client->version();
  REQUIRE(version);
  CHECK(version->starts_with("9."));

  auto nodes = client->list_nodes();
  REQUIRE(nodes);
  REQUIRE(nodes->size() == 3);
  CHECK((*nodes)[0].ssl_fingerprint == sim.fingerprint());

  auto guests = client->list_guests();
  REQUIRE(guests);
  CHECK(guests->size() == 20);
  const auto lxc = std::ranges::count_if(*guests, [](const GuestSummary& g) { return g.type == GuestType::lxc; });
  CHECK(lxc == 2);
  auto g101 = std::ranges::find_if(*guests, [](const GuestSummary& g) { return g.ref.vmid == 101; });
  REQUIRE(g101 != guests->end());
  CHECK(g101->ref.node == "pve2");
  CHECK(g101->status == "running");
  CHECK(g101->name == "vm-101");
}

TEST_CASE("config reads: current=1 shows what is in effect, the default folds pending values in") {
  PvesimProcess sim(fleet_args(6));
  auto client = make_client(sim.client_options());
  // Running, with network hot-plug off: a queues change must wait for a restart.
  set_config(sim, 104, R"({"cores":"2","hotplug":"disk,usb","net1":"virtio=BC:24:11:00:01:04,bridge=vmbr1,queues=4"})");
  const VmRef ref = fleet_vm(104);

  VmConfig before = read(*client, ref);
  CHECK(before.get("cores") == "2");  // sent as a JSON number, read as text
  NetDeviceSpec net1 = nic(before, "net1");
  REQUIRE(net1.set("queues", "8"));
  auto written = client->update_nic(ref, "net1", net1, before.digest);
  REQUIRE(written);
  CHECK_FALSE(written->has_value());  // PUT answers null

  VmConfig current = read(*client, ref, ConfigView::current);
  VmConfig folded = read(*client, ref, ConfigView::with_pending);
  CHECK(nic(current, "net1").queues() == 4);
  CHECK(nic(folded, "net1").queues() == 8);
  CHECK(current.digest != before.digest);  // the [PENDING] section is part of the file

  auto pending = client->read_pending(ref);
  REQUIRE(pending);
  CHECK(pending->digest == current.digest);
  CHECK(pending->changed_keys() == std::vector<std::string>{"net1"});
  const PendingItem* item = pending->find("net1");
  REQUIRE(item);
  CHECK(item->value == "virtio=BC:24:11:00:01:04,bridge=vmbr1,queues=4");
  CHECK(item->pending == "virtio=BC:24:11:00:01:04,bridge=vmbr1,queues=8");

  // A reboot through the API applies pending changes; the task ends before the VM is back.
  auto up = client->reboot_and_wait(ref, kWait);
  REQUIRE(up);
  CHECK(up->status == "running");
  CHECK(nic(read(*client, ref), "net1").queues() == 8);
  auto after = client->read_pending(ref);
  REQUIRE(after);
  CHECK(after->changed_keys().empty());
}

TEST_CASE("a queues change on a running VM with network hot-plug re-plugs the NIC through the hook") {
  PvesimProcess sim(fleet_args(3));
  const std::string log = sim.dir() + "/events.log";
  const std::string hook = testing::write_recording_hook(sim.dir(), log, sim.dir() + "/fail");
  sim.admin("PUT", "/pvesim/vms/100/hook", R"({"hook":")" + hook + R"("})");
  set_config(sim, 100, R"({"net1":"virtio=BC:24:11:00:01:00,bridge=vmbr1,firewall=1,queues=8"})");
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);

  VmConfig before = read(*client, ref);
  NetDeviceSpec net1 = nic(before, "net1");
  REQUIRE(net1.set("queues", "4"));
  REQUIRE(client->update_nic(ref, "net1", net1, before.digest));

  VmConfig after = read(*client, ref);
  CHECK(after.get("net1") == "virtio=BC:24:11:00:01:00,bridge=vmbr1,firewall=1,queues=4");
  auto pending = client->read_pending(ref);
  REQUIRE(pending);
  CHECK(pending->changed_keys().empty());
  auto events = lines(log);
  REQUIRE(events.size() == 1);
  CHECK(events[0].starts_with("hotplug-nic 100 net1 "));
  CHECK(std::string(hook_config(events[0]).at("net1").as_string()).ends_with("queues=4"));
}

TEST_CASE("hotplug 'disk;network' (split_list: ',', ';' or spaces) has network: the NIC is re-plugged") {
  PvesimProcess sim(fleet_args(3));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);
  VmConfig before = read(*client, ref);
  // Written through the API as Proxmox accepts it, stored as typed.
  ConfigChange hp;
  hp.set = {{"hotplug", "disk;network"}};
  hp.digest = before.digest;
  REQUIRE(client->update_config(ref, hp));
  VmConfig with = read(*client, ref);
  CHECK(with.get("hotplug") == "disk;network");
  NetDeviceSpec net1 = nic(with, "net1");
  REQUIRE(net1.set("queues", "4"));
  REQUIRE(client->update_nic(ref, "net1", net1, with.digest));
  CHECK(nic(read(*client, ref), "net1").queues() == 4);  // in effect at once, not pending
  // What Proxmox refuses, in its words.
  ConfigChange bad;
  bad.set = {{"hotplug", "disk;netwrk"}};
  bad.digest = read(*client, ref).digest;
  auto r = client->update_config(ref, bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().field_errors.at("hotplug") == "invalid format - invalid hotplug feature 'netwrk'");
}

TEST_CASE("only what a request names is hot-plugged: an earlier pending NIC change stays pending") {
  PvesimProcess sim(fleet_args(3));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);
  set_config(sim, 100, R"({"hotplug":"disk,usb","net1":"virtio=BC:24:11:00:01:00,bridge=vmbr1"})");
  VmConfig before = read(*client, ref);
  NetDeviceSpec net1 = nic(before, "net1");
  REQUIRE(net1.set("queues", "4"));
  REQUIRE(client->update_nic(ref, "net1", net1, before.digest));  // no network hot-plug: pending
  auto write = [&](std::string key, std::string value) {
    ConfigChange c;
    c.set = {{std::move(key), std::move(value)}};
    c.digest = read(*client, ref).digest;
    auto r = client->update_config(ref, c);
    if (!r) FAIL(r.error().to_string());
  };
  write("hotplug", "network,disk,usb");  // network hot-plug on now, but net1 is not in this request
  write("description", "an unrelated edit");
  auto pending = client->read_pending(ref);
  REQUIRE(pending);
  CHECK(pending->changed_keys() == std::vector<std::string>{"net1"});
  CHECK_FALSE(nic(read(*client, ref), "net1").queues());                // in effect: still one queue
  CHECK(read(*client, ref).get("description") == "an unrelated edit");  // fast-plug: at once
}

TEST_CASE("/cluster/resources lags like pvestatd's broadcast; status/current is live") {
  PvesimProcess sim(fleet_args(4, {"--pvestatd-interval-ms", "3600000"}));  // one sample, then on demand
  auto client = make_client(sim.client_options());
  auto listed = [&](int vmid) {
    auto all = client->list_guests();
    if (!all) FAIL(all.error().to_string());
    for (const auto& g : *all) {
      if (g.ref.vmid == vmid) return g.status;
    }
    return std::string("absent");
  };
  const VmRef stopped = fleet_vm(103);  // generated stopped
  CHECK(listed(100) == "unknown");      // pvestatd has broadcast nothing yet
  sim.admin("POST", "/pvesim/pvestatd", "{}");
  CHECK(listed(100) == "running");
  CHECK(listed(103) == "stopped");
  auto started = client->start(stopped);
  REQUIRE(started);
  REQUIRE(client->wait_task(*started, kWait));
  CHECK(client->vm_status(stopped)->status == "running");  // live
  CHECK(listed(103) == "stopped");                         // pvestatd has not sampled since
  sim.admin("POST", "/pvesim/pvestatd", "{}");
  CHECK(listed(103) == "running");
}

TEST_CASE("a stopped VM takes a change at once, and start applies nothing else") {
  PvesimProcess sim(fleet_args(4));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(103);  // generated stopped
  set_config(sim, 103, R"({"net1":"virtio=BC:24:11:00:01:03,bridge=vmbr1"})");
  VmConfig before = read(*client, ref);
  NetDeviceSpec net1 = nic(before, "net1");
  REQUIRE(net1.set("queues", "6"));
  REQUIRE(client->update_nic(ref, "net1", net1, before.digest));
  CHECK(read(*client, ref).get("net1") == "virtio=BC:24:11:00:01:03,bridge=vmbr1,queues=6");
}

TEST_CASE("writes without the MAC or without the digest are refused before anything is sent") {
  PvesimProcess sim(fleet_args(3));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);
  VmConfig cfg = read(*client, ref);
  const std::string put = "PUT /nodes/{node}/qemu/{vmid}/config";

  auto no_mac = NetDeviceSpec::parse("virtio,bridge=vmbr1,queues=4");
  REQUIRE(no_mac);
  auto r = client->update_nic(ref, "net1", *no_mac, cfg.digest);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::invalid_request);
  CHECK_THAT(r.error().message, Catch::Contains("no MAC address"));

  NetDeviceSpec net0 = nic(cfg, "net0");
  auto no_digest = client->update_nic(ref, "net0", net0, "");
  REQUIRE_FALSE(no_digest);
  CHECK(no_digest.error().kind == ApiErrorKind::invalid_request);
  CHECK(sim.request_count(put) == 0);
  CHECK(read(*client, ref).digest == cfg.digest);
}

TEST_CASE("a concurrent edit between read and write is a digest conflict; re-reading resolves it") {
  PvesimProcess sim(fleet_args(3, {"--concurrent-edit", "100"}));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);

  VmConfig first = read(*client, ref);  // pvesim edits the config right after this read
  NetDeviceSpec net1 = nic(first, "net1");
  REQUIRE(net1.set("queues", "2"));
  auto conflict = client->update_nic(ref, "net1", net1, first.digest);
  REQUIRE_FALSE(conflict);
  CHECK(conflict.error().kind == ApiErrorKind::digest_conflict);
  CHECK(conflict.error().http_status == 500);
  CHECK(conflict.error().attempts == 1);
  CHECK_THAT(conflict.error().to_string(), Catch::Contains("checksum mismatch"));

  VmConfig second = read(*client, ref);
  CHECK(second.digest != first.digest);
  CHECK_THAT(second.get("description").value_or(""), Catch::Contains("another admin"));
  CHECK(nic(second, "net1").queues() == nic(first, "net1").queues());  // nothing was overwritten
  NetDeviceSpec again = nic(second, "net1");
  REQUIRE(again.set("queues", "2"));
  REQUIRE(client->update_nic(ref, "net1", again, second.digest));
  CHECK(nic(read(*client, ref), "net1").queues() == 2);
  CHECK(sim.request_count("PUT /nodes/{node}/qemu/{vmid}/config") == 2);
}

TEST_CASE("a VM locked by a backup refuses writes and power tasks with a typed error") {
  PvesimProcess sim(fleet_args(4, {"--lock", "101=backup", "--lock", "103=backup"}));
  auto client = make_client(sim.client_options());
  VmConfig cfg = read(*client, fleet_vm(101));
  CHECK(cfg.get("lock") == "backup");
  auto r = client->update_nic(fleet_vm(101), "net0", nic(cfg, "net0"), cfg.digest);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::locked);
  CHECK(r.error().lock == "backup");
  CHECK(r.error().http_status == 500);

  auto upid = client->start(fleet_vm(103));  // the lock is checked inside the task
  REQUIRE(upid);
  auto task = client->wait_task(*upid, kWait);
  REQUIRE_FALSE(task);
  CHECK(task.error().kind == ApiErrorKind::task_failed);
  CHECK(task.error().lock == "backup");
  CHECK(task.error().task_exitstatus == "VM is locked (backup)");

  auto guests = client->list_guests();
  REQUIRE(guests);
  auto g = std::ranges::find_if(*guests, [](const GuestSummary& s) { return s.ref.vmid == 101; });
  REQUIRE(g != guests->end());
  CHECK(g->lock == "backup");
}

TEST_CASE("missing privileges are refused and named") {
  PvesimProcess sim(
      fleet_args(3, {"--token", "ops@pve!audit=a1:VM.Audit,VM.PowerMgmt,VM.Config.Options", "--token",
                     "ops@pve!nosdn=a2:VM.Audit,VM.Config.Network", "--token", "ops@pve!read=a3:VM.Audit"}));
  auto audit = make_client(sim.client_options("ops@pve!audit", "a1"));
  VmConfig cfg = read(*audit, fleet_vm(100));
  NetDeviceSpec net1 = nic(cfg, "net1");
  REQUIRE(net1.set("queues", "3"));
  auto r = audit->update_nic(fleet_vm(100), "net1", net1, cfg.digest);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::permission);
  CHECK(r.error().http_status == 403);
  CHECK(r.error().missing_privilege == "VM.Config.Network");
  CHECK(r.error().permission_path == "/vms/100");
  CHECK_THAT(r.error().hint, Catch::Contains("VM.Config.Network"));

  // A NIC on a bridge also needs SDN.Use on the bridge's zone path.
  auto nosdn = make_client(sim.client_options("ops@pve!nosdn", "a2"));
  auto r2 = nosdn->update_nic(fleet_vm(100), "net1", net1, cfg.digest);
  REQUIRE_FALSE(r2);
  CHECK(r2.error().missing_privilege == "SDN.Use");
  CHECK(r2.error().permission_path == "/sdn/zones/localnetwork/vmbr1");
  CHECK(nic(read(*audit, fleet_vm(100)), "net1").queues() == nic(cfg, "net1").queues());

  // No VM.Config.* at all: the method's own any-of check refuses first.
  auto read_only = make_client(sim.client_options("ops@pve!read", "a3"));
  auto r3 = read_only->update_nic(fleet_vm(100), "net1", net1, cfg.digest);
  REQUIRE_FALSE(r3);
  CHECK(r3.error().permission_path == "/vms/100");
  CHECK_THAT(r3.error().hint, Catch::StartsWith("grant one of VM.Config.Disk VM.Config.CDROM"));

  // The same asked beforehand (GET /access/permissions), as preflight does.
  const std::vector<std::string> paths{"/vms/100", "/sdn/zones/localnetwork/vmbr1"};
  auto held = audit->privileges(paths);
  REQUIRE(held.size() == 2);
  REQUIRE(held[0]);
  CHECK(*held[0] == std::set<std::string>{"VM.Audit", "VM.Config.Options", "VM.PowerMgmt"});
  CHECK_FALSE(held[1]->contains("SDN.Use"));
  auto root = make_client(sim.client_options());  // root@pam's token, no privilege separation in pvesim
  auto all = root->privileges(paths);
  REQUIRE(all[0]);
  CHECK(all[0]->contains("VM.Config.Network"));
}

TEST_CASE("bad credentials are auth errors that never show the secret") {
  PvesimProcess sim(fleet_args(2));
  auto wrong = make_client(sim.client_options("root@pam!pw", "not-the-secret"));
  auto r = wrong->list_guests();
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::auth);
  CHECK(r.error().http_status == 401);
  CHECK(r.error().reason == "invalid token value!");
  CHECK(r.error().attempts == 1);  // not retried
  CHECK_THAT(r.error().to_string(), !Catch::Contains("not-the-secret"));

  auto unknown = make_client(sim.client_options("root@pam!nope", "s3cret"));
  auto r2 = unknown->version();
  REQUIRE_FALSE(r2);
  CHECK(r2.error().kind == ApiErrorKind::auth);

  ClientOptions o = sim.client_options();
  o.token_id.clear();
  o.user = "root@pam";
  o.password = Secret("wrong password");
  auto ticket = make_client(o);
  auto r3 = ticket->list_guests();
  REQUIRE_FALSE(r3);
  CHECK(r3.error().kind == ApiErrorKind::auth);
  CHECK_THAT(r3.error().message, Catch::Contains("login as root@pam failed"));
  CHECK_THAT(r3.error().to_string(), !Catch::Contains("wrong password"));
}

TEST_CASE("ticket auth: one login, cookie on reads, CSRF token on writes") {
  PvesimProcess sim(fleet_args(3));
  ClientOptions o = sim.client_options();
  o.token_id.clear();
  o.user = "root@pam";
  o.password = Secret("hunter2");
  auto client = make_client(o);
  const VmRef ref = fleet_vm(102);
  VmConfig cfg = read(*client, ref);
  NetDeviceSpec net0 = nic(cfg, "net0");
  REQUIRE(net0.set("queues", "2"));
  REQUIRE(client->update_nic(ref, "net0", net0, cfg.digest));
  auto upid = client->shutdown(ref);
  REQUIRE(upid);
  CHECK(upid->user == "root@pam");
  REQUIRE(client->wait_task(*upid, kWait));
  CHECK(nic(read(*client, ref), "net0").queues() == 2);
  CHECK(sim.request_count("POST /access/ticket") == 1);

  // Tickets that stop working (node restarted): one new login, then the request goes through.
  sim.admin("POST", "/pvesim/tickets/reset");
  VmConfig again = read(*client, ref);
  CHECK(again.digest == read(*client, ref).digest);
  CHECK(sim.request_count("POST /access/ticket") == 2);
  sim.admin("POST", "/pvesim/tickets/reset");
  NetDeviceSpec net0b = nic(again, "net0");
  REQUIRE(net0b.set("queues", "3"));
  REQUIRE(client->update_nic(ref, "net0", net0b, again.digest));  // refused by the auth check, so safe to resend
  CHECK(sim.request_count("POST /access/ticket") == 3);
  CHECK(sim.request_count("PUT /nodes/{node}/qemu/{vmid}/config") == 3);
}

TEST_CASE("TLS: pinned fingerprint, wrong pin, CA file, untrusted certificate, verification off") {
  PvesimProcess sim(fleet_args(1));
  ClientOptions pinned = sim.client_options();
  pinned.ca_file.clear();
  pinned.fingerprint = sim.fingerprint();
  REQUIRE(make_client(pinned)->version());

  // Lower case without colons is the same pin.
  std::string bare;
  for (char ch : sim.fingerprint()) {
    if (ch != ':') bare += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  pinned.fingerprint = bare;
  REQUIRE(make_client(pinned)->version());

  ClientOptions wrong = pinned;
  wrong.fingerprint = std::string(95, 'A');
  for (std::size_t i = 2; i < wrong.fingerprint.size(); i += 3) wrong.fingerprint[i] = ':';
  auto r = make_client(wrong)->version();
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::tls);
  CHECK(r.error().expected_fingerprint == wrong.fingerprint);
  CHECK(r.error().seen_fingerprint == sim.fingerprint());
  CHECK_THAT(r.error().message, Catch::Contains(sim.fingerprint()) && Catch::Contains(wrong.fingerprint));
  CHECK(r.error().attempts == 1);

  REQUIRE(make_client(sim.client_options())->version());  // CA file

  ClientOptions untrusted = sim.client_options();
  untrusted.ca_file.clear();  // the system store does not know pvesim's certificate
  auto r2 = make_client(untrusted)->version();
  REQUIRE_FALSE(r2);
  CHECK(r2.error().kind == ApiErrorKind::tls);
  CHECK_THAT(r2.error().message, Catch::Contains("not trusted"));
  CHECK_THAT(r2.error().hint, Catch::Contains(sim.fingerprint()));

  ClientOptions insecure = sim.client_options();
  insecure.ca_file.clear();
  insecure.insecure_skip_verify = true;
  REQUIRE(make_client(insecure)->version());

  ClientOptions contradictory = pinned;
  contradictory.insecure_skip_verify = true;
  CHECK_FALSE(Client::create(contradictory));
}

TEST_CASE("5xx answers: reads are retried with backoff, writes are sent once") {
  PvesimProcess sim(fleet_args(3));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);
  const std::string get = "GET /nodes/{node}/qemu/{vmid}/config";
  const std::string put = "PUT /nodes/{node}/qemu/{vmid}/config";

  sim.admin("PUT", "/pvesim/faults", R"({"fail_next":2})");
  int before = sim.request_count(get);
  VmConfig cfg = read(*client, ref);
  CHECK(sim.request_count(get) - before == 3);

  sim.admin("PUT", "/pvesim/faults", R"({"fail_next":10})");
  before = sim.request_count(get);
  auto exhausted = client->read_config(ref);
  REQUIRE_FALSE(exhausted);
  CHECK(exhausted.error().kind == ApiErrorKind::http);
  CHECK(exhausted.error().http_status == 503);
  CHECK(exhausted.error().attempts == 4);
  CHECK(sim.request_count(get) - before == 4);

  sim.admin("PUT", "/pvesim/faults", R"({"fail_next":1})");
  NetDeviceSpec net1 = nic(cfg, "net1");
  REQUIRE(net1.set("queues", "5"));
  auto write = client->update_nic(ref, "net1", net1, cfg.digest);
  REQUIRE_FALSE(write);
  CHECK(write.error().http_status == 503);
  CHECK(write.error().attempts == 1);
  CHECK(sim.request_count(put) == 1);
  sim.admin("PUT", "/pvesim/faults", R"({"fail_next":0})");
  CHECK(read(*client, ref).digest == cfg.digest);
}

TEST_CASE("dropped connections: reads recover, a lost write says it may have been applied") {
  PvesimProcess sim(fleet_args(3));
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);
  VmConfig cfg = read(*client, ref);

  sim.admin("PUT", "/pvesim/faults", R"({"drop_next":1})");
  const int before = sim.request_count("GET /nodes/{node}/qemu/{vmid}/config");
  REQUIRE(client->read_config(ref));
  CHECK(sim.request_count("GET /nodes/{node}/qemu/{vmid}/config") - before == 2);

  sim.admin("PUT", "/pvesim/faults", R"({"drop_next":1})");
  NetDeviceSpec net1 = nic(cfg, "net1");
  REQUIRE(net1.set("queues", "7"));
  auto write = client->update_nic(ref, "net1", net1, cfg.digest);
  REQUIRE_FALSE(write);
  CHECK(write.error().kind == ApiErrorKind::transport);
  CHECK(write.error().may_have_applied);
  CHECK_THAT(write.error().hint, Catch::Contains("re-read"));
  CHECK(sim.request_count("PUT /nodes/{node}/qemu/{vmid}/config") == 1);
}

TEST_CASE("timeouts are typed, for requests and for tasks") {
  PvesimProcess sim(fleet_args(4, {"--task-duration-ms", "3000"}));
  ClientOptions o = sim.client_options();
  o.timeout = std::chrono::milliseconds(300);
  o.retry.max_attempts = 2;
  auto client = make_client(o);
  const VmRef ref = fleet_vm(100);
  VmConfig cfg = read(*client, ref);

  sim.admin("PUT", "/pvesim/faults", R"({"latency_ms":2500})");
  auto r = client->read_config(ref);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::timeout);
  CHECK(r.error().attempts == 2);
  auto w = client->update_nic(ref, "net0", nic(cfg, "net0"), cfg.digest);
  REQUIRE_FALSE(w);
  CHECK(w.error().kind == ApiErrorKind::timeout);
  CHECK(w.error().may_have_applied);
  sim.admin("PUT", "/pvesim/faults", R"({"latency_ms":0})");

  auto upid = client->start(fleet_vm(103));
  REQUIRE(upid);
  auto waited = client->wait_task(
      *upid, WaitOptions{std::chrono::milliseconds(200), std::chrono::milliseconds(20), std::chrono::milliseconds(50)});
  REQUIRE_FALSE(waited);
  CHECK(waited.error().kind == ApiErrorKind::timeout);
  CHECK_THAT(waited.error().message, Catch::Contains("still running"));
}

TEST_CASE("tasks: start, shutdown, stop, a failing task, WARNINGS as success") {
  PvesimProcess sim(fleet_args(4));
  auto client = make_client(sim.client_options());
  const VmRef stopped = fleet_vm(103);

  auto start = client->start(stopped);
  REQUIRE(start);
  CHECK(start->type == "qmstart");
  CHECK(start->id == "103");
  CHECK(start->node == "pve1");
  CHECK(start->user == "root@pam!pw");
  REQUIRE(client->wait_task(*start, kWait));
  auto status = client->vm_status(stopped);
  REQUIRE(status);
  CHECK(status->status == "running");
  CHECK(status->pid.has_value());

  auto again = client->start(stopped);
  REQUIRE(again);
  auto already = client->wait_task(*again, kWait);
  REQUIRE_FALSE(already);
  CHECK(already.error().task_exitstatus == "VM 103 already running");

  auto down = client->shutdown(stopped, 30);
  REQUIRE(down);
  REQUIRE(client->wait_task(*down, kWait));
  REQUIRE(client->wait_vm_status(stopped, "stopped", kWait));

  auto reboot_stopped = client->reboot(stopped);
  REQUIRE_FALSE(reboot_stopped);
  CHECK_THAT(reboot_stopped.error().message, Catch::Contains("not running"));

  const VmRef running = fleet_vm(100);
  auto stop = client->stop(running);
  REQUIRE(stop);
  REQUIRE(client->wait_task(*stop, kWait));
  CHECK(client->vm_status(running)->status == "stopped");

  sim.admin("PUT", "/pvesim/faults",
            R"({"task_failures":[{"type":"qmstart","vmid":100,"message":"start failed: QEMU exited with code 1"}]})");
  auto failing = client->start(running);
  REQUIRE(failing);
  auto failed = client->wait_task(*failing, kWait);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().kind == ApiErrorKind::task_failed);
  CHECK(failed.error().task_exitstatus == "start failed: QEMU exited with code 1");
  CHECK(client->vm_status(running)->status == "stopped");

  // Deleting a key that is not set only warns; the task still counts as success.
  VmConfig cfg = read(*client, fleet_vm(101));
  auto upid = client->update_config(fleet_vm(101), ConfigChange{{}, {"net9"}, cfg.digest}, WriteMode::task_post);
  REQUIRE(upid);
  REQUIRE(upid->has_value());
  auto warned = client->wait_task(**upid, kWait);
  REQUIRE(warned);
  CHECK(warned->exitstatus == "WARNINGS: 1");
  CHECK(warned->warnings() == 1);
}

TEST_CASE("a failing hot-plug: 400 with the field's error, the value stays pending until a reboot") {
  PvesimProcess sim(fleet_args(3));
  const std::string log = sim.dir() + "/events.log";
  const std::string fail_flag = sim.dir() + "/fail";
  const std::string hook = testing::write_recording_hook(sim.dir(), log, fail_flag);
  sim.admin("PUT", "/pvesim/vms/100/hook", R"({"hook":")" + hook + R"("})");
  set_config(sim, 100, R"({"net1":"virtio=BC:24:11:00:01:00,bridge=vmbr1,queues=8"})");
  std::ofstream(fail_flag) << "error on hot-unplugging device 'net1' - still busy in guest?\n";
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(100);

  VmConfig cfg = read(*client, ref);
  NetDeviceSpec net1 = nic(cfg, "net1");
  REQUIRE(net1.set("queues", "2"));
  auto r = client->update_nic(ref, "net1", net1, cfg.digest);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::parameter);
  CHECK(r.error().http_status == 400);
  REQUIRE(r.error().field_errors.contains("net1"));
  CHECK(r.error().field_errors.at("net1") ==
        "hotplug problem - error on hot-unplugging device 'net1' - still busy in guest?");

  auto pending = client->read_pending(ref);
  REQUIRE(pending);
  REQUIRE(pending->find("net1"));
  CHECK(pending->find("net1")->pending == "virtio=BC:24:11:00:01:00,bridge=vmbr1,queues=2");
  CHECK(nic(read(*client, ref), "net1").queues() == 8);

  std::filesystem::remove(fail_flag);
  REQUIRE(client->reboot_and_wait(ref, kWait));
  CHECK(nic(read(*client, ref), "net1").queues() == 2);
  auto events = lines(log);
  REQUIRE(events.size() == 3);
  CHECK(events[0].starts_with("hotplug-nic 100 net1 "));
  CHECK(events[1].starts_with("shutdown 100 "));
  CHECK(std::string(hook_config(events[1]).at("net1").as_string()).ends_with("queues=8"));
  CHECK(events[2].starts_with("start 100 "));
  CHECK(std::string(hook_config(events[2]).at("net1").as_string()).ends_with("queues=2"));
}

TEST_CASE("many reads at once: one result per VM, over a bounded pool of connections") {
  PvesimProcess sim(fleet_args(300, {"--latency-ms", "2"}));
  ClientOptions o = sim.client_options();
  o.max_in_flight = 4;
  auto client = make_client(o);
  sim.admin("POST", "/pvesim/stats/reset");

  auto guests = client->list_guests();
  REQUIRE(guests);
  std::vector<VmRef> refs;
  for (const auto& g : *guests) {
    if (g.type == GuestType::qemu) refs.push_back(g.ref);
  }
  REQUIRE(refs.size() == 270);
  refs.insert(refs.begin() + 10, VmRef{"pve1", 99999});  // does not exist

  auto configs = client->read_configs(refs);
  REQUIRE(configs.size() == refs.size());
  for (std::size_t i = 0; i < refs.size(); ++i) {
    if (i == 10) {
      REQUIRE_FALSE(configs[i]);
      CHECK(configs[i].error().kind == ApiErrorKind::not_found);
    } else {
      REQUIRE(configs[i]);
      CHECK(configs[i]->ref == refs[i]);
      CHECK(configs[i]->get("name") == "vm-" + std::to_string(refs[i].vmid));
    }
  }
  auto statuses = client->vm_statuses(std::span(refs).subspan(0, 10));
  CHECK(std::ranges::all_of(statuses, [](const auto& s) { return s.has_value(); }));
  auto pendings = client->read_pendings(std::span(refs).subspan(11, 20));
  CHECK(std::ranges::all_of(pendings, [](const auto& p) { return p.has_value() && !p->digest.empty(); }));

  auto stats = sim.admin("GET", "/pvesim/stats").as_object();
  // 302 requests over at most max_in_flight connections, plus the one this stats request came on.
  CHECK(stats.at("connections").to_number<int>() <= o.max_in_flight + 1);
  CHECK(stats.at("api_requests").to_number<int>() == 1 + 271 + 10 + 20);
}

TEST_CASE("a node's VMs with their taps in one request: GET /nodes/{node}/qemu?full=1") {
  PvesimProcess sim(fleet_args(12));
  auto client = make_client(sim.client_options());
  auto guests = client->list_guests();
  REQUIRE(guests);
  std::set<std::string> nodes;
  std::map<VmRef, bool> running;
  for (const auto& g : *guests) {
    if (g.type != GuestType::qemu) continue;
    nodes.insert(g.ref.node);
    running[g.ref] = g.status == "running";
  }
  std::vector<std::string> asked(nodes.begin(), nodes.end());
  sim.admin("POST", "/pvesim/stats/reset");
  auto lists = client->node_vm_statuses(asked);
  CHECK(sim.admin("GET", "/pvesim/stats").as_object().at("api_requests").to_number<int>() ==
        static_cast<int>(asked.size()));
  REQUIRE(lists.size() == asked.size());
  std::size_t seen = 0;
  for (std::size_t i = 0; i < lists.size(); ++i) {
    REQUIRE(lists[i]);
    for (const auto& s : *lists[i]) {
      ++seen;
      CHECK(s.ref.node == asked[i]);
      REQUIRE(running.contains(s.ref));
      CHECK(s.pid.has_value() == running[s.ref]);
      // The same taps status/current reports for that VM.
      auto one = client->vm_status(s.ref);
      REQUIRE(one);
      std::set<int> a, b;
      for (const auto& [n, c] : s.nics) a.insert(n);
      for (const auto& [n, c] : one->nics) b.insert(n);
      CHECK(a == b);
      CHECK(s.pid == one->pid);
    }
  }
  CHECK(seen == running.size());
  // A node the cluster does not know: Proxmox's proxy fails its name lookup (500), an error of its own.
  auto unknown = client->node_vm_statuses(std::vector<std::string>{"no-such-node"});
  REQUIRE(unknown.size() == 1);
  REQUIRE_FALSE(unknown.front());
  CHECK_THAT(unknown.front().error().to_string(), Catch::Contains("hostname lookup 'no-such-node' failed"));
}

TEST_CASE("Proxmox's own refusals: parameter errors per field, missing VMs") {
  PvesimProcess sim(fleet_args(3));
  auto client = make_client(sim.client_options());
  VmConfig cfg = read(*client, fleet_vm(100));
  auto r = client->update_config(fleet_vm(100), ConfigChange{{{"onboot", "True"}}, {}, cfg.digest});
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::parameter);
  CHECK(r.error().field_errors.at("onboot") == "type check ('boolean') failed - got 'True'");
  CHECK_THAT(r.error().to_string(), Catch::Contains("onboot: type check"));

  auto missing = client->read_config(VmRef{"pve1", 99999});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().kind == ApiErrorKind::not_found);
  CHECK(missing.error().attempts == 1);
  auto wrong_node = client->read_config(VmRef{"pve2", 100});
  REQUIRE_FALSE(wrong_node);
  CHECK(wrong_node.error().kind == ApiErrorKind::not_found);
  CHECK_THAT(wrong_node.error().message, Catch::Contains("does not exist"));
}

TEST_CASE("pvesim dumps its state on a clean exit, and loads it again") {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dump =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/pvesim-dump-" + std::to_string(getpid()) + ".json";
  std::string digest;
  {
    PvesimProcess sim(fleet_args(3, {"--dump-state", dump}));
    auto client = make_client(sim.client_options());
    VmConfig cfg = read(*client, fleet_vm(102));
    NetDeviceSpec net0 = nic(cfg, "net0");
    REQUIRE(net0.set("queues", "3"));
    REQUIRE(client->update_nic(fleet_vm(102), "net0", net0, cfg.digest));
    digest = read(*client, fleet_vm(102)).digest;
    CHECK(sim.stop() == 0);  // also catches sanitizer reports in pvesim itself
  }
  const auto state = bj::parse(testing::read_file(dump)).as_object();
  const auto& guests = state.at("guests").as_array();
  REQUIRE(guests.size() == 3);
  const auto& g = guests[2].as_object();
  CHECK(g.at("vmid").to_number<int>() == 102);
  CHECK(std::string(g.at("config").as_object().at("net0").as_string()).ends_with("queues=3"));
  CHECK(g.at("digest").as_string() == digest);

  // The same config file text again, so the same digest.
  auto args = default_pvesim_args();
  args.insert(args.end(), {"--state", dump});
  PvesimProcess again(args);
  auto client = make_client(again.client_options());
  CHECK(read(*client, fleet_vm(102)).digest == digest);
  std::filesystem::remove(dump);
}

TEST_CASE("pvesim speaks Proxmox's wire format: JSON and form bodies, booleans, CSRF, 401 without body") {
  PvesimProcess sim(fleet_args(4));
  const std::string token = "PVEAPIToken=root@pam!pw=s3cret";
  auto request = [&](std::string method, std::string target, std::vector<std::pair<std::string, std::string>> headers,
                     std::string body = "") {
    HttpRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.headers = std::move(headers);
    r.body = std::move(body);
    return sim.raw(std::move(r));
  };
  const std::string config = "/api2/json/nodes/pve1/qemu/103/config";

  auto get = request("GET", config + "?current=1", {{"Authorization", token}});
  REQUIRE(get.status == 200);
  CHECK(get.content_type == "application/json;charset=UTF-8");
  const std::string digest(bj::parse(get.body).at("data").at("digest").as_string());

  // A JSON body, with a JSON boolean.
  auto put = request("PUT", config, {{"Authorization", token}, {"Content-Type", "application/json"}},
                     R"({"onboot":true,"name":"renamed","digest":")" + digest + R"("})");
  CHECK(put.status == 200);
  CHECK(put.body == R"({"data":null})");
  auto after = bj::parse(request("GET", config, {{"Authorization", token}}).body).at("data");
  CHECK(after.at("onboot").to_number<int>() == 1);
  CHECK(after.at("name").as_string() == "renamed");

  // Form bodies: 'true' is not a boolean at the top level; the query overrides the body.
  auto form = request("PUT", config, {{"Authorization", token}, {"Content-Type", "application/x-www-form-urlencoded"}},
                      "onboot=true");
  CHECK(form.status == 400);
  CHECK(form.reason == "Parameter verification failed.");
  CHECK(bj::parse(form.body).at("errors").at("onboot").as_string() == "type check ('boolean') failed - got 'true'");
  auto override =
      request("PUT", config + "?name=from-query",
              {{"Authorization", token}, {"Content-Type", "application/x-www-form-urlencoded"}}, "name=from-body");
  CHECK(override.status == 200);
  CHECK(bj::parse(request("GET", config, {{"Authorization", token}}).body).at("data").at("name").as_string() ==
        "from-query");
  auto unknown = request("PUT", config,
                         {{"Authorization", token}, {"Content-Type", "application/x-www-form-urlencoded"}}, "speed=9");
  CHECK(unknown.status == 400);

  // Tickets: the cookie alone reads; a write also needs the CSRF token.
  auto login = request("POST", "/api2/json/access/ticket", {{"Content-Type", "application/x-www-form-urlencoded"}},
                       "username=root%40pam&password=hunter2");
  REQUIRE(login.status == 200);
  const auto ticket = bj::parse(login.body).at("data");
  const std::string cookie = "PVEAuthCookie=" + std::string(ticket.at("ticket").as_string());
  CHECK(request("GET", config, {{"Cookie", cookie}}).status == 200);
  auto no_csrf =
      request("PUT", config, {{"Cookie", cookie}, {"Content-Type", "application/x-www-form-urlencoded"}}, "name=x");
  CHECK(no_csrf.status == 401);
  CHECK(no_csrf.reason == "Permission denied - invalid csrf token");
  CHECK(no_csrf.body.empty());
  auto with_csrf = request("PUT", config,
                           {{"Cookie", cookie},
                            {"CSRFPreventionToken", std::string(ticket.at("CSRFPreventionToken").as_string())},
                            {"Content-Type", "application/x-www-form-urlencoded"}},
                           "name=x");
  CHECK(with_csrf.status == 200);
  auto bad_login = request("POST", "/api2/json/access/ticket", {{"Content-Type", "application/x-www-form-urlencoded"}},
                           "username=root%40pam&password=nope");
  CHECK(bad_login.status == 401);
  CHECK_FALSE(bad_login.body.empty());  // a failed login is a normal handler error, with JSON

  auto anonymous = request("GET", config, {});
  CHECK(anonymous.status == 401);
  CHECK(anonymous.reason == "No ticket");
  CHECK(anonymous.body.empty());
  auto nowhere = request("GET", "/api2/json/nodes/pve1/nothing", {{"Authorization", token}});
  CHECK(nowhere.status == 501);
  CHECK(nowhere.reason == "Method 'GET /nodes/pve1/nothing' not implemented");

  sim.admin("PUT", "/pvesim/faults", R"({"error_rate":1.0,"error_status":502})");
  CHECK(request("GET", "/api2/json/version", {{"Authorization", token}}).status == 502);
  sim.admin("POST", "/pvesim/faults/reset");
  CHECK(request("GET", "/api2/json/version", {{"Authorization", token}}).status == 200);
}

TEST_CASE("a reboot task ends before the VM runs again; the client waits on the VM's status") {
  PvesimProcess sim(fleet_args(3));
  const std::string gate = sim.dir() + "/gate";
  const std::string hook = sim.dir() + "/slow-start.sh";
  // The start hook holds the VM down until the test opens the gate (bounded, so a bug cannot hang).
  std::ofstream(hook) << "#!/bin/sh\n"
                         "if [ \"$1\" = start ]; then\n"
                         "  i=0; while [ ! -f '"
                      << gate
                      << "' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
                         "fi\n";
  std::filesystem::permissions(hook, std::filesystem::perms::owner_all);
  sim.admin("PUT", "/pvesim/vms/101/hook", R"({"hook":")" + hook + R"("})");
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(101);

  auto upid = client->reboot(ref);
  REQUIRE(upid);
  auto task = client->wait_task(*upid, kWait);
  REQUIRE(task);
  CHECK(task->exitstatus == "OK");
  auto status = client->vm_status(ref);
  REQUIRE(status);
  CHECK(status->status == "stopped");  // the task is done, the VM is not back

  std::ofstream(gate) << "open\n";
  auto up = client->wait_vm_status(ref, "running", kWait);
  REQUIRE(up);
  CHECK(up->status == "running");
}

TEST_CASE("the hypervisor's per-tap counters: scripted in pvesim, read by the client per netN") {
  PvesimProcess sim(fleet_args(2));  // guest 101 runs on pve2
  set_config(sim, 101,
             R"({"net0":"virtio=BC:24:11:00:00:10,bridge=vmbr0","net1":"virtio=BC:24:11:00:00:11,bridge=vmbr1"})");
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(101);

  auto before = client->vm_status(ref);
  REQUIRE(before);
  CHECK(before->nics == std::map<int, TapCounters>{{0, {}}, {1, {}}});

  // A 4 MiB read that crossed net1: the bytes went TO the guest, which Proxmox calls netin.
  sim.admin("POST", "/pvesim/vms/101/nic-counters/advance", R"({"net1":{"netin":4194304,"netout":65536}})");
  auto after = client->vm_status(ref);
  REQUIRE(after);
  CHECK(after->nics.at(0) == TapCounters{0, 0});
  CHECK(after->nics.at(1) == TapCounters{4194304, 65536});
  CHECK(after->ignored_nics.empty());
}

// ---- reboot as Proxmox does it: the start after it is a separate root@pam task ---------------

namespace {

// A start hook that fails the way QEMU does: its complaint, then the summary line.
std::string failing_start_hook(const std::string& dir) {
  const std::string hook = dir + "/failing-start.sh";
  std::ofstream(hook) << "#!/bin/sh\n"
                         "if [ \"$1\" = start ]; then\n"
                         "  echo \"kvm: -drive file=/dev/pve/vm-101-disk-0: Could not open '/dev/pve/vm-101-disk-0': "
                         "No such file or directory\" >&2\n"
                         "  echo 'start failed: QEMU exited with code 1' >&2\n"
                         "  exit 1\n"
                         "fi\n";
  std::filesystem::permissions(hook, std::filesystem::perms::owner_all);
  return hook;
}

// A hook that holds `event` until the file `gate` exists (bounded, so a bug cannot hang).
std::string gated_hook(const std::string& dir, const std::string& event, const std::string& gate) {
  const std::string hook = dir + "/gated-" + event + ".sh";
  std::ofstream(hook) << "#!/bin/sh\n"
                         "if [ \"$1\" = "
                      << event
                      << " ]; then\n"
                         "  i=0; while [ ! -f '"
                      << gate
                      << "' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
                         "fi\n";
  std::filesystem::permissions(hook, std::filesystem::perms::owner_all);
  return hook;
}

bj::object get_json(Client& client, const std::string& path, Client::Params params = {}) {
  auto body = client.call("GET", path, std::move(params));
  if (!body) FAIL(body.error().to_string());
  return bj::parse(*body).as_object();
}

}  // namespace

TEST_CASE("a reboot whose start fails: reported from the root@pam start task with its log line, not as a timeout") {
  PvesimProcess sim(fleet_args(3));
  sim.admin("PUT", "/pvesim/vms/101/hook", R"({"hook":")" + failing_start_hook(sim.dir()) + R"("})");
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(101);

  // Long enough that only the start task's failure can end the wait early.
  const WaitOptions patient{std::chrono::minutes(10), std::chrono::milliseconds(10), std::chrono::milliseconds(200)};
  auto r = client->reboot_and_wait(ref, patient);
  REQUIRE_FALSE(r);
  INFO(r.error().to_string());
  CHECK(r.error().kind == ApiErrorKind::task_failed);
  CHECK(r.error().task_exitstatus == "start failed: QEMU exited with code 1");
  CHECK_THAT(r.error().message,
             Catch::Contains("VM 101 did not start again after the reboot: its qmstart task (root@pam) failed"));
  CHECK_THAT(r.error().hint, Catch::Contains("the task log says: kvm: -drive file=/dev/pve/vm-101-disk-0"));
  CHECK_THAT(r.error().where, Catch::StartsWith("UPID:pve2:") && Catch::Contains(":qmstart:101:root@pam:"));
  CHECK(client->vm_status(ref)->status == "stopped");

  // The reboot task itself succeeded: it ends with the shutdown.
  auto tasks = client->node_tasks("pve2", TaskQuery{101, std::nullopt, ""});
  REQUIRE(tasks);
  REQUIRE(tasks->size() == 2);
  CHECK((*tasks)[0].upid.type == "qmstart");  // newest first
  CHECK((*tasks)[0].exitstatus == "start failed: QEMU exited with code 1");
  CHECK((*tasks)[1].upid.type == "qmreboot");
  CHECK((*tasks)[1].upid.user == "root@pam!pw");  // the caller's token, as in its UPID
  CHECK((*tasks)[1].exitstatus == "OK");
}

TEST_CASE("reboot timeout: a guest that ignores the power-down fails the reboot and keeps running") {
  PvesimProcess sim(fleet_args(3));
  sim.admin("PUT", "/pvesim/vms/101/guest", R"({"ignores_shutdown":true})");
  auto client = make_client(sim.client_options());
  const VmRef ref = fleet_vm(101);

  auto r = client->reboot_and_wait(ref, kWait, 1);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ApiErrorKind::task_failed);
  CHECK(r.error().task_exitstatus == "VM quit/powerdown failed - got timeout");
  CHECK(client->vm_status(ref)->status == "running");
  // No start task: the reboot request is cleared with the failure.
  auto tasks = client->node_tasks("pve2", TaskQuery{101, std::nullopt, "qmstart"});
  REQUIRE(tasks);
  CHECK(tasks->empty());
}

TEST_CASE("task list and log as pve-manager serves them: source, filters, paging, who sees which task") {
  PvesimProcess sim(
      fleet_args(3, {"--token", "ops@pve!mine=m1:none", "--acl", "ops@pve!mine:/vms:VM.Audit,VM.PowerMgmt", "--token",
                     "ops@pve!audit=a1:none", "--acl", "ops@pve!audit:/vms:VM.Audit,VM.PowerMgmt", "--acl",
                     "ops@pve!audit:/nodes/pve2:Sys.Audit"}));
  const std::string gate = sim.dir() + "/gate";
  sim.admin("PUT", "/pvesim/vms/101/hook", R"({"hook":")" + gated_hook(sim.dir(), "shutdown", gate) + R"("})");
  auto mine = make_client(sim.client_options("ops@pve!mine", "m1"));
  auto audit = make_client(sim.client_options("ops@pve!audit", "a1"));
  const VmRef ref = fleet_vm(101);

  auto upid = mine->reboot(ref);
  REQUIRE(upid);
  CHECK(upid->starttime > 0);
  // While the shutdown hangs, the reboot task runs: only source=active|all lists it.
  auto archived = get_json(*mine, "/nodes/pve2/tasks");
  CHECK(archived.at("data").as_array().empty());
  CHECK(archived.at("total").as_int64() == 0);
  auto active = get_json(*mine, "/nodes/pve2/tasks", {{"source", "active"}});
  REQUIRE(active.at("data").as_array().size() == 1);
  const auto& running = active.at("data").as_array()[0].as_object();
  CHECK(running.at("status").as_string() == "RUNNING");
  CHECK(running.at("user").as_string() == "ops@pve");
  CHECK(running.at("tokenid").as_string() == "mine");
  std::ofstream(gate) << "open\n";
  REQUIRE(mine->wait_task(*upid, kWait));
  REQUIRE(mine->wait_vm_status(ref, "running", kWait));

  // The start after the reboot is root@pam's: the token sees only its own task...
  auto own = mine->node_tasks("pve2", TaskQuery{101, upid->starttime, ""});
  REQUIRE(own);
  REQUIRE(own->size() == 1);
  CHECK(own->front().upid.type == "qmreboot");
  // ...an identity with Sys.Audit on /nodes/pve2 sees both, and may read the other's log.
  auto all = audit->node_tasks("pve2", TaskQuery{101, upid->starttime, ""});
  REQUIRE(all);
  REQUIRE(all->size() == 2);
  CHECK(all->front().upid.type == "qmstart");
  CHECK(all->front().upid.user == "root@pam");
  CHECK(audit->task_log(all->front().upid));
  REQUIRE(audit->wait_task(all->front().upid, kWait));  // the start task may still be finishing
  auto denied = mine->task_log(all->front().upid);
  REQUIRE_FALSE(denied);
  CHECK(denied.error().http_status == 403);
  CHECK(denied.error().permission_path == "/nodes/pve2");

  // Paging: total counts every match; start skips, limit takes. Filters narrow it.
  auto page = get_json(*audit, "/nodes/pve2/tasks", {{"limit", "1"}, {"start", "1"}});
  CHECK(page.at("total").as_int64() == 2);
  REQUIRE(page.at("data").as_array().size() == 1);
  CHECK(page.at("data").as_array()[0].as_object().at("type").as_string() == "qmreboot");
  CHECK(page.at("data").as_array()[0].as_object().contains("endtime"));
  auto typed = get_json(*audit, "/nodes/pve2/tasks", {{"typefilter", "qmstart"}});
  CHECK(typed.at("total").as_int64() == 1);
  auto by_user = get_json(*audit, "/nodes/pve2/tasks", {{"userfilter", "OPS@"}});  // case-insensitive
  CHECK(by_user.at("total").as_int64() == 1);
  auto errors_only = get_json(*audit, "/nodes/pve2/tasks", {{"errors", "1"}});
  CHECK(errors_only.at("total").as_int64() == 0);
  // The log pages the same way: line numbers count from 1.
  auto reboot_log = get_json(*mine, "/nodes/pve2/tasks/" + json::percent_encode(upid->text, ":@!") + "/log",
                             {{"start", "1"}, {"limit", "1"}});
  REQUIRE(reboot_log.at("data").as_array().size() == 1);
  CHECK(reboot_log.at("data").as_array()[0].as_object().at("n").as_int64() == 2);
  CHECK(reboot_log.at("total").as_int64() >= 2);
}

TEST_CASE("permissions by path: a NIC's tag and trunk VLANs, the bridge it leaves, the method's check first") {
  PvesimProcess sim(fleet_args(
      3,
      {"--sdn-vnet", "vnet7=zone1", "--token", "net@pve!t=n1:none", "--acl",
       "net@pve!t:/vms/100:VM.Audit,VM.Config.Network", "--acl", "net@pve!t:/sdn/zones/localnetwork/vmbr1/20:SDN.Use",
       "--acl", "net@pve!t:/sdn/zones/localnetwork/vmbr2:SDN.Use:0", "--acl", "net@pve!t:/sdn/zones/zone1:SDN.Use",
       "--token", "look@pve!t=l1:none", "--acl", "look@pve!t:/vms:VM.Audit"}));
  auto client = make_client(sim.client_options("net@pve!t", "n1"));
  const VmRef ref = fleet_vm(100);
  auto write_queues = [&](const std::string& net1, const std::string& queues) {
    set_config(sim, 100, R"({"net1":")" + net1 + R"("})");
    VmConfig cfg = read(*client, ref);
    NetDeviceSpec spec = nic(cfg, "net1");
    REQUIRE(spec.set("queues", queues));
    return client->update_nic(ref, "net1", spec, cfg.digest);
  };

  SECTION("a tagged NIC needs SDN.Use on its VLAN's path") {
    CHECK(write_queues("virtio=BC:24:11:00:01:00,bridge=vmbr1,tag=20,queues=2", "4"));
    auto other_tag = write_queues("virtio=BC:24:11:00:01:00,bridge=vmbr1,tag=30,queues=2", "4");
    REQUIRE_FALSE(other_tag);
    CHECK(other_tag.error().http_status == 403);
    CHECK(other_tag.error().permission_path == "/sdn/zones/localnetwork/vmbr1/30");
    CHECK(other_tag.error().missing_privilege == "SDN.Use");
  }
  SECTION("trunks: each VLAN is checked") {
    auto trunks = write_queues("virtio=BC:24:11:00:01:00,bridge=vmbr1,trunks=20;21-22,queues=2", "4");
    REQUIRE_FALSE(trunks);
    CHECK(trunks.error().permission_path == "/sdn/zones/localnetwork/vmbr1/21");
  }
  SECTION("an entry that does not propagate covers the bridge, not its VLANs") {
    CHECK(write_queues("virtio=BC:24:11:00:01:00,bridge=vmbr2,queues=2", "4"));
    auto tagged = write_queues("virtio=BC:24:11:00:01:00,bridge=vmbr2,tag=5,queues=2", "4");
    REQUIRE_FALSE(tagged);
    CHECK(tagged.error().permission_path == "/sdn/zones/localnetwork/vmbr2/5");
  }
  SECTION("an SDN VNet is checked in its own zone") {
    CHECK(write_queues("virtio=BC:24:11:00:01:00,bridge=vnet7,tag=99,queues=2", "4"));
  }
  SECTION("the value in effect is checked too: moving a NIC off a bridge needs SDN.Use there") {
    set_config(sim, 100, R"({"net1":"virtio=BC:24:11:00:01:00,bridge=vmbr9,queues=2"})");
    VmConfig cfg = read(*client, ref);
    auto moved = client->update_nic(ref, "net1", *NetDeviceSpec::parse("virtio=BC:24:11:00:01:00,bridge=vmbr1,tag=20"),
                                    cfg.digest);
    REQUIRE_FALSE(moved);
    CHECK(moved.error().permission_path == "/sdn/zones/localnetwork/vmbr9");
  }
  SECTION("the method's any-of check comes before the parameters are looked at") {
    auto look = make_client(sim.client_options("look@pve!t", "l1"));
    VmConfig cfg = read(*look, ref);
    ConfigChange bad;
    bad.set = {{"cores", "many"}};  // a 400 for anyone allowed to write
    bad.digest = cfg.digest;
    auto r = look->update_config(ref, bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().http_status == 403);
    CHECK_THAT(r.error().message,
               Catch::Contains("Permission check failed (/vms/100, VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|"
                               "VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|"
                               "VM.Config.Cloudinit)"));
  }
  SECTION("GET /access/permissions answers as Proxmox composes the entries") {
    const std::vector<std::string> paths{"/vms/100", "/vms/101", "/sdn/zones/localnetwork/vmbr1/20",
                                         "/sdn/zones/localnetwork/vmbr2/5", "/sdn/zones/zone1/vnet7/99"};
    auto privs = client->privileges(paths);
    REQUIRE(privs.size() == 5);
    CHECK(*privs[0] == std::set<std::string>{"VM.Audit", "VM.Config.Network"});
    CHECK(privs[1]->empty());
    CHECK(*privs[2] == std::set<std::string>{"SDN.Use"});
    CHECK(privs[3]->empty());
    CHECK(*privs[4] == std::set<std::string>{"SDN.Use"});
    // The VNet list shows a VNet only with SDN.Audit or SDN.Allocate on it.
    auto zones = client->sdn_vnet_zones();
    REQUIRE(zones);
    CHECK(zones->empty());
    auto root_zones = make_client(sim.client_options())->sdn_vnet_zones();
    REQUIRE(root_zones);
    CHECK(*root_zones == std::map<std::string, std::string>{{"vnet7", "zone1"}});
  }
}
