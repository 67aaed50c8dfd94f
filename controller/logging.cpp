// SPDX-License-Identifier: GPL-3.0-or-later
#include "logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "diagnostics/error.hpp"
#include "diagnostics/suggest.hpp"

namespace pw::cli {
namespace {

// spdlog's pattern language cannot escape a message for JSON; this flag formatter does.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const auto quoted =
        boost::json::serialize(boost::json::string(std::string_view(msg.payload.data(), msg.payload.size())));
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonEscapedMessage>(); }
};

// The message as one line: control characters (a guest's multi-line stderr, an escape sequence in
// a name) escaped, so no log line or journald entry can be forged (diagnostics escape_controls).
class OneLineMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const auto line = escape_controls(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<OneLineMessage>(); }
};

// "<N>": the line's syslog priority for journald (sd-daemon.h SD_DEBUG .. SD_CRIT).
class JournalPriority final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    int priority = 6;
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        priority = 7;
        break;
      case spdlog::level::info:
        priority = 6;
        break;
      case spdlog::level::warn:
        priority = 4;
        break;
      case spdlog::level::err:
        priority = 3;
        break;
      case spdlog::level::critical:
        priority = 2;
        break;
      default:
        break;
    }
    const char text[4] = {'<', static_cast<char>('0' + priority), '>', '\0'};
    dest.append(text, text + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JournalPriority>(); }
};

std::mutex g_line_mutex;
TerminalLine* g_line = nullptr;

// The stderr sink with the status line moved out of the way of each log line.
class LineAwareSink final : public spdlog::sinks::sink {
 public:
  explicit LineAwareSink(std::shared_ptr<spdlog::sinks::sink> inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(g_line_mutex);
    if (g_line != nullptr) g_line->hide();
    inner_->log(msg);
    inner_->flush();
    if (g_line != nullptr) g_line->restore();
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> f) override { inner_->set_formatter(std::move(f)); }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

}  // namespace

void set_terminal_line(TerminalLine* line) {
  std::lock_guard lock(g_line_mutex);
  g_line = line;
}

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  const std::string expected = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  return expected == stream;
}

Status configure_logging(const std::string& level, const std::string& format, bool color) {
  static constexpr std::array<std::string_view, 7> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
  auto lvl = spdlog::level::from_str(level);
  if (std::find(levels.begin(), levels.end(), level) == levels.end()) {
    return fail("unknown log level '" + level + "'" + did_you_mean(level, levels), "--log-level",
                "use one of trace, debug, info, warn, error, critical, off");
  }
  const bool journal = stderr_is_journal();
  const bool colored = color && !journal && std::getenv("NO_COLOR") == nullptr;
  auto inner = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(colored ? spdlog::color_mode::automatic
                                                                             : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>("pathwarden", std::make_shared<LineAwareSink>(std::move(inner)));
  logger->set_level(lvl);
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonEscapedMessage>('*').add_flag<JournalPriority>('~').set_pattern(
        std::string(journal ? "%~" : "") + R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","logger":"%n","msg":%*})");
    logger->set_formatter(std::move(formatter));
  } else if (format == "text") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    // journald stamps each line itself; the time is left out there.
    formatter->add_flag<JournalPriority>('~').add_flag<OneLineMessage>('&').set_pattern(
        journal ? "%~%L %&" : "%^%L%$ %H:%M:%S.%e %&");
    logger->set_formatter(std::move(formatter));
  } else {
    static constexpr std::array<std::string_view, 2> formats{"text", "json"};
    return fail("unknown log format '" + format + "'" + did_you_mean(format, formats), "--log-format",
                "use text or json");
  }
  spdlog::set_default_logger(logger);
  return {};
}

}  // namespace pw::cli
