#include "server/payouts/payout_settings.hpp"

#include <algorithm>

#include "core/json_reader.hpp"
#include "core/payout_destination.hpp"
#include "core/sepa.hpp"
#include "core/text.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server::payouts {

namespace {

namespace payout = core::payout;

constexpr const char* kColumns = "method, destination, schedule, effective_at, changed_by, changed_at";

PayoutSettings row_of(const store::Row& r) {
  PayoutSettings s;
  if (auto m = payout::parse_method(r.str(0))) s.method = *m;
  s.destination = nlohmann::json::parse(r.str(1), nullptr, false);
  if (auto sc = payout::parse_schedule(r.str(2))) s.schedule = *sc;
  s.effective_at_ms = r.i64(3);
  s.changed_by = r.str(4);
  s.changed_at_ms = r.i64(5);
  return s;
}

std::vector<PayoutSettings> changes(store::Tx& tx, const std::string& provider_id) {
  std::vector<PayoutSettings> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kColumns +
                                    " FROM payout_settings_changes WHERE provider_id = ? ORDER BY changed_at DESC, id DESC",
                                {provider_id})) {
    out.push_back(row_of(r));
  }
  return out;
}

nlohmann::json to_json(const PayoutSettings& s) {
  return {{"method", payout::to_string(s.method)},
          {"destination", s.destination},
          {"destination_text", destination_text(s)},
          {"schedule", payout::to_string(s.schedule)},
          {"effective_at", util::rfc3339(s.effective_at_ms)},
          {"changed_at", util::rfc3339(s.changed_at_ms)}};
}

}  // namespace

core::Result<PayoutSettings> read_settings(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"iban", {"IBAN", ""}}, {"bic", {"BIC", ""}}});
  PayoutSettings s;
  const std::string method = r.required_string("method", 1, 32);
  r.describe_field(
      "method", {{"enum", {payout::to_string(payout::Method::solana_usdc), payout::to_string(payout::Method::sepa)}}});
  if (!r.failed("method")) {
    if (auto m = payout::parse_method(method)) {
      s.method = *m;
    } else {
      r.fail(m.error());
    }
  }
  const std::string schedule = r.required_string("schedule", 1, 32);
  r.describe_field(
      "schedule",
      {{"enum", {payout::to_string(payout::Schedule::weekly), payout::to_string(payout::Schedule::monthly)}}});
  if (!r.failed("schedule")) {
    if (auto sc = payout::parse_schedule(schedule)) {
      s.schedule = *sc;
    } else {
      r.fail(sc.error());
    }
  }
  (void)r.optional_string("password", 1000);  // checked by the caller
  // Described, both branches are read, each field required only with its method.
  if (r.describing() || (!r.failed("method") && s.method == payout::Method::solana_usdc)) {
    r.describe_when("method is solana_usdc");
    // Pasted with a space or a line break around it: the address is what is between.
    const std::string wallet = core::trim(r.required_string("wallet_address", 32, 64));
    if (!r.failed("wallet_address")) {
      if (auto key = payout::parse_solana_wallet(wallet); !key) {
        r.fail(key.error());
      } else {
        s.destination = {{"wallet_address", wallet}};
      }
    }
  }
  if (r.describing() || (!r.failed("method") && s.method != payout::Method::solana_usdc)) {
    r.describe_when("method is sepa");
    const std::string holder = r.required_string("account_holder", 1, 70);
    if (!r.failed("account_holder") && !core::sepa::sepa_text(holder)) {
      // Banks write a name without accents in a SEPA transfer: say how this one would be written.
      const std::string spelled = core::sepa::sepa_clean(holder, 70);
      r.invalid("account_holder",
                "may hold only letters a-z, digits, spaces and / - ? : ( ) . , ' + (SEPA's characters)" +
                    (spelled.empty() ? std::string() : "; write it as \"" + spelled + "\", as your bank does"));
    }
    const std::string iban = payout::normalize_iban(r.required_string("iban", 15, 42));
    if (!r.failed("iban") && !payout::valid_iban(iban)) {
      r.invalid("iban", payout::sepa_country(iban.substr(0, 2))
                            ? "is not a valid IBAN: its check digits or length are wrong"
                            : "must be the IBAN of an account in a SEPA country (DE89 3704 ..., FR76 ...)",
                "invalid_iban");
    }
    auto bic = r.optional_string("bic", 11);
    if (bic && !payout::valid_bic(*bic)) r.invalid("bic", "must be 8 or 11 letters and digits, such as DEUTDEFF");
    if (!r.failed()) {
      s.destination = {{"account_holder", holder}, {"iban", iban}, {"country", iban.substr(0, 2)}};
      if (bic) s.destination["bic"] = *bic;
    }
  }
  r.describe_when("");
  if (auto st = r.finish(); !st) return std::move(st).error();
  return s;
}

