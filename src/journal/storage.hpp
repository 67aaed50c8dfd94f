// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where journals live. One journal per run, appended line by line; an append returns only once
// the line is on stable storage. Files for the real thing, memory for the engine's tests.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "journal/state_dir.hpp"

namespace pw::journal {

class JournalFile {
 public:
  virtual ~JournalFile() = default;
  // Durable when it returns. A failed append leaves the journal as it was before it.
  virtual Status append(std::string_view line) = 0;
  virtual Result<std::string> read_all() = 0;
  // The last `max_bytes` bytes (all of them when there are fewer): the last record without the
  // rest, so a look for unfinished runs passes over the finished journals, which are kept and so
  // are most of the store, without reading them. By default the tail of read_all().
  virtual Result<std::string> read_tail(std::uint64_t max_bytes);
  // Cuts the journal to `size` bytes (a torn last record) before appending again.
  virtual Status truncate(std::uint64_t size) = 0;
  virtual std::string describe() const = 0;  // for messages: the file's path
};

class JournalStore {
 public:
  virtual ~JournalStore() = default;
  // A new, empty journal; fails when one exists for that run.
  virtual Result<std::unique_ptr<JournalFile>> create(std::string_view run_id) = 0;
  // An existing journal, to read or to continue (recover).
  virtual Result<std::unique_ptr<JournalFile>> open(std::string_view run_id) = 0;
  virtual Result<std::vector<std::string>> list() = 0;  // run ids, sorted
  virtual Status remove(std::string_view run_id) = 0;
};

// Run ids name files: letters, digits, '.', '_', '-', not starting with '.', at most 128.
Status check_run_id(std::string_view run_id);

// <state>/journal/<run id>.journal, 0600, fsync after every append and the directory after
// every create or remove.
class FileJournalStore final : public JournalStore {
 public:
  explicit FileJournalStore(const StateDir& state);
  FileJournalStore(std::filesystem::path dir, LoosePermissions loose);

  Result<std::unique_ptr<JournalFile>> create(std::string_view run_id) override;
  Result<std::unique_ptr<JournalFile>> open(std::string_view run_id) override;
  Result<std::vector<std::string>> list() override;
  Status remove(std::string_view run_id) override;

  std::filesystem::path path_of(std::string_view run_id) const;
  const PermissionWarnings& warnings() const { return warnings_; }

 private:
  std::filesystem::path dir_;
  LoosePermissions loose_;
  PermissionWarnings warnings_;
};

// Journals as strings shared by every storage the store hands out, so a test can "crash" a
// writer, tear or damage its bytes, and replay or resume what remains.
class InMemoryJournalStore final : public JournalStore {
 public:
  InMemoryJournalStore();

  Result<std::unique_ptr<JournalFile>> create(std::string_view run_id) override;
  Result<std::unique_ptr<JournalFile>> open(std::string_view run_id) override;
  Result<std::vector<std::string>> list() override;
  Status remove(std::string_view run_id) override;

  // The raw bytes of a journal, to inspect or to damage.
  std::string& bytes(std::string_view run_id);
  // Every append from now on fails with this message (a full disk); nullopt heals it.
  void fail_appends(std::optional<std::string> message);

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace pw::journal
