// server/mail/templates.*: each template renders the facts it is given, word for word as the
// mails read before the texts moved into one module (the expected strings are the old code's).

#include "server/mail/templates.hpp"

#include <gtest/gtest.h>

#include "util/time.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

// Wednesday, 02 December 2026 13:45:00 UTC.
constexpr std::int64_t kExpected = 1'796'219'100'000;

server::mail::ApplicationFacts facts() {
  return {"app_1", "Ada Lovelace", "2 x NVIDIA H100 80GB", "https://gpunex.example/#/applications/app_1"};
}

}  // namespace

TEST(MailTemplates, DayTextNamesTheDay) {
  EXPECT_EQ(server::mail::day_text(kExpected), "Wednesday, 02 December 2026");
}

TEST(MailTemplates, SubmittedNamesTheApplicationGpusAndExpectedDay) {
  const auto f = facts();
  const auto a = server::mail::application_submitted(f, kExpected);
  EXPECT_EQ(a.mail.kind, "application_submitted");
  EXPECT_EQ(a.mail.subject, "GPUnex: we received your provider application");
  EXPECT_EQ(a.mail.body,
            "Hello " + f.full_name + ",\n\n"
            "thank you for applying to provide GPUs on GPUnex. Your application " + f.id +
                " (GPUs: " + f.gpus_text + ") is now waiting for review.\n\n"
                "Reviews take 1 to 3 business days; expect our answer by Wednesday, 02 December 2026 (" +
                util::rfc3339(kExpected) + ").\n\n"
                "Follow it here: " + f.link + "\n\n-- GPUnex\n");
  EXPECT_EQ(a.notice.kind, "application_submitted");
  EXPECT_EQ(a.notice.title, "Application submitted");
  EXPECT_EQ(a.notice.body, "Expect a review by Wednesday, 02 December 2026.");
  EXPECT_EQ(a.notice.link, f.link);
}

TEST(MailTemplates, ApprovedCarriesTheSecretPlaceholderTierAndInstallCommand) {
  const auto f = facts();
  const std::string base = "https://gpunex.example";
  const auto a = server::mail::application_approved(f, core::Tier::enterprise, "welcome aboard", base, true);
  EXPECT_EQ(a.mail.kind, "application_approved");
  EXPECT_EQ(a.mail.subject, "GPUnex: you are approved as an Enterprise provider");
  EXPECT_EQ(a.mail.body,
            "Hello " + f.full_name + ",\n\n"
            "your provider application " + f.id + " (GPUs: " + f.gpus_text +
                ") is approved. Your tier: Enterprise.\n"
                "\nNote from the reviewer: welcome aboard\n"
                "\nYour provider API key (keep it secret; it is shown only here and once in the dashboard):\n\n"
                "    {{secret}}\n\n"
                "Install the GPUnex agent on each GPU host with:\n\n"
                "    curl -fsSL " + base + "/agent/install.sh | bash\n\n"
                "The installer asks for the key (or reads GPUNEX_API_KEY). You can rotate or revoke keys in the "
                "dashboard at any time.\n\n-- GPUnex\n");
  EXPECT_EQ(a.notice.title, "Approved as Enterprise provider");
  EXPECT_EQ(a.notice.body, "Install the agent: curl -fsSL " + base + "/agent/install.sh | bash");
  EXPECT_EQ(a.notice.link, f.link);
}

TEST(MailTemplates, ApprovedCommunityWithoutNoteLeavesTheNoteOut) {
  const auto a = server::mail::application_approved(facts(), core::Tier::community, "", "http://h", true);
  EXPECT_EQ(a.mail.subject, "GPUnex: you are approved as a Community provider");
  EXPECT_EQ(a.mail.body.find("Note from the reviewer"), std::string::npos);
  EXPECT_NE(a.mail.body.find("Your tier: Community.\n\nYour provider API key"), std::string::npos);
  EXPECT_NE(a.mail.body.find(server::mail::kSecretPlaceholder), std::string::npos);
}

// Without encrypted mail (smtps:// or STARTTLS required) the key stays off the wire (issue #19).
TEST(MailTemplates, ApprovedWithoutKeySendsTheApplicantToTheOneTimeReveal) {
  const auto f = facts();
  const auto a = server::mail::application_approved(f, core::Tier::community, "", "http://h", false);
  EXPECT_EQ(a.mail.body.find(server::mail::kSecretPlaceholder), std::string::npos);
  EXPECT_EQ(a.mail.body.find("gpx_"), std::string::npos);
  EXPECT_NE(a.mail.body.find("Your provider API key waits for you, shown once: sign in and open your application "
                             "within 7 days:\n\n    " + f.link + "\n"),
            std::string::npos)
      << a.mail.body;
}

