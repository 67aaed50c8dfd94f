// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/loader.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "settings/loader.hpp"

namespace fs = std::filesystem;
using namespace pw::policy;

namespace {

const fs::path kBad = fs::path(PW_TEST_DATA_DIR) / "policy" / "bad";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Diagnostics as `validate` prints them, with the corpus directory stripped so the expected files
// do not depend on where the checkout lives.
std::string render(pw::Diagnostics diags) {
  std::stable_sort(diags.begin(), diags.end(), [](const auto& a, const auto& b) {
    return std::tie(a.pos.file, a.pos.line, a.pos.column) < std::tie(b.pos.file, b.pos.line, b.pos.column);
  });
  std::string out;
  const std::string prefix = kBad.string() + "/";
  for (const auto& d : diags) {
    std::string line = d.to_string();
    for (auto pos = line.find(prefix); pos != std::string::npos; pos = line.find(prefix))
      line.erase(pos, prefix.size());
    out += line + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("the shipped policies are valid and mean what the seeds say") {
  const std::array<fs::path, 1> inputs{fs::path(PW_SOURCE_DIR) / "policies"};
  auto r = load_paths(inputs);
  INFO(render(r.diagnostics));
  REQUIRE(r.ok());
  REQUIRE(r.paths.size() == 3);
  auto movies = std::find_if(r.paths.begin(), r.paths.end(), [](const auto& p) { return p.name == "movies-10g"; });
  REQUIRE(movies != r.paths.end());
  CHECK(movies->guest.vmid == 101);
  CHECK(movies->guest.node == "pve1");
  CHECK(movies->nic.device == "net1");
  CHECK(movies->nic.queues == 8);
  CHECK(movies->mount.nfs_version() == "3");
  CHECK(movies->mount.nconnect() == 8);
  CHECK(movies->mount.options_string() == "vers=3,nconnect=8,_netdev");
  CHECK(movies->mount.reason.find("trunking") != std::string::npos);
  CHECK(movies->verify.probe_bytes == 64ull << 20);
  CHECK(movies->verify.max_probe_bytes == 256ull << 20);
  CHECK(movies->restart.allowed);
  CHECK(movies->mount.owned());

  // Seed 002: the Postgres volume is Docker's (a Compose NFS volume): observed and proven, never
  // written, with a write probe and a commit-latency figure; the seed's client `async` left out.
  auto pg = std::find_if(r.paths.begin(), r.paths.end(), [](const auto& p) { return p.name == "postgres-data"; });
  REQUIRE(pg != r.paths.end());
  CHECK(pg->mount.owner == MountOwner::compose);
  CHECK_FALSE(pg->mount.owned());
  REQUIRE(pg->mount.compose.has_value());
  CHECK(pg->mount.compose->project == "pg");
  CHECK(pg->mount.compose->volume == "pgdata");
  CHECK(pg->mount.compose->docker_name() == "pg_pgdata");
  CHECK(pg->mount.path.empty());
  CHECK(pg->mount.server == "198.51.100.5");
  CHECK(pg->mount.export_path == "/mnt/pool/docker/pg14");
  CHECK(pg->mount.nfs_version() == "4.2");
  CHECK(pg->mount.nconnect() == 4);
  CHECK(pg->mount.option("async") == nullptr);
  CHECK(pg->verify.direction == ProbeDirection::write);
  CHECK(pg->verify.commit_cycles == 1000);
  CHECK_FALSE(pg->verify.min_commit_rate.has_value());
  CHECK_FALSE(pg->nic.queues.has_value());
  CHECK_FALSE(pg->restart.allowed);
  CHECK(pg->verify.min_share == Approx(0.9));

  // The backup VM's read-only mount of the same dataset is pathwarden's (fstab), on NFSv4.2
  // without the seed's nolock (no effect on NFSv4), read-probed.
  auto backup = std::find_if(r.paths.begin(), r.paths.end(), [](const auto& p) { return p.name == "postgres-backup"; });
  REQUIRE(backup != r.paths.end());
  CHECK(backup->mount.owned());
  CHECK(backup->guest.host != pg->guest.host);
  CHECK(backup->guest.vmid != pg->guest.vmid);
  CHECK(backup->mount.server == pg->mount.server);
  CHECK(backup->mount.option("ro") != nullptr);
  CHECK(backup->mount.option("nolock") == nullptr);
  CHECK(backup->mount.nfs_version() == "4.2");
  CHECK(backup->verify.direction == ProbeDirection::read);
  CHECK(backup->verify.commit_cycles == 0);
}

TEST_CASE("every file of the bad corpus reports exactly its expected problems") {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kBad)) {
    const auto& p = entry.path();
    if (p.extension() == ".expected") continue;
    const fs::path expected_file = p.parent_path() / (p.stem().string() + ".expected");
    REQUIRE(fs::exists(expected_file));
    const std::array<fs::path, 1> inputs{p};
    // The corpus holds controller settings too, read as `pathwarden validate` reads them.
    auto r = pw::settings::load_paths(inputs);
    INFO("corpus file: " << p.filename());
    CHECK_FALSE(r.ok());
    CHECK(render(r.diagnostics) == read(expected_file));
    ++checked;
  }
  CHECK(checked >= 10);
}

TEST_CASE("a valid policy round-trips its positions for later messages") {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: p}\nspec:\n"
      "  guest: {node: pve1, vmid: 101, host: vm}\n  nic: {device: net1, queues: 4}\n"
      "  mount: {server: 192.0.2.2, export: /e, path: /mnt/e, options: 'vers=4.2,nconnect=2'}\n"
      "  verify: {probe_file: p.bin}\n";
  auto r = load_text(text, "mem.yaml");
  REQUIRE(r.ok());
  REQUIRE(r.paths.size() == 1);
  CHECK(r.paths[0].position_of("spec.nic.queues").to_string() == "mem.yaml:6:31");
  CHECK(r.paths[0].mount.options_string() == "vers=4.2,nconnect=2");
  CHECK(r.paths[0].source.to_string() == "mem.yaml:1:1");
}

