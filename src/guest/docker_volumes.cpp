// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/docker_volumes.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include "guest/scripts.hpp"

namespace pw::guest {
namespace json = boost::json;

const std::string* DockerVolume::option(std::string_view key) const {
  auto it = options.find(std::string(key));
  return it == options.end() ? nullptr : &it->second;
}

namespace {

std::string string_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::map<std::string, std::string> string_map(const json::object& o, std::string_view key) {
  std::map<std::string, std::string> out;
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_object()) return out;  // Docker prints null for "no options"
  for (const auto& [k, x] : v->as_object()) {
    if (x.is_string()) out.emplace(std::string(k), std::string(x.as_string()));
  }
  return out;
}

}  // namespace

Result<std::vector<DockerVolume>> parse_docker_volume_inspect(std::string_view text, std::string_view where) {
  boost::system::error_code ec;
  auto value = json::parse(text, ec);
  if (ec || !value.is_array()) {
    return fail("'docker volume inspect' printed no JSON array" + (ec ? ": " + ec.message() : std::string()),
                std::string(where), "run it by hand in the guest to see what Docker says");
  }
  std::vector<DockerVolume> out;
  for (const auto& item : value.as_array()) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    DockerVolume v;
    v.name = string_of(o, "Name");
    v.driver = string_of(o, "Driver");
    v.mountpoint = string_of(o, "Mountpoint");
    v.options = string_map(o, "Options");
    const auto labels = string_map(o, "Labels");
    if (auto it = labels.find("com.docker.compose.project"); it != labels.end()) v.compose_project = it->second;
    if (auto it = labels.find("com.docker.compose.volume"); it != labels.end()) v.compose_volume = it->second;
    if (v.name.empty()) return fail("a volume without a Name in 'docker volume inspect'", std::string(where));
    out.push_back(std::move(v));
  }
  return out;
}

const DockerVolume* find_compose_volume(const std::vector<DockerVolume>& volumes, std::string_view project,
                                        std::string_view volume) {
  for (const auto& v : volumes) {
    if (v.compose_project == project && v.compose_volume == volume) return &v;
  }
  return nullptr;
}

void take_volume_answers(const std::vector<DockerVolume>& volumes, std::vector<MountInfo>& mounts) {
  for (const auto& v : volumes) {
    if (v.answer == MountAnswer::unknown) continue;
    auto m =
        std::find_if(mounts.rbegin(), mounts.rend(), [&](const MountInfo& x) { return x.mount_point == v.mountpoint; });
    if (m != mounts.rend() && m->is_nfs() && (m->answer == MountAnswer::unknown || m->answer == MountAnswer::error)) {
      m->answer = v.answer;
      m->answer_error.clear();
    }
  }
}

std::string_view docker_volumes_script() {
  static const std::string text = "set -u\n" + std::string(scripts::statfs) + std::string(scripts::docker_volumes);
  return text;
}

Result<std::vector<DockerVolume>> docker_volumes_answer(long long exit_code, std::string_view out, std::string_view err,
                                                        std::string_view otherwise, const std::string& host,
                                                        bool become_hint) {
  if (exit_code == 0) {
    // The inspection's JSON, then (a script of this version) each NFS mount's answer.
    constexpr std::string_view kAnswers = "@@pathwarden statfs\n";
    const auto split = out.find(kAnswers);
    auto volumes = parse_docker_volume_inspect(out.substr(0, split), host + ": docker volume inspect");
    if (!volumes || split == std::string_view::npos) return volumes;
    std::vector<MountInfo> points;
    points.reserve(volumes->size());
    for (const auto& v : *volumes) points.push_back(MountInfo{{}, v.mountpoint, "nfs", {}});
    if (auto st = apply_statfs_answers(out.substr(split + kAnswers.size()), points, host + ": stat -f (as root)"); !st)
      return std::unexpected(st.error());
    for (std::size_t i = 0; i < points.size(); ++i) (*volumes)[i].answer = points[i].answer;
    return volumes;
  }
  std::string why(err);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (why.empty()) why = otherwise.empty() ? "exit " + std::to_string(exit_code) : std::string(otherwise);
  const char* hint =
      exit_code == 3 ? "install Docker there, or use another spec.mount.owner"
      : why.find("permission denied") != std::string::npos && become_hint
          ? "Docker's socket is root's: set spec.ansible.become: true in the Controller settings, or add the SSH user "
            "to the docker group"
          : "check 'systemctl status docker' in the guest";
  return fail("Docker did not list its volumes: " + why, host, hint);
}

}  // namespace pw::guest
