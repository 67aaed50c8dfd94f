// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/storage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <vector>

namespace pw::journal {
namespace {

constexpr std::string_view kJournalSuffix = ".journal";

#ifdef PW_TEST_HOOKS
// Test-only hooks (tests/reliability), compiled only into the dev and asan presets' builds
// (PW_TEST_HOOKS), right after the N-th durable record of the process:
// PATHWARDEN_TEST_KILL_AFTER_JOURNAL_RECORDS=N raises SIGKILL (a crash at every journaled step),
// PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS=N[,M...] raises SIGSTOP (the test injects a fault or
// interleaves another controller, then sends SIGCONT). Unset, they cost two getenv per process.
void test_hooks_after_durable_record() {
  static const auto numbers = [](const char* name) {
    std::vector<long> out;
    for (const char* v = std::getenv(name); v != nullptr && *v != '\0';) {
      char* end = nullptr;
      out.push_back(std::strtol(v, &end, 10));
      v = *end == ',' ? end + 1 : nullptr;
    }
    return out;
  };
  static const std::vector<long> kill_after = numbers("PATHWARDEN_TEST_KILL_AFTER_JOURNAL_RECORDS");
  static const std::vector<long> pause_after = numbers("PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS");
  static std::atomic<long> durable{0};
  const long n = ++durable;
  if (std::find(kill_after.begin(), kill_after.end(), n) != kill_after.end()) std::raise(SIGKILL);
  if (std::find(pause_after.begin(), pause_after.end(), n) != pause_after.end()) std::raise(SIGSTOP);
}
#else
void test_hooks_after_durable_record() {}
#endif

class FileJournalStorage final : public JournalFile {
 public:
  FileJournalStorage(UniqueFd fd, std::filesystem::path path, std::uint64_t size)
      : fd_(std::move(fd)), path_(std::move(path)), size_(size) {}

  Status append(std::string_view line) override {
    if (broken_)
      return fail("the journal is in an unknown state after a failed write", path_.string(),
                  "run `pathwarden recover` once the disk problem is fixed");
    auto undo = [&](Error e) -> Status {
      // Take the partial line back, or the next record would follow garbage mid-file.
      if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0 || ::fsync(fd_.get()) != 0) broken_ = true;
      return std::unexpected(std::move(e));
    };
    if (auto s = write_all(fd_.get(), line, path_); !s) return undo(s.error());
    if (::fsync(fd_.get()) != 0) return undo(system_error("cannot fsync", path_, errno));
    size_ += line.size();
    test_hooks_after_durable_record();
    return {};
  }

  Result<std::string> read_all() override { return journal::read_all(fd_.get(), path_); }

  Result<std::string> read_tail(std::uint64_t max_bytes) override {
    // The size now, not size_ from the open: another process may be appending to it.
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) return std::unexpected(system_error("cannot stat", path_, errno));
    const auto size = static_cast<std::uint64_t>(st.st_size);
    return journal::read_from(fd_.get(), size > max_bytes ? size - max_bytes : 0, path_);
  }

  Status truncate(std::uint64_t size) override {
    if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0)
      return std::unexpected(system_error("cannot truncate", path_, errno));
    if (::fsync(fd_.get()) != 0) return std::unexpected(system_error("cannot fsync", path_, errno));
    size_ = size;
    broken_ = false;
    return {};
  }

  std::string describe() const override { return path_.string(); }

 private:
  UniqueFd fd_;
  std::filesystem::path path_;
  std::uint64_t size_;
  bool broken_ = false;
};

}  // namespace

Result<std::string> JournalFile::read_tail(std::uint64_t max_bytes) {
  auto all = read_all();
  if (all && all->size() > max_bytes) all->erase(0, all->size() - max_bytes);
  return all;
}

Status check_run_id(std::string_view id) {
  const bool ok = !id.empty() && id.size() <= 128 && id.front() != '.' && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (!ok)
    return fail("'" + std::string(id) + "' is not a valid run id", "journal",
                "use letters, digits, '.', '_' and '-' (at most 128, not starting with '.')");
  return {};
}

FileJournalStore::FileJournalStore(const StateDir& state) : FileJournalStore(state.journal_dir(), state.loose()) {}

FileJournalStore::FileJournalStore(std::filesystem::path dir, LoosePermissions loose)
    : dir_(std::move(dir)), loose_(loose) {}

std::filesystem::path FileJournalStore::path_of(std::string_view run_id) const {
  return dir_ / (std::string(run_id) + std::string(kJournalSuffix));
}

