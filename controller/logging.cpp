#include "logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <string_view>

#include "diagnostics/suggest.hpp"

namespace pw::cli {
namespace {

// spdlog's pattern language cannot escape a message for JSON; this flag formatter does.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const auto quoted = boost::json::serialize(
        boost::json::string(std::string_view(msg.payload.data(), msg.payload.size())));
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonEscapedMessage>(); }
};

}  // namespace

Status configure_logging(const std::string& level, const std::string& format) {
  static constexpr std::array<std::string_view, 7> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
  auto lvl = spdlog::level::from_str(level);
  if (std::find(levels.begin(), levels.end(), level) == levels.end()) {
    return fail("unknown log level '" + level + "'" + did_you_mean(level, levels), "--log-level",
                "use one of trace, debug, info, warn, error, critical, off");
  }
  auto logger = spdlog::stderr_color_mt("pathwarden");
  logger->set_level(lvl);
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","logger":"%n","msg":%*})");
    logger->set_formatter(std::move(formatter));
  } else if (format == "text") {
    logger->set_pattern("%^%L%$ %H:%M:%S.%e %v");
  } else {
    static constexpr std::array<std::string_view, 2> formats{"text", "json"};
    return fail("unknown log format '" + format + "'" + did_you_mean(format, formats), "--log-format",
                "use text or json");
  }
  spdlog::set_default_logger(logger);
  return {};
}

}  // namespace pw::cli
