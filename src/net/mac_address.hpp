#pragma once
// A MAC address as a value: parsed once, compared and printed in one canonical form
// ("52:54:00:ab:cd:01"). Proxmox writes "BC:24:11:…", the kernel "bc:24:11:…", Windows-style
// tools "bc-24-11-…": every comparison of MACs in pathwarden goes through here.
#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace pw::net {

class MacAddress {
 public:
  // Six hex pairs separated by ':' or '-', any case; nullopt otherwise.
  static std::optional<MacAddress> parse(std::string_view text);

  const std::string& str() const { return text_; }
  friend bool operator==(const MacAddress&, const MacAddress&) = default;
  friend auto operator<=>(const MacAddress&, const MacAddress&) = default;

 private:
  explicit MacAddress(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// The canonical text of a MAC; text that is not one comes back lower-cased with '-' as ':', so a
// malformed value still prints as written and compares as before.
std::string canonical_mac(std::string_view text);

}  // namespace pw::net
