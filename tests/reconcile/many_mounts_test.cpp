// SPDX-License-Identifier: GPL-3.0-or-later
// Several policies on one guest and on one VM (issue 38): one fstab write per guest, one config
// write and one restart per VM, probes told apart, and a failing policy undone alone.
#include <catch2/catch.hpp>

#include "guest/fstab.hpp"
#include "plan/render.hpp"
#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;

namespace {

// One more policy of the seed's guest: its own mount and NIC, NFSv3 unless said otherwise.
std::vector<policy::StoragePath> extra_policy(const std::string& name, const std::string& server,
                                              const std::string& path, const std::string& nic,
                                              const std::string& options = "[vers=3, _netdev]",
                                              const std::string& queues = "") {
  const std::string yaml =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: " + name +
      "}\nspec:\n  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: " + nic +
      (queues.empty() ? "" : ", queues: " + queues) + "}\n  mount:\n    server: " + server + "\n    nas_addresses: [" +
      std::string(server == kOldLink ? kNewLink : kOldLink) + "]\n    export: /srv/nas/" + name +
      "\n    path: " + path + "\n    options: " + options + "\n    reason: " + name +
      " share\n  verify: {probe_file: probe.bin, probe_bytes: 64MiB}\n  restart: {allowed: true}\n";
  auto r = policy::load_text(yaml, name + ".yaml");
  if (!r.ok()) throw std::runtime_error(r.diagnostics.front().to_string());
  return r.paths;
}

std::vector<policy::StoragePath> both(std::vector<policy::StoragePath> a, const std::vector<policy::StoragePath>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

long count(const std::vector<std::string>& calls, const std::string& call) {
  return std::count(calls.begin(), calls.end(), call);
}

}  // namespace

TEST_CASE("two policies on one guest: one fstab write holds both entries, both verified") {
  SeedWorld w;
  auto engine = w.engine();
  const auto policies =
      both(movies_policy("[vers=3, _netdev]", false), extra_policy("backup", kOldLink, "/mnt/backup", "net2"));
  auto rep = engine.reconcile(policies, false);
  INFO(text(rep));
  CHECK(entry(rep, "movies-10g").verdict == report::Verdict::verified);
  CHECK(entry(rep, "backup").verdict == report::Verdict::verified);
  CHECK(report::exit_code(rep) == 2);
  CHECK(count(w.guests.calls, "apply_fstab media-vm") == 1);  // one compare-and-swap, one backup
  const auto fstab = guest::FstabFile::parse(w.guest().fstab);
  REQUIRE(fstab.owner_of("/mnt/movies"));
  CHECK(fstab.owner_of("/mnt/movies")->policy == "movies-10g");
  REQUIRE(fstab.owner_of("/mnt/backup"));
  CHECK(fstab.owner_of("/mnt/backup")->policy == "backup");
  CHECK(fstab.entry_for("/mnt/tv"));  // the hand-written line is untouched
  CHECK(w.guest().fstab.starts_with(kSeedFstab));
  CHECK(w.guest().files.size() == 1);  // one backup
  // The probes ran one after another: each saw its own bytes on its own NIC.
  CHECK(count(w.guests.calls, "probe media-vm") == 2);

  // The next scheduled run finds both converged and changes nothing.
  const auto before = w.guest().fstab;
  auto again = engine.reconcile(policies, false);
  INFO(text(again));
  CHECK(entry(again, "movies-10g").verdict == report::Verdict::converged);
  CHECK(entry(again, "backup").verdict == report::Verdict::converged);
  CHECK(w.guest().fstab == before);
}

TEST_CASE("three policies on one guest, one trunks: that one is undone alone, the others' entries kept") {
  SeedWorld w;
  auto engine = w.engine();
  // movies asks NFSv4.2 of the new address while /mnt/tv holds a v4.2 client of the same NAS
  // through the old one: its mount trunks onto that transport (the seed's trap).
  auto policies =
      both(movies_policy("[vers=4.2, _netdev]", false), extra_policy("backup", kOldLink, "/mnt/backup", "net2"));
  policies = both(policies, extra_policy("music", kNewLink, "/mnt/music", "net1"));
  auto rep = engine.reconcile(policies, false);
  INFO(text(rep));
  const auto& movies = entry(rep, "movies-10g");
  CHECK(movies.verdict == report::Verdict::rolled_back);
  CHECK(movies.cause == report::RollbackCause::wrong_path);
  CHECK(entry(rep, "backup").verdict == report::Verdict::verified);
  CHECK(entry(rep, "music").verdict == report::Verdict::verified);
  CHECK(report::exit_code(rep) == 4);
  CHECK_FALSE(rep.journal_left);
  // The fstab ends with exactly the two verified entries (and the hand-written lines).
  auto expected = guest::FstabFile::parse(kSeedFstab);
  const auto now = guest::FstabFile::parse(w.guest().fstab);
  REQUIRE(expected.take_entry(now, "/mnt/backup"));
  REQUIRE(expected.take_entry(now, "/mnt/music"));
  CHECK(w.guest().fstab == expected.print());
  CHECK_FALSE(now.entry_for("/mnt/movies"));
  // Movies' entry was put back by compare-and-swap on what was written, not by the backup.
  CHECK(count(w.guests.calls, "restore_fstab media-vm") == 0);
  CHECK(count(w.guests.calls, "apply_fstab media-vm") == 2);
  std::vector<std::string> mounted;
  for (const auto& m : w.guest().mounts) mounted.push_back(m.mount_point);
  CHECK(std::find(mounted.begin(), mounted.end(), "/mnt/movies") == mounted.end());
  CHECK(std::find(mounted.begin(), mounted.end(), "/mnt/backup") != mounted.end());
  CHECK(std::find(mounted.begin(), mounted.end(), "/mnt/music") != mounted.end());
  CHECK(std::find(mounted.begin(), mounted.end(), "/mnt/tv") != mounted.end());
  bool checked = false;
  for (const auto& c : movies.restored_checks)
    checked = checked || c.find("other policies' entries") != std::string::npos;
  CHECK(checked);
}

TEST_CASE("two policies on one guest whose shared write fails: both rolled back to the byte, neither rollback-failed") {
  SeedWorld w;
  w.guest().fail_mounts = true;
  auto engine = w.engine();
  auto rep = engine.reconcile(
      both(movies_policy("[vers=3, _netdev]", false), extra_policy("backup", kOldLink, "/mnt/backup", "net2")), false);
  INFO(text(rep));
  CHECK(entry(rep, "movies-10g").verdict == report::Verdict::rolled_back);
  CHECK(entry(rep, "backup").verdict == report::Verdict::rolled_back);
  CHECK(report::exit_code(rep) == 4);
  CHECK(w.guest().fstab == kSeedFstab);
  CHECK(count(w.guests.calls, "restore_fstab media-vm") == 1);
}

TEST_CASE("two policies on two NICs of one VM: one config write, one restart, both verified") {
  SeedWorld w;
  w.vm().current["hotplug"] = "disk,usb";  // queues wait for a restart
  int restarts = 0;
  w.pve.on_restart = [&](int) { ++restarts; };
  auto engine = w.engine();
  const auto policies = both(movies_policy("[vers=3, _netdev]", true),
                             extra_policy("backup", kOldLink, "/mnt/backup", "net2", "[vers=3, _netdev]", "4"));
  auto rep = engine.reconcile(policies, false);
  INFO(text(rep));
  CHECK(entry(rep, "movies-10g").verdict == report::Verdict::verified);
  CHECK(entry(rep, "backup").verdict == report::Verdict::verified);
  CHECK(w.pve.writes == 1);
  CHECK(restarts == 1);
  CHECK(w.vm().current.at("net1").find("queues=8") != std::string::npos);
  CHECK(w.vm().current.at("net2").find("queues=4") != std::string::npos);
  // Each NIC's channels set in the guest, one request per guest per call.
  CHECK(count(w.guests.calls, "set_channels media-vm") == 2);
}

TEST_CASE("two policies on two NICs of one VM, one fails: its NIC alone is reverted") {
  SeedWorld w;
  w.guest().routes[kNewLink] = "ens20";  // movies' new address is misrouted over the old link
  auto engine = w.engine();
  const auto policies = both(movies_policy("[vers=3, _netdev]", true),
                             extra_policy("backup", kOldLink, "/mnt/backup", "net2", "[vers=3, _netdev]", "4"));
  auto rep = engine.reconcile(policies, false);
  INFO(text(rep));
  CHECK(entry(rep, "movies-10g").verdict == report::Verdict::rolled_back);
  CHECK(entry(rep, "backup").verdict == report::Verdict::verified);
  CHECK(report::exit_code(rep) == 4);
  CHECK(w.vm().current.at("net1") == kNet1);
  CHECK(w.vm().current.at("net2").find("queues=4") != std::string::npos);
  const auto fstab = guest::FstabFile::parse(w.guest().fstab);
  CHECK_FALSE(fstab.entry_for("/mnt/movies"));
  CHECK(fstab.entry_for("/mnt/backup"));
}

TEST_CASE("the plan shows one write per guest and the review playbooks one play per guest") {
  SeedWorld w;
  auto engine = w.engine();
  auto plan = engine.observe_and_plan(
      both(movies_policy("[vers=3, _netdev]", false), extra_policy("backup", kOldLink, "/mnt/backup", "net2")));
  REQUIRE(plan.policies.size() == 2);
  std::vector<const plan::ChangeFstab*> writes;
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      if (const auto* c = std::get_if<plan::ChangeFstab>(&s.action)) writes.push_back(c);
    }
  }
  REQUIRE(writes.size() == 2);
  CHECK(writes[0]->new_content == writes[1]->new_content);
  CHECK(writes[0]->backup_path == writes[1]->backup_path);
  CHECK(writes[0]->writers == std::vector<std::string>{"movies-10g", "backup"});
  // The plan file carries the write both ways.
  auto back = plan::plan_from_json(plan::to_json(plan));
  REQUIRE(back);
  CHECK(std::get<plan::ChangeFstab>(back->policies[1].steps.front().action).writers == writes[0]->writers);
}

