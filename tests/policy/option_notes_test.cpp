// SPDX-License-Identifier: GPL-3.0-or-later
// What some mount options really do: the notes validate and the plan show, and where they stay silent.
#include "policy/option_notes.hpp"

#include <catch2/catch.hpp>

#include "policy/loader.hpp"

using namespace pw::policy;

namespace {

MountSpec mount(std::vector<MountOption> options, std::string reason = {}) {
  MountSpec m;
  m.server = "198.51.100.5";
  m.export_path = "/mnt/pool/docker/pg14";
  m.path = "/srv/pgdata";
  m.options = std::move(options);
  m.reason = std::move(reason);
  return m;
}

std::vector<std::string> noted(const MountSpec& m) {
  std::vector<std::string> out;
  for (const auto& n : option_notes(m)) out.push_back(n.option);
  return out;
}

}  // namespace

TEST_CASE("async: the client's default already, and not what makes the server acknowledge early") {
  auto notes = option_notes(mount({{"nfsvers", "4.2"}, {"nconnect", "4"}, {"async", {}}}, "the UPS covers it"));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].option == "async");
  CHECK_THAT(notes[0].message, Catch::Contains("it is already the default"));
  CHECK_THAT(notes[0].message, Catch::Contains("the export's own 'async' (/etc/exports)"));
  CHECK_THAT(notes[0].message, Catch::Contains("the dataset's 'sync' property"));
  CHECK_THAT(notes[0].message, Catch::EndsWith("(the policy's reason: \"the UPS covers it\")"));
}

TEST_CASE("nolock: no effect on NFSv4, said for vers=4.x and for the negotiated default, not for vers=3") {
  CHECK(noted(mount({{"vers", "4.2"}, {"nolock", {}}})) == std::vector<std::string>{"nolock"});
  CHECK(noted(mount({{"ro", {}}, {"nolock", {}}})) == std::vector<std::string>{"nolock"});
  CHECK_THAT(option_notes(mount({{"nolock", {}}}))[0].message, Catch::Contains("with no vers= it tries 4.2 first"));
  CHECK(noted(mount({{"vers", "3"}, {"nolock", {}}})).empty());
  CHECK(noted(mount({{"nfsvers", "3"}, {"nolock", {}}})).empty());
}

TEST_CASE("soft: noted on a read-write mount, not on a read-only one") {
  CHECK(noted(mount({{"vers", "4.2"}, {"soft", {}}})) == std::vector<std::string>{"soft"});
  CHECK(noted(mount({{"vers", "4.2"}, {"soft", {}}, {"rw", {}}})) == std::vector<std::string>{"soft"});
  CHECK(noted(mount({{"vers", "4.2"}, {"soft", {}}, {"ro", {}}})).empty());
  CHECK(noted(mount({{"vers", "4.2"}, {"hard", {}}, {"nconnect", "8"}})).empty());
}

TEST_CASE("a write probe on a read-only mount is refused where it is written; a read probe is fine") {
  const std::string base = R"(apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: backup-ro}
spec:
  guest: {node: pve1, vmid: 103, host: backup-vm}
  nic: {device: net1}
  mount: {server: 198.51.100.6, export: /x, path: /srv/b, options: [ro, nolock]}
  verify: {probe_file: p, direction: DIR}
)";
  auto with = [&](const std::string& dir) {
    std::string t = base;
    t.replace(t.find("DIR"), 3, dir);
    return load_text(t, "b.yaml");
  };
  auto write = with("write");
  REQUIRE(write.diagnostics.size() == 1);
  CHECK(write.diagnostics[0].to_string() ==
        "b.yaml:8:38: 'spec.verify.direction' is write, but the mount is read-only ('ro' in spec.mount.options at "
        "7:68): a write probe cannot run there; use direction: read");
  auto read = with("read");
  CHECK(read.ok());
}

TEST_CASE("probe_as: the SSH user by default, root where the policy says, a typo named") {
  const std::string base = R"(apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: media}
spec:
  guest: {node: pve1, vmid: 101, host: media-vm}
  nic: {device: net1}
  mount: {server: 198.51.100.2, export: /x, path: /mnt/m}
  verify: {probe_file: p, probe_as: WHO}
)";
  auto with = [&](const std::string& who) {
    std::string t = base;
    t.replace(t.find("WHO"), 3, who);
    return load_text(t, "m.yaml");
  };
  auto user = with("user");
  REQUIRE(user.ok());
  CHECK_FALSE(user.paths.at(0).verify.probe_as_root);
  auto root = with("root");
  REQUIRE(root.ok());
  CHECK(root.paths.at(0).verify.probe_as_root);
  auto typo = with("roo");
  REQUIRE(typo.diagnostics.size() == 1);
  CHECK_THAT(typo.diagnostics[0].to_string(),
             Catch::StartsWith("m.yaml:8:37: 'spec.verify.probe_as' is 'roo'; use user (the SSH user) or root"));
  CHECK_THAT(typo.diagnostics[0].message, Catch::Contains("did you mean 'root'"));
}
