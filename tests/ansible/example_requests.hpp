// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Requests for every playbook with values an attacker (or a careless policy author) could write:
// quotes, newlines, Jinja, shell syntax. Shared by the unit tests and the lint/syntax-check tool.
#include <string>
#include <vector>

#include "ansible/playbooks.hpp"
#include "guest/sha256.hpp"

namespace pw::ansible::examples {

using guest::ChannelsRequest;
using guest::FstabChange;
using guest::FstabRestore;
using guest::MountActivation;
using guest::ProbeDirection;
using guest::ProbeRequest;

inline const std::string kHostile =
    "x'\"; touch /tmp/pw-injected; $(touch /tmp/pw-injected) `id` {{ lookup('pipe', 'touch /tmp/pw-injected') }}"
    " {% raw %} {# c #}\nnext-line";

inline std::vector<std::string> hosts() {
  return {"guest1", "guest2", "db-01.example"};
}

inline std::vector<FstabChange> fstab_changes() {
  std::string old_content = "UUID=abc / ext4 defaults 0 1\n";
  std::string new_content = old_content + "# Managed by pathwarden (policy p): " + kHostile +
                            "\n10.0.1.31:/volume1/movies /mnt/movies nfs vers=3,nconnect=8 0 0\n";
  return {
      {"guest1",
       guest::sha256_hex(old_content),
       new_content,
       "/var/backups/pathwarden/fstab.change-1",
       {{"/mnt/movies", "10.0.1.31:/volume1/movies", "nfs", {"vers=3", "nconnect=8"}, true},
        {"/mnt/other", "10.0.1.31:/volume1/other", "nfs", {}, true}},
       old_content},
      {"guest2",
       guest::sha256_hex("x"),
       kHostile,
       "/var/backups/pathwarden/fstab.change-1",
       {{"/mnt/" + kHostile, "srv:/" + kHostile, "nfs", {"opt=" + kHostile.substr(0, 20)}, true}},
       "x"},
  };
}

inline std::vector<FstabRestore> fstab_restores() {
  return {{"guest1",
           "/var/backups/pathwarden/fstab.change-1",
           guest::sha256_hex("a"),
           guest::sha256_hex("b"),
           {{"/mnt/movies", "", "", {}, false}, {"/mnt/other", "10.0.1.31:/volume1/other", "nfs", {}, true}}}};
}

inline std::vector<ProbeRequest> probes() {
  std::vector<ProbeRequest> out{{"guest1", "/mnt/movies/probe.bin", 256ull << 20, ProbeDirection::read, 1 << 20},
                                {"guest2", "/mnt/" + kHostile, 64ull << 20, ProbeDirection::write, 1 << 20}};
  out[0].mount_point = "/mnt/movies";
  return out;
}

inline std::vector<ChannelsRequest> channels() {
  return {{"guest1", "ens19", 8}, {"guest2", "eth1", 4}};
}

}  // namespace pw::ansible::examples
