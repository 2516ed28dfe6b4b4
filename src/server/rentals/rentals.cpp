#include "server/rentals/rentals.hpp"

#include <algorithm>
#include <set>

#include "core/json_reader.hpp"
#include "core/schedule.hpp"
#include "core/text.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/fleet/schedules.hpp"
#include "server/market/market_repo.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server::rentals {

namespace {

using core::Error;
using core::ErrorCode;
namespace rental = core::rental;
namespace ledger = core::ledger;

rental::Spec spec_of(const RentalRow& r) {
  auto j = nlohmann::json::parse(r.spec, nullptr, false);
  auto s = rental::spec_from_json(j);
  return s ? *s : rental::Spec{};
}

nlohmann::json ports_of(const RentalRow& r) {
  auto j = nlohmann::json::parse(r.ports, nullptr, false);
  return j.is_array() ? j : nlohmann::json::array();
}

Error machine_not_found(const std::string& id) {
  return Error::make(ErrorCode::not_found, "machine " + id + " is not one of yours", "machine_id")
      .with_code("machine_not_found");
}

std::int64_t clamp_ms(std::int64_t at, std::int64_t lo, std::int64_t hi) {
  return std::max(lo, std::min(at, hi));
}

}  // namespace

core::Result<CreateRequest> read_create_request(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "",
                       {{"gpu_count", {"number of GPUs", ""}},
                        {"max_hours", {"max hours", "hours"}},
                        {"ssh_public_key", {"SSH public key", ""}}});
  CreateRequest out;
  out.request.machine_id = r.optional_string("machine_id", 64);
  r.describe_field("machine_id",
                   {{"description", "One offer. Required unless filters or a model is given; not with filters."}});
  out.model_text = r.optional_line("model", 100);
  const nlohmann::json* filters = r.optional_value("filters", core::ObjectReader::Shape::object);
  if (filters != nullptr) {
    if (!filters->is_object()) {
      r.invalid("filters", "must be an object: {model, region, min_reliability, max_price}");
    } else {
      core::ObjectReader f(*filters, "filters", "Filters");
      if (auto m = f.optional_line("model", 100)) {
        if (out.model_text) {
          f.invalid("model", "is given twice: once here and once at the top");
        } else {
          out.model_text = m;
          out.model_field = "filters.model";
        }
      }
      out.request.region = f.optional_line("region", 100);
      f.describe_field("min_reliability", {{"type", "number"}, {"minimum", 0}, {"maximum", 100}});
      f.describe_field("max_price",
                       {{"type", "string"}, {"description", "A decimal USDC string above 0 such as \"1.20\"."}});
      if (const auto* rel = f.optional_value("min_reliability"); rel != nullptr) {
        if (!rel->is_number() || rel->get<double>() < 0 || rel->get<double>() > 100) {
          f.invalid("min_reliability", "must be a number from 0 to 100");
        } else {
          out.request.min_reliability = rel->get<double>();
        }
      }
      if (const auto* price = f.optional_value("max_price"); price != nullptr) {
        auto p = price->is_string() ? core::parse_usdc(price->get<std::string>(), "Max price")
                                    : core::Result<core::MicroUsdc>(Error::make(ErrorCode::invalid_field, ""));
        if (!p || *p <= 0) {
          f.invalid("max_price", "must be a decimal USDC string such as \"1.20\"", "invalid_amount");
        } else {
          out.request.max_price = *p;
        }
      }
      if (auto st = f.finish(); !st) r.fail(std::move(st).error());
    }
  }
  out.request.gpu_count = static_cast<int>(r.optional_int("gpu_count", 1, 64).value_or(1));
  out.spec = rental::read_spec(r);
  rental::open_ssh_port(out.spec, r);
  if (auto st = r.finish(); !st) return std::move(st).error();
  if (out.request.machine_id && filters != nullptr) {
    return Error::make(ErrorCode::invalid_field, "give either machine_id (one offer) or filters, not both", "filters");
  }
  if (!out.request.machine_id && !out.model_text) {
    // Filters without a model would rent any GPU at any price: a script whose model came out empty.
    if (filters != nullptr) {
      return Error::make(ErrorCode::missing_field,
                         "filters need a model (\"L4\", \"RTX 4090\"): without one any GPU would be rented",
                         "filters.model");
    }
    return Error::make(ErrorCode::missing_field, "give machine_id (one offer) or filters (at least a model)",
                       "machine_id");
  }
  return out;
}

