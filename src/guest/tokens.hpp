// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Splitting kernel and tool output into lines and fields; shared by the guest parsers.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pw::guest {

// Lines without their terminators ("\n" or "\r\n"); a final terminator adds no empty line.
std::vector<std::string_view> lines_of(std::string_view text);

// Fields separated by runs of spaces and tabs (how mount(8) and the kernel separate columns).
std::vector<std::string_view> fields_of(std::string_view line);

std::optional<std::uint64_t> to_uint64(std::string_view digits);
std::optional<std::int64_t> to_int64(std::string_view digits);
std::optional<int> to_int(std::string_view digits);
// A duration or clock reading such as "1234.56": finite and not negative (from_chars alone also
// reads "-1", "nan" and "inf").
std::optional<double> to_seconds(std::string_view text);

// Decodes the octal escapes (\040 space, \011 tab, \012 newline, \134 backslash...) the kernel
// and fstab use inside fields; anything that is not a three-digit octal escape stays as it is.
std::string decode_octal_escapes(std::string_view field);

std::string_view trim(std::string_view s);

// Base64 as coreutils' base64 prints it (line breaks skipped); nullopt on anything else.
std::optional<std::string> decode_base64(std::string_view text);

// POSIX sh single quotes around `text`, exactly as it is (an argument of the guest scripts).
std::string shell_quote(std::string_view text);
bool starts_with_word(std::string_view line, std::string_view word);

}  // namespace pw::guest
