// SPDX-License-Identifier: GPL-3.0-or-later
// SIGKILL at every journaled step, simulated in-process: the journal storage throws right after
// the N-th record reached "disk", so nothing after it runs, exactly as if the process died there.
// `recover` (a fresh engine on the same state) must always leave a consistent, checked state.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string_view>

#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;

namespace {

struct Killed {};

// What happens at the N-th journal record: the process dies right after it reached the disk
// (the storage throws, nothing after it runs), or the disk fills and it and every later
// record fail (nothing throws: the engine must notice).
enum class JournalFault { kill_after, full_from };

class FaultyStorage final : public journal::JournalFile {
 public:
  FaultyStorage(std::unique_ptr<journal::JournalFile> inner, JournalFault fault, int* left)
      : inner_(std::move(inner)), fault_(fault), left_(left) {}
  Status append(std::string_view line) override {
    if (fault_ == JournalFault::full_from) {
      if (*left_ == 0) return fail("No space left on device", inner_->describe());
      --*left_;
      return inner_->append(line);
    }
    auto st = inner_->append(line);
    if (*left_ > 0 && --*left_ == 0) throw Killed{};
    return st;
  }
  Result<std::string> read_all() override { return inner_->read_all(); }
  Status truncate(std::uint64_t size) override { return inner_->truncate(size); }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::unique_ptr<journal::JournalFile> inner_;
  JournalFault fault_;
  int* left_;
};

class FaultyStore final : public journal::JournalStore {
 public:
  // kill_after: the process dies after record N (N < 0: never). full_from: N records fit.
  FaultyStore(journal::JournalStore& inner, JournalFault fault, int n) : inner_(inner), fault_(fault), left_(n) {}
  Result<std::unique_ptr<journal::JournalFile>> create(std::string_view id) override {
    auto s = inner_.create(id);
    if (!s) return s;
    return std::unique_ptr<journal::JournalFile>(std::make_unique<FaultyStorage>(std::move(*s), fault_, &left_));
  }
  Result<std::unique_ptr<journal::JournalFile>> open(std::string_view id) override { return inner_.open(id); }
  Result<std::vector<std::string>> list() override { return inner_.list(); }
  Status remove(std::string_view id) override { return inner_.remove(id); }
  bool struck() const { return left_ == 0; }

