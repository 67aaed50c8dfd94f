// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Docker's view of its volumes (`docker volume inspect`): for a Compose NFS volume, the options
// its driver_opts gave (type, o, device) and where Docker mounts it. The mount itself is in
// /proc/mounts only while a container uses the volume (Docker's local driver mounts on first
// use and unmounts after the last).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/mounts.hpp"

namespace pw::guest {

struct DockerVolume {
  std::string name;                            // "pg_pgdata"
  std::string driver;                          // "local"
  std::string mountpoint;                      // "/var/lib/docker/volumes/pg_pgdata/_data"
  std::map<std::string, std::string> options;  // driver_opts as Docker keeps them: type, o, device
  std::string compose_project;                 // label com.docker.compose.project
  std::string compose_volume;                  // label com.docker.compose.volume
  // The NAS's answer at its Mountpoint while Docker has it mounted (unknown when not mounted):
  // read as root by the volumes' script, where the facts report's user cannot look.
  MountAnswer answer = MountAnswer::unknown;

  const std::string* option(std::string_view key) const;
};

// The JSON array `docker volume inspect NAME...` prints.
Result<std::vector<DockerVolume>> parse_docker_volume_inspect(std::string_view json, std::string_view where);

const DockerVolume* find_compose_volume(const std::vector<DockerVolume>& volumes, std::string_view project,
                                        std::string_view volume);

// What the docker_volumes script's run says, however it ran (over SSH, or through the guest
// agent): its exit status, output and complaint, and `otherwise` when it said nothing (the
// runner's own message). `become_hint`: a permission problem is told as Ansible's become.
Result<std::vector<DockerVolume>> docker_volumes_answer(long long exit_code, std::string_view out, std::string_view err,
                                                        std::string_view otherwise, const std::string& host,
                                                        bool become_hint = true);

// The volumes' answers (DockerVolume::answer) onto the live mounts at their Mountpoints, where
// the facts report's own read could not ask (unknown or an error such as permission denied).
void take_volume_answers(const std::vector<DockerVolume>& volumes, std::vector<MountInfo>& mounts);

// The shell script the facts playbook runs (as root) where a policy names a Compose volume:
// every volume Compose made, inspected, then each NFS mount's statfs answer. Exit 3: no docker command; other failures:
// docker's own.
std::string_view docker_volumes_script();

}  // namespace pw::guest
