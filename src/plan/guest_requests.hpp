// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one place plan steps become guest requests (guest/operations.hpp). apply, rollback,
// recover, `verify --probe` and `plan --emit-playbooks` all go through here, so the playbooks a
// plan shows for review are the ones that run.
#include <cstdint>
#include <string>

#include "guest/operations.hpp"
#include "plan/model.hpp"

namespace pw::plan {

guest::FstabChange fstab_change(const ChangeFstab& step);
guest::FstabRestore fstab_restore(const ChangeFstab& step);  // the inverse
guest::ChannelsRequest channels_change(const SetChannels& step);
guest::ChannelsRequest channels_restore(const SetChannels& step);  // the inverse: back to `from`
guest::TransportMove transport_move(const MoveTransport& step);
guest::TransportMove transport_restore(const MoveTransport& step);  // the inverse: `to` back to `from`
// One measurement of `bytes` (the adaptive probe grows it from v.probe_bytes).
guest::ProbeRequest probe_request(const ProvePath& v, std::uint64_t bytes);

// Every guest request of a whole plan (guest::RequestSet), in plan order.
guest::RequestSet guest_requests(const Plan& plan);

}  // namespace pw::plan
