// SPDX-License-Identifier: GPL-3.0-or-later
#include "tap_counters.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "net_schema.hpp"

namespace pvesim {
namespace {

std::optional<std::uint64_t> decimal(std::string_view digits) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

NetDevText read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {std::nullopt, "cannot open " + path + ": " + std::strerror(errno)};
  std::stringstream ss;
  ss << in.rdbuf();
  return {ss.str(), {}};
}

// netN's value when it is in effect with a bridge (so a tap exists for it); nullopt otherwise.
std::optional<std::string> bridged_net(const Vm& vm, int index) {
  auto it = vm.conf.find("net" + std::to_string(index));
  if (it == vm.conf.end()) return std::nullopt;
  auto net = parse_net(it->first, it->second).value;
  if (!net || !net->fields.contains("bridge")) return std::nullopt;
  return it->second;
}

}  // namespace

NetDev parse_proc_net_dev(std::string_view text) {
  static const std::regex line_re(R"(^\s*(.*):\s*(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s+)");
  NetDev out;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    line += '\n';  // Perl's <$fh> keeps the newline, which the regex's final \s+ may need
    std::smatch m;
    if (!std::regex_search(line, m, line_re)) continue;
    auto rx = decimal(m.str(2));
    auto tx = decimal(m.str(3));
    if (!rx || !tx) continue;  // beyond 64 bits: no kernel writes that
    out[m.str(1)] = NetDevLine{*rx, *tx};
  }
  return out;
}

NetDevText read_net_dev(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return {std::nullopt, "cannot read " + path + ": " + std::strerror(errno)};
  if (fs.f_type != NSFS_MAGIC) return read_text(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {std::nullopt, "cannot open " + path + ": " + std::strerror(errno)};
  NetDevText out;
  // A thread of its own: setns moves only the calling thread into the namespace, and this one ends
  // right after, so no request handler ever runs there. /proc/thread-self/net is that thread's view
  // (/proc/self/net would be the main thread's).
  std::thread reader([&] {
    if (::setns(fd, CLONE_NEWNET) != 0) {
      out = {std::nullopt, "cannot enter the network namespace " + path + ": " + std::strerror(errno)};
      return;
    }
    out = read_text("/proc/thread-self/net/dev");
  });
  reader.join();
  ::close(fd);
  return out;
}

std::optional<std::string> NodeNetDevs::path(const std::string& node) const {
  auto it = paths_.find(node);
  if (it == paths_.end()) return std::nullopt;
  return it->second;
}

NodeNetDevs::Read NodeNetDevs::read(const std::string& node) {
  auto p = path(node);
  if (!p) return {{}, "node " + node + " has no --node-net-dev"};
  const NetDevText text = read_net_dev(*p);
  std::lock_guard lock(mutex_);
  if (!text.text) {
    if (failing_.insert(node).second) {
      std::cerr << "pvesim: node " << node << ": " << text.error << "; its VMs show no taps until it is readable\n";
    }
    return {{}, text.error};
  }
  if (failing_.erase(node) > 0) std::cerr << "pvesim: node " << node << ": " << *p << " is readable again\n";
  return {parse_proc_net_dev(*text.text), {}};
}

std::string tap_name(int vmid, int index) {
  return "tap" + std::to_string(vmid) + "i" + std::to_string(index);
}

Taps real_taps(const NetDev& devices, int vmid) {
  static const std::regex tap_re(R"(^tap([1-9]\d*)i)");
  const std::string id = std::to_string(vmid);
  Taps out;
  for (const auto& [name, line] : devices) {
    std::smatch m;
    if (!std::regex_search(name, m, tap_re) || m.str(1) != id) continue;
    out[name] = TapCounters{line.transmit, line.receive};
  }
  return out;
}

Taps synthetic_taps(const Vm& vm) {
  Taps out;
  if (vm.type != "qemu" || !vm.running) return out;
  for (const auto& [key, value] : vm.conf) {
    if (!is_net_key(key)) continue;
    const int index = std::stoi(key.substr(3));
    const auto net = bridged_net(vm, index);
    if (!net) continue;
    TapCounters c;
    auto it = vm.synthetic_taps.find(index);
    if (it != vm.synthetic_taps.end() && it->second.pid == vm.pid && !needs_replug(it->second.net, *net)) {
      c = it->second.counters;
    }
    out[tap_name(vm.vmid, index)] = c;
  }
  return out;
}

std::string change_synthetic_tap(Vm& vm, int index, const TapChange& change, bool advance) {
  const std::string key = "net" + std::to_string(index);
  if (vm.type != "qemu") return "guest " + std::to_string(vm.vmid) + " is not a QEMU VM";
  if (!vm.running) return "VM " + std::to_string(vm.vmid) + " is not running: a stopped VM has no taps";
  const auto net = bridged_net(vm, index);
  if (!net) {
    return vm.conf.contains(key) ? key + " has no bridge: qemu-server gives it user-mode networking, no tap"
                                 : "VM " + std::to_string(vm.vmid) + " has no " + key + " in effect";
  }
  TapCounters c = synthetic_taps(vm).at(tap_name(vm.vmid, index));
  auto apply = [&](std::uint64_t& counter, const std::optional<std::uint64_t>& v) {
    if (v) counter = advance ? counter + *v : *v;  // unsigned: wraps like the kernel's counters
  };
  apply(c.netin, change.netin);
  apply(c.netout, change.netout);
  vm.synthetic_taps[index] = SyntheticTap{vm.pid, *net, c};
  return {};
}

std::string change_synthetic_taps(Vm& vm, const boost::json::value& body, bool advance) {
  if (!body.is_object()) return R"(the body is not an object {"netN": {"netin": BYTES, "netout": BYTES}})";
  const auto before = vm.synthetic_taps;
  auto refuse = [&](std::string why) {
    vm.synthetic_taps = before;
    return why;
  };
  for (const auto& [key, value] : body.as_object()) {
    const std::string k(key);
    if (!is_net_key(k)) return refuse("'" + k + "' is not a NIC key (net0 .. net31)");
    const auto* members = value.if_object();
    if (members == nullptr) return refuse(k + ": not an object {\"netin\": BYTES, \"netout\": BYTES}");
    TapChange change;
    for (const auto& [name, n] : *members) {
      std::optional<std::uint64_t> bytes;
      if (n.is_uint64()) bytes = n.as_uint64();
      if (n.is_int64() && n.as_int64() >= 0) bytes = static_cast<std::uint64_t>(n.as_int64());
      if (!bytes) return refuse(k + "." + std::string(name) + ": not a non-negative integer");
      if (name == "netin") {
        change.netin = bytes;
      } else if (name == "netout") {
        change.netout = bytes;
      } else {
        return refuse(k + ": unknown member '" + std::string(name) + "' (netin, netout)");
      }
    }
    if (auto err = change_synthetic_tap(vm, std::stoi(k.substr(3)), change, advance); !err.empty()) return refuse(err);
  }
  return {};
}

TapCounters total(const Taps& taps) {
  TapCounters sum;
  for (const auto& [name, c] : taps) {
    sum.netin += c.netin;
    sum.netout += c.netout;
  }
  return sum;
}

boost::json::object nics_json(const Taps& taps) {
  boost::json::object out;
  for (const auto& [name, c] : taps) out[name] = boost::json::object{{"netin", c.netin}, {"netout", c.netout}};
  return out;
}

}  // namespace pvesim