 private:
  journal::JournalStore& inner_;
  JournalFault fault_;
  int left_;
};

std::size_t count_calls(const std::vector<std::string>& calls, std::string_view call) {
  return static_cast<std::size_t>(
      std::count_if(calls.begin(), calls.end(), [&](const std::string& c) { return c.starts_with(call); }));
}

// What a recover read from the guests: the restored state at most once, only where a guest-side
// step was undone (a NIC revert is checked in Proxmox), and never after the guest's answer to a
// restart, which already said it.
void check_restored_reads(const std::vector<std::string>& calls) {
  INFO("guest calls: " << Catch::Detail::stringify(calls));
  const auto facts = count_calls(calls, "gather_facts");
  CHECK(facts <= 1);
  if (facts > 0) CHECK(count_calls(calls, "restore_fstab") + count_calls(calls, "set_channels") > 0);
  const auto last_wait =
      std::find_if(calls.rbegin(), calls.rend(), [](const std::string& c) { return c.starts_with("wait_reachable"); });
  if (last_wait != calls.rend())
    CHECK(std::none_of(calls.rbegin(), last_wait, [](const std::string& c) { return c.starts_with("gather_facts"); }));
}

// How an uninterrupted run of the world ends: verified (the seed), or rolled back (misrouted: a
// host route sends the new address over the old link), which journals every inverse too.
enum class RunEnds { verified, rolled_back };

void prepare(SeedWorld& w, RunEnds ends) {
  if (ends == RunEnds::rolled_back) w.guest().routes[kNewLink] = "ens20";
}

int appends_of_full_run(const std::string& options, bool queues, RunEnds ends) {
  SeedWorld w;
  prepare(w, ends);
  FaultyStore counting(w.journals, JournalFault::kill_after, -1);
  auto engine = w.engine({}, &counting);
  (void)engine.reconcile(movies_policy(options, queues), false);
  int lines = 0;
  const auto ids = w.journals.list().value();
  for (const auto& id : ids) {
    for (char c : w.journals.bytes(id)) lines += c == '\n';
  }
  return lines;
}

void kill_at_every_step(const std::string& options, bool queues, bool tear_last_record,
                        RunEnds ends = RunEnds::verified) {
  const int total = appends_of_full_run(options, queues, ends);
  REQUIRE(total >= 6);
  for (int n = 1; n <= total; ++n) {
    DYNAMIC_SECTION("killed after journal record " << n << " of " << total << (tear_last_record ? " (torn)" : "")) {
      SeedWorld w;
      prepare(w, ends);
      const auto vm_before = w.vm().current;
      FaultyStore killing(w.journals, JournalFault::kill_after, n);
      bool died = false;
      {
        auto engine = w.engine({}, &killing);
        try {
          (void)engine.reconcile(movies_policy(options, queues), false);
        } catch (const Killed&) {
          died = true;
        }
      }
      REQUIRE(died);
      if (tear_last_record) {
        // Power loss: the last record only half reached the disk.
        const auto ids = w.journals.list().value();
        for (const auto& id : ids) {
          auto& bytes = w.journals.bytes(id);
          const auto last = bytes.rfind('\n', bytes.size() - 2);
          const auto start = last == std::string::npos ? 0 : last + 1;
          bytes.resize(start + (bytes.size() - start) / 2);
        }
      }
      w.guests.calls.clear();
      auto recovery = w.engine().recover();
      INFO(report::render_text(recovery));
      CHECK(report::exit_code(recovery) != 5);
      check_restored_reads(w.guests.calls);
      // Every journal is finished: nothing is left for another recover.
      auto again = w.engine().recover();
      CHECK(again.policies.empty());
      // Consistent: either the old world, or the new one fully applied (when the kill came after
      // the verification had passed).
      const bool old_world = w.guest().fstab == kSeedFstab && w.vm().current == vm_before && w.vm().pending.empty();
      const bool new_world = w.guest().fstab.find("/mnt/movies") != std::string::npos &&
                             w.vm().current.at("net1") == std::string(kNet1) + (queues ? ",queues=8" : "");
      CHECK((old_world || (new_world && ends == RunEnds::verified)));
      if (old_world) {
        REQUIRE(w.guest().mounts.size() == 1);
        CHECK(w.guest().mounts[0].mount_point == "/mnt/tv");
      }
      // A reconcile afterwards converges to the policy (or, misrouted, is rolled back again).
      auto after = w.engine().reconcile(movies_policy(options, queues), false);
      INFO(report::render_text(after));
      if (ends == RunEnds::rolled_back)
        CHECK(after.policies[0].verdict == pw::report::Verdict::rolled_back);
      else
        CHECK((after.policies[0].verdict == pw::report::Verdict::verified ||
               after.policies[0].verdict == pw::report::Verdict::converged));
    }
  }
}

}  // namespace

TEST_CASE("killed at every journaled step of the seed's fix, recover restores a consistent state") {
  kill_at_every_step("[vers=3, nconnect=8, _netdev]", true, false);
}

TEST_CASE("a torn last record (power loss) at every step, recover restores a consistent state") {
  kill_at_every_step("[vers=3, nconnect=8, _netdev]", true, true);
}

TEST_CASE("killed at every journaled step of a run that rolls back, recover finishes the rollback") {
  // Every inverse's records too, the channels restore's among them (the light guests' veth has
  // no combined channels, so the real binary's crash test cannot reach that one).
  kill_at_every_step("[vers=3, nconnect=8, _netdev]", true, false, RunEnds::rolled_back);
}

