// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "guest/addresses.hpp"
#include "guest/connections.hpp"
#include "guest/counter_read.hpp"
#include "guest/counter_snapshot.hpp"
#include "guest/counters.hpp"
#include "guest/dd_summary.hpp"
#include "guest/ethtool.hpp"
#include "guest/interfaces.hpp"
#include "guest/mounts.hpp"
#include "guest/mountstats.hpp"
#include "guest/nfs_servers.hpp"
#include "guest/sha256.hpp"
#include "guest/sudo_check.hpp"
#include "guest/sunrpc.hpp"
#include "text_files.hpp"

namespace fs = std::filesystem;
using namespace pw::guest;

namespace {

template <class T>
T value_of(pw::Result<T> r) {
  if (!r) FAIL(r.error().to_string());
  return std::move(*r);
}

}  // namespace

TEST_CASE("/proc/mounts: addr= is the server really used, even when the device names another") {
  auto mounts = value_of(parse_proc_mounts(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v42trunk_exp2.mounts")));
  REQUIRE(mounts.size() == 2);
  const auto& b = mounts[1];
  CHECK(b.device == "198.51.100.2:/export2");
  CHECK(b.device_host() == "198.51.100.2");
  CHECK(b.export_path() == "/export2");
  CHECK(b.server_address() == "192.0.2.2");  // trunked onto the old link
  CHECK(b.mount_point == "/mnt/b");
  CHECK(b.fstype == "nfs4");
  CHECK(b.is_nfs());
  CHECK(b.nfs_version() == "4.2");
  CHECK(b.nconnect() == 1);
  CHECK(b.option("clientaddr") == "192.0.2.10");
  CHECK(b.has_option("hard"));
  CHECK_FALSE(b.has_option("soft"));
}

TEST_CASE("/proc/mounts: vers=3 keeps each address; nconnect and max_connect are read") {
  auto v3 = value_of(parse_proc_mounts(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v3.mounts")));
  REQUIRE(v3.size() == 2);
  CHECK(v3[1].server_address() == "198.51.100.2");
  CHECK(v3[1].nfs_version() == "3");
  CHECK(v3[1].fstype == "nfs");

  auto nc = value_of(parse_proc_mounts(pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.mounts")));
  CHECK(nc[0].nconnect() == 4);
  auto mc = value_of(parse_proc_mounts(pw::testing::guest_sample("lab-kernel-nfs/knfsd-maxconnect2.mounts")));
  CHECK(mc[0].option("max_connect") == "2");
}

TEST_CASE("/proc/mounts: every mount of a server, by any of its addresses") {
  auto trunk = value_of(parse_proc_mounts(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v42trunk_exp2.mounts")));
  std::vector<std::string> nas{"198.51.100.2", "192.0.2.2"};
  CHECK(nfs_mounts_of_server(trunk, nas).size() == 2);
  std::vector<std::string> only_b{"198.51.100.2"};
  CHECK(nfs_mounts_of_server(trunk, only_b).size() == 1);  // the device names it
  std::vector<std::string> other{"203.0.113.9"};
  CHECK(nfs_mounts_of_server(trunk, other).empty());
}

TEST_CASE("/proc/mounts: escaped blanks and bad lines") {
  auto m = value_of(parse_proc_mounts("srv:/Photo\\040Library /mnt/photo\\040lib nfs4 rw,addr=192.0.2.2 0 0\n"));
  CHECK(m[0].mount_point == "/mnt/photo lib");
  CHECK(m[0].export_path() == "/Photo Library");
  auto bad = parse_proc_mounts("ok /a ext4 rw 0 0\ntruncated /b\n", "g1:/proc/mounts");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "g1:/proc/mounts:2:1");
}

TEST_CASE("statfs answers: each NFS mount's, stacked mounts the top one, escaped points, bad lines") {
  auto mounts = parse_proc_mounts(
      "192.0.2.2:/a /mnt/a nfs4 rw,vers=4.2 0 0\n"
      "192.0.2.2:/b /mnt/my\\040films nfs4 rw,vers=4.2 0 0\n"
      "192.0.2.2:/c /mnt/c nfs rw,vers=3 0 0\n"
      "192.0.2.2:/d /mnt/c nfs4 rw,vers=4.2 0 0\n"
      "192.0.2.2:/e /mnt/e nfs4 rw,vers=4.2 0 0\n");
  REQUIRE(mounts);
  auto st = apply_statfs_answers(
      "ok /mnt/a\nstale /mnt/my\\040films\nstale /mnt/c\n"
      "error /mnt/e stat: cannot read file system information for '/mnt/e': Permission denied\n"
      "no-answer /mnt/gone\n",
      *mounts, "media-vm:stat -f");
  REQUIRE(st);
  CHECK((*mounts)[0].answer == MountAnswer::answers);
  CHECK((*mounts)[1].answer == MountAnswer::stale);
  CHECK((*mounts)[2].answer == MountAnswer::unknown);  // under /mnt/c's top mount
  CHECK((*mounts)[3].answer == MountAnswer::stale);
  CHECK((*mounts)[4].answer == MountAnswer::error);
  CHECK((*mounts)[4].answer_error == "stat: cannot read file system information for '/mnt/e': Permission denied");
  CHECK(to_string(MountAnswer::no_answer) == "no-answer");

  auto bad = apply_statfs_answers("gone /mnt/a\n", *mounts, "media-vm:stat -f");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().to_string().find("media-vm:stat -f:1:1") != std::string::npos);
  CHECK_FALSE(apply_statfs_answers("stale\n", *mounts, "x"));
}

TEST_CASE("mountstats: a mount without a device name is read, not fatal") {
  const std::string text =
      "device rootfs mounted on / with fstype rootfs\n"
      "no device mounted on /run/credentials/x with fstype ramfs\n"
      "device 198.51.100.2:/volume1/movies mounted on /mnt/movies with fstype nfs4 statvers=1.1\n"
      "\topts:\trw,vers=4.2\n";
  auto stats = value_of(parse_mountstats(text));
  REQUIRE(stats.size() == 3);
  CHECK(stats[1].device.empty());
  CHECK(stats[1].mount_point == "/run/credentials/x");
  CHECK(stats[1].fstype == "ramfs");
  CHECK(stats[2].is_nfs());
  CHECK(nfs_only(stats).size() == 1);
  // Also as the first line.
  CHECK(value_of(parse_mountstats("no device mounted on /x with fstype tmpfs\n")).size() == 1);
}

TEST_CASE("mountstats: one transport per xprt line") {
  auto stats = value_of(parse_mountstats(pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.mountstats")));
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].device == "192.0.2.2:/export");
  CHECK(stats[0].mount_point == "/mnt/a");
  CHECK(stats[0].statvers == "1.1");
  REQUIRE(stats[0].transports.size() == 4);
  CHECK(stats[0].transports[0].protocol == "tcp");
  CHECK(stats[0].transports[0].sends == 16);
  CHECK(stats[0].transports[3].receives == 5);
  CHECK(stats[0].transports[0].fields.size() == 13);
  CHECK(stats[0].transports[0].source_port == 0);  // NFSv4 on this kernel prints 0
}

TEST_CASE("mountstats: v3 source ports match the local ports ss shows") {
  auto stats = value_of(parse_mountstats(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v3.mountstats")));
  auto conns = value_of(parse_ss_tcp(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v3.ss")));
  REQUIRE(stats.size() == 2);
  REQUIRE(conns.size() == 2);
  CHECK(stats[0].transports[0].source_port == 720);
  CHECK(stats[1].transports[0].source_port == 873);
  CHECK(conns[0].local_port == 720);
  CHECK(conns[0].local_address == "192.0.2.10");
  CHECK(conns[1].local_port == 873);
  CHECK(conns[1].local_address == "198.51.100.10");
}

TEST_CASE("mountstats: a full block with opts, bytes and per-op statistics") {
  std::string text =
      "device sysfs mounted on /sys with fstype sysfs\n"
      "device 192.0.2.2:/export mounted on /mnt/a\\040b with fstype nfs4 statvers=1.1\n"
      "\topts:\trw,vers=4.2,rsize=131072,addr=192.0.2.2\n"
      "\tage:\t42\n"
      "\tbytes:\t1 2 67108864 4 67108864 6 7 8\n"
      "\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n"
      "\txprt:\ttcp 0 0 2 0 0 43 43 0 43 0 2 0 0\n"
      "\txprt:\tudp 812 1 10 11 0 0 0 2 0 0\n"
      "\tper-op statistics\n"
      "\t        NULL: 0 0 0 0 0 0 0 0 0\n"
      "\t        READ: 512 512 0 65536 67174400 1 1000 1100 0\n";
  auto stats = value_of(parse_mountstats(text));
  REQUIRE(stats.size() == 2);
  CHECK_FALSE(stats[0].is_nfs());
  CHECK(nfs_only(stats).size() == 1);
  const auto& s = stats[1];
  CHECK(s.mount_point == "/mnt/a b");
  CHECK(s.options == "rw,vers=4.2,rsize=131072,addr=192.0.2.2");
  CHECK(s.age_seconds == 42u);
  REQUIRE(s.bytes);
  CHECK(s.bytes->direct_read == 67108864u);
  CHECK(s.bytes->server_read == 67108864u);
  CHECK(s.rpc_program == "100003/4");
  REQUIRE(s.transports.size() == 2);
  CHECK(s.transports[1].protocol == "udp");
  CHECK(s.transports[1].source_port == 812);
  CHECK(s.transports[1].sends == 10);
}

TEST_CASE("ss: kernel sockets print their info on the connection line") {
  auto conns = value_of(parse_ss_tcp(pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.ss")));
  REQUIRE(conns.size() == 4);
  for (const auto& c : conns) {
    CHECK(c.state == "ESTAB");
    CHECK(c.peer_address == "192.0.2.2");
    CHECK(c.peer_port == 2049);
    CHECK(c.local_address == "192.0.2.10");
  }
  CHECK(conns[0].info.at("cwnd") == "10");
  CHECK(conns[0].info.contains("bidir"));
  CHECK_FALSE(conns[0].bytes_acked);
}

TEST_CASE("ss -H with a state filter: no State column, info on the next line, IPv6") {
  auto conns = value_of(parse_ss_tcp(pw::testing::guest_sample("local/ss-Htni-established-dport-2049.txt")));
  REQUIRE(conns.size() == 2);
  CHECK(conns[0].state.empty());
  CHECK(conns[0].local_address == "127.0.0.1");
  CHECK(conns[0].peer_port == 2049);
  CHECK(conns[0].bytes_sent == 100000u);
  CHECK(conns[0].bytes_acked == 100001u);
  CHECK(conns[0].bytes_received == 5000u);
  CHECK(conns[0].info.at("send") == "190464000000bps");
  CHECK(conns[1].local_address == "::1");
  CHECK(conns[1].peer_address == "::1");

  auto with_header = value_of(parse_ss_tcp(pw::testing::guest_sample("local/ss-tni-dport-2049.txt")));
  REQUIRE(with_header.size() == 2);
  CHECK(with_header[0].state == "ESTAB");
  CHECK(with_header[0].bytes_received == 5000u);
  CHECK(connections_to_port(with_header, 2049).size() == 2);
  CHECK(connections_to_port(with_header, 22).empty());
}

TEST_CASE("/proc/net/dev counters") {
  auto host = value_of(parse_proc_net_dev(pw::testing::guest_sample("local/proc-net-dev-host.txt")));
  REQUIRE(find_counters(host, "lo"));
  REQUIRE(find_counters(host, "eth0"));
  auto ns = value_of(parse_proc_net_dev(pw::testing::guest_sample("local/proc-net-dev-netns.txt")));
  REQUIRE(ns.size() == 3);
  CHECK(ns[0].name == "lo");
  CHECK(ns[0].rx_bytes == 106088u);
  CHECK(ns[0].rx_packets == 18u);
  CHECK(ns[0].tx_bytes == 106088u);
  CHECK(ns[1].name == "vcap1");
  CHECK(ns[1].tx_bytes == 0u);
  auto old_style = value_of(parse_proc_net_dev("  eth0:123 1 0 0 0 0 0 0 456 2 0 0 0 0 0 0\n"));
  CHECK(old_style[0].rx_bytes == 123u);
  CHECK(old_style[0].tx_bytes == 456u);
  CHECK_FALSE(parse_proc_net_dev("eth0: 1 2 3\n"));
}

TEST_CASE("ethtool -l: virtio reports Combined, veth RX/TX") {
  auto virtio =
      value_of(parse_ethtool_channels(pw::testing::guest_sample("lab-kernel-nfs/ethtool-l-virtio-link2.txt")));
  CHECK(virtio.interface == "link2");
  CHECK(virtio.maximum.combined == 4);
  CHECK(virtio.current.combined == 2);
  CHECK_FALSE(virtio.current.rx);
  auto veth = value_of(parse_ethtool_channels(pw::testing::guest_sample("local/ethtool-l-veth.txt")));
  CHECK(veth.maximum.rx == 2);
  CHECK(veth.current.tx == 1);
  CHECK_FALSE(veth.current.combined);
  CHECK_FALSE(parse_ethtool_channels("netlink error: Operation not supported\n"));
}

TEST_CASE("/proc/fs/nfsfs/servers: hex address and port") {
  auto servers = value_of(parse_nfs_servers(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v3.nfs_servers")));
  REQUIRE(servers.size() == 2);
  CHECK(servers[0].version == "v3");
  CHECK(servers[0].address == "192.0.2.2");
  CHECK(servers[0].port == 2049);
  CHECK(servers[1].address == "198.51.100.2");
  CHECK(servers[1].hostname == "198.51.100.2");
  auto trunk = value_of(parse_nfs_servers(pw::testing::guest_sample("lab-kernel-nfs/knfsd-v42trunk_exp2.nfs_servers")));
  REQUIRE(trunk.size() == 1);  // both mounts share one client
  CHECK(trunk[0].use_count == 2);
  // A mount Docker's local driver made (addr= and device ":/export", no host name): the
  // kernel's HOSTNAME column is empty (captured in the lab's Compose scenario).
  auto docker =
      value_of(parse_nfs_servers(pw::testing::guest_sample("lab-kernel-nfs/docker-compose-volume.nfs_servers")));
  REQUIRE(docker.size() == 1);
  CHECK(docker[0].address == "198.51.100.2");
  CHECK(docker[0].port == 2049);
  CHECK(docker[0].use_count == 1);
  CHECK(docker[0].hostname.empty());
  CHECK_FALSE(parse_nfs_servers("NV SERVER   PORT USE HOSTNAME\nv4 c6336402  801\n", "servers"));
}

TEST_CASE("interface report: MAC, speed, queues and channels") {
  std::string block = "ifindex 3\naddress 52:54:00:AA:bb:02\nspeed -1\noperstate up\nrx_queues 2\ntx_queues 2\n" +
                      pw::testing::guest_sample("lab-kernel-nfs/ethtool-l-virtio-link2.txt");
  auto info = value_of(parse_interface_report("link2", block, "vm101"));
  CHECK(info.mac == "52:54:00:aa:bb:02");
  CHECK(info.ifindex == 3);
  CHECK_FALSE(info.speed_mbps);
  CHECK(info.rx_queues == 2);
  CHECK(info.combined_current() == 2);
  CHECK(info.combined_max() == 4);
  std::vector<InterfaceInfo> all{info};
  CHECK(find_nic_interface(all, "52-54-00-aa-BB-02") == &all[0]);
  CHECK(find_nic_interface(all, "52:54:00:aa:bb:03") == nullptr);
  CHECK(find_nic_interface(all, "not a mac") == nullptr);
  auto bad = parse_interface_report("eth0", "rx_queues lots\n", "vm101");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().to_string() == "vm101:1: rx_queues of interface eth0 is 'lots', not a number");
}

TEST_CASE("a NIC's interface is found by its permanent address, not by the MAC it wears now") {
  auto iface = [](std::string name, std::string mac, std::string perm, std::string lowers = "") {
    std::string block = "ifindex 3\naddress " + mac + "\npermaddr " + perm + "\n" + lowers + "operstate up\n";
    return value_of(parse_interface_report(name, block, "vm101"));
  };
  // The MACs of eth0 and eth1 swapped (ip link set address): each still is the NIC it was made as.
  std::vector<InterfaceInfo> swapped{iface("eth0", "52:54:00:00:00:02", "52:54:00:00:00:01"),
                                     iface("eth1", "52:54:00:00:00:01", "52:54:00:00:00:02")};
  CHECK(swapped[0].permanent_mac == "52:54:00:00:00:01");
  CHECK(swapped[0].identity() == "52:54:00:00:00:01");
  REQUIRE(find_nic_interface(swapped, "52:54:00:00:00:02"));
  CHECK(find_nic_interface(swapped, "52:54:00:00:00:02")->name == "eth1");

  // A bond gives both slaves its MAC, and the bond sits on them (lower_*): the second NIC's
  // interface is the slave made with its address, and the bond is never a NIC.
  std::vector<InterfaceInfo> bond{
      iface("bond0", "52:54:00:00:00:01", "set", "lower eth0\nlower eth1\n"),
      iface("eth0", "52:54:00:00:00:01", "52:54:00:00:00:01"),
      iface("eth1", "52:54:00:00:00:01", "52:54:00:00:00:02"),
  };
  CHECK(bond[0].upper_device());
  CHECK(bond[0].lowers == std::vector<std::string>{"eth0", "eth1"});
  CHECK_FALSE(bond[0].permanent_mac.valid());  // ethtool -P: "Permanent address: not set"
  CHECK(find_nic_interface(bond, "52:54:00:00:00:01")->name == "eth0");
  CHECK(find_nic_interface(bond, "52:54:00:00:00:02")->name == "eth1");

  // No permanent address (veth, or ethtool missing): the MAC is all there is.
  std::vector<InterfaceInfo> veth{iface("veth0", "52:54:00:00:00:03", "00:00:00:00:00:00")};
  CHECK_FALSE(veth[0].permanent_mac.valid());
  CHECK(find_nic_interface(veth, "52:54:00:00:00:03") == &veth[0]);

  // A VLAN on the NIC wears its MAC; the NIC is still the lower device.
  std::vector<InterfaceInfo> vlan{iface("eth1.100", "52:54:00:00:00:02", "", "lower eth1\n"),
                                  iface("eth1", "52:54:00:00:00:02", "52:54:00:00:00:02")};
  CHECK(find_nic_interface(vlan, "52:54:00:00:00:02")->name == "eth1");
}

TEST_CASE("counter snapshots carry each interface's identity and mark upper devices") {
  std::vector<InterfaceInfo> infos{
      value_of(parse_interface_report("eth0", "address 52:54:00:00:00:02\npermaddr 52:54:00:00:00:01\n", "g")),
      value_of(parse_interface_report("br0", "address 52:54:00:00:00:02\nlower eth0\n", "g"))};
  std::vector<InterfaceCounters> counters{
      {"lo", 5, 0, 0, 0, 5, 0, 0, 0}, {"eth0", 100, 1, 0, 0, 200, 2, 0, 0}, {"br0", 90, 1, 0, 0, 190, 2, 0, 0}};
  auto snap = counter_snapshot(counters, infos, std::chrono::seconds(2));
  REQUIRE(snap.interfaces.size() == 2);  // lo left out
  CHECK(snap.taken_at == std::chrono::seconds(2));
  CHECK(snap.interfaces[0].mac == "52:54:00:00:00:01");
  CHECK_FALSE(snap.interfaces[0].upper_device);
  CHECK(snap.interfaces[1].upper_device);
  CHECK(snap.interfaces[1].rx_bytes == 90);
}

TEST_CASE("ip -j addr: who owns each local address, VLANs by their own name") {
  // As Debian 12's iproute2 prints it (shortened): a VLAN is its own ifname with "link" below it;
  // an empty object, as some versions print for an interface without addresses, is skipped.
  const std::string text =
      R"([{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"addr_info":[{"family":"inet","local":"127.0.0.1",)"
      R"("prefixlen":8,"scope":"host","label":"lo"}]},{},)"
      R"({"ifindex":2,"ifname":"link1","address":"bc:24:11:a1:01:01","addr_info":[{"family":"inet",)"
      R"("local":"192.0.2.10","prefixlen":24,"broadcast":"192.0.2.255","scope":"global"},)"
      R"({"family":"inet6","local":"fe80::be24:11ff:fea1:101","prefixlen":64,"scope":"link"}]},)"
      R"({"ifindex":5,"link":"link2","ifname":"link2.10","addr_info":[{"family":"inet","local":"198.51.100.10",)"
      R"("prefixlen":24}]},{"ifindex":6,"ifname":"br0","addr_info":[{"family":"inet6","local":"fd00::10",)"
      R"("prefixlen":64}]},{"ifindex":7,"ifname":"can0","addr_info":[{"family":"can"}]}])";
  auto a = value_of(parse_ip_addr(text));
  REQUIRE(a.size() == 5);
  CHECK(a[0] == InterfaceAddress{"lo", "127.0.0.1", 8});
  CHECK(a[1] == InterfaceAddress{"link1", "192.0.2.10", 24});
  CHECK(a[2] == InterfaceAddress{"link1", "fe80::be24:11ff:fea1:101", 64});
  CHECK(a[3] == InterfaceAddress{"link2.10", "198.51.100.10", 24});
  CHECK(a[4] == InterfaceAddress{"br0", "fd00::10", 64});
  CHECK(value_of(parse_ip_addr("[]")).empty());  // no iproute2: the script prints []
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"2: link1    inet 192.0.2.10/24", "not JSON"},
           {R"({"ifname":"x"})", "not a JSON array"},
           {R"([{"addr_info":[]}])", "has no \"ifname\""},
           {R"([{"ifname":"x","addr_info":[{"family":"inet","local":"10.0.0.1","prefixlen":33}]}])", "from 0 to 32"},
           {R"([{"ifname":"x","addr_info":[{"family":"inet6","prefixlen":64}]}])", "without a \"local\""}}) {
    auto r = parse_ip_addr(bad, "vm101:ip -j addr");
    INFO(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().where == "vm101:ip -j addr");
    CHECK_THAT(r.error().what, Catch::Contains(why));
  }
}

TEST_CASE("a counter read: /proc/net/dev, ifindexes and the NFS connections' bytes from one script") {
  const std::string netdev = pw::testing::guest_sample("local/proc-net-dev-netns.txt");
  const std::string connections =
      "0      0      198.51.100.10:957      198.51.100.2:2049\n"
      "\t cubic wscale:7,7 rto:204 rtt:0.5/0.25 bytes_sent:1200 bytes_acked:1201 bytes_received:67200000 "
      "segs_out:10 segs_in:20\n";
  auto r = value_of(parse_counter_read(netdev, "lo 1\nlink1 2\nlink2 3\n", connections, "vm101"));
  CHECK_FALSE(r.counters.empty());
  CHECK(r.ifindex.at("link2") == 3);
  REQUIRE(r.nfs_connections.size() == 1);
  CHECK(r.nfs_connections[0].bytes_received == 67200000u);
  CHECK(r.nfs_connections[0].bytes_acked == 1201u);
  CHECK_FALSE(parse_counter_read(netdev, "link1 two\n", "", "vm101"));
}

TEST_CASE("counter snapshots joined by ifindex: a rename between the read and the facts keeps identity") {
  // At the counter read, ifindex 3 was called eth1; by the facts it is called link2.
  std::vector<InterfaceInfo> infos{
      value_of(
          parse_interface_report("link2", "ifindex 3\naddress 52:54:00:00:00:02\npermaddr 52:54:00:00:00:02\n", "g")),
      value_of(
          parse_interface_report("eth1", "ifindex 7\naddress 52:54:00:00:00:09\npermaddr 52:54:00:00:00:09\n", "g"))};
  std::vector<InterfaceCounters> counters{{"eth1", 100, 1, 0, 0, 200, 2, 0, 0}, {"gone0", 5, 1, 0, 0, 5, 1, 0, 0}};
  const std::map<std::string, int, std::less<>> ifindex{{"eth1", 3}, {"gone0", 9}};
  auto snap = counter_snapshot(counters, infos, {}, &ifindex);
  REQUIRE(snap.interfaces.size() == 2);
  CHECK(snap.interfaces[0].mac == "52:54:00:00:00:02");  // by ifindex, not by the name eth1
  CHECK_FALSE(snap.interfaces[1].mac.valid());           // its netdev is gone: no identity
  CHECK(snap.interfaces[1].ifindex == 9);
}

TEST_CASE("the device below a VLAN or bridge; a bond of two has none") {
  auto iface = [](std::string name, std::string lowers = "") {
    return value_of(parse_interface_report(name, "address 52:54:00:00:00:02\n" + lowers, "g"));
  };
  std::vector<InterfaceInfo> all{iface("link2"),
                                 iface("br0", "lower link2\n"),
                                 iface("br0.10", "lower br0\n"),
                                 iface("link1"),
                                 iface("link3"),
                                 iface("bond0", "lower link1\nlower link3\n")};
  REQUIRE(device_below(all, "br0.10"));
  CHECK(device_below(all, "br0.10")->name == "link2");
  CHECK(device_below(all, "link2")->name == "link2");
  CHECK(device_below(all, "bond0") == nullptr);
  CHECK(device_below(all, "nosuch") == nullptr);
}

TEST_CASE("dd's complaints: a probe file it could not open, an error midway") {
  CHECK(dd_open_failure("dd: failed to open '/mnt/movies/probe-64m': No such file or directory\n") ==
        "No such file or directory");
  CHECK(dd_open_failure("dd: failed to open '/mnt/movies/probe-64m': Permission denied\n") == "Permission denied");
  CHECK_FALSE(dd_open_failure("64+0 records in\n64+0 records out\n"));
  // The write probe's conv=excl: only EEXIST is "the file was there", never another open failure.
  CHECK(dd_output_existed("dd: failed to open '/mnt/m/p.bin': File exists\n"));
  CHECK_FALSE(dd_output_existed("dd: failed to open '/mnt/m/p.bin': Permission denied\n"));
  CHECK_FALSE(dd_output_existed("64+0 records in\n64+0 records out\n"));
  CHECK(dd_error_line("dd: error reading '/mnt/x': Input/output error\n3+0 records in\n") ==
        "dd: error reading '/mnt/x': Input/output error");
}

TEST_CASE("dd summary and sha256") {
  auto dd = parse_dd_summary(
      "64+0 records in\n64+0 records out\n67108864 bytes (67 MB, 64 MiB) copied, 1.2345 s, 54.4 MB/s\n");
  REQUIRE(dd);
  CHECK(dd->bytes == 67108864u);
  CHECK(dd->seconds == Approx(1.2345));
  CHECK_FALSE(parse_dd_summary("dd: failed to open 'x': No such file or directory\n"));
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("the facts' sudo check: whether become would ask, and what sudo said") {
  using pw::guest::SudoCheck;
  CHECK(value_of(pw::guest::parse_sudo_check("nopasswd\n", "h")).usable());
  CHECK(value_of(pw::guest::parse_sudo_check("root\n", "h")).outcome == SudoCheck::Outcome::root);
  CHECK(value_of(pw::guest::parse_sudo_check("given\n", "h")).usable());
  const auto asks = value_of(pw::guest::parse_sudo_check("asks sudo: a password is required\n", "h"));
  CHECK_FALSE(asks.usable());
  CHECK(asks.message == "sudo: a password is required");
  CHECK_THAT(asks.blocker("vm1"), Catch::Contains("sudo in vm1 asks for a password (sudo: a password is required)"));
  CHECK_THAT(value_of(pw::guest::parse_sudo_check("absent", "h")).blocker("vm1"),
             Catch::Contains("sudo is not installed in vm1"));
  CHECK(SudoCheck{}.blocker("vm1").empty());
  auto bad = pw::guest::parse_sudo_check("maybe", "vm1:sudo -n true");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "vm1:sudo -n true");
}

TEST_CASE("/proc/net/tcp: the established connections, addresses in the guest's byte order") {
  // Two NFS transports of the lab guest (198.51.100.10 -> 198.51.100.2:2049, 192.0.2.10 ->
  // 192.0.2.2:2049), sshd listening, a TIME_WAIT; the kernel prints each __be32 as a host-order word.
  const std::string v4 =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 14822 1\n"
      "   1: 0A6433C6:02F6 026433C6:0801 01 00000000:00000000 00:00000000 00000000     0        0 0 1\n"
      "   2: 0A0200C0:0354 020200C0:0801 01 00000000:00000000 02:000001F4 00000000     0        0 0 2\n"
      "   3: 0A0200C0:A000 020200C0:0016 06 00000000:00000000 03:00001770 00000000     0        0 0 3\n";
  auto all = parse_proc_net_tcp(v4, false);
  REQUIRE(all);
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].local_address == "198.51.100.10");
  CHECK((*all)[0].local_port == 758);
  CHECK((*all)[0].peer_address == "198.51.100.2");
  CHECK((*all)[0].peer_port == 2049);
  CHECK((*all)[0].state.empty());      // established only, as the facts script's filtered ss
  CHECK_FALSE((*all)[0].bytes_acked);  // no tcp_info in a file
  CHECK((*all)[1].local_address == "192.0.2.10");
  CHECK(connections_to_port(*all, 2049).size() == 2);
  // IPv6: four words; an IPv4-mapped peer as the kernel keeps it.
  const std::string v6 =
      "  sl  local_address                         remote_address                        st\n"
      "   0: 0000000000000000FFFF00000A6433C6:02F6 0000000000000000FFFF0000026433C6:0801 01 0\n";
  auto six = parse_proc_net_tcp(v6, true, "/proc/net/tcp6");
  REQUIRE(six);
  REQUIRE(six->size() == 1);
  CHECK(six->front().peer_address == "::ffff:198.51.100.2");
  auto bad = parse_proc_net_tcp("   0: zz:1 00000000:0000 01\n", false);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "/proc/net/tcp");
}

TEST_CASE("sunrpc's transports as the facts script lists them, and a mount's client among them") {
  // Lines as facts.sh prints them from Linux 6.1's /sys/kernel/sunrpc/xprt-switches.
  const auto r = pw::guest::parse_sunrpc_section(
      "switch-0 xprt-0-tcp 192.0.2.2 1 2049\n"
      "switch-0 xprt-1-tcp 192.0.2.2 0 2049\n"
      "switch-0 xprt-2-tcp 198.51.100.2 0 2049\n"
      "switch-1 xprt-3-tcp 192.0.2.2 1 20048\n"
      "switch-2 xprt-4-udp - - -\n",
      "sunrpc");
  REQUIRE(r);
  CHECK(r->support == pw::guest::TransportMoveSupport::present);
  REQUIRE(r->transports.size() == 5);
  CHECK(r->transports[4].proto() == "udp");
  CHECK(r->transports[4].dstaddr.empty());
  CHECK_FALSE(r->transports[4].main);  // closed: "<closed>" gives neither
  const auto client = pw::guest::client_transports(r->transports, "192.0.2.2");
  REQUIRE(client.size() == 3);  // trunked: a transport to the other address in the same client
  CHECK(client[2]->dstaddr == "198.51.100.2");
  CHECK(pw::guest::client_transports(r->transports, "203.0.113.9").empty());

  const auto absent = pw::guest::parse_sunrpc_section("absent\n", "sunrpc");
  REQUIRE(absent);
  CHECK(absent->support == pw::guest::TransportMoveSupport::absent);
  CHECK_FALSE(pw::guest::parse_sunrpc_section("switch-0 xprt-0-tcp 192.0.2.2\n", "sunrpc"));
}
