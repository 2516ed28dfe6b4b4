#pragma once
// Telling the service manager how start-up and shutdown go (systemd's sd_notify protocol, without
// libsystemd): a unit with Type=notify is started once the server says READY=1, so `systemctl restart`
// of one replica returns when it serves, and a rolling restart never has two replicas down.

#include <string_view>

namespace gpunex::util {

//! Sends `state` ("READY=1", "STOPPING=1", "STATUS=...") to the socket named by $NOTIFY_SOCKET (a path,
//! or an abstract name written with a leading '@'). False when there is none (not run by systemd with
//! Type=notify) or the datagram could not be sent; never throws.
bool notify_service_manager(std::string_view state);

}  // namespace gpunex::util
