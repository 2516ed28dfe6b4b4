#pragma once
// Where and when a provider is paid (issue #18): the method (solana_usdc to a wallet, or sepa to a
// bank account) and the schedule (weekly or monthly). A new destination needs the password again,
// is told to the provider by mail and notification, and takes effect only after a cool-down
// (payout_destination_cooldown_hours, default 48), as payment platforms do against account
// takeover; a schedule change alone takes effect at once. Every change is kept (the audit history).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/payout_calendar.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server::payouts {

struct PayoutSettings {
  core::payout::Method method = core::payout::Method::solana_usdc;
  nlohmann::json destination;  // {wallet_address} or {account_holder, iban, bic?, country}
  core::payout::Schedule schedule = core::payout::Schedule::weekly;
  std::int64_t effective_at_ms = 0;
  std::string changed_by;
  std::int64_t changed_at_ms = 0;
};

//! A PUT body checked field by field: method, the destination's fields, schedule (password apart).
core::Result<PayoutSettings> read_settings(const nlohmann::json& body);

//! The settings in force at `now_ms` (nullopt: none yet), the change waiting for its cool-down, and
//! the history, newest first: {current, pending, history}.
nlohmann::json settings_json(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms);
std::optional<PayoutSettings> current_settings(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms);

//! Records a change. A destination other than the one in force (or pending) waits `cooldown_ms`, unless it
//! is the provider's first; the caller has checked the password. Returns the change as recorded, and
//! whether its destination is new (to be told by mail).
struct Change {
  PayoutSettings settings;
  bool new_destination = false;
};
Change record_change(store::Tx& tx, const std::string& provider_id, PayoutSettings wanted, const std::string& by,
                     std::int64_t cooldown_ms, std::int64_t now_ms);

//! "USDC on Solana" / "SEPA transfer", and the destination as a person checks it (the wallet, or the
//! holder and the IBAN with its middle hidden).
std::string method_text(core::payout::Method m);
std::string destination_text(const PayoutSettings& s);

}  // namespace gpunex::server::payouts
