// SPDX-License-Identifier: GPL-3.0-or-later
// A run never changes a guest or a VM that an unfinished journal names: `pathwarden recover`
// finishes that run first, from the journal's record of what was there (reconcile/pending_runs).
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string_view>

#include "journal/replay.hpp"
#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;
using pw::report::Verdict;

namespace {

bool says(const std::vector<std::string>& lines, std::string_view what) {
  return std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return l.find(what) != std::string::npos; });
}

// The guests a guest-side call of SimulatedGuests::calls ("apply_fstab a,b") covered, when it is
// one that changes a guest.
std::vector<std::string> changed_hosts(const std::vector<std::string>& calls) {
  std::vector<std::string> out;
  for (const auto& c : calls) {
    if (!c.starts_with("apply_fstab ") && !c.starts_with("set_channels ") && !c.starts_with("restore_fstab ")) continue;
    std::stringstream hosts(c.substr(c.find(' ') + 1));
    for (std::string h; std::getline(hosts, h, ',');) out.push_back(h);
  }
  return out;
}

// A second guest, media-vm2 on VM 102, as the first one was before any run; its policy
// (movies-10g-2) asks for the fstab entry only (no queues: no Proxmox write).
policy::StoragePath add_second_guest(SeedWorld& w) {
  auto vm2 = w.vm();
  vm2.ref.vmid = 102;
  w.pve.vms[102] = vm2;
  w.guests.guests["media-vm2"] = w.guest();
  auto second = movies_policy("[vers=3, nconnect=8, _netdev]", false).front();
  second.name = "movies-10g-2";
  second.guest.vmid = 102;
  second.guest.host = "media-vm2";
  return second;
}

// Leaves the run of movies-10g on media-vm (VM 101) unfinished, as a full disk does: the NIC
// change went through, its "done" and every later record could not be written, so the journal
// stays for recover (the NIC was put back by the rollback; the journal cannot say so).
std::string leave_unfinished_run(SeedWorld& w) {
  auto follow_nic = w.pve.on_nic_change;
  w.pve.on_nic_change = [&w, follow_nic](int vmid, const std::string& key, const std::string& value) {
    follow_nic(vmid, key, value);
    w.journals.fail_appends("No space left on device");
  };
  auto rep = w.engine().reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  REQUIRE(rep.journal_left);
  w.pve.on_nic_change = follow_nic;
  w.journals.fail_appends(std::nullopt);
  const auto ids = w.journals.list().value();
  REQUIRE(ids.size() == 1);
  return ids.front();
}

}  // namespace

TEST_CASE("an unfinished journal holds its guest until recover: other guests are changed, that one is not") {
  SeedWorld w;
  const auto second = add_second_guest(w);
  const auto journal = leave_unfinished_run(w);
  const auto vm101_before = w.vm().current;
  std::vector<int> written;
  w.pve.on_write = [&](int vmid) { written.push_back(vmid); };
  w.guests.calls.clear();

  auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  policies.push_back(second);
  auto rep = w.engine().reconcile(policies, false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 2);

  // media-vm: not run, and saying which journal holds it and what to do.
  const auto& held = entry(rep, "movies-10g");
  CHECK(held.verdict == Verdict::precondition_failed);
  CHECK(says(held.errors, "guest media-vm has an unfinished run (journal " + journal + ", policy movies-10g)"));
  CHECK(says(held.errors, "nothing is changed on it until 'pathwarden recover' finishes that run"));
  CHECK(held.changes.empty());
  CHECK_FALSE(held.planned.empty());  // the plan was still made: observing is harmless
  CHECK(w.guest().fstab == kSeedFstab);
  CHECK(w.vm().current == vm101_before);
  CHECK(w.vm().pending.empty());
  CHECK(std::count(written.begin(), written.end(), 101) == 0);
  const auto hosts = changed_hosts(w.guests.calls);
  INFO("guest calls: " << Catch::Detail::stringify(w.guests.calls));
  CHECK(std::count(hosts.begin(), hosts.end(), "media-vm") == 0);

  // media-vm2: changed and verified as if nothing were pending elsewhere.
  const auto& other = entry(rep, "movies-10g-2");
  CHECK(other.verdict == Verdict::verified);
  CHECK(std::count(hosts.begin(), hosts.end(), "media-vm2") == 1);
  CHECK(w.guests.guests.at("media-vm2").fstab.find("/mnt/movies") != std::string::npos);

  // A journal needs recover: exit 5, whatever else the run did.
  CHECK(rep.journal_left);
  CHECK(report::exit_code(rep) == 5);
  // The journal is as the interrupted run left it: this run wrote nothing into it.
  CHECK(w.journals.list().value().size() == 2);  // its own (media-vm2's), and the pending one

  SECTION("after recover, the next reconcile changes the guest") {
    auto recovery = w.engine().recover();
    INFO(text(recovery));
    CHECK(report::exit_code(recovery) != 5);
    auto after = w.engine().reconcile(policies, false);
    INFO(text(after));
    CHECK(entry(after, "movies-10g").verdict == Verdict::verified);
    CHECK(entry(after, "movies-10g-2").verdict == Verdict::converged);
    CHECK_FALSE(after.journal_left);
    CHECK(report::exit_code(after) == 2);
    CHECK(w.vm().current.at("net1") == std::string(kNet1) + ",queues=8");
    CHECK(w.guest().fstab.find("/mnt/movies") != std::string::npos);
  }
}