TEST_CASE("a hand-written entry that matches its policy is adopted without touching the mount") {
  SeedWorld w;
  auto engine = w.engine();
  // The seed's /mnt/tv line, as its policy would write it; only pathwarden's comment is missing.
  auto tv = extra_policy("tv", kOldLink, "/mnt/tv", "net2", "[vers=4.2, _netdev]");
  tv.front().mount.export_path = "/srv/nas/tv";
  auto rep = engine.reconcile(tv, false);
  INFO(text(rep));
  const auto& p = entry(rep, "tv");
  CHECK(p.verdict == report::Verdict::converged);
  CHECK(report::exit_code(rep) == 2);  // a file changed
  CHECK(w.guests.unmounted.empty());   // its NFS connections were never torn down
  CHECK(count(w.guests.calls, "probe media-vm") == 0);
  const auto fstab = guest::FstabFile::parse(w.guest().fstab);
  REQUIRE(fstab.owner_of("/mnt/tv"));
  CHECK(fstab.owner_of("/mnt/tv")->policy == "tv");
  CHECK(w.guest().fstab.find("192.0.2.2:/srv/nas/tv /mnt/tv nfs vers=4.2,_netdev 0 0") != std::string::npos);
  bool adopted = false;
  for (const auto& n : p.notes) adopted = adopted || n.find("adopted") != std::string::npos;
  CHECK(adopted);

  SECTION("a reason-only edit later rewrites the comment and leaves the mount alone too") {
    tv.front().mount.reason = "the living-room TV reads from here";
    auto again = engine.reconcile(tv, false);
    INFO(text(again));
    CHECK(entry(again, "tv").verdict == report::Verdict::converged);
    CHECK(w.guests.unmounted.empty());
    CHECK(w.guest().fstab.find("the living-room TV reads from here") != std::string::npos);
    auto third = engine.reconcile(tv, false);
    CHECK(entry(third, "tv").changes.empty());
    CHECK(report::exit_code(third) == 0);
  }
}

