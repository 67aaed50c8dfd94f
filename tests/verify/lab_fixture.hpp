// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The QEMU lab of shared/reference/qemu-lab.md as test data: a guest with link1 (192.0.2.10),
// link2 (198.51.100.10) and mgmt (203.0.113.10), a knfsd NAS at 192.0.2.2 (link1) and
// 198.51.100.2 (link2). Byte figures are the lab's measured ones (knfsd-client-run3.log).
#include <chrono>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "verify/verifier.hpp"

namespace lab {

using namespace pw::verify;

inline constexpr const char* kLink1Mac = "52:54:00:12:34:01";
inline constexpr const char* kLink2Mac = "52:54:00:12:34:02";
inline constexpr const char* kMgmtMac = "52:54:00:12:34:03";
inline constexpr std::uint64_t kProbe64MiB = 64ull << 20;

// One interface's story over a measurement: where its counters start, what it moves during
// the baseline window, and its raw delta across the probe.
struct Lane {
  std::string name;
  std::string mac;
  std::uint64_t baseline_rx = 0, baseline_tx = 0;  // bytes during the baseline window
  std::uint64_t probe_rx = 0, probe_tx = 0;        // raw bytes during the probe window
  std::optional<std::uint64_t> speed_mbps;
  std::uint64_t start_rx = 1'000'000, start_tx = 500'000;
};

struct Timing {
  double baseline_s = 1.0;
  double gap_s = 0.2;
  double probe_s = 1.35;
  double dd_s = 0;  // the probe command's own run time inside the probe window; 0: all of it
};

inline std::chrono::nanoseconds secs(double s) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
}

inline InterfaceCounters iface(std::string name, std::string mac, std::uint64_t rx, std::uint64_t tx,
                               bool upper_device = false) {
  InterfaceCounters i;
  i.name = std::move(name);
  i.mac = std::move(mac);
  i.rx_bytes = rx;
  i.tx_bytes = tx;
  i.upper_device = upper_device;
  return i;
}

inline InterfaceCounters counters(const Lane& l, std::uint64_t rx, std::uint64_t tx) {
  auto i = iface(l.name, l.mac, rx, tx);
  i.speed_mbps = l.speed_mbps;
  return i;
}

// The delta of the interface with that name or MAC; fails the test when there is none.
inline const CounterDelta& find_delta(const std::vector<CounterDelta>& deltas, const std::string& name_or_mac) {
  for (const auto& d : deltas)
    if (d.name == name_or_mac || d.mac == name_or_mac) return d;
  throw std::runtime_error("no counter delta for " + name_or_mac);
}

// Four snapshots; between baseline end and the probe the lanes keep their baseline rate.
inline Measurement measure(const std::vector<Lane>& lanes, std::uint64_t probe_bytes,
                           ProbeDirection dir = ProbeDirection::read, Timing t = {}) {
  Measurement m;
  const double t0 = 500.0;
  m.samples.baseline_start.taken_at = secs(t0);
  m.samples.baseline_end.taken_at = secs(t0 + t.baseline_s);
  m.samples.before_probe.taken_at = secs(t0 + t.baseline_s + t.gap_s);
  m.samples.after_probe.taken_at = secs(t0 + t.baseline_s + t.gap_s + t.probe_s);
  for (const auto& l : lanes) {
    const auto gap_rx = static_cast<std::uint64_t>(static_cast<double>(l.baseline_rx) * t.gap_s / t.baseline_s);
    const auto gap_tx = static_cast<std::uint64_t>(static_cast<double>(l.baseline_tx) * t.gap_s / t.baseline_s);
    std::uint64_t rx = l.start_rx, tx = l.start_tx;
    m.samples.baseline_start.interfaces.push_back(counters(l, rx, tx));
    rx += l.baseline_rx;
    tx += l.baseline_tx;
    m.samples.baseline_end.interfaces.push_back(counters(l, rx, tx));
    rx += gap_rx;
    tx += gap_tx;
    m.samples.before_probe.interfaces.push_back(counters(l, rx, tx));
    rx += l.probe_rx;
    tx += l.probe_tx;
    m.samples.after_probe.interfaces.push_back(counters(l, rx, tx));
  }
  m.probe = ProbeRun{probe_bytes, dir, secs(t.dd_s > 0 ? t.dd_s : t.probe_s)};
  return m;
}