TEST_CASE("an unfinished journal holds its VM under another inventory name too") {
  SeedWorld w;
  const auto journal = leave_unfinished_run(w);
  // The same VM 101 reached through another inventory name (an alias, an address).
  w.guests.guests["media-vm-alias"] = w.guest();
  auto alias = movies_policy("[vers=3, nconnect=8, _netdev]").front();
  alias.name = "movies-alias";
  alias.guest.host = "media-vm-alias";
  const auto vm101_before = w.vm().current;
  const auto writes = w.pve.writes;
  w.guests.calls.clear();

  auto rep = w.engine().reconcile(std::vector{alias}, false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  const auto& held = rep.policies[0];
  CHECK(held.verdict == Verdict::precondition_failed);
  CHECK(says(held.errors,
             "VM 101 has an unfinished run (journal " + journal + ", policy movies-10g, on guest media-vm)"));
  CHECK(says(held.errors, "'pathwarden recover'"));
  CHECK(w.pve.writes == writes);
  CHECK(w.vm().current == vm101_before);
  CHECK(w.guests.guests.at("media-vm-alias").fstab == kSeedFstab);
  CHECK(changed_hosts(w.guests.calls).empty());
  CHECK(report::exit_code(rep) == 5);
}

TEST_CASE("finished journals hold nothing back: a rolled-back run and a verified one") {
  SeedWorld w;
  // The trunking trap: verified wrong, rolled back, its journal finished.
  auto trap = w.engine().reconcile(movies_policy("[vers=4.2, _netdev]", false), false);
  INFO(text(trap));
  REQUIRE(trap.policies[0].verdict == Verdict::rolled_back);
  REQUIRE_FALSE(trap.journal_left);
  // The fix: changed and verified on the same guest and VM.
  auto fix = w.engine().reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(fix));
  CHECK(fix.policies[0].verdict == Verdict::verified);
  CHECK(report::exit_code(fix) == 2);
  // And once more with other options, after a verified (finished) run.
  auto again = w.engine().reconcile(movies_policy("[vers=3, nconnect=4, _netdev]"), false);
  INFO(text(again));
  CHECK(again.policies[0].verdict == Verdict::verified);
  CHECK_FALSE(says(again.policies[0].errors, "unfinished run"));
  CHECK(w.guest().fstab.find("nconnect=4") != std::string::npos);
  CHECK(w.journals.list().value().size() == 3);
  CHECK(journal::scan_journals(w.journals).interrupted.empty());
}

