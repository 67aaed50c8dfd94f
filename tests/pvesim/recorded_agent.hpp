// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A recorded QEMU guest agent for simulated VMs: the state file's "agent" object of a guest
// (README.md "Guest agent") says what the agent answers, and RecordedGuest answers the QGA commands
// qemu-server sends as a qemu-ga 7.2 would (Debian bookworm's; QEMU qga/commands.c,
// qga/commands-posix.c, qga/main.c, qapi/qmp-dispatch.c; docs/guest-agent-upstream.md §4): its
// texts, its exec process table that forgets a pid once reported, its file handles, its frozen
// state. Exec output is a report file named in the state, read once and shared by every VM.
#include <atomic>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "qga_peer.hpp"

namespace pvesim {

struct RecordedAgent {
  enum class State {
    answers,      // qemu-ga runs and answers
    not_running,  // no qga socket at all (QEMU started without the channel): "not running" at once
    hung,         // the socket is there, nothing answers: every command waits out its timeout
    frozen,       // fsfreeze-frozen: every command but the freeze allow-list is disabled
  };
  std::string report;                             // stdout of an exec of /bin/sh ("" none)
  std::map<std::string, std::string> substitute;  // report text -> this VM's text
  int exit_code = 0;
  std::string stderr_text;
  int polls = 0;  // exec-status answers {"exited": false} this many times first
  State state = State::answers;
  std::set<std::string> missing;              // QGA commands this agent lacks ("guest-exec")
  std::map<std::string, std::string> files;   // path -> content, for guest-file-open/read
  boost::json::array interfaces;              // guest-network-get-interfaces, as is
  std::optional<boost::json::object> osinfo;  // guest-get-osinfo, as is (default: Debian 12)
};

// The state file's "agent" object; nullptr with `error` set when it is not one. `where` prefixes
// the error ("guests[3].agent").
std::shared_ptr<const RecordedAgent> parse_recorded_agent(const boost::json::value& json, const std::string& where,
                                                          std::string& error);
boost::json::value recorded_agent_json(const RecordedAgent& agent);

// Report files by path, each read once (the first exec that needs it) and shared by every VM.
class ReportCache {
 public:
  // The file's bytes, or nullptr with `error` set.
  std::shared_ptr<const std::string> get(const std::string& path, std::string& error);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const std::string>> reports_;
};

// One running VM's recorded agent (one QEMU process: a restart makes a fresh one, as qemu-ga then
// starts again with no processes or open files).
class RecordedGuest final : public QgaPeer {
 public:
  RecordedGuest(std::shared_ptr<const RecordedAgent> spec, ReportCache& reports, const std::atomic<bool>& stopping);

  const RecordedAgent* spec() const { return spec_.get(); }
  bool reachable() const override;
  QgaResult execute(const std::string& command, const boost::json::object& arguments,
                    std::chrono::milliseconds timeout) override;

 private:
  struct Process {
    std::string path;
    std::shared_ptr<const std::string> report;  // set when the exec is answered from the report
    int polls_left = 0;
  };
  struct OpenFile {
    const std::string* content = nullptr;  // in spec_, which outlives this guest's handles
    std::size_t position = 0;
  };

  boost::json::value dispatch(const std::string& command, const boost::json::object& arguments);
  boost::json::value info() const;
  boost::json::value exec(const boost::json::object& arguments);
  boost::json::value exec_status(const boost::json::object& arguments);
  boost::json::value file_open(const boost::json::object& arguments);
  boost::json::value file_read(const boost::json::object& arguments);
  boost::json::value file_seek(const boost::json::object& arguments);
  boost::json::value file_close(const boost::json::object& arguments);
  std::string substituted(const std::string& report) const;
  std::map<std::int64_t, OpenFile>::iterator find_handle(const boost::json::object& arguments,
                                                         boost::json::value& error);

  std::shared_ptr<const RecordedAgent> spec_;
  ReportCache& reports_;
  const std::atomic<bool>& stopping_;
  std::timed_mutex channel_;  // QEMU's chardev serves one client at a time
  std::map<std::int64_t, Process> processes_;
  std::map<std::int64_t, OpenFile> files_;
  std::int64_t next_pid_ = 1200;
  std::int64_t next_handle_ = 1000;
};

}  // namespace pvesim
