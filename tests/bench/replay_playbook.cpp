// SPDX-License-Identifier: GPL-3.0-or-later
// Stands in for ansible-playbook in the fleet benchmarks (settings: ansible.playbook_command), where
// 10,000 guests cannot run: it replays a real facts run of one guest, recorded with the
// ansible.posix.jsonl callback, once for every host of the play, with that host's identity put in
// (its name; its NIC's MAC in the report; its policy's name in the fstab's pathwarden comment).
// Everything else is the recorded guest's, byte for byte. Only the facts playbook is replayed: any
// other playbook fails the run, so a benchmark that expects nothing to change proves it.
//
//   pw_replay_playbook [--inventory FILE]... [--forks N] [--extra-vars JSON] PLAYBOOK
//   PW_REPLAY_RECORDING=DIR  facts.jsonl (one host's run) and recording.json {"host","mac","policy"}
//   PW_REPLAY_LOG=FILE       one JSON line per run: {"play","hosts"}
//   Inventory lines: NAME pw_mac=MAC pw_policy=POLICY
#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace json = boost::json;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "ERROR! pw_replay_playbook: " << what << "\n";
  std::exit(1);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_decode(std::string_view in) {
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = std::char_traits<char>::find(kB64, 64, c);
    if (p == nullptr) continue;  // '=' and line breaks
    buf = (buf << 6) | static_cast<unsigned>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

std::string base64_encode(std::string_view in) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kB64[(v >> s) & 63]);
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

struct Host {
  std::string mac;
  std::string policy;
};

std::map<std::string, Host> read_inventory(const std::string& path) {
  std::map<std::string, Host> out;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, word;
    if (!(words >> name) || name[0] == '#' || name[0] == ';' || name[0] == '[') continue;
    Host h;
    while (words >> word) {
      if (word.starts_with("pw_mac=")) h.mac = word.substr(7);
      if (word.starts_with("pw_policy=")) h.policy = word.substr(10);
    }
    out[name] = h;
  }
  return out;
}

struct Recording {
  std::string host, mac, policy;
  json::object play_start, stats;
  std::vector<json::object> task_starts;   // in order
  std::vector<json::object> host_results;  // the recorded host's result event after each task start
};

Recording load_recording(const std::string& dir) {
  Recording r;
  const auto meta = json::parse(read_file(dir + "/recording.json")).as_object();
  r.host = std::string(meta.at("host").as_string());
  r.mac = std::string(meta.at("mac").as_string());
  r.policy = std::string(meta.at("policy").as_string());
  std::istringstream in(read_file(dir + "/facts.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto e = json::parse(line).as_object();
    const auto event = std::string(e.at("_event").as_string());
    if (event == "v2_playbook_on_play_start")
      r.play_start = e;
    else if (event == "v2_playbook_on_task_start")
      r.task_starts.push_back(e);
    else if (event == "v2_playbook_on_stats")
      r.stats = e;
    else if (event == "v2_runner_on_ok" && e.at("hosts").as_object().contains(r.host))
      r.host_results.push_back(e);
  }
  if (r.task_starts.size() != r.host_results.size() || r.task_starts.empty()) {
    die("the recording needs one ok result of " + r.host + " per task");
  }
  return r;
}

// The recorded host's result, as `host` would have answered.
json::object as_host(const json::object& recorded, const Recording& rec, const std::string& name, const Host& h) {
  auto result = recorded.at("hosts").at(rec.host).as_object();
  if (auto* content = result.if_contains("content"); content && content->is_string()) {
    const auto fstab = base64_decode(content->as_string());
    *content = base64_encode(replace_all(fstab, "(policy " + rec.policy + ")", "(policy " + h.policy + ")"));
  }
  if (auto* out = result.if_contains("stdout"); out && out->is_string()) {
    // The fstab is the report's first section (base64, after its mark's line).
    auto text = replace_all(std::string(out->as_string()), rec.mac, h.mac);
    const auto mark = text.find(" fstab\n");
    const auto start = mark == std::string::npos ? mark : mark + 7;
    const auto end = start == std::string::npos ? start : text.find("\n@@", start);
    if (end != std::string::npos) {
      const auto fstab = base64_decode(text.substr(start, end - start));
      text.replace(start, end - start,
                   base64_encode(replace_all(fstab, "(policy " + rec.policy + ")", "(policy " + h.policy + ")")));
    }
    *out = text;
  }
  if (auto* lines = result.if_contains("stdout_lines"); lines && lines->is_array()) {
    for (auto& l : lines->as_array()) {
      if (l.is_string()) l = replace_all(std::string(l.as_string()), rec.mac, h.mac);
    }
  }
  json::object e = recorded;
  e["hosts"] = json::object{{name, std::move(result)}};
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inventories;
  std::string playbook;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--inventory" || a == "-i") && i + 1 < argc)
      inventories.push_back(argv[++i]);
    else if ((a == "--forks" || a == "--extra-vars" || a == "-e") && i + 1 < argc)
      ++i;  // nothing to replay
    else if (!a.starts_with("-"))
      playbook = a;
    else
      die("unexpected argument " + a);
  }
  if (playbook.empty()) die("no playbook given");
  const char* rec_dir = std::getenv("PW_REPLAY_RECORDING");
  if (rec_dir == nullptr) die("PW_REPLAY_RECORDING is not set");
  std::map<std::string, Host> inventory;
  for (const auto& i : inventories) inventory.merge(read_inventory(i));

  const auto plays = YAML::LoadFile(playbook);
  if (!plays.IsSequence() || plays.size() != 1) die(playbook + ": expected one play");
  const auto play_name = plays[0]["name"].as<std::string>();
  std::vector<std::string> hosts;
  for (const auto& h : plays[0]["hosts"]) hosts.push_back(h.as<std::string>());

  if (const char* log = std::getenv("PW_REPLAY_LOG")) {
    std::ofstream out(log, std::ios::app);
    out << json::serialize(json::object{{"play", play_name}, {"hosts", hosts.size()}}) << "\n";
  }
  if (play_name != "Gather guest facts for pathwarden") die("only the facts playbook is replayed, not: " + play_name);

  const auto rec = load_recording(rec_dir);
  std::cout << json::serialize(rec.play_start) << "\n";
  json::object stats;
  for (std::size_t t = 0; t < rec.task_starts.size(); ++t) {
    std::cout << json::serialize(rec.task_starts[t]) << "\n";
    for (const auto& name : hosts) {
      auto it = inventory.find(name);
      if (it == inventory.end() || it->second.mac.empty()) die(name + " has no pw_mac in the inventory");
      std::cout << json::serialize(as_host(rec.host_results[t], rec, name, it->second)) << "\n";
    }
  }
  const auto& recorded_stats = rec.stats.at("stats").at(rec.host);
  for (const auto& name : hosts) stats[name] = recorded_stats;
  auto end = rec.stats;
  end["stats"] = std::move(stats);
  std::cout << json::serialize(end) << "\n";
  return 0;
}
