// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pw {

// Edit distance (insert, delete, substitute, transpose) between two short identifiers.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate a typo most likely meant, if any is close enough to be worth suggesting.
std::optional<std::string> closest_match(std::string_view word, std::span<const std::string_view> candidates);

// ", did you mean 'x'?" or "" — ready to append to a message.
std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace pw
