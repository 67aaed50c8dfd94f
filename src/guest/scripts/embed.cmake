# SPDX-License-Identifier: GPL-3.0-or-later
# Writes OUTPUT, a C++ file holding each guest script of DIR (SCRIPTS: names without .sh) as a
# std::string_view in pw::guest::scripts, run at build time so an edited .sh is built in.
# Full-line comments and blank lines are dropped (but "# shellcheck" directives, so that the
# scripts as they run are what tests/guest/shellcheck-scripts checks): they are for the reader
# of the .sh file, and every byte of a script crosses the SSH command line (base64) on every run. A line holding
# the raw string's delimiter stops the build.
set(out "// Generated from src/guest/scripts/*.sh by embed.cmake; do not edit.\n")
string(APPEND out "#include \"guest/scripts.hpp\"\n\nnamespace pw::guest::scripts {\n")
foreach(name ${SCRIPTS})
  # Read whole (file(STRINGS) would split lines at ';' as a CMake list).
  file(READ ${DIR}/${name}.sh body)
  string(REGEX REPLACE "\n([ \t]*)# shellcheck " "\n\\1@PW_SHELLCHECK@" body "\n${body}")
  string(REGEX REPLACE "\n[ \t]*#[^\n]*" "" body "${body}")
  string(REPLACE "@PW_SHELLCHECK@" "# shellcheck " body "${body}")
  set(previous "")
  while(NOT previous STREQUAL body)
    set(previous "${body}")
    string(REGEX REPLACE "\n[ \t]*\n" "\n" body "${body}")
  endwhile()
  string(REGEX REPLACE "^\n" "" body "${body}")
  string(FIND "${body}" ")pwsh\"" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${name}.sh holds the raw string delimiter )pwsh\"")
  endif()
  string(APPEND out "const std::string_view ${name} = R\"pwsh(${body})pwsh\";\n")
endforeach()
string(APPEND out "}  // namespace pw::guest::scripts\n")
file(WRITE ${OUTPUT}.new "${out}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.new ${OUTPUT})
