// SPDX-License-Identifier: GPL-3.0-or-later
// `pathwarden import` (issue 41 item 12) against the simulated seed world: the guest's NFS mounts
// as policies, valid as written, and adopted by the next reconcile without re-making a mount.
#include <catch2/catch.hpp>

#include "importer/discover.hpp"
#include "importer/policy_yaml.hpp"
#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;
using importer::ImportedPolicy;

namespace {

// The hand-written entry of /mnt/movies over the new link, mounted as it says.
void hand_written_movies(SeedWorld& w) {
  w.guest().fstab += "198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n";
  w.guests.mount(w.guest(), "198.51.100.2:/srv/nas/movies", "/mnt/movies", {"vers=3", "nconnect=8"});
}

guest::GuestFacts facts_of(SeedWorld& w, bool docker = false) {
  const std::array<std::string, 1> hosts{"media-vm"};
  guest::FactsRequests asked;
  if (docker) asked["media-vm"].docker_volumes = true;
  auto facts = w.guests.gather_facts(hosts, asked);
  return *facts.at("media-vm");
}

importer::GuestVm vm_of(SeedWorld& w, const guest::GuestFacts& facts) {
  const std::array<proxmox::VmRef, 1> refs{proxmox::VmRef{"pve1", 101}};
  std::vector<proxmox::VmConfig> configs;
  for (auto& c : w.pve.read_configs(refs, proxmox::ConfigView::current)) configs.push_back(*c);
  const auto listed = *w.pve.list_guests();
  return *importer::vm_of_guest(facts.interfaces, configs, listed);
}

importer::Discovery discover(SeedWorld& w, const guest::GuestFacts& facts,
                             std::span<const policy::StoragePath> existing = {}, importer::Wanted wanted = {}) {
  std::vector<std::string> taken;
  return importer::discover(facts, vm_of(w, facts), wanted, existing, taken);
}

const ImportedPolicy& at(const importer::Discovery& d, std::string_view path) {
  for (const auto& p : d.policies) {
    if (p.path == path) return p;
  }
  throw std::runtime_error("no policy imported for " + std::string(path));
}

// The file as written, read back as `validate` reads it.
policy::StoragePath load(const ImportedPolicy& p) {
  const auto text = importer::policy_yaml(p, "2026-12-06T10:00:00Z");
  auto r = policy::load_text(text, p.name + ".yaml");
  INFO(text);
  for (const auto& d : r.diagnostics) INFO(d.to_string());
  REQUIRE(r.ok());
  REQUIRE(r.paths.size() == 1);
  return r.paths[0];
}

}  // namespace

TEST_CASE("import writes each NFS mount as it is; the next reconcile adopts them without re-making one") {
  SeedWorld w;
  hand_written_movies(w);
  const auto d = discover(w, facts_of(w));
  REQUIRE(d.skipped.empty());
  REQUIRE(d.policies.size() == 2);
  const auto& movies = at(d, "/mnt/movies");
  CHECK(movies.name == "media-vm-mnt-movies");
  CHECK(movies.vm == proxmox::VmRef{"pve1", 101});
  CHECK(movies.nic_device == "net1");  // its connection leaves by ens19, net1's MAC
  CHECK(movies.interface == "ens19");
  CHECK(movies.server == kNewLink);
  CHECK(movies.export_path == "/srv/nas/movies");
  CHECK(movies.options == std::vector<std::string>{"vers=3", "nconnect=8", "_netdev"});
  CHECK(movies.owner == policy::MountOwner::fstab);
  const auto& tv = at(d, "/mnt/tv");
  CHECK(tv.nic_device == "net2");
  CHECK(tv.options == std::vector<std::string>{"vers=4.2", "_netdev"});

  std::vector<policy::StoragePath> written{load(movies), load(tv)};
  CHECK(written[0].mount.options_string() == "vers=3,nconnect=8,_netdev");
  CHECK_FALSE(written[0].nic.queues);  // the NIC's queues are the operator's to manage
  CHECK(written[0].mount.reason.empty());

  const auto fstab_before = w.guest().fstab;
  const auto vm_before = w.vm().current;
  auto engine = w.engine();
  auto rep = engine.reconcile(written, false);
  INFO(text(rep));
  CHECK(w.guests.unmounted.empty());  // no mount re-made
  CHECK(w.vm().current == vm_before);
  for (const auto& p : rep.policies) {
    CHECK(p.verdict != report::Verdict::rolled_back);
    CHECK(report::exit_reason(p.verdict, !p.changes.empty()) != report::ExitReason::failed);
  }
  // Only pathwarden's comments were added above the entries, which kept their bytes.
  CHECK(w.guest().fstab.find("# Managed by pathwarden (policy media-vm-mnt-movies)") != std::string::npos);
  CHECK(w.guest().fstab.find("198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n") !=
        std::string::npos);
  CHECK(w.guest().fstab.find("192.0.2.2:/srv/nas/tv /mnt/tv nfs vers=4.2,_netdev 0 0\n") != std::string::npos);
  CHECK(w.guest().fstab.size() > fstab_before.size());

  // Imported again with the policies there: nothing new, each mount named by its policy.
  const auto again = discover(w, facts_of(w), written);
  CHECK(again.policies.empty());
  REQUIRE(again.skipped.size() == 2);
  CHECK_THAT(again.skipped[0].why, Catch::Contains("describes it already"));
  auto converged = engine.reconcile(written, false);
  INFO(text(converged));
  for (const auto& p : converged.policies) CHECK(p.verdict == report::Verdict::converged);
}

