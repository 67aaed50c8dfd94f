# SPDX-License-Identifier: GPL-3.0-or-later
# Run at install time (cmake --install, or CPack with CPACK_SET_DESTDIR): the systemd units, the
# sysusers file and /etc/default/pathwarden, placed by the prefix the install is made with.
# examples/systemd is written for the prefix /usr/local (a by-hand install); the units installed
# here name the real prefix instead: ExecStart=${prefix}/bin/pathwarden and Documentation=
# file://${prefix}/share/doc/pathwarden/README.md, and Documentation= adds man:pathwarden(1).
#   prefix /usr (the .deb):  /lib/systemd/system (Debian bookworm's unit directory),
#                            /usr/lib/sysusers.d, /etc/default/pathwarden
#   any other prefix:        PREFIX/lib/systemd/system and PREFIX/lib/sysusers.d (both searched by
#                            systemd for /usr/local); the unit reads /etc/default/pathwarden, which
#                            a source install leaves alone: PREFIX/share/doc/pathwarden/systemd/
#                            pathwarden.default is its example
# PW_SYSTEMD_SOURCE and PW_STAGE_DIR are set by packaging/CMakeLists.txt.
set(prefix "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/+$" "" prefix "${prefix}")
if(prefix STREQUAL "/usr")
  set(unit_dir "/lib/systemd/system")
  set(default_dir "/etc/default")
  set(default_name pathwarden)
else()
  set(unit_dir "${prefix}/lib/systemd/system")
  set(default_dir "${prefix}/share/doc/pathwarden/systemd")
  set(default_name pathwarden.default)
endif()
set(sysusers_dir "${prefix}/lib/sysusers.d")
# file(INSTALL) puts $DESTDIR in front by itself. The rewritten units are staged in a directory of
# their own, so two installs at once (two cpack runs) never read each other's half-written file.
string(RANDOM LENGTH 12 tag)
set(stage "${PW_STAGE_DIR}/units-${tag}")
foreach(unit pathwarden.service pathwarden.timer)
  file(READ "${PW_SYSTEMD_SOURCE}/${unit}" text)
  string(REPLACE "/usr/local/" "${prefix}/" text "${text}")
  # the man page is installed with them (examples/systemd cannot name it: a by-hand install of
  # the units alone has none, and systemd-analyze verify checks that man: pages exist)
  string(REPLACE "\nDocumentation=" "\nDocumentation=man:pathwarden(1) " text "${text}")
  file(WRITE "${stage}/${unit}" "${text}")
  file(INSTALL DESTINATION "${unit_dir}" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES "${stage}/${unit}")
endforeach()
file(REMOVE_RECURSE "${stage}")
file(INSTALL DESTINATION "${sysusers_dir}" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${PW_SYSTEMD_SOURCE}/pathwarden.sysusers" RENAME pathwarden.conf)
file(INSTALL DESTINATION "${default_dir}" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${PW_SYSTEMD_SOURCE}/pathwarden.default" RENAME ${default_name})
