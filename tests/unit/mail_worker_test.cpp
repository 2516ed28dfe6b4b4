// The mail outbox and its worker round (server/notifications.*, workers/mail_worker.*) on an
// in-memory SQLite store, with a scripted Mailer: the backoff schedule, retries until the server
// accepts, the secret put in only when sending and erased once sent or given up.

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "server/platform/notifications.hpp"
#include "server/workers/mail_worker.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

//! Refuses the first `refuse` sends, then accepts; remembers every message it was given.
class ScriptedMailer final : public server::mail::Mailer {
 public:
  explicit ScriptedMailer(int refuse) : refuse_(refuse) {}
  core::Status send(const server::mail::Message& m) override {
    tried.push_back(m);
    if (static_cast<int>(tried.size()) <= refuse_) {
      return core::Error::make(core::ErrorCode::unavailable, "451 try again later");
    }
    return core::ok_status();
  }
  std::string describe() const override { return "scripted"; }
  std::vector<server::mail::Message> tried;

 private:
  int refuse_;
};

struct OutboxRow {
  std::int64_t attempts;
  std::int64_t next_attempt_at;
  bool has_secret;
  bool sent;
  std::string last_error;
};

const std::string kServerSecret = "the server secret of this test, 32+ bytes long";

class MailWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::open_store("sqlite::memory:");
    store::migrate(*store_);
    id_ = store_->transact([](store::Tx& tx) {
      return server::enqueue_mail(tx,
                                  server::OutgoingMail{"application_approved", "ada@example.com", "Approved",
                                                       std::string("Your key: ") + server::kSecretPlaceholder + "\n",
                                                       server::MailSecret{"gpx_the_secret", kServerSecret}},
                                  0);
    });
  }
  OutboxRow row() {
    return store_->transact([&](store::Tx& tx) {
      auto r = tx.query_one("SELECT attempts, next_attempt_at, secret, sent_at, last_error FROM outbox WHERE id = ?",
                            {id_});
      return OutboxRow{r->i64(0), r->i64(1), !r->is_null(2), !r->is_null(3), r->opt_str(4).value_or("")};
    });
  }
  //! Makes the mail due now, as if its backoff had passed.
  void make_due() {
    store_->transact([&](store::Tx& tx) { tx.exec("UPDATE outbox SET next_attempt_at = 0 WHERE id = ?", {id_}); });
  }
  server::workers::MailRoundResult round(ScriptedMailer& mailer, std::int64_t max_attempts) {
    return server::workers::deliver_due_mail(*store_, mailer, "GPUnex <noreply@x.test>", 1000, max_attempts, clock_,
                                             server_secret_);
  }
  util::SystemClock clock_;
  std::unique_ptr<store::Store> store_;
  std::string id_;
  std::string server_secret_ = kServerSecret;
};

}  // namespace