TEST_CASE("import: --mount narrows, names stay unique, a trunked mount names both addresses") {
  SeedWorld w;
  hand_written_movies(w);
  SECTION("only the mount asked for") {
    const auto d = discover(w, facts_of(w), {}, importer::Wanted{{"/mnt/tv"}});
    REQUIRE(d.policies.size() == 1);
    CHECK(d.policies[0].path == "/mnt/tv");
  }
  SECTION("a name already taken by another policy gets a suffix") {
    auto taken = movies_policy("[vers=3]");
    taken[0].name = "media-vm-mnt-tv";
    taken[0].mount.path = "/mnt/elsewhere";
    const auto d = discover(w, facts_of(w), taken);
    CHECK(at(d, "/mnt/tv").name == "media-vm-mnt-tv-2");
  }
  SECTION("trunked: mounted as the new address, riding the old one's transport") {
    auto facts = facts_of(w);
    for (auto& m : facts.mounts) {
      if (m.mount_point != "/mnt/movies") continue;
      std::erase_if(m.options, [](const auto& o) { return o.name == "addr"; });
      m.options.push_back({"addr", std::string(kOldLink)});
    }
    const auto d = discover(w, facts);
    const auto& movies = at(d, "/mnt/movies");
    CHECK(movies.server == kNewLink);
    CHECK(movies.nas_addresses == std::vector<std::string>{kOldLink});
    CHECK(movies.nic_device == "net2");  // where its bytes go now: the plan's first reconcile says so
    REQUIRE_FALSE(movies.notes.empty());
    CHECK_THAT(movies.notes.front(), Catch::Contains("trunking"));
    CHECK(load(movies).mount.nas_addresses == std::vector<std::string>{kOldLink});
  }
}

