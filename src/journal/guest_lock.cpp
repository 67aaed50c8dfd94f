// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/guest_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>

#include "journal/posix_file.hpp"

namespace pw::journal {
namespace {

class FlockGuestLock final : public GuestLock {
 public:
  FlockGuestLock(UniqueFd fd, std::string guest) : fd_(std::move(fd)), guest_(std::move(guest)) {}
  ~FlockGuestLock() override {
    // Clear the holder first, so nobody reads a finished run as the holder; close releases. A
    // failed truncate is harmless: the text names the holder only while the flock is held.
    if (fd_) {
      [[maybe_unused]] const int truncated = ::ftruncate(fd_.get(), 0);
    }
  }
  const std::string& guest() const override { return guest_; }

 private:
  UniqueFd fd_;
  std::string guest_;
};

std::string describe_holder(int fd) {
  auto text = read_all(fd, {});
  if (!text || text->empty()) return "a run that is just starting or stopping";
  boost::system::error_code ec;
  auto v = boost::json::parse(*text, ec);
  if (ec || !v.is_object()) return "an unknown run";
  const auto& o = v.as_object();
  std::string out = "PID ";
  const auto* pid = o.if_contains("pid");
  out += pid && pid->is_int64() ? std::to_string(pid->as_int64()) : std::string("?");
  if (const auto* started = o.if_contains("started"); started && started->is_string())
    out += ", started " + std::string(started->as_string());
  return out;
}

class InMemoryGuestLock final : public GuestLock {
 public:
  InMemoryGuestLock(std::shared_ptr<std::set<std::string, std::less<>>> held, std::string guest)
      : held_(std::move(held)), guest_(std::move(guest)) {}
  ~InMemoryGuestLock() override { held_->erase(guest_); }
  const std::string& guest() const override { return guest_; }

 private:
  std::shared_ptr<std::set<std::string, std::less<>>> held_;
  std::string guest_;
};

Error locked_error(std::string_view guest, const std::string& holder, std::string where) {
  return Error{"guest " + std::string(guest) + " is being changed by another pathwarden run (" + holder + ")",
               std::move(where), "wait for that run to finish; the lock is released when its process exits"};
}

}  // namespace

FlockGuestLocks::FlockGuestLocks(const StateDir& state, const Clock& clock)
    : FlockGuestLocks(state.lock_dir(), state.loose(), clock) {}

FlockGuestLocks::FlockGuestLocks(std::filesystem::path dir, LoosePermissions loose, const Clock& clock)
    : dir_(std::move(dir)), loose_(loose), clock_(&clock) {}

std::filesystem::path FlockGuestLocks::path_of(std::string_view guest) const {
  return dir_ / (file_name_for(guest) + ".lock");
}

Result<std::unique_ptr<GuestLock>> FlockGuestLocks::lock(std::string_view guest) {
  if (guest.empty()) return fail("a guest lock needs the guest's name", dir_.string());
  if (auto d = open_private_directory(dir_, loose_, nullptr); !d) return std::unexpected(d.error());
  const auto path = path_of(guest);
  auto fd = open_private_file(path, O_RDWR | O_CREAT, loose_, nullptr);
  if (!fd) return std::unexpected(fd.error());
  while (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return std::unexpected(locked_error(guest, describe_holder(fd->get()), path.string()));
    return std::unexpected(system_error("cannot lock", path, errno));
  }
  boost::json::object holder;
  holder["pid"] = static_cast<std::int64_t>(::getpid());
  holder["started"] = format_utc(clock_->now());
  holder["guest"] = guest;
  const std::string text = boost::json::serialize(holder) + "\n";
  if (::ftruncate(fd->get(), 0) != 0) return std::unexpected(system_error("cannot write", path, errno));
  if (::lseek(fd->get(), 0, SEEK_SET) != 0) return std::unexpected(system_error("cannot write", path, errno));
  if (auto s = write_all(fd->get(), text, path); !s) return std::unexpected(s.error());
  return std::make_unique<FlockGuestLock>(std::move(*fd), std::string(guest));
}

Result<std::optional<Error>> FlockGuestLocks::holder(std::string_view guest) {
  if (guest.empty()) return fail("a guest lock needs the guest's name", dir_.string());
  const auto path = path_of(guest);
  auto fd = open_private_file(path, O_RDWR | O_CREAT, loose_, nullptr);
  if (!fd) return std::unexpected(fd.error());
  while (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      return std::optional<Error>(locked_error(guest, describe_holder(fd->get()), path.string()));
    return std::unexpected(system_error("cannot lock", path, errno));
  }
  ::flock(fd->get(), LOCK_UN);  // free: let go at once, the file as it was
  return std::optional<Error>();
}

Result<std::unique_ptr<GuestLock>> InMemoryGuestLocks::lock(std::string_view guest) {
  if (guest.empty()) return fail("a guest lock needs the guest's name", "guest locks");
  if (held_->contains(guest)) return std::unexpected(locked_error(guest, "in this process", "guest locks"));
  held_->insert(std::string(guest));
  return std::make_unique<InMemoryGuestLock>(held_, std::string(guest));
}

}  // namespace pw::journal
