// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A real QEMU guest agent on a UNIX socket (--qga-dir DIR: VM V's is DIR/V.qga, as qemu-server's
// /var/run/qemu-server/V.qga, QS9 PVE/QemuServer/Helpers.pm qmp_socket l. 89), spoken to exactly as
// PVE::QMPClient does (QS9 PVE/QMPClient.pm): a new connection per command, guest-sync-delimited
// and the command written in one go, the reply after QGA's 0xFF delimiter, older sync ids skipped,
// one deadline over the whole conversation. Every wait is a poll() bounded by that deadline.
#include <atomic>
#include <string>

#include "qga_peer.hpp"

namespace pvesim {

class QgaSocket final : public QgaPeer {
 public:
  // `peer_name` is how qemu-server names the VM in errors ("VM 101"); `stopping` cuts waits short
  // when pvesim shuts down.
  QgaSocket(std::string path, std::string peer_name, const std::atomic<bool>& stopping);

  bool reachable() const override;
  QgaResult execute(const std::string& command, const boost::json::object& arguments,
                    std::chrono::milliseconds timeout) override;

 private:
  std::string path_;
  std::string peer_name_;
  const std::atomic<bool>& stopping_;
};

// QMPClient's $next_cmdid for qga (QS9 PVE/QMPClient.pm l. 187): "$$" . "0" . <sequence>, as a
// number; rising within a process, so a late reply to an earlier command has a smaller id.
long long next_qga_sync_id();

}  // namespace pvesim
