// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Proxmox client options the controller settings give: the one mapping of spec.proxmox onto
// proxmox::ClientOptions, used by every command that reaches the cluster through the settings.
#include "diagnostics/error.hpp"
#include "proxmox/client_options.hpp"
#include "settings/model.hpp"

namespace pw::settings {

// Reads the token secret (or, for ticket authentication, the password) from its file or
// environment variable; errors name the file or variable, never the value.
Result<proxmox::ClientOptions> proxmox_client_options(const ControllerSettings& settings);

}  // namespace pw::settings