TEST(MailRetry, DelayDoublesFromTheBaseUpToAnHour) {
  EXPECT_EQ(server::mail_retry_delay_ms(1, 30'000), 30'000);
  EXPECT_EQ(server::mail_retry_delay_ms(2, 30'000), 60'000);
  EXPECT_EQ(server::mail_retry_delay_ms(3, 30'000), 120'000);
  EXPECT_EQ(server::mail_retry_delay_ms(7, 30'000), 1'920'000);
  EXPECT_EQ(server::mail_retry_delay_ms(8, 30'000), 3'600'000);
  EXPECT_EQ(server::mail_retry_delay_ms(1000, 30'000), 3'600'000);
  EXPECT_EQ(server::mail_retry_delay_ms(0, 0), 1);
}

TEST_F(MailWorker, RefusedMailIsRetriedWithGrowingDelaysThenSentOnceAndItsSecretErased) {
  ScriptedMailer mailer(3);
  std::int64_t expected_delay = 1000;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const auto before = clock_.now_ms();
    EXPECT_EQ(round(mailer, 5).failed, 1);
    const auto r = row();
    EXPECT_EQ(r.attempts, attempt);
    EXPECT_FALSE(r.sent);
    EXPECT_TRUE(r.has_secret) << "kept for the next attempt";
    EXPECT_EQ(r.last_error, "451 try again later");
    EXPECT_GE(r.next_attempt_at, before + expected_delay);
    EXPECT_LE(r.next_attempt_at, clock_.now_ms() + expected_delay);
    EXPECT_EQ(round(mailer, 5).failed, 0) << "not due before its backoff";
    make_due();
    expected_delay *= 2;
  }
  EXPECT_EQ(round(mailer, 5).sent, 1);
  const auto r = row();
  EXPECT_TRUE(r.sent);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_FALSE(r.has_secret);
  EXPECT_EQ(r.last_error, "");
  ASSERT_EQ(mailer.tried.size(), 4u);
  for (const auto& m : mailer.tried) EXPECT_EQ(m.body, "Your key: gpx_the_secret\n");
  make_due();
  EXPECT_EQ(round(mailer, 5).sent, 0) << "a sent mail is never sent again";
  EXPECT_EQ(mailer.tried.size(), 4u);
}

TEST_F(MailWorker, MailIsGivenUpAfterMaxAttemptsAndItsSecretErased) {
  ScriptedMailer mailer(1000);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    EXPECT_EQ(round(mailer, 3).failed, 1);
    EXPECT_EQ(row().has_secret, attempt < 3);
    if (attempt < 3) make_due();
  }
  auto r = row();
  EXPECT_EQ(r.attempts, 3);
  EXPECT_FALSE(r.sent);
  EXPECT_FALSE(r.has_secret);
  EXPECT_EQ(r.last_error, "gave up: 451 try again later");
  // Never due again, not even by the clock.
  store_->transact([&](store::Tx& tx) {
    EXPECT_TRUE(server::due_mails(tx, std::numeric_limits<std::int64_t>::max() - 1, 10, kServerSecret).empty());
  });
  EXPECT_EQ(round(mailer, 3).failed, 0);
  EXPECT_EQ(mailer.tried.size(), 3u);
}

// The secret waits in the outbox sealed with the server secret: a copy of the database taken meanwhile
// does not hold it. A server with another secret cannot unseal it and gives the mail up, naming why.
TEST_F(MailWorker, TheSecretWaitsSealedAndAnotherServerSecretCannotSendIt) {
  const auto stored = store_->transact(
      [&](store::Tx& tx) { return tx.query_one("SELECT secret, body FROM outbox WHERE id = ?", {id_}); });
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->str(0).find("gpx_the_secret"), std::string::npos) << stored->str(0);
  EXPECT_EQ(stored->str(0).rfind("sealed:", 0), 0u) << stored->str(0);
  EXPECT_EQ(stored->str(1).find("gpx_the_secret"), std::string::npos);

  server_secret_ = "another server secret, 32+ bytes long as well";
  ScriptedMailer mailer(0);
  EXPECT_EQ(round(mailer, 5).failed, 1);
  EXPECT_TRUE(mailer.tried.empty()) << "nothing sent with the placeholder or a wrong secret";
  const auto r = row();
  EXPECT_FALSE(r.sent);
  EXPECT_FALSE(r.has_secret);
  EXPECT_EQ(r.last_error,
            "gave up: its secret does not unseal with this server's server_secret (changed since it "
            "was queued)");
}

// A mail queued by a server before the outbox sealed its secrets holds it as it is: still sent.
TEST_F(MailWorker, AnUnsealedSecretFromBeforeIsSentAsItIs) {
  store_->transact([&](store::Tx& tx) { tx.exec("UPDATE outbox SET secret = 'gpx_old' WHERE id = ?", {id_}); });
  ScriptedMailer mailer(0);
  EXPECT_EQ(round(mailer, 5).sent, 1);
  ASSERT_EQ(mailer.tried.size(), 1u);
  EXPECT_EQ(mailer.tried[0].body, "Your key: gpx_old\n");
}