TEST_CASE("options written as one string get per-option columns") {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: p}\nspec:\n"
      "  guest: {node: pve1, vmid: 101, host: vm}\n  nic: {device: net1}\n"
      "  mount:\n    server: 192.0.2.2\n    export: /e\n    path: /mnt/e\n    options: vers=3,nconect=2\n"
      "  verify: {probe_file: p.bin}\n";
  auto r = load_text(text, "mem.yaml");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].to_string() ==
        "mem.yaml:11:21: spec.mount.options: unknown mount option 'nconect', did you mean 'nconnect'?");
}

TEST_CASE("mount(8)'s userspace options pass through: x-* and comment=") {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: p}\nspec:\n"
      "  guest: {node: pve1, vmid: 101, host: vm}\n  nic: {device: net1}\n"
      "  mount:\n    server: 192.0.2.2\n    export: /e\n    path: /mnt/e\n"
      "    options: [vers=3, x-systemd.automount, comment=systemd.automount, comment]\n"
      "  verify: {probe_file: p.bin}\n";
  auto r = load_text(text, "mem.yaml");
  REQUIRE(r.diagnostics.size() == 1);  // a bare "comment" is no option
  CHECK(r.diagnostics[0].to_string().find("unknown mount option 'comment'") != std::string::npos);
}

TEST_CASE("controller settings resolve relative paths and keep secrets out") {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox:\n    url: https://127.0.0.1:8006\n    token_id: pw@pve!ci\n    token_secret_file: secrets/token\n"
      "    fingerprint: \"" +
      std::string("AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89") +
      "\"\n  ansible: {inventory: inv.ini, forks: 8}\n  state_dir: /var/lib/pathwarden\n  policies: ../policies\n";
  auto r = pw::settings::load_text(text, "/etc/pathwarden/pathwarden.yaml");
  INFO(render(r.diagnostics));
  REQUIRE(r.ok());
  REQUIRE(r.controllers.size() == 1);
  const auto& c = r.controllers[0];
  CHECK(c.proxmox.token_secret_file == "/etc/pathwarden/secrets/token");
  CHECK(c.ansible.inventory == "/etc/pathwarden/inv.ini");
  CHECK(c.ansible.forks == 8);
  CHECK(c.policies_dir == "/etc/policies");
  CHECK(c.proxmox.max_in_flight == 16);
}

TEST_CASE("a settings file given by a relative path still resolves to absolute paths") {
  // ansible-playbook runs in each phase's own directory: a path relative to where pathwarden was
  // started would name nothing there.
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: \"https://127.0.0.1:8006\", token_id: pw@pve!ci, token_secret_file: token, ca_file: ca.pem}\n"
      "  ansible: {inventory: inv.ini, known_hosts_file: ../ssh/known_hosts}\n";
  auto r = pw::settings::load_text(text, "conf/pathwarden.yaml");
  INFO(render(r.diagnostics));
  REQUIRE(r.ok());
  const auto& c = r.controllers.at(0);
  const auto conf = (std::filesystem::current_path() / "conf").lexically_normal().string();
  CHECK(c.ansible.inventory == conf + "/inv.ini");
  CHECK(c.proxmox.token_secret_file == conf + "/token");
  CHECK(c.proxmox.ca_file == conf + "/ca.pem");
  CHECK(c.ansible.known_hosts_file ==
        (std::filesystem::current_path() / "ssh/known_hosts").lexically_normal().string());
}