TEST_CASE("an entry whose options differ from the live mount is still re-made") {
  SeedWorld w;
  auto engine = w.engine();
  auto tv = extra_policy("tv", kOldLink, "/mnt/tv", "net2", "[vers=3, _netdev]");
  tv.front().mount.export_path = "/srv/nas/tv";
  auto rep = engine.reconcile(tv, false);
  INFO(text(rep));
  CHECK(entry(rep, "tv").verdict == report::Verdict::verified);
  CHECK(std::find(w.guests.unmounted.begin(), w.guests.unmounted.end(), "/mnt/tv") != w.guests.unmounted.end());
}

TEST_CASE("the plan blocks a channels step the facts say cannot work, with what to change") {
  for (const bool no_ethtool : {false, true}) {
    SeedWorld w;
    w.guest().nics[1].max_channels = 0;  // ens19: `ethtool -l` says Combined: n/a
    auto engine = w.engine();
    auto policies = movies_policy("[vers=3, _netdev]", true);
    if (no_ethtool) {
      w.guest().nics[1].max_channels = 8;
      w.guest().ethtool = false;  // the facts carry no channel parameters at all
    }
    auto rep = engine.reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == report::Verdict::precondition_failed);
    CHECK_THAT(text(rep), Catch::Contains("has no combined channels to set"));
    CHECK_THAT(text(rep), Catch::Contains("spec.nic.queues"));
    CHECK(w.pve.writes == 0);  // the Proxmox NIC was never re-plugged
    CHECK(count(w.guests.calls, "set_channels media-vm") == 0);
    CHECK(w.guest().fstab == kSeedFstab);
  }
}