TEST(MailTemplates, NeedsInfoQuotesTheReviewersNote) {
  const auto f = facts();
  const auto a = server::mail::application_needs_info(f, "Which city?");
  EXPECT_EQ(a.mail.kind, "application_needs_info");
  EXPECT_EQ(a.mail.subject, "GPUnex: we need more information about your application");
  EXPECT_EQ(a.mail.body, "Hello " + f.full_name + ",\n\n"
                         "the reviewer of your provider application " + f.id +
                             " needs more information:\n\n    Which city?"
                             "\n\nPlease edit the application and submit it again here: " + f.link +
                             "\n\n-- GPUnex\n");
  EXPECT_EQ(a.notice.title, "More information needed");
  EXPECT_EQ(a.notice.body, "Which city?");
}

TEST(MailTemplates, RejectedQuotesTheReviewersNote) {
  const auto f = facts();
  const auto a = server::mail::application_rejected(f, "Not enough bandwidth.");
  EXPECT_EQ(a.mail.kind, "application_rejected");
  EXPECT_EQ(a.mail.subject, "GPUnex: your provider application");
  EXPECT_EQ(a.mail.body, "Hello " + f.full_name + ",\n\n"
                         "we are sorry: your provider application " + f.id +
                             " was not approved.\n\nThe reviewer's note:\n\n    Not enough bandwidth."
                             "\n\nDetails: " + f.link + "\n\n-- GPUnex\n");
  EXPECT_EQ(a.notice.title, "Application not approved");
  EXPECT_EQ(a.notice.body, "Not enough bandwidth.");
  EXPECT_EQ(a.notice.link, f.link);
}

// The delist/relist texts as fleet/listing_notice.cpp wrote them, and the mail as benchmarks.cpp built it
// from them: "GPUnex: " + title, the body, then the link.
TEST(MailTemplates, GpuDelistedNamesEveryFailureWithMeasuredAndExpected) {
  const core::bench::Finding fp16{"fp16_tensor", "FP16 tensor throughput", 254.1, 289.6, "TFLOP/s", "thermal_throttling",
                                  "Clean the fans."};
  const core::bench::Finding ram{"host.ram", "Host RAM", 0.5, 0, "GiB", "host", "Add RAM."};
  const std::string name = server::mail::gpu_display_name(0, "H100-SXM", "host-a");
  EXPECT_EQ(name, "GPU 0 (H100-SXM) on host-a");
  const std::string link = "https://gpunex.example/#/machines/m1/benchmarks";
  const auto a = server::mail::gpu_delisted({name, link}, {fp16, ram});
  const std::string body =
      "GPU 0 (H100-SXM) on host-a is delisted: customers cannot rent it until a benchmark run passes.\n"
      "\n- FP16 tensor throughput: measured 254 TFLOP/s, expected 290 (ratio 0.88).\n  What to do: Clean the fans."
      "\n- Host RAM: measured 0.50 GiB, expected 0.00.\n  What to do: Add RAM."
      "\n\nAfter fixing it, re-run the benchmarks from the Benchmarks tab.";
  EXPECT_EQ(a.notice.kind, "gpu_delisted");
  EXPECT_EQ(a.notice.title, "GPU 0 (H100-SXM) on host-a delisted: FP16 tensor throughput");
  EXPECT_EQ(a.notice.body, body);
  EXPECT_EQ(a.notice.link, link);
  EXPECT_EQ(a.mail.kind, "gpu_delisted");
  EXPECT_EQ(a.mail.subject, "GPUnex: GPU 0 (H100-SXM) on host-a delisted: FP16 tensor throughput");
  EXPECT_EQ(a.mail.body, body + "\n\n" + link + "\n");
}

TEST(MailTemplates, GpuRelistedGivesTheQualityRatioWhenKnown) {
  const auto with = server::mail::gpu_relisted({"GPU 1 (A100) on b", "L"}, 0.97);
  EXPECT_EQ(with.notice.kind, "gpu_relisted");
  EXPECT_EQ(with.notice.title, "GPU 1 (A100) on b relisted");
  EXPECT_EQ(with.notice.body, "GPU 1 (A100) on b passed its benchmarks (quality ratio 0.97) and is listed again.");
  EXPECT_EQ(with.mail.subject, "GPUnex: GPU 1 (A100) on b relisted");
  EXPECT_EQ(with.mail.body, "GPU 1 (A100) on b passed its benchmarks (quality ratio 0.97) and is listed again.\n\nL\n");
  EXPECT_EQ(server::mail::gpu_relisted({"G", "L"}, std::nullopt).notice.body,
            "G passed its benchmarks and is listed again.");
}

