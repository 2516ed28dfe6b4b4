#pragma once
// The server's own secret, which seals what the store keeps for later (the approval key until its
// one-time reveal): a database copy or backup alone does not hold those in clear.

#include <string>

#include "core/result.hpp"

namespace gpunex::server {

//! The secret in <data_dir>/server.key, made at the first start (random, mode 0600, created whole or
//! not at all); a file other users could read is made 0600 again. The error names the file.
core::Result<std::string> load_or_create_server_key(const std::string& data_dir);

}  // namespace gpunex::server
