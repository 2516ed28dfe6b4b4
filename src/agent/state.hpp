#pragma once
// What the agent keeps in its data folder so a restart re-attaches to the same
// machine and never reuses a sequence number: identity.json and seq.

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace gpunex::agent {

//! Writes `text` to `path` through a temporary file, fsync and rename, so a crash leaves old or new.
core::Status write_file_atomic(const std::string& path, const std::string& text);

struct Identity {
  std::string fingerprint;  // made once, at first start; the server matches on it
  std::string machine_id;   // given by the server at the first registration; empty until then
  std::string server_url;   // the server it was given by
};

class AgentState {
 public:
  //! Creates the data folder if needed, then loads identity.json and seq or creates them.
  static core::Result<AgentState> open(const std::string& data_dir);

  const Identity& identity() const { return identity_; }
  const std::string& data_dir() const { return data_dir_; }
  //! Stores the machine id the server assigned.
  core::Status set_machine_id(const std::string& machine_id, const std::string& server_url);
  //! The last sequence number handed out (0 before the first).
  std::uint64_t last_seq() const { return seq_; }
  //! The next sequence number, persisted before it is returned, so it is never handed out twice.
  core::Result<std::uint64_t> next_seq();

 private:
  core::Status save_identity() const;
  std::string data_dir_;
  Identity identity_;
  std::uint64_t seq_ = 0;
};

}  // namespace gpunex::agent
