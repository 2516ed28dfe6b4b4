#pragma once
// The agent's outbox on disk: every message (heartbeat or event) is written here
// first and removed only once the server has taken it, so an outage or a
// restart loses nothing and replays in sequence order. Bounded: when full, the
// oldest telemetry-only messages go first; other kinds are never dropped.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace gpunex::agent {

enum class SpoolKind {
  telemetry,  // a heartbeat carrying only telemetry: may be dropped when the spool is full
  event,      // anything else (job and usage events, machine changes): never dropped
};

struct SpoolEntry {
  std::uint64_t seq = 0;
  SpoolKind kind = SpoolKind::telemetry;
  std::string endpoint;  // API path it goes to, e.g. "/v1/agent/heartbeat"
  std::string body;      // the JSON body, sent unchanged on replay
};

struct SpoolLimits {
  std::size_t max_entries = 5760;  // a day of 15 s heartbeats
  std::uint64_t max_bytes = 64ULL * 1024 * 1024;
};

class Spool {
 public:
  //! Opens (creating) the folder and indexes what an earlier run left there.
  static core::Result<Spool> open(std::string dir, SpoolLimits limits = {});

  //! Stores a message; then, while over a limit, drops the oldest telemetry. Returns how many were dropped.
  core::Result<std::size_t> push(const SpoolEntry& entry);
  //! The oldest message, if any.
  core::Result<std::optional<SpoolEntry>> front() const;
  //! Removes the message with this sequence number (after the server took it).
  core::Status remove(std::uint64_t seq);

  //! The oldest sequence number, if any.
  std::optional<std::uint64_t> first_seq() const {
    return index_.empty() ? std::nullopt : std::optional<std::uint64_t>(index_.begin()->first);
  }
  std::size_t size() const { return index_.size(); }
  std::uint64_t bytes() const { return bytes_; }
  std::size_t dropped_total() const { return dropped_; }
  std::size_t count(SpoolKind kind) const;

 private:
  struct Meta {
    SpoolKind kind;
    std::uint64_t bytes;
    std::string file;
  };
  std::string dir_;
  SpoolLimits limits_;
  std::map<std::uint64_t, Meta> index_;
  std::uint64_t bytes_ = 0;
  std::size_t dropped_ = 0;
};

}  // namespace gpunex::agent
