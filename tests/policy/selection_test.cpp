// SPDX-License-Identifier: GPL-3.0-or-later
// Which policies a run takes: names and globs, labels, nodes, hosts; what matches nothing is an error.
#include "policy/selection.hpp"

#include <catch2/catch.hpp>

#include "policy/loader.hpp"

using namespace pw::policy;

namespace {

StoragePath policy(std::string name, std::string node, std::string host,
                   std::map<std::string, std::string> labels = {}) {
  StoragePath p;
  p.name = std::move(name);
  p.guest.node = std::move(node);
  p.guest.host = std::move(host);
  p.labels = std::move(labels);
  return p;
}

std::vector<StoragePath> fleet() {
  return {policy("media-movies", "pve1", "media-vm", {{"site", "basement"}, {"tier", "bulk"}}),
          policy("media-tv", "pve1", "media-vm", {{"site", "basement"}}),
          policy("postgres-data", "pve2", "docker-vm", {{"site", "attic"}, {"tier", "db"}})};
}

std::vector<std::string> names(const pw::Result<std::vector<StoragePath>>& r) {
  REQUIRE(r);
  std::vector<std::string> out;
  for (const auto& p : *r) out.push_back(p.name);
  return out;
}

}  // namespace

TEST_CASE("no selection takes every policy") {
  CHECK(names(select_policies(fleet(), {})).size() == 3);
}

TEST_CASE("names and globs; one kind is alternatives, kinds narrow each other") {
  CHECK(names(select_policies(fleet(), {{"media-*"}, {}, {}, {}, {}})) ==
        std::vector<std::string>{"media-movies", "media-tv"});
  CHECK(names(select_policies(fleet(), {{"media-tv", "postgres-data"}, {}, {}, {}, {}})) ==
        std::vector<std::string>{"media-tv", "postgres-data"});
  CHECK(names(select_policies(fleet(), {{}, {"site=basement", "tier=bulk"}, {}, {}, {}})) ==
        std::vector<std::string>{"media-movies"});
  CHECK(names(select_policies(fleet(), {{}, {}, {"pve2"}, {}, {}})) == std::vector<std::string>{"postgres-data"});
  CHECK(names(select_policies(fleet(), {{"media-*"}, {}, {}, {"media-vm", "docker-vm"}, {}})) ==
        std::vector<std::string>{"media-movies", "media-tv"});
}

TEST_CASE("what selects nothing is refused with what to do") {
  auto typo = select_policies(fleet(), {{"postgres-dat"}, {}, {}, {}, {}});
  REQUIRE_FALSE(typo);
  CHECK(typo.error().what == "no policy named 'postgres-dat', did you mean 'postgres-data'?");
  auto glob = select_policies(fleet(), {{"web-*"}, {}, {}, {}, {}});
  REQUIRE_FALSE(glob);
  CHECK(glob.error().what == "no policy matches 'web-*'");
  auto none = select_policies(fleet(), {{"media-*"}, {}, {"pve2"}, {}, {}});
  REQUIRE_FALSE(none);
  CHECK(none.error().what == "no policy is selected by --policy media-* --node pve2");
  auto bad = select_policies(fleet(), {{}, {"site"}, {}, {}, {}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().what == "--selector 'site' is not key=value");
}

TEST_CASE("labels come from metadata.labels as written") {
  auto r = load_text(R"(apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: m, labels: {site: basement, tier: "bulk"}}
spec:
  guest: {node: pve1, vmid: 101, host: media-vm}
  nic: {device: net1}
  mount: {server: 198.51.100.2, export: /x, path: /mnt/m}
  verify: {probe_file: p}
)",
                     "m.yaml");
  REQUIRE(r.ok());
  REQUIRE(r.paths.size() == 1);
  CHECK(r.paths[0].labels == std::map<std::string, std::string>{{"site", "basement"}, {"tier", "bulk"}});
  CHECK(names(select_policies(std::move(r.paths), {{}, {"tier=bulk"}, {}, {}, {}})) == std::vector<std::string>{"m"});
}

TEST_CASE("an exclusion takes policies out: --exclude, or a --policy that starts with '!'") {
  using V = std::vector<std::string>;
  // Alone, from every policy; with names, from what they select.
  CHECK(names(select_policies(fleet(), Selection::from({"!media-tv"}, {}, {}, {}, {}))) ==
        V{"media-movies", "postgres-data"});
  CHECK(names(select_policies(fleet(), Selection::from({}, {}, {}, {}, {"media-*"}))) == V{"postgres-data"});
  CHECK(names(select_policies(fleet(), Selection::from({"media-*", "!media-movies"}, {}, {}, {}, {}))) ==
        V{"media-tv"});
  CHECK(names(select_policies(fleet(), Selection::from({}, {"site=basement"}, {}, {}, {"media-tv"}))) ==
        V{"media-movies"});
  // The name part gets the did-you-mean, said with the '!' the operator wrote.
  auto typo = select_policies(fleet(), Selection::from({"!media-t"}, {}, {}, {}, {}));
  REQUIRE_FALSE(typo);
  CHECK(typo.error().what == "no policy named '!media-t', did you mean 'media-tv'?");
  CHECK(typo.error().hint == "'pathwarden validate --list' lists the policies");
  // An exclusion glob that matches nothing leaves out nothing (a fleet-wide timer's --exclude).
  CHECK(names(select_policies(fleet(), Selection::from({}, {}, {}, {}, {"web-*"}))).size() == fleet().size());
  // Excluding everything is a selection of nothing: an error, never a run that does nothing.
  auto all = select_policies(fleet(), Selection::from({"!*"}, {}, {}, {}, {}));
  REQUIRE_FALSE(all);
  CHECK(all.error().what == "no policy is selected by --exclude *");
}