std::optional<PayoutSettings> current_settings(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms) {
  for (const auto& c : changes(tx, provider_id)) {
    if (c.effective_at_ms <= now_ms) return c;
  }
  return std::nullopt;
}

nlohmann::json settings_json(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms) {
  const auto all = changes(tx, provider_id);
  nlohmann::json current = nullptr, pending = nullptr;
  auto history = nlohmann::json::array();
  for (const auto& c : all) {
    if (c.effective_at_ms > now_ms && pending.is_null() && current.is_null()) pending = to_json(c);
    if (c.effective_at_ms <= now_ms && current.is_null()) current = to_json(c);
    history.push_back(to_json(c));
  }
  return {{"current", current}, {"pending", pending}, {"history", history}};
}

Change record_change(store::Tx& tx, const std::string& provider_id, PayoutSettings wanted, const std::string& by,
                     std::int64_t cooldown_ms, std::int64_t now_ms) {
  const auto all = changes(tx, provider_id);
  const auto same = [&](const PayoutSettings& c) {
    return c.method == wanted.method && c.destination == wanted.destination;
  };
  // The destination it compares with: the latest recorded (a pending one included), and the one in force.
  const bool first = all.empty();
  const bool same_destination = !first && same(all.front());
  const auto in_force =
      std::find_if(all.begin(), all.end(), [&](const auto& c) { return c.effective_at_ms <= now_ms; });
  const bool back_to_current = !same_destination && in_force != all.end() && same(*in_force);
  wanted.changed_by = by;
  wanted.changed_at_ms = now_ms;
  if (first) {
    wanted.effective_at_ms = now_ms;
  } else if (same_destination) {
    // The schedule alone changed: at once, or with the pending destination's own time.
    wanted.effective_at_ms = std::max(now_ms, all.front().effective_at_ms);
  } else if (back_to_current) {
    // Back to the destination in force: at once, and the pending change is called off (this row is newer
    // and in force, so current_settings never reaches the pending one). The cool-down exists so that the
    // owner can do exactly this before a destination someone else set takes the money.
    wanted.effective_at_ms = now_ms;
  } else {
    wanted.effective_at_ms = now_ms + cooldown_ms;
  }
  tx.exec("INSERT INTO payout_settings_changes (id, provider_id, method, destination, schedule, changed_by, "
          "changed_at, effective_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
          {util::new_id("pset"), provider_id, std::string(payout::to_string(wanted.method)), wanted.destination.dump(),
           std::string(payout::to_string(wanted.schedule)), by, now_ms, wanted.effective_at_ms});
  return {wanted, !same_destination && !back_to_current};
}

std::string method_text(payout::Method m) {
  return m == payout::Method::solana_usdc ? "USDC on Solana" : "SEPA bank transfer";
}

std::string destination_text(const PayoutSettings& s) {
  if (s.method == payout::Method::solana_usdc) return s.destination.value("wallet_address", "");
  const std::string iban = s.destination.value("iban", "");
  const std::string shown = iban.size() > 8 ? iban.substr(0, 4) + " … " + iban.substr(iban.size() - 4) : iban;
  return s.destination.value("account_holder", "") + ", " + shown;
}

}  // namespace gpunex::server::payouts
