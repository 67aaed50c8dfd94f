// SPDX-License-Identifier: GPL-3.0-or-later
// Boost.JSON built from source inside the fuzz build, so its parser is instrumented too.
#include <boost/json/src.hpp>