TEST_CASE("a run's own journals never hold it: a second policy on the guest it just began changing") {
  SeedWorld w;
  auto music = movies_policy("[vers=3, _netdev]", false).front();
  music.name = "music-10g";
  music.mount.export_path = "/srv/nas/music";
  music.mount.path = "/mnt/music";
  auto first = w.engine().reconcile(std::vector{music}, false);
  INFO(text(first));
  REQUIRE(first.policies[0].verdict == Verdict::verified);
  // movies-10g's journal is written (and unfinished) before music-10g on the same guest and VM
  // is looked at: it does not hold it, nor does music-10g's finished journal hold movies-10g.
  auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  policies.push_back(music);
  auto rep = w.engine().reconcile(policies, false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 2);
  CHECK(entry(rep, "movies-10g").verdict == Verdict::verified);
  CHECK(entry(rep, "music-10g").verdict == Verdict::converged);
  for (const auto& p : rep.policies) CHECK_FALSE(says(p.errors, "unfinished run"));
  CHECK(report::exit_code(rep) == 2);

  SECTION("both changing the guest in one run: one write, neither held by the other's journal") {
    SeedWorld fresh;
    auto both = fresh.engine().reconcile(policies, false);
    INFO(text(both));
    REQUIRE(both.policies.size() == 2);
    for (const auto& p : both.policies) {
      CHECK(p.verdict == Verdict::verified);
      CHECK_FALSE(says(p.errors, "unfinished run"));
    }
    CHECK(fresh.guest().fstab.find("/mnt/music") != std::string::npos);
    CHECK(fresh.guest().fstab.find("/mnt/movies") != std::string::npos);
  }
}

TEST_CASE("a check says what holds a guest, in a note, and changes nothing") {
  SeedWorld w;
  const auto journal = leave_unfinished_run(w);
  const auto writes = w.pve.writes;
  auto rep = w.engine().reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), true);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == Verdict::drift);
  CHECK(says(rep.policies[0].notes, "guest media-vm has an unfinished run (journal " + journal));
  CHECK(says(rep.policies[0].notes, "'pathwarden recover'"));
  CHECK(report::exit_code(rep) == 3);  // a check's: another pathwarden may be running that journal now
  CHECK(w.pve.writes == writes);
  CHECK(w.guest().fstab == kSeedFstab);
}

TEST_CASE("a journal that cannot be read holds every guest, naming the file") {
  SeedWorld w;
  const auto second = add_second_guest(w);
  const auto journal = leave_unfinished_run(w);
  // Damage its first record (run-started, followed by another): not a torn tail, but damage.
  auto& bytes = w.journals.bytes(journal);
  REQUIRE(std::count(bytes.begin(), bytes.end(), '\n') >= 2);
  bytes[bytes.find("run-started")] = 'R';
  const auto writes = w.pve.writes;
  w.guests.calls.clear();

  auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  policies.push_back(second);
  auto rep = w.engine().reconcile(policies, false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 2);
  for (const auto& p : rep.policies) {
    CHECK(p.verdict == Verdict::precondition_failed);
    CHECK(says(p.errors, "memory:" + journal + ":1"));
    CHECK(says(p.errors, "no guest is changed until that journal is dealt with"));
  }
  CHECK(w.pve.writes == writes);
  CHECK(changed_hosts(w.guests.calls).empty());
  CHECK(w.guests.guests.at("media-vm2").fstab == kSeedFstab);
  CHECK(report::exit_code(rep) == 5);
}

TEST_CASE("an unfinished run another pathwarden holds the guest for is waited for, not sent to recover") {
  SeedWorld w;
  const auto journal = leave_unfinished_run(w);
  auto busy = w.locks.lock("media-vm");  // that run is still going on (or recover is running it)
  REQUIRE(busy);
  auto rep = w.engine().reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == Verdict::precondition_failed);
  CHECK(says(rep.policies[0].errors, "guest media-vm has an unfinished run (journal " + journal));
  CHECK(says(rep.policies[0].errors, "being changed by another pathwarden run"));
  CHECK(says(rep.policies[0].errors, "until that run ends"));
  CHECK_FALSE(rep.journal_left);
  CHECK(report::exit_code(rep) == 3);
  CHECK(w.guest().fstab == kSeedFstab);
}

TEST_CASE("a saved plan is held the same way when applied") {
  SeedWorld w;
  auto engine = w.engine();
  // Planned after the interrupted run (planning only observes) and applied as saved: the plan is
  // not stale, yet nothing of it is applied.
  const auto journal = leave_unfinished_run(w);
  const auto plan = engine.observe_and_plan(movies_policy("[vers=3, nconnect=8, _netdev]"));
  REQUIRE(plan.has_changes());
  const auto writes = w.pve.writes;
  auto rep = engine.apply(plan);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == Verdict::precondition_failed);
  CHECK(says(rep.policies[0].errors, "unfinished run (journal " + journal));
  CHECK(w.pve.writes == writes);
  CHECK(w.guest().fstab == kSeedFstab);
  CHECK(report::exit_code(rep) == 5);
}
