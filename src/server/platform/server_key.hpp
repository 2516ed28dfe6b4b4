#pragma once
// The server's own secret, which seals what the store keeps for later (the approval key until its
// one-time reveal): a database copy or backup alone does not hold those in clear.

#include <string>

#include <cstdint>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! The secret in <data_dir>/server.key, made at the first start (random, mode 0600, created whole or
//! not at all); a file other users could read is made 0600 again. The error names the file.
core::Result<std::string> load_or_create_server_key(const std::string& data_dir);

//! Checks that `secret` is the server secret of the database's other servers. The first server to start
//! records a fingerprint of its secret (util::secret_hash_hex: the secret cannot be read back from it);
//! a server started later with another secret is refused, the error saying what to do. Every server on
//! one database needs the same: the approval key one seals until its provider shows it, another opens.
core::Status check_server_secret(store::Store& store, const std::string& secret, std::int64_t now_ms);

//! Makes `secret` the one the database's servers must use from now on (`gpunex-server admin
//! adopt-server-secret`), for when the recorded one is lost for good.
void adopt_server_secret(store::Store& store, const std::string& secret, std::int64_t now_ms);

}  // namespace gpunex::server