TEST_CASE("a journal that stops taking records at any record of a rolled-back run loses nothing") {
  // The misrouted world: the verification says wrong-path, so the run also writes its rollback
  // (begin, each inverse, done) and its end. The disk fills before each of those records in turn.
  auto misrouted = [](SeedWorld& w) { w.guest().routes[kNewLink] = "ens20"; };
  int total = 0;
  {
    SeedWorld w;
    misrouted(w);
    (void)w.engine().reconcile(movies_policy("[vers=3, _netdev]", true), false);
    const auto ids = w.journals.list().value();
    for (const auto& id : ids) {
      for (char c : w.journals.bytes(id)) total += c == '\n';
    }
  }
  REQUIRE(total >= 8);
  for (int n = 0; n < total; ++n) {
    DYNAMIC_SECTION("the disk is full after record " << n << " of " << total) {
      SeedWorld w;
      misrouted(w);
      const auto vm_before = w.vm().current;
      FaultyStore filling(w.journals, JournalFault::full_from, n);
      auto rep = w.engine({}, &filling).reconcile(movies_policy("[vers=3, _netdev]", true), false);
      INFO(report::render_text(rep));
      REQUIRE(filling.struck());
      REQUIRE(rep.policies.size() == 1);
      const auto& p = rep.policies[0];
      CHECK(p.verdict != pw::report::Verdict::verified);
      // Said, not swallowed.
      const bool said = std::any_of(p.errors.begin(), p.errors.end(), [](const auto& e) {
        return e.find("No space left on device") != std::string::npos;
      });
      CHECK((said || n == 0));
      // Either the run is left for recover (exit 5), or nothing of it stays changed right now.
      const auto old_world = [&] {
        return w.guest().fstab == kSeedFstab && w.vm().current == vm_before && w.vm().pending.empty();
      };
      if (rep.journal_left)
        CHECK(report::exit_code(rep) == 5);
      else
        CHECK(old_world());
      // Once there is room again, recover finishes it and the world is the old one.
      auto recovery = w.engine().recover();
      INFO(report::render_text(recovery));
      CHECK(report::exit_code(recovery) != 5);
      CHECK(w.engine().recover().policies.empty());
      CHECK(old_world());
    }
  }
}

namespace {

// VM 102 / media-vm2 as a copy of the seed's VM and guest, and the seed's fix for both guests.
std::vector<policy::StoragePath> second_guest_policies(SeedWorld& w, bool queues) {
  auto vm2 = w.vm();
  vm2.ref.vmid = 102;
  w.pve.vms[102] = vm2;
  w.guests.guests["media-vm2"] = w.guest();
  auto policies = movies_policy("[vers=3, _netdev]", queues);
  auto second = policies.front();
  second.name = "movies-10g-2";
  second.guest.vmid = 102;
  second.guest.host = "media-vm2";
  policies.push_back(second);
  return policies;
}

}  // namespace

TEST_CASE("recover undoes the interrupted runs of several guests together: one playbook per kind, one facts run") {
  // Two guests, each with a policy whose fstab change ends wrong-path (misrouted), killed after
  // every journal record in turn: where both runs had begun, one restore and one facts run serve both.
  auto two_guests = [](SeedWorld& w) {
    w.guest().routes[kNewLink] = "ens20";
    return second_guest_policies(w, false);
  };
  int total = 0;
  {
    SeedWorld w;
    FaultyStore counting(w.journals, JournalFault::kill_after, -1);
    auto rep = w.engine({}, &counting).reconcile(two_guests(w), false);
    INFO(report::render_text(rep));
    REQUIRE(rep.policies.size() == 2);
    REQUIRE(rep.policies[1].verdict == pw::report::Verdict::rolled_back);
    const auto ids = w.journals.list().value();
    for (const auto& id : ids) {
      for (char c : w.journals.bytes(id)) total += c == '\n';
    }
  }
  REQUIRE(total >= 12);
  int both = 0;  // recovers that undid both guests' fstab in one restore
  for (int n = 1; n <= total; ++n) {
    SeedWorld w;
    const auto policies = two_guests(w);
    FaultyStore killing(w.journals, JournalFault::kill_after, n);
    try {
      (void)w.engine({}, &killing).reconcile(policies, false);
    } catch (const Killed&) {
    }
    w.guests.calls.clear();
    auto recovery = w.engine().recover();
    INFO("killed after record " << n << " of " << total << "\n" << report::render_text(recovery));
    CHECK(report::exit_code(recovery) != 5);
    CHECK(count_calls(w.guests.calls, "restore_fstab") <= 1);
    check_restored_reads(w.guests.calls);
    both +=
        static_cast<int>(std::count(w.guests.calls.begin(), w.guests.calls.end(), "restore_fstab media-vm,media-vm2"));
    CHECK(w.engine().recover().policies.empty());
    for (const auto* host : {"media-vm", "media-vm2"}) CHECK(w.guests.guests.at(host).fstab == kSeedFstab);
  }
  CHECK(both > 0);
}