namespace {

//! The end of the machine's availability as its offer shows it now (core::available_until): 0 when none.
std::int64_t promised_until(store::Tx& tx, const std::string& machine_id, std::int64_t now_ms) {
  const auto schedule = load_schedule(tx, machine_id);
  if (!schedule) return 0;
  const auto until = core::available_until(*schedule, core::UtcTime{std::chrono::seconds{now_ms / 1000}});
  if (!until) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(until->time_since_epoch()).count();
}

}  // namespace

core::Result<RentalRow> create(store::Tx& tx, const std::string& customer_id, const CreateRequest& request,
                               const std::vector<Candidate>& candidates, core::MicroUsdc available_balance,
                               core::MicroUsdc held, ledger::BasisPoints commission, std::int64_t now_ms) {
  const int count = request.request.gpu_count;
  std::optional<Error> unaffordable;  // the best-ranked candidate the balance did not cover
  // A provider renting its own GPUs would pay itself (less the commission) and pad its job completion.
  const auto own = provider_of_user(tx, customer_id);
  // The candidates' free GPUs, read a batch of machines at a time in rank order: the book the
  // candidates come from may be a moment old, and its best machines already taken.
  constexpr std::size_t kBatch = 64;
  for (std::size_t from = 0; from < candidates.size(); from += kBatch) {
    const std::size_t to = std::min(candidates.size(), from + kBatch);
    std::vector<std::string> machines;
    for (std::size_t i = from; i < to; ++i) machines.push_back(candidates[i].machine_id);
    const auto free_on = free_gpus_on(tx, machines);
    for (std::size_t i = from; i < to; ++i) {
      const auto& c = candidates[i];
      const auto it = free_on.find({c.machine_id, c.model});
      if (it == free_on.end() || static_cast<int>(it->second.size()) < count) continue;
      const auto& free = it->second;
      const auto owner = MachinesRepo(tx).owner(c.machine_id);
      if (!owner) continue;
      if (owner == own) {
        if (!request.request.machine_id) continue;  // by filters: the others' machines only
        return Error::make(ErrorCode::conflict, "machine " + c.machine_id + " is yours: you cannot rent your own GPUs",
                           "machine_id")
            .with_code("own_machine");
      }
      const auto price = MarketRepo(tx).current_price(*owner, c.model);
      if (!price) continue;
      if (request.request.max_price && price->usdc_micro > *request.request.max_price) continue;
      if (auto ok = rental::check_can_start(available_balance, price->usdc_micro, count, held,
                                            rental::first_span_ms(rental::max_duration_ms(request.spec)));
          !ok) {
        if (!unaffordable) unaffordable = std::move(ok).error();
        continue;
      }
      RentalRow row;
      row.id = util::new_id("rnt");
      row.customer_id = customer_id;
      row.provider_id = *owner;
      row.machine_id = c.machine_id;
      row.model = c.model;
      row.gpu_count = count;
      row.price = price->usdc_micro;
      row.commission = commission;
      row.state = rental::State::requested;
      row.spec = rental::spec_to_json(request.spec).dump();
      row.created_at_ms = now_ms;
      row.gpu_uuids.assign(free.begin(), free.begin() + count);
      row.promised_until_ms = promised_until(tx, c.machine_id, now_ms);
      if (auto st = insert_with_gpus(tx, row); !st) return std::move(st).error();
      return row;
    }
  }
  if (unaffordable) return *unaffordable;
  return Error::make(ErrorCode::conflict,
                     "no offer has " + std::to_string(count) + " free GPU" + (count == 1 ? "" : "s") +
                         " matching the request right now; widen the filters or try again later")
      .with_code("no_gpus_available");
}

