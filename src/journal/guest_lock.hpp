// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One run at a time per guest on one machine. A GuestLock is held until it is destroyed; the
// file implementation uses flock(2), which the kernel drops when the holder dies, so a crashed
// run never leaves a stale lock behind.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"
#include "journal/clock.hpp"
#include "journal/state_dir.hpp"

namespace pw::journal {

class GuestLock {
 public:
  virtual ~GuestLock() = default;
  virtual const std::string& guest() const = 0;
};

class GuestLocks {
 public:
  virtual ~GuestLocks() = default;
  // Never waits: a guest another run holds is an error naming that run's PID and start time.
  virtual Result<std::unique_ptr<GuestLock>> lock(std::string_view guest) = 0;
  // Whether a run holds the guest now, looked at without writing anything: empty when free, else
  // the refusal `lock` would give (naming the holder). A look must not write: a holder's record
  // briefly emptied by a look is what another run would read.
  virtual Result<std::optional<Error>> holder(std::string_view guest) {
    auto l = lock(guest);
    if (l) return std::optional<Error>();
    return std::optional<Error>(l.error());
  }
};

// <state>/locks/<guest>.lock, 0600. While held it records {"pid", "started", "guest"}.
class FlockGuestLocks final : public GuestLocks {
 public:
  Result<std::optional<Error>> holder(std::string_view guest) override;
  FlockGuestLocks(const StateDir& state, const Clock& clock);
  FlockGuestLocks(std::filesystem::path dir, LoosePermissions loose, const Clock& clock);

  Result<std::unique_ptr<GuestLock>> lock(std::string_view guest) override;
  std::filesystem::path path_of(std::string_view guest) const;

 private:
  std::filesystem::path dir_;
  LoosePermissions loose_;
  const Clock* clock_;
};

// For the engine's tests: the same contract inside one process.
class InMemoryGuestLocks final : public GuestLocks {
 public:
  Result<std::unique_ptr<GuestLock>> lock(std::string_view guest) override;
  bool held(std::string_view guest) const { return held_->contains(std::string(guest)); }

 private:
  std::shared_ptr<std::set<std::string, std::less<>>> held_ = std::make_shared<std::set<std::string, std::less<>>>();
};

}  // namespace pw::journal
