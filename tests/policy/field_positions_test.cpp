// SPDX-License-Identifier: GPL-3.0-or-later
// FieldPositions: the compact record of where each policy field was written (10,000 policies of
// a fleet keep one file name each and share the field names).
#include <catch2/catch.hpp>

#include "policy/loader.hpp"
#include "policy/model.hpp"

using namespace pw;
using namespace pw::policy;

TEST_CASE("field positions are found, replaced and iterated in field order") {
  FieldPositions f;
  CHECK(f.empty());
  f["spec.nic.queues"] = SourcePos{"a.yaml", 6, 31};
  f["metadata.name"] = SourcePos{"a.yaml", 3, 17};
  f["spec.nic.queues"] = SourcePos{"a.yaml", 7, 2};  // the last write wins, as in a map
  f.set("spec.mount.path", SourcePos{"other.yaml", 9, 1});
  CHECK(f.size() == 3);
  CHECK(f.find("spec.nic.queues") == SourcePos{"a.yaml", 7, 2});
  CHECK(f.find("spec.mount.path") == SourcePos{"other.yaml", 9, 1});
  CHECK_FALSE(f.find("spec.nic"));
  CHECK_FALSE(f.find("spec.nic.queues.x"));
  std::vector<std::string> fields;
  for (const auto& [field, pos] : f) {
    fields.push_back(field);
    CHECK(pos.line > 0);
  }
  CHECK(fields == std::vector<std::string>{"metadata.name", "spec.mount.path", "spec.nic.queues"});
  const FieldPositions copy = f;
  CHECK(copy.find("metadata.name") == SourcePos{"a.yaml", 3, 17});
}

TEST_CASE("every policy of a fleet shares the field names; position_of falls back to the document") {
  auto text = [](int i) {
    return "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: p" + std::to_string(i) +
           "}\nspec:\n  guest: {node: pve1, vmid: " + std::to_string(100 + i) + ", host: vm" + std::to_string(i) +
           "}\n  nic: {device: net1}\n  mount: {server: 192.0.2.2, export: /e, path: /mnt/e, options: [vers=3]}\n"
           "  verify: {probe_file: p.bin}\n";
  };
  auto a = load_text(text(1), "a.yaml");
  auto b = load_text(text(2), "b.yaml");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const auto& pa = a.paths.at(0).positions;
  const auto& pb = b.paths.at(0).positions;
  REQUIRE(pa.size() == pb.size());
  CHECK(&(*pa.begin()).first == &(*pb.begin()).first);  // one string for both
  CHECK(a.paths[0].position_of("spec.guest.vmid").to_string() == "a.yaml:5:29");
  CHECK(b.paths[0].position_of("spec.guest.vmid").to_string() == "b.yaml:5:29");
  CHECK(a.paths[0].position_of("spec.nic.queues") == a.paths[0].source);  // not written
}