std::optional<std::int64_t> max_duration_ms(const RentalRow& r) {
  return rental::max_duration_ms(spec_of(r));
}

std::int64_t metered_until(const RentalRow& r, std::int64_t now_ms) {
  return rental::metered_until(r.ended_at_ms, r.stop_requested_at_ms, now_ms, r.running_since_ms, max_duration_ms(r),
                               r.stop_reason);
}

core::MicroUsdc cost_so_far(const RentalRow& r, std::int64_t now_ms) {
  return ledger::usage_total(r.price, r.gpu_count, rental::metered_ms(r.running_since_ms, metered_until(r, now_ms)));
}

core::MicroUsdc unsettled(const RentalRow& r, std::int64_t now_ms) {
  return std::max<core::MicroUsdc>(0, cost_so_far(r, now_ms) - r.settled.charged);
}

Accrual customer_accrual(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms) {
  Accrual a;
  // An ended rental is settled in the transaction that ends it: only live ones owe anything.
  for (const auto& r : live_for_customer(tx, customer_id)) {
    a.unsettled += unsettled(r, now_ms);
    if (r.running_since_ms) a.per_hour += rental::first_hour_cost(r.price, r.gpu_count);
    if (r.state == rental::State::running) a.running_per_hour += rental::first_hour_cost(r.price, r.gpu_count);
    if (r.state != rental::State::stopping) {
      a.first_hour_held += rental::first_hour_left(r.price, r.gpu_count,
                                                   rental::metered_ms(r.running_since_ms, metered_until(r, now_ms)),
                                                   rental::first_span_ms(max_duration_ms(r)));
    }
  }
  return a;
}

RentalRow stop(store::Tx& tx, const RentalRow& r, rental::EndReason reason, std::int64_t now_ms) {
  if (r.state == rental::State::ended) return r;
  if (r.state == rental::State::requested) {
    end(tx, r.id, reason, std::nullopt, false, now_ms);
  } else {
    request_stop(tx, r.id, reason, now_ms);
  }
  return *find(tx, r.id);
}

std::size_t stop_for_lost_gpu(store::Tx& tx, const std::string& machine_id, const std::string& uuid,
                              const std::string& base_url, std::int64_t now_ms) {
  std::size_t n = 0;
  for (const auto& r : live_on_machine(tx, machine_id)) {
    if (std::find(r.gpu_uuids.begin(), r.gpu_uuids.end(), uuid) == r.gpu_uuids.end()) continue;
    // A running one ends when its agent says so, and its customer is told then (the rental events).
    if (const auto after = stop(tx, r, rental::EndReason::gpu_failure, now_ms); after.state == rental::State::ended) {
      tell_customer_ended(tx, after, base_url, now_ms);
    }
    util::log_event("warn", "a rented GPU stopped answering: the rental is stopped",
                    {{"rental", r.id}, {"machine", machine_id}, {"uuid", uuid}});
    ++n;
  }
  return n;
}

void end_now(store::Tx& tx, const RentalRow& r, rental::EndReason reason, std::int64_t at_ms) {
  end(tx, r.id, reason, std::nullopt, false, at_ms);
}

