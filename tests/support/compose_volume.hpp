// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A Compose project's NFS volume as `docker volume inspect` reports it (guest::DockerVolume), for
// the tests of policies with owner: compose. Defaults: the lab's project (tests/lab/README.md,
// "Scenarios"): project pg, volume pgdata, driver_opts as its Compose file writes them.
#include <string>

#include "guest/docker_volumes.hpp"

namespace pw::testing {

inline constexpr const char* kComposeMountpoint = "/var/lib/docker/volumes/pg_pgdata/_data";

inline guest::DockerVolume compose_volume(std::string o = "addr=198.51.100.2,rw,nfsvers=4.2",
                                          std::string device = ":/volume1/docker/pg14", std::string name = "pg_pgdata",
                                          std::string project = "pg", std::string volume = "pgdata") {
  guest::DockerVolume v;
  v.mountpoint = "/var/lib/docker/volumes/" + name + "/_data";
  v.name = std::move(name);
  v.driver = "local";
  v.options = {{"type", "nfs"}, {"o", std::move(o)}, {"device", std::move(device)}};
  v.compose_project = std::move(project);
  v.compose_volume = std::move(volume);
  return v;
}

}  // namespace pw::testing