TEST_CASE("import: owners other than fstab, and mounts it leaves out with why") {
  SeedWorld w;
  auto facts = facts_of(w);
  auto nfs = facts.mounts.front();  // the tv mount: 192.0.2.2, over ens20
  SECTION("no fstab entry: a systemd unit's mount, with the options the kernel shows") {
    facts.fstab = guest::FstabFile::parse("# empty\n");
    const auto d = discover(w, facts);
    const auto& tv = at(d, "/mnt/tv");
    CHECK(tv.owner == policy::MountOwner::systemd);
    CHECK(tv.options == std::vector<std::string>{"vers=4.2"});
    REQUIRE_FALSE(tv.notes.empty());
    CHECK_THAT(tv.notes.front(), Catch::Contains("mnt-tv.mount"));
    CHECK(load(tv).mount.owner == policy::MountOwner::systemd);
  }
  SECTION("under an autofs trigger") {
    facts.mounts.insert(facts.mounts.begin(), guest::MountInfo{"/etc/auto.nas", "/mnt/nas", "autofs", {}});
    nfs.mount_point = "/mnt/nas/media";
    facts.mounts.push_back(nfs);
    const auto d = discover(w, facts);
    CHECK(at(d, "/mnt/nas/media").owner == policy::MountOwner::autofs);
  }
  SECTION("a Compose volume: named by project and volume, its options from driver_opts") {
    nfs.mount_point = "/var/lib/docker/volumes/pg_pgdata/_data";
    facts.mounts.push_back(nfs);
    guest::DockerVolume v;
    v.name = "pg_pgdata";
    v.mountpoint = nfs.mount_point;
    v.options = {{"type", "nfs"}, {"o", "addr=192.0.2.2,nfsvers=4.2,nconnect=4"}, {"device", ":/srv/nas/pg"}};
    v.compose_project = "pg";
    v.compose_volume = "pgdata";
    facts.docker = std::vector<guest::DockerVolume>{v};
    const auto d = discover(w, facts);
    const auto it = std::find_if(d.policies.begin(), d.policies.end(), [](const auto& p) { return p.compose; });
    REQUIRE(it != d.policies.end());
    CHECK(it->name == "media-vm-pg-pgdata");
    CHECK(it->server == kOldLink);
    CHECK(it->export_path == "/srv/nas/pg");
    CHECK(it->options == std::vector<std::string>{"nfsvers=4.2", "nconnect=4"});
    const auto loaded = load(*it);
    CHECK(loaded.mount.compose == policy::ComposeVolume{"pg", "pgdata"});
  }
  SECTION("a Docker volume without Compose, and Docker not answering, are left out with why") {
    nfs.mount_point = "/var/lib/docker/volumes/loose/_data";
    facts.mounts.push_back(nfs);
    facts.docker = std::vector<guest::DockerVolume>{};
    auto d = discover(w, facts);
    REQUIRE(d.skipped.size() == 1);
    CHECK_THAT(d.skipped[0].why, Catch::Contains("Compose did not make"));
    facts.docker = Result<std::vector<guest::DockerVolume>>(fail("permission denied"));
    d = discover(w, facts);
    REQUIRE(d.skipped.size() == 1);
    CHECK_THAT(d.skipped[0].why, Catch::Contains("Docker did not answer: permission denied"));
  }
  SECTION("no connection and no subnet: routed, left out with the remedy") {
    facts.nfs_connections.clear();
    const auto d = discover(w, facts);
    REQUIRE(d.skipped.size() == 1);
    CHECK_THAT(d.skipped[0].why, Catch::Contains("no interface on its subnet"));
  }
  SECTION("no connection (an idle NFSv3 mount): the NIC found by the server's subnet") {
    facts.nfs_connections.clear();
    facts.addresses.push_back({"ens20", "192.0.2.10", 24});
    const auto d = discover(w, facts);
    const auto& tv = at(d, "/mnt/tv");
    CHECK(tv.nic_device == "net2");
    CHECK_THAT(tv.interface_found_by, Catch::Contains("the subnet 192.0.2.10/24"));
  }
}

TEST_CASE("import: hostile values stay data in the file written") {
  SeedWorld w;
  auto facts = facts_of(w);
  auto& tv = facts.mounts.front();
  tv.mount_point = "/mnt/a: b #c 'd' \"e\"";
  facts.fstab =
      guest::FstabFile::parse("192.0.2.2:/srv/nas/tv /mnt/a:\\040b\\040#c\\040'd'\\040\"e\" nfs vers=4.2 0 0\n");
  const auto d = discover(w, facts);
  REQUIRE(d.policies.size() == 1);
  const auto loaded = load(d.policies[0]);
  CHECK(loaded.mount.path == "/mnt/a: b #c 'd' \"e\"");
  CHECK(loaded.name == "media-vm-mnt-a-b-c-d-e");
  // A newline in an observed value cannot end a comment and start YAML.
  auto p = d.policies[0];
  p.mounted_as = "x\nspec: {evil: 1}";
  p.notes.push_back("y\nkind: Other");
  const auto again = load(p);
  CHECK(again.name == loaded.name);
}