core::Result<protocol::AgentRentals> agent_rentals(store::Tx& tx, const std::string& provider_id,
                                                   const std::string& machine_id) {
  const auto owner = MachinesRepo(tx).owner(machine_id);
  if (!owner || *owner != provider_id) return machine_not_found(machine_id);
  protocol::AgentRentals out;
  for (const auto& r : live_on_machine(tx, machine_id)) {
    auto spec = rental::spec_from_json(nlohmann::json::parse(r.spec, nullptr, false));
    if (!spec) {
      util::log_event("error", "a stored rental spec does not parse", {{"rental", r.id}, {"error", spec.error().message}});
      continue;
    }
    out.rentals.push_back(protocol::AssignedRental{r.id, r.state, r.gpu_uuids, std::move(*spec)});
  }
  out.version = protocol::rentals_version(out.rentals);
  return out;
}

std::map<std::string, std::string> versions(store::Tx& tx, const std::vector<std::string>& machine_ids) {
  std::map<std::string, std::string> out;
  const auto states = live_states(tx, machine_ids);
  for (const auto& id : machine_ids) {
    std::vector<protocol::AssignedRental> list;
    if (auto it = states.find(id); it != states.end()) {
      for (const auto& [rid, state] : it->second) list.push_back(protocol::AssignedRental{rid, state, {}, {}});
    }
    out[id] = protocol::rentals_version(list);
  }
  return out;
}

core::Result<EventsOutcome> apply_events(store::Tx& tx, const std::string& provider_id,
                                         const protocol::RentalEventsRequest& req, std::int64_t now_ms) {
  MachinesRepo machines(tx);
  const auto owner = machines.owner(req.machine_id);
  if (!owner || *owner != provider_id) return machine_not_found(req.machine_id);
  EventsOutcome out;
  if (!machines.take_seq(req.machine_id, req.seq)) {
    out.duplicate = true;
    return out;
  }
  for (const auto& e : req.events) {
    auto r = find_for_update(tx, e.rental_id);
    if (!r || r->machine_id != req.machine_id) {
      util::log_event("warn", "an agent event names a rental not on its machine",
                      {{"machine", req.machine_id}, {"rental", e.rental_id}});
      continue;
    }
    if (r->state == rental::State::ended) continue;  // late news of a rental already ended
    ++out.applied;
    switch (e.type) {
      case protocol::RentalEventType::starting:
        if (r->state == rental::State::requested) set_state(tx, r->id, rental::State::starting, now_ms);
        break;
      case protocol::RentalEventType::running: {
        auto ports = nlohmann::json::array();
        for (const auto& p : e.ports) ports.push_back({{"container_port", p.container_port}, {"host_port", p.host_port}});
        mark_running(tx, r->id, clamp_ms(e.at_ms, r->created_at_ms, now_ms), ports.dump());
        break;
      }
      case protocol::RentalEventType::logs:
        set_logs(tx, r->id, e.logs.value_or(""), clamp_ms(e.at_ms, r->created_at_ms, now_ms));
        break;
      case protocol::RentalEventType::ended: {
        const auto reason =
            rental::ended_reason(e.reason, r->state == rental::State::stopping ? r->stop_reason : std::nullopt);
        const std::int64_t from = r->running_since_ms.value_or(r->created_at_ms);
        if (e.logs) set_logs(tx, r->id, *e.logs, clamp_ms(e.at_ms, r->created_at_ms, now_ms));
        end(tx, r->id, reason, e.exit_code, e.oom, clamp_ms(e.at_ms, from, now_ms), e.error);
        out.ended.push_back(r->id);
        break;
      }
    }
  }
  return out;
}

namespace {

//! The ports as the customer uses them: each bound one with its `address` (host:port) when the machine's
//! host is known; before the agent binds them (or when it never did), the asked ones with host_port and
//! address null; and the ssh command when the container's port 22 is bound and a key was given.
struct Reach {
  nlohmann::json ports;
  std::optional<std::string> ssh;
};

Reach reach_of(const RentalRow& r, const rental::Spec& spec) {
  Reach out{ports_of(r), std::nullopt};
  if (out.ports.empty() && r.state != rental::State::ended) {
    for (const int p : spec.ports) out.ports.push_back({{"container_port", p}, {"host_port", nullptr}});
  }
  for (auto& p : out.ports) {
    // An ended rental's ports are closed, and the machine may have given them to another rental since:
    // no address is shown for them (the host port stays, as a record).
    const bool bound = r.machine_host && p["host_port"].is_number_integer() && r.state != rental::State::ended;
    p["address"] = bound ? nlohmann::json(core::host_port(*r.machine_host, p["host_port"].get<int>())) : nullptr;
    if (bound && spec.ssh_public_key && p.value("container_port", 0) == 22) {
      out.ssh = "ssh -p " + std::to_string(p["host_port"].get<int>()) + " root@" + *r.machine_host;
    }
  }
  return out;
}

}  // namespace

