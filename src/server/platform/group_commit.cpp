#include "server/platform/group_commit.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "util/log.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

GroupCommit::GroupCommit(store::Store& store, BatchObserver observer, std::size_t writers, std::size_t max_batch,
                         std::size_t max_queue, std::chrono::milliseconds linger)
    : store_(store),
      max_batch_(max_batch == 0 ? 1 : max_batch),
      max_queue_(max_queue),
      linger_(linger),
      observer_(std::move(observer)) {
  for (std::size_t i = 0; i < std::max<std::size_t>(writers, 1); ++i) threads_.emplace_back([this] { loop(); });
}

GroupCommit::~GroupCommit() {
  stop();
}

void GroupCommit::submit(Work work, Done done, std::string key, Check check) {
  Item item{std::move(work), std::move(done), std::move(key), std::move(check)};
  {
    std::lock_guard lock(mu_);
    if (!stopping_ && queue_.size() < max_queue_) {
      queue_.push_back(std::move(item));
      // A busy writer takes what queued when its batch is done; a lingering one wants a full batch.
      if (idle_writers_ > 0 || queue_.size() >= max_batch_) cv_.notify_one();
      return;
    }
  }
  finish(item, Outcome{Error::make(ErrorCode::unavailable, "the server is busy or shutting down; retry shortly"), {}});
}

void GroupCommit::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void GroupCommit::loop() {
  for (;;) {
    std::vector<Item> batch;
    {
      std::unique_lock lock(mu_);
      ++idle_writers_;
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      --idle_writers_;
      if (queue_.empty()) return;  // stopping, and everything queued has been answered
      if (linger_.count() > 0 && queue_.size() < max_batch_) {
        cv_.wait_for(lock, linger_, [&] { return stopping_ || queue_.size() >= max_batch_; });
      }
      const std::size_t n = std::min(queue_.size(), max_batch_);
      batch.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::stable_sort(batch.begin(), batch.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
    run(std::move(batch));
  }
}

void GroupCommit::finish(Item& item, Outcome outcome) {
  try {
    item.done(std::move(outcome));
  } catch (const std::exception& e) {
    util::log_event("error", "group commit: answering a request failed", {{"error", e.what()}});
  } catch (...) {
    util::log_event("error", "group commit: answering a request failed");
  }
}

void GroupCommit::run_alone(Item& item) {
  try {
    auto result = store_.transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
      if (item.check) {
        if (auto ok = item.check(tx); !ok) return std::move(ok).error();
      }
      return item.work(tx);
    });
    if (observer_ && result) observer_(1);
    finish(item, Outcome{std::move(result), {}});
  } catch (...) {
    finish(item, Outcome{Error::make(ErrorCode::internal, "failed"), std::current_exception()});
  }
}

void GroupCommit::run(std::vector<Item> items) {
  // A request that fails (an error result or an exception) rolls the batch back: it is answered on its
  // own, and the others run again without it. Failures are rare (malformed or replayed requests are
  // refused before they write, or answered normally); the common batch commits once.
  while (!items.empty()) {
    if (items.size() == 1) return run_alone(items.front());
    std::vector<std::optional<core::Result<nlohmann::json>>> results(items.size());
    std::vector<bool> checked_out(items.size(), false);  // refused by its check: nothing written, batch goes on
    std::optional<std::size_t> refused;
    std::optional<std::size_t> threw;
    try {
      store_.transact([&](store::Tx& tx) {
        for (std::size_t i = 0; i < items.size(); ++i) {
          try {
            if (items[i].check) {
              if (auto ok = items[i].check(tx); !ok) {
                results[i].emplace(std::move(ok).error());
                checked_out[i] = true;
                continue;
              }
            }
            results[i].emplace(items[i].work(tx));
          } catch (...) {
            threw = i;
            throw;
          }
          if (!*results[i]) {
            refused = i;
            return false;
          }
        }
        return true;
      });
    } catch (...) {
      if (!threw) {
        // BEGIN or COMMIT failed: no request's writes are kept, and each is told so.
        const auto failure = std::current_exception();
        for (auto& item : items) finish(item, Outcome{Error::make(ErrorCode::internal, "failed"), failure});
        return;
      }
      // Its own exception, in a transaction of its own (it may well succeed there: a deadlock, say).
      run_alone(items[*threw]);
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(*threw));
      continue;
    }
    if (refused) {
      finish(items[*refused], Outcome{std::move(*results[*refused]), {}});
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(*refused));
      continue;
    }
    const auto stored = static_cast<std::size_t>(std::count(checked_out.begin(), checked_out.end(), false));
    if (observer_ && stored > 0) observer_(stored);
    for (std::size_t i = 0; i < items.size(); ++i) finish(items[i], Outcome{std::move(*results[i]), {}});
    return;
  }
}

}  // namespace gpunex::server