TEST_CASE("a converged mount whose path drifted since the last change is never converged") {
  SeedWorld w;
  auto engine = w.engine();
  const auto policies = movies_policy("[vers=3, _netdev]", false);
  REQUIRE(entry(engine.reconcile(policies, false), "movies-10g").verdict == report::Verdict::verified);
  auto quiet = engine.reconcile(policies, false);
  INFO(text(quiet));
  CHECK(entry(quiet, "movies-10g").verdict == report::Verdict::converged);
  const auto& notes = entry(quiet, "movies-10g").notes;
  CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.starts_with("path checked from the guest's facts (address check, no probe)");
  }));

  // A /32 host route now sends the new address over the old link: the configuration is still as
  // the policy says, the path is not (the first field report's failure exactly).
  w.guest().routes[kNewLink] = "ens20";
  const auto writes = w.pve.writes;
  const auto fstab = w.guest().fstab;
  auto drifted = engine.reconcile(policies, false);
  INFO(text(drifted));
  const auto& p = entry(drifted, "movies-10g");
  CHECK(p.verdict == report::Verdict::wrong_path);
  CHECK(report::exit_code(drifted) == 4);
  REQUIRE(p.verification);
  REQUIRE(p.verification->diagnosis);
  CHECK(p.verification->diagnosis->find("misrouted") != std::string::npos);
  CHECK(count(w.guests.calls, "probe media-vm") == 1);  // the first run's only: no probe for the check
  CHECK(w.pve.writes == writes);                        // routing is reported, never changed
  CHECK(w.guest().fstab == fstab);
  // The same verdict --check gives, and `verify` on the same state.
  CHECK(entry(engine.reconcile(policies, true), "movies-10g").verdict == report::Verdict::wrong_path);
  CHECK(entry(engine.audit(policies, false), "movies-10g").verdict == report::Verdict::wrong_path);

  w.guest().routes[kNewLink] = "ens19";  // the route removed
  auto back = engine.reconcile(policies, false);
  INFO(text(back));
  CHECK(entry(back, "movies-10g").verdict == report::Verdict::converged);
  CHECK(report::exit_code(back) == 0);
}