nlohmann::json customer_json(const RentalRow& r, std::int64_t now_ms) {
  const auto spec = spec_of(r);
  auto reach = reach_of(r, spec);
  auto env_names = nlohmann::json::array();
  for (const auto& [name, value] : rental::container_env(spec)) env_names.push_back(name);
  const auto metered = rental::metered_ms(r.running_since_ms, metered_until(r, now_ms));
  return {
      {"id", r.id},
      {"state", rental::to_string(r.state)},
      {"machine_id", r.machine_id},
      {"model", r.model},
      {"gpu_count", r.gpu_count},
      {"gpus", r.gpu_uuids},
      {"usdc_per_gpu_hour", core::format_usdc(r.price)},
      {"cost_per_hour", core::format_usdc(rental::first_hour_cost(r.price, r.gpu_count))},
      {"image", spec.image},
      {"command", spec.command},
      {"env_names", std::move(env_names)},
      {"host", r.machine_host ? nlohmann::json(*r.machine_host) : nlohmann::json(nullptr)},
      {"ports", std::move(reach.ports)},
      {"ssh", reach.ssh ? nlohmann::json(*reach.ssh) : nlohmann::json(nullptr)},
      {"machine_online", r.machine_online},
      {"max_hours", spec.max_hours ? nlohmann::json(*spec.max_hours) : nlohmann::json(nullptr)},
      // The end of availability its offer showed when it was made: it runs until then at least, unless
      // maintenance or its customer stops it (null: none, the machine was on 24/7, or not known).
      {"available_until", r.promised_until_ms && *r.promised_until_ms > 0
                              ? nlohmann::json(util::rfc3339(*r.promised_until_ms))
                              : nlohmann::json(nullptr)},
      {"created_at", util::rfc3339(r.created_at_ms)},
      {"running_since", util::rfc3339_or_null(r.running_since_ms)},
      {"ended_at", util::rfc3339_or_null(r.ended_at_ms)},
      {"stop_requested", r.stop_reason ? nlohmann::json(rental::to_string(*r.stop_reason)) : nlohmann::json(nullptr)},
      // When it was asked: a stop on the provider's side meters nothing after it.
      {"stop_requested_at", util::rfc3339_or_null(r.stop_requested_at_ms)},
      {"end_reason", r.end_reason ? nlohmann::json(rental::to_string(*r.end_reason)) : nlohmann::json(nullptr)},
      {"end_text",
       r.end_reason ? nlohmann::json(rental::end_text(*r.end_reason, r.exit_code, r.oom)) : nlohmann::json(nullptr)},
      {"exit_code", r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr)},
      {"oom", r.oom},
      {"error", r.error ? nlohmann::json(*r.error) : nlohmann::json(nullptr)},
      {"seconds_metered", metered / 1000},
      {"cost_so_far", core::format_usdc(cost_so_far(r, now_ms))},
      {"settled", core::format_usdc(r.settled.charged)}};
}

namespace {

// How a rental is named to its customer: "1 × L40S", and the link to its page.
std::string gpus_text(const RentalRow& r) {
  return std::to_string(r.gpu_count) + " × " + r.model;
}
std::string rental_link(const std::string& base_url, const RentalRow& r) {
  return base_url + "/#/rentals/" + r.id;
}

}  // namespace

