#pragma once
// The SSH control sockets of one pathwarden run: Ansible's shared connections (ControlMaster,
// ControlPersist) live in a directory of the run's own, <state>/ssh/<pid>, so that a run closing
// its masters at its end never closes those of another run on the same host (two shards, or a
// timer run beside an operator's), and a run killed before it could close them leaves a
// directory the next run recognises by its dead pid and clears.
#include <filesystem>
#include <optional>

namespace pw::ansible {

// `ssh -O exit` for every control socket in dir (best effort: a master already gone is fine).
void close_control_masters(const std::filesystem::path& dir);

// Under parent (made 0700 if missing): clears the directories of runs whose process is gone, then
// makes this process's own. nullopt when it cannot, or when its path is too long for a control
// socket (Ansible names a socket DIR/<40 hex digits>; a Unix socket path has at most 107 bytes):
// connections are then not shared.
std::optional<std::filesystem::path> make_run_control_dir(const std::filesystem::path& parent);

}  // namespace pw::ansible
