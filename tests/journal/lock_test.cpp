// SPDX-License-Identifier: GPL-3.0-or-later
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "journal/guest_lock.hpp"
#include "temp_dir.hpp"

using namespace pw::journal;
using namespace std::chrono_literals;

namespace {

const TimePoint kLockStart = std::chrono::sys_days{std::chrono::year{2024} / 5 / 5} + 2h;

// A second process that takes the guest's lock, says so through a pipe, and holds it until
// told to go (or is killed).
struct LockHolder {
  pid_t pid = -1;
  int to_child = -1, from_child = -1;

  LockHolder(const StateDir& state, const std::string& guest) {
    int down[2], up[2];
    REQUIRE(::pipe(down) == 0);
    REQUIRE(::pipe(up) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      ManualClock clock(kLockStart + 5min);
      FlockGuestLocks locks(state, clock);
      auto lock = locks.lock(guest);
      const char ok = lock ? 'L' : 'E';
      (void)!::write(up[1], &ok, 1);
      char go;
      (void)!::read(down[0], &go, 1);
      ::_exit(0);
    }
    ::close(down[0]);
    ::close(up[1]);
    to_child = down[1];
    from_child = up[0];
    char got = 0;
    REQUIRE(::read(from_child, &got, 1) == 1);
    REQUIRE(got == 'L');
  }
  void release() {
    const char go = 'x';
    (void)!::write(to_child, &go, 1);
    wait();
  }
  void kill() {
    ::kill(pid, SIGKILL);
    wait();
  }
  void wait() {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    ::close(to_child);
    ::close(from_child);
    pid = -1;
  }
  ~LockHolder() {
    if (pid > 0) kill();
  }
};

}  // namespace

TEST_CASE("two processes never hold one guest's lock; the loser is told who holds it") {
  pw::testing::TempDir tmp;
  auto state = StateDir::open(tmp.path() / "state");
  REQUIRE(state);
  ManualClock clock(kLockStart);
  FlockGuestLocks locks(*state, clock);

  LockHolder holder(*state, "pve1/101");
  auto mine = locks.lock("pve1/101");
  REQUIRE_FALSE(mine);
  CHECK(mine.error().what == "guest pve1/101 is being changed by another pathwarden run (PID " +
                                 std::to_string(holder.pid) + ", started 2024-05-05T02:05:00.000Z)");
  CHECK(mine.error().where == locks.path_of("pve1/101").string());
  CHECK(mine.error().hint.find("wait") != std::string::npos);
  CHECK(pw::testing::mode_of(locks.path_of("pve1/101")) == 0600);

  // Another guest is free meanwhile.
  CHECK(locks.lock("pve1/102"));

  SECTION("released when the holder finishes") {
    holder.release();
    auto after = locks.lock("pve1/101");
    REQUIRE(after);
    CHECK((*after)->guest() == "pve1/101");
  }
  SECTION("released when the holder is killed (no stale lock)") {
    holder.kill();
    CHECK(locks.lock("pve1/101"));
  }
}

TEST_CASE("one process also cannot take a guest's lock twice") {
  pw::testing::TempDir tmp;
  auto state = StateDir::open(tmp.path() / "state");
  REQUIRE(state);
  ManualClock clock(kLockStart);
  FlockGuestLocks locks(*state, clock);
  {
    auto first = locks.lock("media-vm");
    REQUIRE(first);
    auto second = locks.lock("media-vm");
    REQUIRE_FALSE(second);
    CHECK(second.error().what.find("PID " + std::to_string(::getpid())) != std::string::npos);
  }
  CHECK(locks.lock("media-vm"));
  CHECK(locks.path_of("pve1/101").filename() == "pve1%2F101.lock");
  CHECK_FALSE(locks.lock(""));
}

TEST_CASE("the in-memory locks keep the same contract") {
  InMemoryGuestLocks locks;
  auto a = locks.lock("g");
  REQUIRE(a);
  CHECK(locks.held("g"));
  CHECK_FALSE(locks.lock("g"));
  a->reset();
  CHECK_FALSE(locks.held("g"));
  CHECK(locks.lock("g"));
}