Result<std::unique_ptr<JournalFile>> FileJournalStore::create(std::string_view run_id) {
  if (auto s = check_run_id(run_id); !s) return std::unexpected(s.error());
  if (auto d = open_private_directory(dir_, loose_, &warnings_); !d) return std::unexpected(d.error());
  const auto path = path_of(run_id);
  auto fd = open_private_file(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, loose_, &warnings_);
  if (!fd) return std::unexpected(fd.error());
  // The new name must survive a crash too, or the whole journal could vanish.
  if (auto s = fsync_directory(dir_); !s) return std::unexpected(s.error());
  return std::make_unique<FileJournalStorage>(std::move(*fd), path, 0);
}

Result<std::unique_ptr<JournalFile>> FileJournalStore::open(std::string_view run_id) {
  if (auto s = check_run_id(run_id); !s) return std::unexpected(s.error());
  if (auto d = open_private_directory(dir_, loose_, &warnings_); !d) return std::unexpected(d.error());
  const auto path = path_of(run_id);
  auto fd = open_private_file(path, O_RDWR | O_APPEND, loose_, &warnings_);
  if (!fd) return std::unexpected(fd.error());
  const off_t size = ::lseek(fd->get(), 0, SEEK_END);
  if (size < 0) return std::unexpected(system_error("cannot seek", path, errno));
  return std::make_unique<FileJournalStorage>(std::move(*fd), path, static_cast<std::uint64_t>(size));
}

Result<std::vector<std::string>> FileJournalStore::list() {
  auto names = list_private_directory(dir_, kJournalSuffix, loose_, &warnings_);
  if (!names) return names;
  std::erase_if(*names, [](const std::string& n) { return !check_run_id(n); });
  return names;
}

Status FileJournalStore::remove(std::string_view run_id) {
  if (auto s = check_run_id(run_id); !s) return s;
  const auto path = path_of(run_id);
  if (::unlink(path.c_str()) != 0) return std::unexpected(system_error("cannot remove", path, errno));
  return fsync_directory(dir_);
}

struct InMemoryJournalStore::Shared {
  std::map<std::string, std::string, std::less<>> journals;
  std::optional<std::string> append_failure;
};

namespace {

class InMemoryJournalStorage final : public JournalFile {
 public:
  InMemoryJournalStorage(std::shared_ptr<InMemoryJournalStore::Shared> shared, std::string id)
      : shared_(std::move(shared)), id_(std::move(id)) {}

  Status append(std::string_view line) override {
    if (shared_->append_failure) return fail(*shared_->append_failure, describe());
    bytes().append(line);
    return {};
  }
  Result<std::string> read_all() override { return bytes(); }
  Status truncate(std::uint64_t size) override {
    bytes().resize(std::min<std::uint64_t>(size, bytes().size()));
    return {};
  }
  std::string describe() const override { return "memory:" + id_; }

 private:
  std::string& bytes() { return shared_->journals[id_]; }
  std::shared_ptr<InMemoryJournalStore::Shared> shared_;
  std::string id_;
};

}  // namespace

InMemoryJournalStore::InMemoryJournalStore() : shared_(std::make_shared<Shared>()) {}

Result<std::unique_ptr<JournalFile>> InMemoryJournalStore::create(std::string_view run_id) {
  if (auto s = check_run_id(run_id); !s) return std::unexpected(s.error());
  if (shared_->journals.contains(run_id))
    return fail("a journal for this run exists already", "memory:" + std::string(run_id));
  shared_->journals[std::string(run_id)];
  return std::make_unique<InMemoryJournalStorage>(shared_, std::string(run_id));
}

Result<std::unique_ptr<JournalFile>> InMemoryJournalStore::open(std::string_view run_id) {
  if (!shared_->journals.contains(run_id)) return fail("no journal for this run", "memory:" + std::string(run_id));
  return std::make_unique<InMemoryJournalStorage>(shared_, std::string(run_id));
}

Result<std::vector<std::string>> InMemoryJournalStore::list() {
  std::vector<std::string> ids;
  for (const auto& [id, _] : shared_->journals) ids.push_back(id);
  return ids;
}

Status InMemoryJournalStore::remove(std::string_view run_id) {
  auto it = shared_->journals.find(run_id);
  if (it == shared_->journals.end()) return fail("no journal for this run", "memory:" + std::string(run_id));
  shared_->journals.erase(it);
  return {};
}

std::string& InMemoryJournalStore::bytes(std::string_view run_id) {
  return shared_->journals[std::string(run_id)];
}

void InMemoryJournalStore::fail_appends(std::optional<std::string> message) {
  shared_->append_failure = std::move(message);
}

}  // namespace pw::journal
