#pragma once
// The agent ↔ server messages under the names the fleet code knows them by. The messages, their
// parsing and their JSON live in protocol/; these names stay until machines.* and its tests say
// protocol:: themselves.

#include "core/result.hpp"
#include "protocol/heartbeat.hpp"
#include "protocol/register.hpp"

namespace gpunex::server {

using core::Result;

using AgentHost = protocol::HostInfo;
using AgentGpu = protocol::GpuInfo;
using RegisterRequest = protocol::RegisterRequest;
using TelemetrySample = protocol::TelemetrySample;
using AgentEvent = protocol::GpuEvent;
using HeartbeatRequest = protocol::HeartbeatRequest;

using protocol::is_throttle_event;
using protocol::parse_heartbeat_request;
using protocol::parse_register_request;

}  // namespace gpunex::server
