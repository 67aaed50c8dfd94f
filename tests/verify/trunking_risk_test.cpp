// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/trunking_risk.hpp"

#include <catch2/catch.hpp>

#include "lab_fixture.hpp"

using namespace pw::verify;

namespace {

PlannedMount movies(std::optional<std::string> vers) {
  return PlannedMount{"/mnt/b", "198.51.100.2", {"192.0.2.2"}, std::move(vers)};
}

}  // namespace

TEST_CASE("planning a v4.2 mount to link2's address while link1's address is mounted with v4.2 warns") {
  const std::vector<GuestNfsMount> existing{{"/mnt/a", "192.0.2.2", "4.2"}};
  const auto risks = predict_trunking_risk(movies("4.2"), existing);
  REQUIRE(risks.size() == 1);
  CHECK(risks[0].certain);
  CHECK(risks[0].existing.mount_point == "/mnt/a");
  CHECK(risks[0].message.find("192.0.2.2") != std::string::npos);
  REQUIRE(risks[0].remedies.size() == 3);
  CHECK(risks[0].remedies[0].kind == RemedyKind::move_transport);  // offered first: NFSv4 kept
  CHECK(risks[0].remedies[1].kind == RemedyKind::pin_nfs_v3);
  CHECK(risks[0].remedies[2].mount_points == std::vector<std::string>{"/mnt/b", "/mnt/a"});
}

TEST_CASE("trunking risk table") {
  struct Row {
    const char* what;
    std::optional<std::string> planned_vers;
    std::vector<GuestNfsMount> existing;
    std::size_t risks;
    bool certain;
  };
  const std::vector<Row> rows{
      {"vers=3 has no trunking", "3", {{"/mnt/a", "192.0.2.2", "4.2"}}, 0, true},
      {"v4.0 has no trunking", "4.0", {{"/mnt/a", "192.0.2.2", "4.0"}}, 0, true},
      {"minor versions differ (lab: A v4.1 + B v4.2 → link2)", "4.2", {{"/mnt/a", "192.0.2.2", "4.1"}}, 0, true},
      {"the existing mount is NFSv3", "4.2", {{"/mnt/a", "192.0.2.2", "3"}}, 0, true},
      {"another NAS", "4.2", {{"/mnt/x", "203.0.113.7", "4.2"}}, 0, true},
      {"a client for the planned address exists already",
       "4.2",
       {{"/mnt/a", "192.0.2.2", "4.2"}, {"/mnt/c", "198.51.100.2", "4.2"}},
       0,
       true},
      {"the planned mount point itself is re-made", "4.2", {{"/mnt/b", "192.0.2.2", "4.2"}}, 0, true},
      {"v4.1 on both", "4.1", {{"/mnt/a", "192.0.2.2", "4.1"}}, 1, true},
      {"negotiated version may land on 4.2", std::nullopt, {{"/mnt/a", "192.0.2.2", "4.2"}}, 1, false},
      {"vers=4 is negotiated too", "4", {{"/mnt/a", "192.0.2.2", "4.1"}}, 1, false},
      {"two mounts through link1", "4.2", {{"/mnt/a", "192.0.2.2", "4.2"}, {"/mnt/d", "[192.0.2.2]", "4.2"}}, 2, true},
      {"no mounts", "4.2", {}, 0, true},
      // The planned mount point rides the planned address while another rides link1, same minor
      // version: a server that trunks cannot show this (NFS-Ganesha: one client ID per address).
      {"the mount being re-made rides X beside link1's: the NAS does not trunk them",
       "4.2",
       {{"/mnt/a", "192.0.2.2", "4.2"}, {"/mnt/b", "198.51.100.2", "4.2"}},
       0,
       true},
      {"... but not with another minor version beside it",
       "4.2",
       {{"/mnt/a", "192.0.2.2", "4.2"}, {"/mnt/b", "198.51.100.2", "4.1"}},
       1,
       true},
      {"... nor when the planned mount point rides link1 (trunked there)",
       "4.2",
       {{"/mnt/a", "192.0.2.2", "4.2"}, {"/mnt/b", "192.0.2.2", "4.2"}},
       1,
       true},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    const auto risks = predict_trunking_risk(movies(row.planned_vers), row.existing);
    CHECK(risks.size() == row.risks);
    for (const auto& r : risks) CHECK(r.certain == row.certain);
  }
}

TEST_CASE("the guest's mounts are read by their effective address, not the device column") {
  // v42trunk: /mnt/b's device says B in some kernels, addr= says A.
  const std::vector<EffectiveMount> mounts{lab::mount("198.51.100.2:/export2", "/mnt/b", "nfs4", lab::kV42OptsViaA),
                                           lab::mount("198.51.100.2:/export", "/mnt/c", "nfs", "vers=3")};
  const auto g = guest_nfs_mounts(mounts);
  REQUIRE(g.size() == 2);
  CHECK(g[0].address == "192.0.2.2");
  CHECK(g[0].vers == "4.2");
  CHECK(g[1].address == "198.51.100.2");
  CHECK(g[1].vers == "3");
}