ScheduleEffect tell_schedule_change(store::Tx& tx, const std::string& machine_id, const core::Schedule& before,
                                    const core::Schedule& after, const std::string& base_url, std::int64_t now_ms) {
  ScheduleEffect out;
  for (const auto& r : live_on_machine(tx, machine_id)) {
    ++out.running;
    const std::int64_t promised = r.promised_until_ms.value_or(0);
    const auto stop = rental::maintenance_stop_at(after, promised, now_ms);
    const auto was = rental::maintenance_stop_at(before, promised, now_ms);
    if (!stop) {
      // Told it would be stopped, and now it will not be: told so, that they need not save and leave
      // (unless it is being stopped already: by the maintenance begun, or by its customer).
      if (was && !r.stop_reason) {
        announce(
            tx, r.customer_id,
            mail::rental_maintenance_called_off({r.id, gpus_text(r), util::rfc3339(*was), rental_link(base_url, r)}),
            std::nullopt, now_ms);
      }
      continue;
    }
    ++out.stopped_by_maintenance;
    if (!out.first_stop_ms || *stop < *out.first_stop_ms) out.first_stop_ms = stop;
    if (was == stop) continue;  // told already
    announce(tx, r.customer_id,
             mail::rental_maintenance({r.id, gpus_text(r), util::rfc3339(*stop), rental_link(base_url, r)}),
             std::nullopt, now_ms);
  }
  return out;
}

void tell_customer_ended(store::Tx& tx, const RentalRow& r, const std::string& base_url, std::int64_t now_ms) {
  if (r.state != rental::State::ended || !r.end_reason || *r.end_reason == rental::EndReason::customer_stopped) return;
  mail::RentalEndFacts facts;
  facts.rental_id = r.id;
  facts.gpus_text = gpus_text(r);
  facts.why = rental::end_text(*r.end_reason, r.exit_code, r.oom);
  facts.cost_text = core::format_usdc(r.settled.charged);
  facts.charged = r.running_since_ms.has_value();
  facts.link = rental_link(base_url, r);
  announce(tx, r.customer_id, mail::rental_ended(facts), std::nullopt, now_ms);
}

nlohmann::json provider_json(const RentalRow& r, std::int64_t now_ms) {
  const auto per_hour = rental::first_hour_cost(r.price, r.gpu_count);
  const bool running = r.running_since_ms && r.state != rental::State::ended;
  return {
      {"id", r.id},
      {"machine_id", r.machine_id},
      {"model", r.model},
      {"gpus", r.gpu_uuids},
      {"state", rental::to_string(r.state)},
      {"usdc_per_gpu_hour", core::format_usdc(r.price)},
      {"earnings_per_hour", core::format_usdc(running ? ledger::provider_share(per_hour, r.commission) : 0)},
      {"earned_so_far", core::format_usdc(ledger::provider_share(cost_so_far(r, now_ms), r.commission))},
      {"created_at", util::rfc3339(r.created_at_ms)},
      {"running_since", util::rfc3339_or_null(r.running_since_ms)},
      {"ended_at", util::rfc3339_or_null(r.ended_at_ms)},
      {"end_reason", r.end_reason ? nlohmann::json(rental::to_string(*r.end_reason)) : nlohmann::json(nullptr)},
      {"provider_side", r.end_reason ? nlohmann::json(rental::provider_side(*r.end_reason)) : nlohmann::json(nullptr)}};
}

std::vector<core::reliability::Job> reliability_jobs(store::Tx& tx, const std::string& machine_id,
                                                     std::int64_t since_ms) {
  std::vector<core::reliability::Job> out;
  for (auto& e : ended_on_machine(tx, machine_id, since_ms))
    out.push_back(core::reliability::Job{std::move(e.id), e.ended_at_ms, e.reason, e.provider_side});
  return out;
}

}  // namespace gpunex::server::rentals