TEST_CASE("recover leaves alone a step that refused (nothing changed) and undoes the steps before it") {
  // The fstab changed under the run (someone's edit between observe and write): the guest's
  // compare-and-swap refuses, and the journal's step-failed record says "changed nothing", by a
  // field, not by its text. Killed right after that record, recover must undo the NIC change
  // before it and never touch the fstab, which holds the other editor's line, not the run's.
  const std::string edit = "tmpfs /scratch tmpfs defaults 0 0\n";
  auto refused_record = [](SeedWorld& w) {
    const auto ids = w.journals.list().value();
    for (const auto& id : ids) {
      int n = 0;
      for (std::size_t at = 0, nl; (nl = w.journals.bytes(id).find('\n', at)) != std::string::npos; at = nl + 1) {
        ++n;
        if (w.journals.bytes(id).substr(at, nl - at).find("\"changed_nothing\":true") != std::string::npos) return n;
      }
    }
    return 0;
  };
  int at = 0;
  {
    SeedWorld w;
    w.guests.edit_fstab_before_apply = edit;
    FaultyStore counting(w.journals, JournalFault::kill_after, -1);
    (void)w.engine({}, &counting).reconcile(movies_policy("[vers=3, nconnect=8, _netdev]", true), false);
    at = refused_record(w);
  }
  REQUIRE(at > 0);
  SeedWorld w;
  const auto vm_before = w.vm().current;
  w.guests.edit_fstab_before_apply = edit;
  FaultyStore killing(w.journals, JournalFault::kill_after, at);
  bool died = false;
  try {
    (void)w.engine({}, &killing).reconcile(movies_policy("[vers=3, nconnect=8, _netdev]", true), false);
  } catch (const Killed&) {
    died = true;
  }
  REQUIRE(died);
  REQUIRE(w.guest().fstab == kSeedFstab + edit);
  w.guests.calls.clear();
  auto recovery = w.engine().recover();
  INFO(report::render_text(recovery));
  CHECK(report::exit_code(recovery) != 5);
  CHECK(count_calls(w.guests.calls, "restore_fstab") == 0);
  CHECK(count_calls(w.guests.calls, "apply_fstab") == 0);
  CHECK(w.guest().fstab == kSeedFstab + edit);  // the other editor's line stays
  CHECK(w.vm().current == vm_before);           // the NIC change before it is undone
  CHECK(w.vm().pending.empty());
  CHECK(w.engine().recover().policies.empty());
}

TEST_CASE("recover lists only what it undid, each policy once; a run that began nothing is no rollback") {
  auto two_guests = [](SeedWorld& w) { return second_guest_policies(w, true); };
  int nothing_to_undo = 0;
  for (int n = 1; n <= 12; ++n) {
    SeedWorld w;
    const auto policies = two_guests(w);
    FaultyStore killing(w.journals, JournalFault::kill_after, n);
    try {
      (void)w.engine({}, &killing).reconcile(policies, false);
    } catch (const Killed&) {
    }
    auto recovery = w.engine().recover();
    INFO("killed after record " << n << "\n" << report::render_text(recovery));
    std::map<std::string, int> seen;
    for (const auto& p : recovery.policies) {
      ++seen[p.policy];
      // A rollback lists what it undid; one that undid nothing is not a rollback.
      CHECK((p.verdict == pw::report::Verdict::rolled_back) == !p.rolled_back.empty());
      if (p.rolled_back.empty()) {
        // As a reconcile stopped before its first change says it (tests/reliability/signals_test.py).
        ++nothing_to_undo;
        CHECK(p.verdict == pw::report::Verdict::precondition_failed);
        CHECK(std::any_of(p.errors.begin(), p.errors.end(), [](const auto& s) {
          return s.find("stopped before its first change: nothing to undo") != std::string::npos;
        }));
      }
    }
    for (const auto& [policy, times] : seen) CHECK(times == 1);
  }
  CHECK(nothing_to_undo > 0);
}
