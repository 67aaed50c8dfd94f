// SIGKILL at every journaled step, simulated in-process: the journal storage throws right after
// the N-th record reached "disk", so nothing after it runs, exactly as if the process died there.
// `recover` (a fresh engine on the same state) must always leave a consistent, checked state.
#include <catch2/catch.hpp>

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

int appends_of_full_run(const std::string& options, bool queues) {
  SeedWorld w;
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

void kill_at_every_step(const std::string& options, bool queues, bool tear_last_record) {
  const int total = appends_of_full_run(options, queues);
  REQUIRE(total >= 6);
  for (int n = 1; n <= total; ++n) {
    DYNAMIC_SECTION("killed after journal record " << n << " of " << total << (tear_last_record ? " (torn)" : "")) {
      SeedWorld w;
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
      auto recovery = w.engine().recover();
      INFO(report::render_text(recovery));
      CHECK(report::exit_code(recovery) != 5);
      // Every journal is finished: nothing is left for another recover.
      auto again = w.engine().recover();
      CHECK(again.policies.empty());
      // Consistent: either the old world, or the new one fully applied (when the kill came after
      // the verification had passed).
      const bool old_world = w.guest().fstab == kSeedFstab && w.vm().current == vm_before && w.vm().pending.empty();
      const bool new_world = w.guest().fstab.find("/mnt/movies") != std::string::npos &&
                             w.vm().current.at("net1") == std::string(kNet1) + (queues ? ",queues=8" : "");
      CHECK((old_world || new_world));
      if (old_world) {
        REQUIRE(w.guest().mounts.size() == 1);
        CHECK(w.guest().mounts[0].mount_point == "/mnt/tv");
      }
      // A reconcile afterwards converges to the policy.
      auto after = w.engine().reconcile(movies_policy(options, queues), false);
      INFO(report::render_text(after));
      CHECK((after.policies[0].verdict == pw::report::Verdict::verified || after.policies[0].verdict == pw::report::Verdict::converged));
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
      if (rep.journal_left) CHECK(report::exit_code(rep) == 5);
      else CHECK(old_world());
      // Once there is room again, recover finishes it and the world is the old one.
      auto recovery = w.engine().recover();
      INFO(report::render_text(recovery));
      CHECK(report::exit_code(recovery) != 5);
      CHECK(w.engine().recover().policies.empty());
      CHECK(old_world());
    }
  }
}
