#pragma once
// Provider applications in the store: create, edit, submit, review decisions,
// each transition appended to the history with who, when and the note, and
// mailed to the applicant through the outbox. One call = one transaction's work.
// The SQL is in onboarding_repo.hpp, the state machine and tiers in
// core/application.hpp, the mail texts in mail/templates.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/application.hpp"
#include "core/gpu_catalog.hpp"
#include "core/money.hpp"
#include "core/result.hpp"
#include "server/onboarding/onboarding_repo.hpp"
#include "server/platform/accounts.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! The API shape, with the suggested tier and its reasons, expected review date and history.
nlohmann::json to_json(const Application& a, std::int64_t now_ms);

//! Validates an application body against the catalog in `tx` and the system's time zones.
core::Result<core::ApplicationForm> read_form(store::Tx& tx, const nlohmann::json& body);

//! Loads an application; with `viewer` set, one that the viewer may not see is reported as absent.
std::optional<Application> load_application(store::Tx& tx, const std::string& id);

//! Creates a draft for `user`; 409 when the user already has an open application or is a provider.
core::Result<Application> create_application(store::Tx& tx, const User& user, const core::ApplicationForm& form,
                                             std::int64_t now_ms);
//! Replaces the editable fields (draft or needs_info only, else 409).
core::Result<Application> edit_application(store::Tx& tx, Application app, const core::ApplicationForm& form,
                                           std::int64_t now_ms);
//! draft/needs_info → submitted; queues the "submitted" mail.
core::Result<Application> submit_application(store::Tx& tx, Application app, const User& by,
                                             const std::string& base_url, std::int64_t now_ms);

std::vector<Application> list_user_applications(store::Tx& tx, const std::string& user_id);
//! The review queue: applications in `status`, oldest first submission first (a resubmission after
//! needs_info keeps its place).
std::vector<Application> review_queue(store::Tx& tx, core::ApplicationStatus status);
//! A queue entry: summary, suggested tier, first and latest submission, and the age and whether the
//! 3-business-day promise is broken, counted from the latest submission (the date the applicant was promised).
nlohmann::json queue_entry_json(const Application& a, std::int64_t now_ms);

//! A reviewer's decision.
struct Decision {
  core::ApplicationAction action = core::ApplicationAction::approve;
  std::optional<core::Tier> tier;
  std::string note;
  std::optional<core::GpuModel> add_model;
  std::string add_model_for;  // add_model.model_other: the "other" entries it replaces ("" when only one kind)
  //! add_model.reference_usdc_per_gpu_hour: the added model's catalog reference price, the price
  //! recommendation's basis until enough providers list it.
  std::optional<core::MicroUsdc> add_model_reference_price;
};
//! What an approval hands out once.
struct DecisionResult {
  Application app;
  std::optional<std::string> provider_id;
  std::optional<std::string> api_key;
  std::optional<std::string> api_key_id;
};
//! What a decision needs of the server's configuration.
struct DecisionSettings {
  std::string base_url;       // links in the mails
  std::string server_secret;  // seals the approval key until its one-time reveal (Config::server_secret)
  //! Whether the approval mail may carry the key (Config::mail_carries_secrets): only when mail travels
  //! encrypted; otherwise it sends the applicant to the one-time reveal.
  bool mail_carries_key = false;
};
core::Result<DecisionResult> decide_application(store::Tx& tx, Application app, const User& reviewer,
                                                const Decision& d, const DecisionSettings& settings,
                                                std::int64_t now_ms);

}  // namespace gpunex::server
