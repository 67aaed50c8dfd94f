// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The guest scripts, from src/guest/scripts/*.sh (embedded at build time by
// scripts/embed.cmake, without their comment lines). Each file says at its top what it is and
// its arguments ("pathwarden-args:"); the functions that put a whole script together (marks.sh
// first where a script prints marks) are beside their readers: guest_report_script,
// probe_script, apply_script, rollback_script, set_channels_script, docker_volumes_script.
#include <string_view>

namespace pw::guest::scripts {

extern const std::string_view marks;
extern const std::string_view statfs;
extern const std::string_view facts;
extern const std::string_view probe;
extern const std::string_view fstab_common;
extern const std::string_view apply;
extern const std::string_view rollback;
extern const std::string_view channels;
extern const std::string_view transport;
extern const std::string_view docker_volumes;

}  // namespace pw::guest::scripts
