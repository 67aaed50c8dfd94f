// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A VM's guest agent as qemu-server reaches it: one command per conversation, each on a new
// connection to /var/run/qemu-server/<vmid>.qga, bounded by a timeout that covers connecting,
// guest-sync-delimited and the reply together (qemu-server PVE/QemuServer/Monitor.pm qmp_cmd,
// PVE/QMPClient.pm cmd; docs/guest-agent-upstream.md §2.1, §2.2). Two kinds stand behind it: a real
// agent on a UNIX socket (qga_socket.hpp) and a recorded one for simulated VMs (recorded_agent.hpp).
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <string>

namespace pvesim {

// PVE::QMPClient::cmd's outcome (QS9 PVE/QMPClient.pm l. 86): the reply's "return", or, for a QGA
// error reply, {"error": {"class", "desc"}} -- returned, not thrown (the `cmd` callback, l. 91-95)
// -- or `failure`, the conversation's own error that cmd dies with: "got timeout" (mux_timeout),
// "client closed connection" (mux_close), "unable to connect to VM <vmid> qga socket - ..."
// ($open_connection), "got wrong command id ..." (mux_input).
struct QgaResult {
  boost::json::value value;
  std::string failure;  // "" when value holds the reply
};

class QgaPeer {
 public:
  QgaPeer() = default;
  QgaPeer(const QgaPeer&) = delete;
  QgaPeer& operator=(const QgaPeer&) = delete;
  virtual ~QgaPeer() = default;

  // qmp_cmd's `-e $sname` (QS9 PVE/QemuServer/Monitor.pm l. 91): is there a socket at all? Without
  // one qmp_cmd dies "unable to open monitor socket" before any connection.
  virtual bool reachable() const = 0;

  // One command in its own conversation; `timeout` counts from its start.
  virtual QgaResult execute(const std::string& command, const boost::json::object& arguments,
                            std::chrono::milliseconds timeout) = 0;
};

// A QGA error reply as qmp_dispatch makes it (QEMU qapi/qmp-dispatch.c), in QgaResult's form.
inline boost::json::value qga_error(const std::string& error_class, const std::string& desc) {
  return boost::json::object{{"error", boost::json::object{{"class", error_class}, {"desc", desc}}}};
}

}  // namespace pvesim
