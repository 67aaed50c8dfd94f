# SPDX-License-Identifier: GPL-3.0-or-later
# cmake -DBIN=pathwarden -DARG=--help-man [-DARG2=2026-12-06] -DOUT=file [-DGZIP=ON] -P gen-doc.cmake
# cmake -DIN=file -DOUT=file.gz -DGZIP=ON -P gen-doc.cmake
# Runs the built binary's hidden generator (pathwarden --help-man DATE / --bash-completion) into
# OUT, or copies IN, gzipped as Debian ships man pages and changelogs when GZIP is set; fails the
# build if the binary fails.
if(DEFINED IN)
  file(READ ${IN} text)
else()
  set(ENV{ASAN_OPTIONS} "detect_leaks=0")
  execute_process(COMMAND ${BIN} ${ARG} ${ARG2} OUTPUT_VARIABLE text RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR text STREQUAL "")
    message(FATAL_ERROR "${BIN} ${ARG} failed (${rc}): ${err}")
  endif()
endif()
if(GZIP)
  file(WRITE ${OUT}.tmp "${text}")
  # -n: no name or time stamp in the header, so the file is reproducible
  execute_process(COMMAND gzip -9nc ${OUT}.tmp OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
  file(REMOVE ${OUT}.tmp)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip failed for ${OUT}")
  endif()
else()
  file(WRITE ${OUT} "${text}")
endif()
