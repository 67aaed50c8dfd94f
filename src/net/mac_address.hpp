// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A MAC address as a value, normalised once when it is made: "52:54:00:ab:cd:01". Proxmox writes
// "BC:24:11:…", the kernel "bc:24:11:…", Windows-style tools "bc-24-11-…"; every field that holds
// a MAC in pathwarden is a MacAddress, so two of them compare equal exactly when they name the
// same address, whoever wrote them.
#include <compare>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace pw::net {

class MacAddress {
 public:
  MacAddress() = default;  // none: an interface without a hardware address (tun, wireguard)
  // From any text that should be a MAC (implicit: facts, configs and fixtures are text). Six hex
  // pairs separated by ':' or '-' become the canonical form; anything else is kept lower-cased
  // with '-' as ':', so a malformed value still prints as written and never equals a real MAC.
  MacAddress(std::string_view text);                                           // NOLINT(google-explicit-constructor)
  MacAddress(const char* text) : MacAddress(std::string_view(text)) {}         // NOLINT(google-explicit-constructor)
  MacAddress(const std::string& text) : MacAddress(std::string_view(text)) {}  // NOLINT(google-explicit-constructor)

  // Strict: six hex pairs, or nullopt.
  static std::optional<MacAddress> parse(std::string_view text);

  bool valid() const { return valid_; }
  bool empty() const { return text_.empty(); }
  const std::string& str() const { return text_; }

  friend bool operator==(const MacAddress& a, const MacAddress& b) { return a.text_ == b.text_; }
  friend auto operator<=>(const MacAddress& a, const MacAddress& b) { return a.text_ <=> b.text_; }
  friend std::ostream& operator<<(std::ostream& out, const MacAddress& m) { return out << m.text_; }
  friend std::string operator+(const std::string& s, const MacAddress& m) { return s + m.text_; }
  friend std::string operator+(const MacAddress& m, const std::string& s) { return m.text_ + s; }

 private:
  std::string text_;
  bool valid_ = false;
};

}  // namespace pw::net
