// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/result_store.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "temp_dir.hpp"

using namespace pw::journal;
namespace json = boost::json;

namespace {

PolicyResult result(std::string policy, std::string verdict, std::string at) {
  PolicyResult r;
  r.policy = std::move(policy);
  r.verdict = std::move(verdict);
  r.finished_at = std::move(at);
  r.run_id = "run-" + r.finished_at;
  r.details = {{"bytes", {{"link2", 68394218}, {"link1", 0}}}, {"throughput", 59393318.0}};
  return r;
}

// What the report layer stores per run (src/report/history.hpp); the store keeps it as given.
json::value point(const PolicyResult& r) {
  return json::object{{"finished_at", r.finished_at}, {"verdict", r.verdict}};
}

pw::Status record(PolicyResultStore& store, const PolicyResult& r, std::size_t keep = kHistoryRuns) {
  return record_result(store, r, point(r), keep);
}

void exercise(PolicyResultStore& store) {
  REQUIRE(record(store, result("movies-10g", "verified", "2024-05-05T02:00:00.000Z")));
  REQUIRE(record(store, result("backup-ro", "wrong-path", "2024-05-05T02:01:00.000Z")));
  REQUIRE(record(store, result("movies-10g", "rolled-back", "2024-05-06T02:00:00.000Z")));

  auto movies = store.get("movies-10g");
  REQUIRE(movies);
  REQUIRE(*movies);
  CHECK((*movies)->verdict == "rolled-back");
  CHECK((*movies)->finished_at == "2024-05-06T02:00:00.000Z");
  // The last success survives the later failure: it is what the Prometheus file exports.
  CHECK((*movies)->last_verified_at == "2024-05-05T02:00:00.000Z");
  CHECK((*movies)->details.at("bytes").at("link2") == 68394218);
  // Both runs of movies-10g, oldest first.
  REQUIRE((*movies)->history.size() == 2);
  CHECK((*movies)->history[0].at("verdict") == "verified");
  CHECK((*movies)->history[1].at("verdict") == "rolled-back");

  // The history is bounded: the oldest runs go first.
  for (int i = 0; i < 5; ++i) REQUIRE(record(store, result("bounded", "verified", "t" + std::to_string(i)), 3));
  auto bounded = store.get("bounded");
  REQUIRE(bounded);
  REQUIRE((*bounded)->history.size() == 3);
  CHECK((*bounded)->history[0].at("finished_at") == "t2");
  CHECK((*bounded)->history[2].at("finished_at") == "t4");

  auto all = store.all();
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].policy == "backup-ro");
  CHECK_FALSE((*all)[0].last_verified_at);
  CHECK((*all)[2].policy == "movies-10g");

  auto none = store.get("unknown");
  REQUIRE(none);
  CHECK_FALSE(*none);
  CHECK_FALSE(store.put(result("", "verified", "t")));
}

}  // namespace

TEST_CASE("last results per policy: in memory") {
  InMemoryPolicyResultStore store;
  exercise(store);
}

TEST_CASE("last results per policy: files replaced atomically, 0600, no temp files left") {
  pw::testing::TempDir tmp;
  auto state = StateDir::open(tmp.path() / "state");
  REQUIRE(state);
  FilePolicyResultStore store(*state);
  exercise(store);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(state->result_dir())) {
    names.push_back(e.path().filename().string());
    CHECK(pw::testing::mode_of(e.path()) == 0600);
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"backup-ro.json", "bounded.json", "movies-10g.json"});

  SECTION("a temp file left by a crash is not a result") {
    std::ofstream(state->result_dir() / ".movies-10g.json.tmp-99-0") << "{\"policy\":";
    auto all = store.all();
    REQUIRE(all);
    CHECK(all->size() == 3);
  }
  SECTION("a damaged result file is reported with its path") {
    std::ofstream(store.path_of("backup-ro"), std::ios::trunc) << "{\"policy\":";
    auto all = store.all();
    REQUIRE_FALSE(all);
    CHECK(all.error().where == store.path_of("backup-ro").string());
    CHECK(all.error().what.find("not valid JSON") == 0);
  }
  SECTION("a policy name with a slash stays inside the directory") {
    REQUIRE(store.put(result("team/movies", "verified", "t")));
    CHECK(std::filesystem::exists(state->result_dir() / "team%2Fmovies.json"));
    auto back = store.get("team/movies");
    REQUIRE(back);
    REQUIRE(*back);
    CHECK((*back)->policy == "team/movies");
  }
}
