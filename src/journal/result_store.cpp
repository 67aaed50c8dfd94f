// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/result_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "files/atomic_write.hpp"
#include "journal/posix_file.hpp"

namespace pw::journal {
namespace json = boost::json;

namespace {

constexpr std::string_view kResultSuffix = ".json";

std::optional<std::string> text_field(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}

}  // namespace

json::object PolicyResult::to_json() const {
  json::object o;
  o["policy"] = policy;
  o["verdict"] = verdict;
  o["finished_at"] = finished_at;
  o["run_id"] = run_id;
  if (last_verified_at) o["last_verified_at"] = *last_verified_at;
  o["details"] = details;
  if (!history.empty()) o["history"] = history;
  return o;
}

Result<PolicyResult> PolicyResult::from_json(const json::value& v, std::string_view where) {
  if (!v.is_object()) return fail("a policy result is not a JSON object", std::string(where));
  const auto& o = v.as_object();
  PolicyResult r;
  for (auto [key, field] : {std::pair{"policy", &r.policy}, std::pair{"verdict", &r.verdict},
                            std::pair{"finished_at", &r.finished_at}, std::pair{"run_id", &r.run_id}}) {
    auto value = text_field(o, key);
    if (!value)
      return fail("policy result has no text field '" + std::string(key) + "'", std::string(where),
                  "remove the file; the next run writes it again");
    *field = std::move(*value);
  }
  r.last_verified_at = text_field(o, "last_verified_at");
  if (const auto* d = o.if_contains("details"); d && d->is_object()) r.details = d->as_object();
  if (const auto* h = o.if_contains("history"); h && h->is_array()) r.history = h->as_array();
  return r;
}

FilePolicyResultStore::FilePolicyResultStore(const StateDir& state)
    : FilePolicyResultStore(state.result_dir(), state.loose()) {}

FilePolicyResultStore::FilePolicyResultStore(std::filesystem::path dir, LoosePermissions loose)
    : dir_(std::move(dir)), loose_(loose) {}

std::filesystem::path FilePolicyResultStore::path_of(std::string_view policy) const {
  return dir_ / (file_name_for(policy) + std::string(kResultSuffix));
}

Status FilePolicyResultStore::put(const PolicyResult& result) {
  if (result.policy.empty()) return fail("a policy result needs the policy's name", dir_.string());
  if (auto d = open_private_directory(dir_, loose_, nullptr); !d) return std::unexpected(d.error());
  return files::write_atomically(path_of(result.policy), json::serialize(result.to_json()) + "\n");
}

Result<std::optional<PolicyResult>> FilePolicyResultStore::read(const std::filesystem::path& path) {
  auto fd = open_private_file(path, O_RDONLY, loose_, nullptr);
  if (!fd) {
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::optional<PolicyResult>{};
    return std::unexpected(fd.error());
  }
  auto text = read_all(fd->get(), path);
  if (!text) return std::unexpected(text.error());
  boost::system::error_code ec;
  auto v = json::parse(*text, ec);
  if (ec)
    return fail("not valid JSON: " + ec.message(), path.string(), "remove the file; the next run writes it again");
  auto r = PolicyResult::from_json(v, path.string());
  if (!r) return std::unexpected(r.error());
  return std::optional<PolicyResult>(std::move(*r));
}

Result<std::optional<PolicyResult>> FilePolicyResultStore::get(std::string_view policy) {
  if (auto d = open_private_directory(dir_, loose_, nullptr); !d) return std::unexpected(d.error());
  return read(path_of(policy));
}

Result<std::vector<PolicyResult>> FilePolicyResultStore::all() {
  auto names = list_private_directory(dir_, kResultSuffix, loose_, nullptr);
  if (!names) return std::unexpected(names.error());
  std::vector<PolicyResult> out;
  for (const auto& name : *names) {
    auto r = read(dir_ / (name + std::string(kResultSuffix)));
    if (!r) return std::unexpected(r.error());
    if (*r) out.push_back(std::move(**r));
  }
  std::sort(out.begin(), out.end(), [](const PolicyResult& a, const PolicyResult& b) { return a.policy < b.policy; });
  return out;
}

Status InMemoryPolicyResultStore::put(const PolicyResult& result) {
  if (result.policy.empty()) return fail("a policy result needs the policy's name", "results");
  results_[result.policy] = result;
  return {};
}

Result<std::optional<PolicyResult>> InMemoryPolicyResultStore::get(std::string_view policy) {
  if (auto it = results_.find(policy); it != results_.end()) return std::optional<PolicyResult>(it->second);
  return std::optional<PolicyResult>{};
}

Result<std::vector<PolicyResult>> InMemoryPolicyResultStore::all() {
  std::vector<PolicyResult> out;
  for (const auto& [_, r] : results_) out.push_back(r);
  return out;
}

Status record_result(PolicyResultStore& store, PolicyResult result, json::value point, std::size_t keep,
                     std::span<const std::string_view> carried) {
  auto previous = store.get(result.policy);
  if (!previous) return std::unexpected(previous.error());
  if (*previous) {
    for (const auto key : carried) {
      if (result.details.contains(key)) continue;
      if (const auto* kept = (*previous)->details.if_contains(key)) result.details[key] = *kept;
    }
  }
  if (result.verdict == "verified") {
    result.last_verified_at = result.finished_at;
  } else {
    result.last_verified_at = *previous ? (*previous)->last_verified_at : std::nullopt;
  }
  json::array history = *previous ? std::move((*previous)->history) : json::array{};
  history.push_back(std::move(point));
  if (history.size() > keep) history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(keep));
  result.history = std::move(history);
  return store.put(result);
}

}  // namespace pw::journal
