#include "server/platform/api_key_cache.hpp"

namespace gpunex::server {

std::optional<ApiKeyCache::Entry> ApiKeyCache::find(const std::string& key_hash, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(key_hash);
  if (it == slots_.end()) return std::nullopt;
  if (now - it->second.cached_at >= ttl_) {
    slots_.erase(it);
    return std::nullopt;
  }
  return it->second.entry;
}

std::uint64_t ApiKeyCache::generation() {
  std::lock_guard lock(mu_);
  return generation_;
}

void ApiKeyCache::put(const std::string& key_hash, Entry entry, std::uint64_t generation_before_lookup,
                      Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (generation_ != generation_before_lookup) return;  // a revoke happened meanwhile: the lookup may be stale
  if (slots_.size() >= capacity_ && !slots_.count(key_hash)) slots_.clear();  // many keys: start over, simply
  slots_.insert_or_assign(key_hash, Slot{std::move(entry), now});
}

void ApiKeyCache::note_used(const std::string& key_hash, std::int64_t at_ms) {
  std::lock_guard lock(mu_);
  if (auto it = slots_.find(key_hash); it != slots_.end()) it->second.entry.key.last_used_at_ms = at_ms;
}

void ApiKeyCache::invalidate_key(const std::string& key_id) {
  std::lock_guard lock(mu_);
  ++generation_;
  std::erase_if(slots_, [&](const auto& slot) { return slot.second.entry.key.key_id == key_id; });
}

void ApiKeyCache::invalidate_all() {
  std::lock_guard lock(mu_);
  ++generation_;
  slots_.clear();
}

}  // namespace gpunex::server
