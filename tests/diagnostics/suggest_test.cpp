// SPDX-License-Identifier: GPL-3.0-or-later
#include "diagnostics/suggest.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <string_view>

#include "diagnostics/error.hpp"

TEST_CASE("edit distance counts typos") {
  CHECK(pw::edit_distance("nconnect", "nconnect") == 0);
  CHECK(pw::edit_distance("nconect", "nconnect") == 1);
  CHECK(pw::edit_distance("qeues", "queues") == 1);
  CHECK(pw::edit_distance("queuse", "queues") == 1);  // transposition
  CHECK(pw::edit_distance("", "abc") == 3);
}

TEST_CASE("did-you-mean suggests only close words") {
  constexpr std::array<std::string_view, 4> keys{"guest", "nic", "mount", "verify"};
  CHECK(pw::did_you_mean("mnt", keys).empty() == false);
  CHECK(pw::did_you_mean("mout", keys) == ", did you mean 'mount'?");
  CHECK(pw::did_you_mean("verfiy", keys) == ", did you mean 'verify'?");
  CHECK(pw::did_you_mean("completely-unrelated", keys).empty());
}

TEST_CASE("errors print where, what and hint") {
  pw::Error e{"queues must be 1..64", "a.yaml:3:5", "set queues to the VM's vCPU count"};
  CHECK(e.to_string() == "a.yaml:3:5: queues must be 1..64 (set queues to the VM's vCPU count)");
  pw::Diagnostic d{{"p.yaml", 2, 7}, "unknown key"};
  CHECK(d.to_string() == "p.yaml:2:7: unknown key");
}