TEST_CASE("import: the VM is found by its NICs' MACs, never guessed") {
  SeedWorld w;
  const auto facts = facts_of(w);
  const std::array<proxmox::VmRef, 1> refs{proxmox::VmRef{"pve1", 101}};
  std::vector<proxmox::VmConfig> configs;
  for (auto& c : w.pve.read_configs(refs, proxmox::ConfigView::current)) configs.push_back(*c);
  SECTION("one VM") {
    CHECK(importer::vm_of_guest(facts.interfaces, configs, {})->vm.vmid == 101);
  }
  SECTION("a clone with the same MACs: ambiguous") {
    configs.push_back(configs[0]);
    configs.back().ref.vmid = 102;
    auto r = importer::vm_of_guest(facts.interfaces, configs, {});
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().what, Catch::Contains("several VMs (VM 101 on pve1, VM 102 on pve1"));
  }
  SECTION("none") {
    auto r = importer::vm_of_guest(facts.interfaces, {}, {});
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().hint, Catch::Contains("--vm"));
  }
}

TEST_CASE("import: policy names are valid metadata.name values") {
  std::vector<std::string> taken;
  CHECK(importer::policy_name("Media-VM", "/mnt/Movies", taken) == "media-vm-mnt-movies");
  CHECK(importer::policy_name("h", "/", taken) == "h");
  const std::string long_path = "/" + std::string(100, 'x');
  const auto n = importer::policy_name("h", long_path, taken);
  CHECK(n.size() == 63);
  taken.push_back(n);
  const auto n2 = importer::policy_name("h", long_path, taken);
  CHECK(n2.size() == 63);
  CHECK(n2.ends_with("-2"));
  CHECK(importer::policy_name("é", "/ü", {}) == "imported");
}

TEST_CASE("an nfs4 entry is adopted as nfs4: no type rewrite, no mount re-made") {
  SeedWorld w;
  w.guest().fstab = "192.0.2.2:/srv/nas/tv /mnt/tv nfs4 _netdev 0 0\n";
  const auto d = discover(w, facts_of(w));
  REQUIRE(d.policies.size() == 1);
  std::vector<policy::StoragePath> written{load(d.policies[0])};
  auto engine = w.engine();
  auto rep = engine.reconcile(written, false);
  INFO(text(rep));
  CHECK(w.guests.unmounted.empty());
  CHECK(w.guest().fstab.find("192.0.2.2:/srv/nas/tv /mnt/tv nfs4 _netdev 0 0\n") != std::string::npos);
  SECTION("a policy that asks NFSv3 of it writes nfs: mount.nfs4 would refuse vers=3") {
    written[0].mount.options = {{"vers", "3"}, {"_netdev", std::nullopt}};
    auto changed = engine.reconcile(written, false);
    INFO(text(changed));
    CHECK(w.guest().fstab.find("192.0.2.2:/srv/nas/tv /mnt/tv nfs vers=3,_netdev 0 0\n") != std::string::npos);
  }
}

TEST_CASE("import: a NAS named by host name stays named, found by the address it resolves to") {
  SeedWorld w;
  // An operator's entry naming the NAS; the guest's resolver gives the new link's address, which
  // mount.nfs mounted (the kernel's addr= is the address, the source keeps the name).
  w.guest().hosts_file["nas.example.lan"] = {kNewLink};
  w.guest().fstab += "nas.example.lan:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n";
  w.guests.mount(w.guest(), "nas.example.lan:/srv/nas/movies", "/mnt/movies", {"vers=3", "nconnect=8"});
  const auto d = discover(w, facts_of(w));
  const auto& movies = at(d, "/mnt/movies");
  CHECK(movies.server == "nas.example.lan");  // as written: the operator's name, never the address
  CHECK(movies.nic_device == "net1");         // its connection leaves by ens19, net1's MAC
  CHECK(movies.options == std::vector<std::string>{"vers=3", "nconnect=8", "_netdev"});
  const auto written = load(movies);
  CHECK(written.mount.server == "nas.example.lan");

  // Adopted as it is: the entry keeps its bytes, the mount is not re-made.
  const std::vector<policy::StoragePath> policies{written};
  auto engine = w.engine();
  auto rep = engine.reconcile(policies, false);
  INFO(text(rep));
  CHECK(w.guests.unmounted.empty());
  CHECK(w.guest().fstab.find("nas.example.lan:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n") !=
        std::string::npos);
  CHECK(report::exit_reason(rep.policies[0].verdict, !rep.policies[0].changes.empty()) != report::ExitReason::failed);
}