inline MountOptionMap options(const std::string& list) {
  MountOptionMap out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      out[item] = "";
    else
      out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

// /proc/mounts lines of the lab, device and options as the kernel printed them.
inline EffectiveMount mount(std::string device, std::string point, std::string fstype, const std::string& opts) {
  return EffectiveMount{std::move(device), std::move(point), std::move(fstype), options(opts)};
}

inline constexpr const char* kV42OptsViaA =
    "rw,relatime,vers=4.2,rsize=131072,wsize=131072,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,"
    "clientaddr=192.0.2.10,local_lock=none,addr=192.0.2.2";
inline constexpr const char* kV42OptsViaB =
    "rw,relatime,vers=4.2,rsize=131072,wsize=131072,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,"
    "clientaddr=198.51.100.10,local_lock=none,addr=198.51.100.2";
inline constexpr const char* kV3OptsViaB =
    "rw,relatime,vers=3,rsize=131072,wsize=131072,namlen=255,hard,nolock,proto=tcp,timeo=600,retrans=2,sec=sys,"
    "mountaddr=198.51.100.2,mountvers=3,mountproto=tcp,local_lock=all,addr=198.51.100.2";
inline constexpr const char* kTrunkRefusal =
    "[    5.781092] SUNRPC: reached max allowed number (1) did not add transport to server: 192.0.2.2";

inline std::vector<LocalAddress> local_addresses() {
  return {
      {"192.0.2.10", "link1", kLink1Mac}, {"198.51.100.10", "link2", kLink2Mac}, {"203.0.113.10", "mgmt", kMgmtMac}};
}

// The policy of the trap: movies over link2's address with NFSv4.2.
inline DesiredPath movies_via_link2(std::optional<std::string> vers = "4.2") {
  DesiredPath d;
  d.intended_mac = kLink2Mac;
  d.mount_point = "/mnt/b";
  d.server = "198.51.100.2";
  d.nas_addresses = {"192.0.2.2"};
  d.vers = std::move(vers);
  return d;
}

// v42trunk: /mnt/a via A, then /mnt/b via B, which the kernel trunked onto A's transport.
inline NfsEvidence trunked_evidence() {
  NfsEvidence e;
  e.mounts = {mount("192.0.2.2:/export", "/mnt/a", "nfs4", kV42OptsViaA),
              mount("192.0.2.2:/export", "/mnt/b", "nfs4", kV42OptsViaA)};
  e.connections = {{"192.0.2.10", 977, "192.0.2.2", 2049}};
  e.local_addresses = local_addresses();
  e.transport_count = 1;
  e.kernel_messages = {"[    5.761373] nfs_create_rpc_client: cannot create RPC client. Error = -22", kTrunkRefusal};
  e.guest_channels = 2;
  return e;
}

// v42Bonly: the control, a v4.2 mount through B alone.
inline NfsEvidence clean_evidence() {
  NfsEvidence e;
  e.mounts = {mount("198.51.100.2:/export", "/mnt/b", "nfs4", kV42OptsViaB)};
  e.connections = {{"198.51.100.10", 957, "198.51.100.2", 2049}};
  e.local_addresses = local_addresses();
  e.transport_count = 1;
  e.guest_channels = 2;
  return e;
}

inline Lane link1(std::uint64_t probe_rx, std::uint64_t probe_tx = 0) {
  return Lane{"link1", kLink1Mac, 0, 0, probe_rx, probe_tx, std::nullopt};
}
inline Lane link2(std::uint64_t probe_rx, std::uint64_t probe_tx = 0) {
  return Lane{"link2", kLink2Mac, 0, 0, probe_rx, probe_tx, std::nullopt};
}
// The SSH session that runs the probe: a few kB each way, in the baseline too.
inline Lane mgmt() {
  return Lane{"mgmt", kMgmtMac, 3'000, 4'000, 4'500, 6'000, std::nullopt};
}

inline VerificationInput input(DesiredPath d, NfsEvidence e, Measurement m) {
  VerificationInput in;
  in.desired = std::move(d);
  in.evidence = std::move(e);
  in.measurement = std::move(m);
  return in;
}

}  // namespace lab