TEST_CASE("guest_timeout: each guest's limit, below the run's so that one hung guest fails alone") {
  const std::string head =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: \"https://127.0.0.1:8006\", token_id: pw@pve!ci, token_secret_file: token}\n";
  auto defaults = pw::settings::load_text(head + "  ansible: {inventory: i, timeout: 4m}\n", "c.yaml");
  INFO(render(defaults.diagnostics));
  REQUIRE(defaults.ok());
  CHECK(defaults.controllers.at(0).ansible.guest_timeout == std::chrono::minutes(2));  // half the run's
  auto given =
      pw::settings::load_text(head + "  ansible: {inventory: i, timeout: 10m, guest_timeout: 90s}\n", "c.yaml");
  REQUIRE(given.ok());
  CHECK(given.controllers.at(0).ansible.guest_timeout == std::chrono::seconds(90));
  auto too_long =
      pw::settings::load_text(head + "  ansible: {inventory: i, timeout: 2m, guest_timeout: 100s}\n", "c.yaml");
  REQUIRE(too_long.diagnostics.size() == 1);
  CHECK(too_long.diagnostics[0].to_string() ==
        "c.yaml:5:55: 'spec.ansible.guest_timeout' is 100s; it must be at least 1s and 30s below spec.ansible.timeout "
        "(120s), so that one hung guest fails alone");
}

TEST_CASE("retention: how many finished journals stay, and how old they may be") {
  const std::string head =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: \"https://127.0.0.1:8006\", token_id: pw@pve!ci, token_secret_file: token}\n"
      "  ansible: {inventory: i}\n";
  auto defaults = pw::settings::load_text(head, "c.yaml");
  REQUIRE(defaults.ok());
  CHECK(defaults.controllers.at(0).keep_journals == 200);
  CHECK(defaults.controllers.at(0).keep_days == 30);
  auto given = pw::settings::load_text(head + "  retention: {journals: 50, days: 7}\n", "c.yaml");
  INFO(render(given.diagnostics));
  REQUIRE(given.ok());
  CHECK(given.controllers.at(0).keep_journals == 50);
  CHECK(given.controllers.at(0).keep_days == 7);
  auto typo = pw::settings::load_text(head + "  retention: {journal: 50}\n", "c.yaml");
  REQUIRE(typo.diagnostics.size() == 1);
  CHECK(typo.diagnostics[0].to_string().find("did you mean 'journals'") != std::string::npos);
  auto zero = pw::settings::load_text(head + "  retention: {days: 0}\n", "c.yaml");
  REQUIRE(zero.diagnostics.size() == 1);
  CHECK(zero.diagnostics[0].to_string().find("spec.retention.days") != std::string::npos);
}

TEST_CASE("become: Ansible's names, checked where they are written") {
  const std::string head =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: \"https://127.0.0.1:8006\", token_id: pw@pve!ci, token_secret_file: token}\n";
  auto r = pw::settings::load_text(
      head + "  ansible: {inventory: i, remote_user: ops, become: true, become_user: root}\n", "c.yaml");
  INFO(render(r.diagnostics));
  REQUIRE(r.ok());
  CHECK(r.controllers.at(0).ansible.become);
  CHECK(r.controllers.at(0).ansible.become_user == "root");
  CHECK(r.controllers.at(0).ansible.become_method.empty());

  auto without = pw::settings::load_text(head + "  ansible: {inventory: i, become_method: sudo}\n", "c.yaml");
  REQUIRE(without.diagnostics.size() == 1);
  CHECK(without.diagnostics[0].to_string() ==
        "c.yaml:5:42: 'spec.ansible.become_method' has no effect without 'become: true'; add that, or remove this key");
  auto odd =
      pw::settings::load_text(head + "  ansible: {inventory: i, become: true, become_user: \"{{ x }}\"}\n", "c.yaml");
  REQUIRE(odd.diagnostics.size() == 1);
  CHECK_THAT(odd.diagnostics[0].to_string(),
             Catch::StartsWith("c.yaml:5:54: become user '{{ x }}' is not a user name"));
  auto typo = pw::settings::load_text(head + "  ansible: {inventory: i, becom: true}\n", "c.yaml");
  REQUIRE(typo.diagnostics.size() == 1);
  CHECK_THAT(typo.diagnostics[0].message, Catch::Contains("did you mean 'become'"));
}

