// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/plan_key.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

namespace pw::journal {
namespace {

constexpr std::size_t kKeyBytes = 32;

}  // namespace

Result<std::string> plan_key(const StateDir& state) {
  const auto path = state.root() / "plan.key";
  // Made once, by whichever run first needs it: O_EXCL lets two runs race safely (the loser reads).
  if (auto fd = open_private_file(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, state.loose(), nullptr)) {
    std::string key(kKeyBytes, '\0');
    std::size_t got = 0;
    while (got < key.size()) {
      const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::unexpected(system_error("cannot draw random bytes for", path, errno));
      got += static_cast<std::size_t>(n);
    }
    if (auto st = write_all(fd->get(), key, path); !st) return std::unexpected(st.error());
    if (::fsync(fd->get()) != 0) return std::unexpected(system_error("cannot fsync", path, errno));
    if (auto st = fsync_directory(state.root()); !st) return std::unexpected(st.error());
    return key;
  }
  auto fd = open_private_file(path, O_RDONLY | O_CLOEXEC, state.loose(), nullptr);
  if (!fd) return std::unexpected(fd.error());
  auto key = read_all(fd->get(), path);
  if (!key) return std::unexpected(key.error());
  if (key->size() != kKeyBytes) {
    return fail("the plan key is " + std::to_string(key->size()) + " bytes, not " + std::to_string(kKeyBytes),
                path.string(),
                "a run was interrupted while making it? remove it: plans sealed with it must be made again");
  }
  return key;
}

}  // namespace pw::journal
