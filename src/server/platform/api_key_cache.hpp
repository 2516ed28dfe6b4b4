#pragma once
// Provider API keys recently authenticated by this process, so that an agent's
// every heartbeat does not read its key, user and roles again. Revoking a key
// in this process clears the cache before the revoke is answered, and a lookup
// that raced the revoke cannot put the key back (generation check), so a revoked
// key is refused at once here. A revoke made by another replica arrives through
// the store's change feed (store::notify_change "api_key:ID", PostgreSQL NOTIFY)
// and evicts the key within milliseconds; while that feed is down it empties the
// cache every retry instead. Entries also expire after a short TTL, which bounds
// how long a role granted later takes to be seen; heartbeats re-check their key
// inside their transaction anyway.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/platform/accounts.hpp"
#include "server/platform/api_key_auth.hpp"

namespace gpunex::server {

class ApiKeyCache {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    ApiKeyInfo key;
    User user;
  };

  explicit ApiKeyCache(std::chrono::milliseconds ttl = std::chrono::seconds(10), std::size_t capacity = 4096)
      : ttl_(ttl), capacity_(capacity) {}

  //! The live entry for a key's SHA-256, if one was cached less than the TTL ago.
  std::optional<Entry> find(const std::string& key_hash, Clock::time_point now = Clock::now());
  //! Read before looking a key up in the store; put() only keeps the result if nothing was invalidated since.
  std::uint64_t generation();
  void put(const std::string& key_hash, Entry entry, std::uint64_t generation_before_lookup,
           Clock::time_point now = Clock::now());
  //! Records that the key's last use was written to the store at `at_ms`.
  void note_used(const std::string& key_hash, std::int64_t at_ms);
  //! Forgets every key: call after a revoke commits, before answering it.
  void invalidate_all();
  //! Forgets the key with this id (a revoke another replica committed); lookups under way are not kept.
  void invalidate_key(const std::string& key_id);

 private:
  struct Slot {
    Entry entry;
    Clock::time_point cached_at;
  };
  std::chrono::milliseconds ttl_;
  std::size_t capacity_;
  std::mutex mu_;
  std::uint64_t generation_ = 0;
  std::unordered_map<std::string, Slot> slots_;
};

}  // namespace gpunex::server
