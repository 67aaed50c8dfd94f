// SPDX-License-Identifier: GPL-3.0-or-later
#include "qga_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

namespace pvesim {

namespace bj = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

// Owns a socket descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// poll() for `events` until `deadline`, in short steps so that a stopping pvesim does not wait it
// out. True when the descriptor is ready.
bool wait_ready(int fd, short events, Clock::time_point deadline, const std::atomic<bool>& stopping) {
  while (!stopping) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the read or write report it
  }
  return false;
}

// $open_connection (QS9 PVE/QMPClient.pm l. 219): a non-blocking connect, retried every 100 ms
// while the listener's backlog is full (EAGAIN/EINTR) until the command's timeout; any other error
// at once.
std::optional<std::string> connect_until(int fd, const std::string& path, const std::string& peer_name,
                                         Clock::time_point deadline, const std::atomic<bool>& stopping) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return "unable to connect to " + peer_name + " qga socket - " + std::strerror(ENAMETOOLONG);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  for (int count = 1;; ++count) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return std::nullopt;
    if (errno != EAGAIN && errno != EINTR) {
      return "unable to connect to " + peer_name + " qga socket - " + std::strerror(errno);
    }
    if (Clock::now() >= deadline || stopping) {
      return "unable to connect to " + peer_name + " qga socket - timeout after " + std::to_string(count) + " retries";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// mux_input's qga pattern (QS9 PVE/QMPClient.pm l. 407): m/^.*\xff([^\n]+}\r?\n[^\n]+})\r?\n(.*)$/s
// -- the last 0xFF that two complete lines ending in '}' follow. Returns the two lines and the
// length of the buffer they end.
struct DelimitedReply {
  std::string sync_line;
  std::string reply_line;
  std::size_t consumed = 0;
};

std::optional<std::string> json_line(const std::string& buffer, std::size_t from, std::size_t& end) {
  const std::size_t newline = buffer.find('\n', from);
  if (newline == std::string::npos) return std::nullopt;
  std::string line = buffer.substr(from, newline - from);
  if (line.ends_with('\r')) line.pop_back();
  if (line.size() < 2 || line.back() != '}') return std::nullopt;
  end = newline + 1;
  return line;
}

std::optional<DelimitedReply> find_delimited_reply(const std::string& buffer) {
  for (std::size_t at = buffer.rfind('\xff'); at != std::string::npos;
       at = at == 0 ? std::string::npos : buffer.rfind('\xff', at - 1)) {
    std::size_t end1 = 0, end2 = 0;
    auto first = json_line(buffer, at + 1, end1);
    if (!first) continue;
    auto second = json_line(buffer, end1, end2);
    if (!second) continue;
    return DelimitedReply{std::move(*first), std::move(*second), end2};
  }
  return std::nullopt;
}

bj::value parse_reply_json(const std::string& text, std::string& error) {
  boost::system::error_code ec;
  bj::parse_options options;
  options.allow_invalid_utf8 = true;  // QMPClient's from_json takes the bytes as they come
  bj::value v = bj::parse(text, ec, {}, options);
  if (ec) error = "malformed JSON string (" + ec.message() + ")";
  return v;
}

// Reads until the reply to `sync_id` is complete (mux_input), skipping the replies to earlier
// commands QGA still had queued ("skip results from previous commands", l. 442).
QgaResult read_reply(int fd, long long sync_id, Clock::time_point deadline, const std::atomic<bool>& stopping) {
  std::string buffer;
  std::array<char, 65536> chunk{};
  while (true) {
    while (auto reply = find_delimited_reply(buffer)) {
      std::string error;
      bj::value sync = parse_reply_json(reply->sync_line, error);
      if (!error.empty()) return {nullptr, error};
      const bj::value* ret = sync.is_object() ? sync.as_object().if_contains("return") : nullptr;
      if (ret == nullptr || !ret->is_number() || ret->to_number<double>() == 0) {
        return {nullptr, "received response without command id"};
      }
      const long long id = static_cast<long long>(ret->to_number<double>());
      if (id < sync_id) {
        buffer.erase(0, reply->consumed);
        continue;
      }
      if (id != sync_id) {
        return {nullptr,
                "got wrong command id '" + std::to_string(id) + "' (expected " + std::to_string(sync_id) + ")"};
      }
      bj::value response = parse_reply_json(reply->reply_line, error);
      if (!error.empty()) return {nullptr, error};
      // cmd's callback (l. 91-95): the "return" value; else {error => ...} when there is one.
      const bj::object* o = response.if_object();
      if (const bj::value* r = o != nullptr ? o->if_contains("return") : nullptr; r != nullptr && !r->is_null()) {
        return {*r, ""};
      }
      if (const bj::value* e = o != nullptr ? o->if_contains("error") : nullptr; e != nullptr && !e->is_null()) {
        return {bj::object{{"error", *e}}, ""};
      }
      return {nullptr, ""};
    }
    if (!wait_ready(fd, POLLIN, deadline, stopping)) return {nullptr, "got timeout"};  // mux_timeout, l. 499
    const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return {nullptr, "client closed connection"};
    if (n > 0) buffer.append(chunk.data(), static_cast<std::size_t>(n));
  }
}

}  // namespace

long long next_qga_sync_id() {
  static std::atomic<long long> sequence{0};
  return std::stoll(std::to_string(::getpid()) + "0" + std::to_string(++sequence));
}

QgaSocket::QgaSocket(std::string path, std::string peer_name, const std::atomic<bool>& stopping)
    : path_(std::move(path)), peer_name_(std::move(peer_name)), stopping_(stopping) {}

bool QgaSocket::reachable() const {
  struct stat st {};
  return ::stat(path_.c_str(), &st) == 0;
}

QgaResult QgaSocket::execute(const std::string& command, const bj::object& arguments,
                             std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return {nullptr, "unable to connect to " + peer_name_ + " qga socket - " + std::strerror(errno)};
  if (auto error = connect_until(fd.get(), path_, peer_name_, deadline, stopping_)) return {nullptr, *error};

  // $check_queue (l. 260, write l. 300-309): both requests in one write, no 0xFF before them.
  const long long sync_id = next_qga_sync_id();
  std::string request =
      bj::serialize(bj::object{{"execute", "guest-sync-delimited"}, {"arguments", bj::object{{"id", sync_id}}}}) +
      "\n" + bj::serialize(bj::object{{"execute", command}, {"arguments", arguments}}) + "\n";
  std::size_t sent = 0;
  while (sent < request.size()) {
    if (!wait_ready(fd.get(), POLLOUT, deadline, stopping_)) return {nullptr, "got timeout"};
    const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) return {nullptr, "client closed connection"};
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  return read_reply(fd.get(), sync_id, deadline, stopping_);
}

}  // namespace pvesim
