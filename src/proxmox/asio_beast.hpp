// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Boost.Asio and Boost.Beast with OpenSSL, as the HTTPS client (and the test suite's Proxmox
// emulator) include them. g++ 12 at -O2 reports -Wnull-dereference inside Asio's own code
// (any_executor's equal_ex comparing io_context executors and strands, the scheduler's
// compensating_work_started) once it is inlined into a caller: paths through pointers Asio has
// already checked, a known false positive of that warning in optimised builds. It is silenced for
// these headers only (the pragma is in force where their code is), never for pathwarden's own.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>  // shared_ptr::get(), which Asio's strand comparison inlines
#pragma GCC diagnostic pop
