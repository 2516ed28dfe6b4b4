// A rental's rules (core/rental): states, end reasons and whose side caused them, the scheduler's
// pick, the first-hour balance check, when a running rental must stop, where its metering ends, and
// which end reasons an agent is believed about.
#include "core/rental_spec.hpp"
#include "core/rental.hpp"

#include <gtest/gtest.h>

using namespace gpunex;                // NOLINT: test file
using namespace gpunex::core::rental;  // NOLINT: test file

namespace {

TEST(RentalRules, StatesMoveForwardOnlyAndEndedIsFinal) {
  EXPECT_EQ(*next_state(State::requested, Event::agent_starting), State::starting);
  EXPECT_EQ(*next_state(State::starting, Event::agent_running), State::running);
  EXPECT_EQ(*next_state(State::running, Event::stop), State::stopping);
  EXPECT_EQ(*next_state(State::stopping, Event::stop), State::stopping);
  EXPECT_EQ(*next_state(State::stopping, Event::ended), State::ended);
  EXPECT_EQ(*next_state(State::starting, Event::ended), State::ended) << "a start that failed";
  EXPECT_EQ(*next_state(State::running, Event::ended), State::ended) << "a container that exited";
  auto back = next_state(State::stopping, Event::agent_running);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code_text(), "rental_state");
  EXPECT_FALSE(next_state(State::running, Event::agent_starting).ok());
  for (auto e : {Event::agent_starting, Event::agent_running, Event::stop, Event::ended}) {
    EXPECT_FALSE(next_state(State::ended, e).ok());
  }
}

TEST(RentalRules, EndReasonsSayWhoseSideCausedThemAndRoundTrip) {
  for (auto r : {EndReason::provider_stopped, EndReason::gpu_failure, EndReason::host_failure, EndReason::agent_lost}) {
    EXPECT_TRUE(provider_side(r)) << to_string(r);
  }
  for (auto r : {EndReason::customer_stopped, EndReason::max_duration, EndReason::balance_exhausted,
                 EndReason::window_ended, EndReason::container_exited, EndReason::start_failed}) {
    EXPECT_FALSE(provider_side(r)) << to_string(r);
    EXPECT_EQ(*parse_end_reason(to_string(r)), r);
  }
  EXPECT_FALSE(parse_end_reason("bored").ok());
  for (auto s : {State::requested, State::starting, State::running, State::stopping, State::ended}) {
    EXPECT_EQ(*parse_state(to_string(s)), s);
  }
  EXPECT_EQ(end_text(EndReason::container_exited, 137, true), "Out of memory (exit 137)");
  EXPECT_EQ(end_text(EndReason::container_exited, 3, false), "The container exited (exit 3)");
}