TEST(MailTemplates, ReliabilityLowSaysWhyWhatToDoAndWhenItRecovers) {
  server::mail::ReliabilityFacts f;
  f.machine = "rig (mch_1)";
  f.score = 76.04;
  f.alert_below = 80;
  f.reasons = {{"Offline 12:00–12:30 (30 min) during scheduled hours: uptime 0.0% that day", "Keep it running."},
               {"Rental r_1 ended by GPU failure", "Check the GPU."}};
  f.recovers_in_days = 9;
  f.link = "https://x/#/machines/mch_1/performance";
  const auto a = server::mail::reliability_low(f);
  EXPECT_EQ(a.notice.kind, "reliability_low");
  EXPECT_EQ(a.notice.title, "Reliability of rig (mch_1) fell to 76.0");
  EXPECT_EQ(a.notice.body, "Offline 12:00–12:30 (30 min) during scheduled hours: uptime 0.0% that day.");
  EXPECT_EQ(a.notice.link, f.link);
  EXPECT_EQ(a.mail.subject, "GPUnex: Reliability of rig (mch_1) fell to 76.0");
  EXPECT_NE(a.mail.body.find("is 76.0, below 80."), std::string::npos) << a.mail.body;
  EXPECT_NE(a.mail.body.find("\n- Rental r_1 ended by GPU failure.\n  What to do: Check the GPU."), std::string::npos);
  EXPECT_NE(a.mail.body.find("recovers in about 9 days"), std::string::npos);
  EXPECT_NE(a.mail.body.find(f.link), std::string::npos);
}

TEST(MailTemplates, RentalEndedSaysWhyWhatItCostAndWhereItIs) {
  server::mail::RentalEndFacts f{"rnt_1",    "1 × L40S", "Stopped by the provider",
                                 "0.421337", true,       "https://gpunex.example/#/rentals/rnt_1"};
  const auto a = server::mail::rental_ended(f);
  EXPECT_EQ(a.mail.kind, "rental_ended");
  EXPECT_EQ(a.mail.subject, "GPUnex: Rental rnt_1 ended: Stopped by the provider");
  EXPECT_NE(a.mail.body.find("It cost 0.421337 USDC in all."), std::string::npos) << a.mail.body;
  EXPECT_NE(a.mail.body.find(f.link), std::string::npos);
  EXPECT_EQ(a.notice.title, "Rental rnt_1 ended: Stopped by the provider");
  EXPECT_EQ(a.notice.link, f.link);
  f.charged = false;
  f.why = "Could not start (not charged)";
  EXPECT_EQ(server::mail::rental_ended(f).notice.body, "1 × L40S. It was not charged.");
}

TEST(MailTemplates, BalanceLowSaysWhenWhatItCostsAndHowToTopUp) {
  server::mail::BalanceLowFacts f;
  f.minutes_left = 40;
  f.available_text = "1.000000";
  f.per_hour_text = "1.500000";
  f.payment_instructions = "Wire to IBAN DE89 3704 0044 0532 0130 00, your e-mail as reference.";
  f.link = "https://gpunex.example/#/balance";
  const auto a = server::mail::balance_low(f);
  EXPECT_EQ(a.notice.kind, "balance_low");
  EXPECT_EQ(a.notice.title, "Your balance runs out in about 40 minutes");
  EXPECT_EQ(a.mail.subject, "GPUnex: Your balance runs out in about 40 minutes");
  EXPECT_EQ(a.notice.body,
            "1.000000 USDC is available and your running rentals use 1.500000 USDC an hour. When it is used up they "
            "are stopped. To add credit: Wire to IBAN DE89 3704 0044 0532 0130 00, your e-mail as reference.");
  EXPECT_NE(a.mail.body.find("\n\nYour balance: https://gpunex.example/#/balance\n"), std::string::npos);
  f.minutes_left = 0;
  f.payment_instructions.clear();
  const auto b = server::mail::balance_low(f);
  EXPECT_EQ(b.notice.title, "Your balance runs out now");
  EXPECT_NE(b.notice.body.find("Ask the operator to add credit"), std::string::npos);
}
