#pragma once
// The reliability area's tables, and every SQL statement on them: reliability_days (each machine's
// UTC days as judged) and reliability_scores (the score the marketplace shows), migration 13. Typed
// rows in and out. Works inside the caller's transaction.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/store.hpp"

namespace gpunex::server::reliability {

//! One judged day as stored.
struct DayRow {
  std::int64_t day_ms = 0;
  std::int64_t judged_until_ms = 0;
  bool final = false;
  bool full = false;
  std::string scheduled_hex, excused_hex, present_hex;
  std::int64_t counted_min = 0, present_min = 0, excused_min = 0;
  std::int64_t jobs = 0, jobs_ok = 0, runs = 0;
  double run_sum = 0;
  std::string events_json = "[]";
  // The score as of judged_until.
  double score = 0, uptime = 0, job_completion = 0, stability = 0;
  bool is_new = true;
};

//! The score a machine shows in the marketplace.
struct PublishedRow {
  double score = 0;
  bool is_new = true;
  std::int64_t computed_ms = 0;
  bool alerted = false;  // the provider was told it fell below the alert level
};

//! The reliability tables of one transaction.
class ReliabilityRepo {
 public:
  explicit ReliabilityRepo(store::Tx& tx) : tx_(tx) {}

  //! The machine's days from `since_day_ms` on and before `before_day_ms`, oldest first; a final day without
  //! its minutes (the three hex texts empty: it is never judged again).
  std::vector<DayRow> days(const std::string& machine_id, std::int64_t since_day_ms,
                           std::int64_t before_day_ms = std::numeric_limits<std::int64_t>::max());
  void upsert_day(const std::string& machine_id, const DayRow& d);
  //! Deletes days before `before_day_ms`, at most `limit`; returns how many.
  std::int64_t prune_days_before(std::int64_t before_day_ms, std::int64_t limit);

  std::optional<PublishedRow> published(const std::string& machine_id);
  void upsert_published(const std::string& machine_id, const PublishedRow& p);
  //! Every machine's shown score that is not the prior, by machine id; only `machines`' when given.
  std::unordered_map<std::string, double> all_scored(const std::vector<std::string>* machines = nullptr);

 private:
  store::Tx& tx_;
};

}  // namespace gpunex::server::reliability
