// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The last result of every policy, for `pathwarden status` and the Prometheus file. One file
// per policy, replaced atomically, so concurrent runs on different guests never lose each
// other's updates and a crash leaves the old result or the new one.
#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "journal/clock.hpp"
#include "journal/state_dir.hpp"

namespace pw::journal {

struct PolicyResult {
  std::string policy;
  std::string verdict;      // the contract's verdict name
  std::string finished_at;  // RFC 3339 UTC
  std::string run_id;
  std::optional<std::string> last_verified_at;  // carried over by record_result
  boost::json::object details;                  // bytes per interface, throughput, what changed: the report's choice
  // The policy's last runs, oldest first, this one last (at most kHistoryRuns): the report's
  // choice too (src/report/history.hpp), kept by record_result.
  boost::json::array history;

  boost::json::object to_json() const;
  static Result<PolicyResult> from_json(const boost::json::value& v, std::string_view where);
};

class PolicyResultStore {
 public:
  virtual ~PolicyResultStore() = default;
  virtual Status put(const PolicyResult& result) = 0;
  virtual Result<std::optional<PolicyResult>> get(std::string_view policy) = 0;
  virtual Result<std::vector<PolicyResult>> all() = 0;  // sorted by policy name
};

// <state>/results/<policy>.json, 0600, written through a temp file, fsync, rename, dir fsync.
class FilePolicyResultStore final : public PolicyResultStore {
 public:
  explicit FilePolicyResultStore(const StateDir& state);
  FilePolicyResultStore(std::filesystem::path dir, LoosePermissions loose);

  Status put(const PolicyResult& result) override;
  Result<std::optional<PolicyResult>> get(std::string_view policy) override;
  Result<std::vector<PolicyResult>> all() override;
  std::filesystem::path path_of(std::string_view policy) const;

 private:
  Result<std::optional<PolicyResult>> read(const std::filesystem::path& path);
  std::filesystem::path dir_;
  LoosePermissions loose_;
};

class InMemoryPolicyResultStore final : public PolicyResultStore {
 public:
  Status put(const PolicyResult& result) override;
  Result<std::optional<PolicyResult>> get(std::string_view policy) override;
  Result<std::vector<PolicyResult>> all() override;

 private:
  std::map<std::string, PolicyResult, std::less<>> results_;
};

// How many past runs each policy's file keeps: 100 runs is four days of an hourly timer, and
// about 10 KB per policy.
inline constexpr std::size_t kHistoryRuns = 100;

// Stores a run's result for one policy, keeping the time of its last "verified" (the one the
// new result has when it is verified itself) and the history: the stored one with `point` (this
// run's) appended, the oldest dropped beyond `keep`. Each key of `carried` the new details lack
// is copied from the stored ones (what a run that did not read it keeps: the last traffic mark,
// the last probe), with the one read of the stored result the history needs anyway.
Status record_result(PolicyResultStore& store, PolicyResult result, boost::json::value point,
                     std::size_t keep = kHistoryRuns, std::span<const std::string_view> carried = {});

}  // namespace pw::journal