std::vector<FreeGpu> market() {
  return {
      {"m_a", "GPU-a1", "L4", "prv_a", "eu-west", 500'000, 95, 0.9},
      {"m_a", "GPU-a0", "L4", "prv_a", "eu-west", 500'000, 95, 0.9},
      {"m_b", "GPU-b0", "L4", "prv_b", "us-east", 400'000, 80, 0.7},
      {"m_b", "GPU-b1", "L4", "prv_b", "us-east", 400'000, 80, 0.7},
      {"m_b", "GPU-b2", "L4", "prv_b", "us-east", 400'000, 80, 0.7},
      {"m_c", "GPU-c0", "H100-SXM", "prv_c", "eu-west", 2'500'000, 99, 0.95},
  };
}

TEST(RentalRules, TheSchedulerGivesGpusOfOneModelOnOneMachineBestRankedFirst) {
  Request r;
  r.model = "L4";
  r.gpu_count = 2;
  auto p = pick_gpus(market(), r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->machine_id, "m_a");
  EXPECT_EQ(p->uuids, (std::vector<std::string>{"GPU-a0", "GPU-a1"}));
  EXPECT_EQ(p->price, 500'000);

  r.gpu_count = 3;  // only m_b has three
  EXPECT_EQ(pick_gpus(market(), r)->machine_id, "m_b");
  r.gpu_count = 4;
  EXPECT_FALSE(pick_gpus(market(), r)) << "never split across machines";

  r.gpu_count = 1;
  r.max_price = 450'000;
  EXPECT_EQ(pick_gpus(market(), r)->machine_id, "m_b");
  r.max_price.reset();
  r.min_reliability = 90;
  r.region = "us-east";
  EXPECT_FALSE(pick_gpus(market(), r));

  Request offer;
  offer.machine_id = "m_c";
  auto h = pick_gpus(market(), offer);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->model, "H100-SXM");
  EXPECT_EQ(h->provider_id, "prv_c");
}

TEST(RentalRules, StartingNeedsTheFirstHourAndTheRefusalNamesTheAmount) {
  EXPECT_TRUE(check_can_start(1'000'000, 500'000, 2).ok());
  auto short_by = check_can_start(999'999, 500'000, 2);
  ASSERT_FALSE(short_by.ok());
  EXPECT_EQ(short_by.error().code_text(), "insufficient_balance");
  EXPECT_EQ(core::http_status(short_by.error().code), 402);
  EXPECT_NE(short_by.error().message.find("1.000000 USDC is needed"), std::string::npos) << short_by.error().message;
  EXPECT_NE(short_by.error().message.find("0.000001 USDC more (your Balance page, or gpunex balance, says how"),
            std::string::npos)
      << short_by.error().message;
}

TEST(RentalRules, OtherRentalsHoldWhatIsLeftOfTheirFirstHour) {
  // 0.5 USDC an hour on one GPU: nothing run holds all of it, half an hour half, an hour or more none.
  EXPECT_EQ(first_hour_left(500'000, 1, 0), 500'000);
  EXPECT_EQ(first_hour_left(500'000, 2, 0), 1'000'000);
  EXPECT_EQ(first_hour_left(500'000, 1, 1'800'000), 250'000);
  EXPECT_EQ(first_hour_left(500'000, 1, 3'600'000), 0);
  EXPECT_EQ(first_hour_left(500'000, 1, 7'200'000), 0);
  // 0.5 USDC covers one such rental's first hour, not a second's.
  EXPECT_TRUE(check_can_start(500'000, 500'000, 1, 0).ok());
  auto second = check_can_start(500'000, 500'000, 1, first_hour_left(500'000, 1, 0));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code_text(), "insufficient_balance");
  EXPECT_NE(second.error().message.find("0.500000 USDC is held for the first hour of your other rentals"),
            std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find("0.500000 USDC more"), std::string::npos) << second.error().message;
  EXPECT_TRUE(check_can_start(750'000, 500'000, 1, first_hour_left(500'000, 1, 1'800'000)).ok());
}

TEST(RentalRules, AJobShorterThanAnHourNeedsOnlyItsOwnCost) {
  // 0.8 USDC an hour, at most a quarter of an hour: 0.2 USDC to start, and 0.2 held while it runs.
  const auto span = first_span_ms(900'000);
  EXPECT_EQ(span, 900'000);
  EXPECT_EQ(first_span_ms(std::nullopt), kHourMs);
  EXPECT_EQ(first_span_ms(5 * kHourMs), kHourMs);
  EXPECT_TRUE(check_can_start(500'000, 800'000, 1, 0, span).ok());
  auto short_by = check_can_start(199'999, 800'000, 1, 0, span);
  ASSERT_FALSE(short_by.ok());
  EXPECT_NE(short_by.error().message.find("does not cover its max_hours: 0.200000 USDC is needed"), std::string::npos)
      << short_by.error().message;
  EXPECT_EQ(first_hour_left(800'000, 1, 0, span), 200'000);
  EXPECT_EQ(first_hour_left(800'000, 1, 450'000, span), 100'000);
  // A cost that rounds to nothing still needs something on the balance: an empty one starts nothing.
  EXPECT_EQ(first_hour_cost(1'000, 1, 60'000), 16);
  EXPECT_FALSE(check_can_start(0, 1, 1, 0, 60'000).ok());
  EXPECT_TRUE(check_can_start(1, 1, 1, 0, 60'000).ok());
}

TEST(RentalRules, MeteringEndsAtTheConfirmedEndAndAtMostAMinuteAfterTheStopWasAsked) {
  EXPECT_EQ(metered_until(std::nullopt, std::nullopt, 9'000'000), 9'000'000);
  EXPECT_EQ(metered_until(5'000'000, std::nullopt, 9'000'000), 5'000'000);
  // Asked at 1,000 s: an end confirmed within the minute is where metering ends...
  EXPECT_EQ(metered_until(1'020'000, 1'000'000, 9'000'000), 1'020'000);
  EXPECT_EQ(metered_until(std::nullopt, 1'000'000, 1'030'000), 1'030'000);
  // ...one confirmed later, or never, ends it a minute after the stop was asked.
  EXPECT_EQ(metered_until(std::nullopt, 1'000'000, 9'000'000), 1'000'000 + kStopMeteredMs);
  EXPECT_EQ(metered_until(5'000'000, 1'000'000, 9'000'000), 1'000'000 + kStopMeteredMs);
  // max_hours caps it: a rental of at most 7.2 s that ran from 1,000 s is metered to 1,007.2 s, however late
  // the worker asked the stop and the agent confirmed it.
  EXPECT_EQ(metered_until(1'021'000, 1'010'000, 9'000'000, 1'000'000, 7'200), 1'007'200);
  EXPECT_EQ(metered_until(std::nullopt, std::nullopt, 1'005'000, 1'000'000, 7'200), 1'005'000) << "not reached yet";
}

TEST(RentalRules, AStopTheCustomerDidNotCauseMetersNothingAfterItWasAsked) {
  // Asked at 1,000 s, the container gone at 1,012 s: the customer's own stops (and those their choices
  // caused) meter the agent's seconds; the provider's side and the window's end do not.
  for (auto r : {EndReason::customer_stopped, EndReason::balance_exhausted, EndReason::max_duration}) {
    EXPECT_EQ(metered_until(1'012'000, 1'000'000, 9'000'000, 500'000, std::nullopt, r), 1'012'000) << to_string(r);
  }
  for (auto r :
       {EndReason::provider_stopped, EndReason::gpu_failure, EndReason::host_failure, EndReason::window_ended}) {
    EXPECT_EQ(metered_until(1'012'000, 1'000'000, 9'000'000, 500'000, std::nullopt, r), 1'000'000) << to_string(r);
    EXPECT_EQ(metered_until(std::nullopt, 1'000'000, 1'005'000, 500'000, std::nullopt, r), 1'000'000) << to_string(r);
  }
  EXPECT_EQ(metered_until(std::nullopt, std::nullopt, 1'005'000, 500'000, std::nullopt, EndReason::provider_stopped),
            1'005'000)
      << "no stop asked: metered to now";
}

TEST(RentalRules, AnAgentIsBelievedAboutTheContainerNotAboutWhoStoppedIt) {
  for (auto r :
       {EndReason::container_exited, EndReason::start_failed, EndReason::gpu_failure, EndReason::host_failure}) {
    EXPECT_EQ(ended_reason(r, std::nullopt), r) << to_string(r);
  }
  EXPECT_EQ(ended_reason(std::nullopt, std::nullopt), EndReason::host_failure);
  // Reasons only the platform gives, from the agent alone: the host failed (on the provider's side).
  for (auto r : {EndReason::customer_stopped, EndReason::max_duration, EndReason::balance_exhausted,
                 EndReason::window_ended, EndReason::provider_stopped, EndReason::agent_lost}) {
    EXPECT_EQ(ended_reason(r, std::nullopt), EndReason::host_failure) << to_string(r);
  }
  // A stop that was asked ends for its reason, whatever the agent says.
  EXPECT_EQ(ended_reason(EndReason::container_exited, EndReason::customer_stopped), EndReason::customer_stopped);
  EXPECT_EQ(ended_reason(std::nullopt, EndReason::balance_exhausted), EndReason::balance_exhausted);
}

TEST(RentalRules, ARunningRentalStopsAtItsLimitTheWindowsEndOrAnEmptyBalance) {
  Running r;
  r.running_since_ms = 1'000'000;
  r.price_per_gpu_hour = 3'600'000;  // 1000 micro-USDC a second on one GPU
  r.gpus = 1;
  r.balance_at_last_settlement = 10'000'000;
  EXPECT_FALSE(due_stop(r, 1'000'000 + 60'000));
  r.max_duration_ms = 3'600'000;
  EXPECT_EQ(due_stop(r, 1'000'000 + 3'600'000), EndReason::max_duration);
  r.max_duration_ms.reset();
  r.window_ends_ms = 2'000'000;
  EXPECT_EQ(due_stop(r, 2'000'000), EndReason::window_ended) << "a rental made before promises were kept";
  // The window ends when its offer said it would, or later: the customer rented until then.
  r.promised_until_ms = 2'000'000;
  EXPECT_EQ(due_stop(r, 2'000'000), EndReason::window_ended);
  r.promised_until_ms = 1'500'000;
  EXPECT_EQ(due_stop(r, 2'000'000), EndReason::window_ended);
  // Earlier than promised, or with no end promised (24/7 when rented): a schedule narrowed since does not
  // cut it short (it runs on to the promised end: the provider's drain); maintenance does, on the
  // provider's side.
  r.promised_until_ms = 2'000'001;
  EXPECT_FALSE(due_stop(r, 2'000'000));
  EXPECT_EQ(due_stop(r, 2'000'001), EndReason::window_ended) << "the promised end has come";
  r.in_maintenance = true;
  EXPECT_EQ(due_stop(r, 2'000'000), EndReason::provider_stopped);
  r.promised_until_ms = 0;
  EXPECT_EQ(due_stop(r, 2'000'000), EndReason::provider_stopped);
  r.in_maintenance = false;
  EXPECT_FALSE(due_stop(r, 2'000'000)) << "24/7 when rented: it runs on until its customer stops it";
  EXPECT_TRUE(provider_side(EndReason::provider_stopped));
  r.promised_until_ms.reset();
  r.window_ends_ms.reset();
  // 10 USDC lasts 10,000 s at 1000 micro-USDC a second.
  EXPECT_FALSE(due_stop(r, 1'000'000 + 9'999'000));
  EXPECT_EQ(due_stop(r, 1'000'000 + 10'000'000), EndReason::balance_exhausted);
  // After a settlement took 4 USDC, 6 USDC are left for the seconds after it.
  r.settled.charged = 4'000'000;
  r.balance_at_last_settlement = 6'000'000;
  EXPECT_FALSE(due_stop(r, 1'000'000 + 9'999'000));
  EXPECT_EQ(due_stop(r, 1'000'000 + 10'000'000), EndReason::balance_exhausted);
  EXPECT_EQ(metered_ms(std::nullopt, 5'000), 0);
  EXPECT_EQ(metered_ms(1'000, 500), 0);
}

}  // namespace

// ---- what a customer asks a rental to run (core/rental_spec) ----

namespace {

core::Status read(const nlohmann::json& body, Spec* out = nullptr) {
  core::ObjectReader r(body);
  Spec s = read_spec(r);
  if (out != nullptr) *out = s;
  return r.finish();
}

//! As a new rental's request is read: the spec, and the port its SSH key opens.
core::Status read_request(const nlohmann::json& body, Spec* out = nullptr) {
  core::ObjectReader r(body);
  Spec s = read_spec(r);
  open_ssh_port(s, r);
  if (out != nullptr) *out = s;
  return r.finish();
}

std::string field_of(const nlohmann::json& body) {
  auto st = read(body);
  return st ? std::string("(accepted)") : st.error().field.value_or("(no field)");
}

TEST(RentalSpec, ImageReferencesFollowDockersGrammar) {
  for (const char* ok : {"ubuntu", "ubuntu:22.04", "library/ubuntu", "docker.io/library/ubuntu:22.04",
                         "ghcr.io/org/app-name_x.y:v1.2.3", "localhost:5000/team/app", "localhost/gpunex-test:1",
                         "nvcr.io/nvidia/pytorch:24.01-py3", "Registry.Example.com/team/app", "LOCALHOST:5000/app",
                         "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
    EXPECT_TRUE(valid_image_reference(ok)) << ok;
  }
  for (const char* bad :
       {"", "Ubuntu", "UPPER/case:tag", "team/App", "ubuntu::1", "ubuntu:", "-ubuntu", "ubuntu/", "a b",
        "ubuntu@sha256:12", "ubuntu:tag with space", "http://docker.io/ubuntu", "ubuntu;rm -rf /"}) {
    EXPECT_FALSE(valid_image_reference(bad)) << bad;
  }
}

TEST(RentalSpec, BadFieldsAreNamed) {
  const nlohmann::json good = {{"image", "ubuntu:22.04"}};
  EXPECT_EQ(field_of(good), "(accepted)");
  auto with = [&](const char* key, nlohmann::json v) {
    auto j = good;
    j[key] = std::move(v);
    return field_of(j);
  };
  EXPECT_EQ(with("image", "Not/An Image"), "image");
  EXPECT_EQ(with("max_hours", -1), "max_hours");
  EXPECT_EQ(with("max_hours", 0), "max_hours");
  EXPECT_EQ(with("max_hours", 1e9), "max_hours");
  // Under a minute (a few milliseconds would cost nothing and still run until the stop's grace ends).
  EXPECT_EQ(with("max_hours", 1e-9), "max_hours");
  EXPECT_EQ(with("max_hours", 0.016), "max_hours");
  EXPECT_EQ(with("max_hours", 1.0 / 60), "(accepted)");
  EXPECT_EQ(with("max_hours", 0.0167), "(accepted)");
  EXPECT_EQ(with("max_hours", "2"), "max_hours");
  EXPECT_EQ(with("env", {{"A=B", "x"}}), "env");
  EXPECT_EQ(with("env", {{std::string("A\0B", 3), "x"}}), "env");
  EXPECT_EQ(with("env", {{"1ABC", "x"}}), "env");
  EXPECT_EQ(with("env", {{"A", std::string("x\0y", 3)}}), "env");
  EXPECT_EQ(with("env", {{"PUBLIC_KEY", "x"}}), "env") << "the key travels as ssh_public_key";
  EXPECT_EQ(with("env", {{"NVIDIA_VISIBLE_DEVICES", "all"}}), "env") << "the platform hands in the GPUs";
  EXPECT_EQ(with("env", {{"NVIDIA_DRIVER_CAPABILITIES", "all"}}), "env");
  EXPECT_EQ(with("env", {{"GPUNEX_SIMULATED_GPUS", "GPU-x"}}), "env");
  EXPECT_EQ(with("env", {{"CUDA_VISIBLE_DEVICES", "0"}}), "(accepted)") << "narrows what the container has";
  EXPECT_EQ(with("ports", {70000}), "ports");
  EXPECT_EQ(with("ports", {0}), "ports");
  EXPECT_EQ(with("ports", {80, 80}), "ports");
  EXPECT_EQ(with("ports", "80"), "ports");
  EXPECT_EQ(with("command", "echo hi"), "command");
  EXPECT_EQ(with("command", {std::string("a\0b", 3)}), "command");
  EXPECT_EQ(with("ssh_public_key", "hello"), "ssh_public_key");
  EXPECT_EQ(with("ssh_public_key", "ssh-ed25519 AAAA\nssh-rsa BBBB"), "ssh_public_key");
  EXPECT_EQ(with("volumes", {"/:/host"}), "volumes") << "fields the spec does not take are refused";
  auto sixteen = good;
  for (int p = 1; p <= 16; ++p) sixteen["ports"].push_back(8000 + p);
  EXPECT_TRUE(read_request(sixteen));
  sixteen["ssh_public_key"] = "ssh-ed25519 AAAAC3Nza user@host";
  EXPECT_EQ(read_request(sixteen).error().field, "ports") << "the key's port 22 would be the seventeenth";
  EXPECT_TRUE(read(sixteen)) << "a stored spec is read as it is";
}

TEST(RentalSpec, TheSshKeyReachesTheContainerAsPublicKeyAndTheSpecRoundTrips) {
  Spec s;
  ASSERT_TRUE(read({{"image", "ubuntu:22.04"},
                    {"command", {"python", "-m", "http.server", "8888"}},
                    {"env", {{"HF_TOKEN", "secret"}}},
                    {"ports", {8888}},
                    {"max_hours", 2.5},
                    {"ssh_public_key", "ssh-ed25519 AAAAC3Nza user@host"}},
                   &s));
  EXPECT_EQ(container_env(s), (std::map<std::string, std::string>{{"HF_TOKEN", "secret"},
                                                                   {"PUBLIC_KEY", "ssh-ed25519 AAAAC3Nza user@host"}}));
  EXPECT_EQ(s.ports, (std::vector<int>{8888})) << "a stored or sent spec is read as it is";
  Spec asked;
  ASSERT_TRUE(
      read_request({{"image", "ubuntu:22.04"}, {"ports", {8888}}, {"ssh_public_key", "ssh-ed25519 AAAA u@h"}}, &asked));
  EXPECT_EQ(asked.ports, (std::vector<int>{8888, kSshPort})) << "a new rental's key opens sshd's port";
  auto back = spec_from_json(spec_to_json(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(spec_from_json(nlohmann::json::array()));
}

}  // namespace