TEST_CASE("share_connections: on unless turned off, a boolean") {
  const std::string head =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: \"https://127.0.0.1:8006\", token_id: pw@pve!ci, token_secret_file: token}\n";
  auto on = pw::settings::load_text(head + "  ansible: {inventory: i}\n", "c.yaml");
  REQUIRE(on.ok());
  CHECK(on.controllers.at(0).ansible.share_connections);
  auto off = pw::settings::load_text(head + "  ansible: {inventory: i, share_connections: false}\n", "c.yaml");
  INFO(render(off.diagnostics));
  REQUIRE(off.ok());
  CHECK_FALSE(off.controllers.at(0).ansible.share_connections);
  auto bad = pw::settings::load_text(head + "  ansible: {inventory: i, share_connections: sometimes}\n", "c.yaml");
  REQUIRE(bad.diagnostics.size() == 1);
  CHECK_THAT(bad.diagnostics[0].to_string(), Catch::StartsWith("c.yaml:5:46: "));
  CHECK_THAT(bad.diagnostics[0].message, Catch::Contains("spec.ansible.share_connections"));
  auto typo = pw::settings::load_text(head + "  ansible: {inventory: i, share_connection: false}\n", "c.yaml");
  REQUIRE(typo.diagnostics.size() == 1);
  CHECK_THAT(typo.diagnostics[0].message, Catch::Contains("did you mean 'share_connections'"));
}

TEST_CASE("spec.observe: SSH unless the guest agent is chosen; words with a did-you-mean") {
  const std::string head =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: \"https://127.0.0.1:8006\", token_id: pw@pve!ci, token_secret_file: token}\n"
      "  ansible: {inventory: i}\n";
  auto plain = pw::settings::load_text(head, "c.yaml");
  REQUIRE(plain.ok());
  CHECK(plain.controllers.at(0).observe.via == pw::observe::Via::ansible);
  auto agent = pw::settings::load_text(
      head + "  observe: {via: auto, agent_access: exec, agent_timeout: 90s, agent_per_node: 5}\n", "c.yaml");
  INFO(render(agent.diagnostics));
  REQUIRE(agent.ok());
  const auto& o = agent.controllers.at(0).observe;
  CHECK(o.via == pw::observe::Via::automatic);
  CHECK(o.agent_access == pw::observe::Access::exec);
  CHECK(o.agent_timeout == std::chrono::seconds(90));
  CHECK(o.agent_per_node == 5);
  auto typo = pw::settings::load_text(head + "  observe: {via: agnet}\n", "c.yaml");
  REQUIRE(typo.diagnostics.size() == 1);
  CHECK_THAT(typo.diagnostics[0].to_string(),
             Catch::StartsWith("c.yaml:6:18: 'spec.observe.via' is 'agnet'; it is one of ansible, agent, auto"));
  CHECK_THAT(typo.diagnostics[0].message, Catch::Contains("did you mean 'agent'"));
  auto pointless = pw::settings::load_text(head + "  observe: {agent_per_node: 2}\n", "c.yaml");
  REQUIRE(pointless.diagnostics.size() == 1);
  CHECK_THAT(pointless.diagnostics[0].message, Catch::Contains("has no effect with via: ansible"));
  auto short_wait = pw::settings::load_text(head + "  observe: {via: agent, agent_timeout: 3s}\n", "c.yaml");
  REQUIRE(short_wait.diagnostics.size() == 1);
  CHECK_THAT(short_wait.diagnostics[0].message, Catch::Contains("between 10s"));
  auto key = pw::settings::load_text(head + "  observe: {via: agent, acess: exec}\n", "c.yaml");
  REQUIRE(key.diagnostics.size() == 1);
}

TEST_CASE("secrets written inline never reach a message") {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: Controller\nspec:\n"
      "  proxmox: {url: https://h:8006, token_id: a@pve!b, token_secret: s3cr3t-VALUE}\n"
      "  ansible: {inventory: i}\n";
  auto r = pw::settings::load_text(text, "c.yaml");
  REQUIRE_FALSE(r.ok());
  for (const auto& d : r.diagnostics) CHECK(d.message.find("s3cr3t-VALUE") == std::string::npos);
}
