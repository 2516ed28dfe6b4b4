#include "server/billing/credit_command.hpp"

#include <ostream>

#include "store/migrations.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace gpunex::server::billing {

int admin_credit(const std::string& db_url, const CreditRequest& request, const std::string& actor, std::ostream& out,
                 std::ostream& err) {
  try {
    auto store = store::open_store(db_url, store::StoreOptions{.create_missing = false});
    store::migrate(*store);
    auto result =
        store->transact([&](store::Tx& tx) { return add_credit(tx, request, actor, util::SystemClock{}.now_ms()); });
    if (!result) {
      const auto& e = result.error();
      err << "error: " << (e.field ? "--" + *e.field + ": " : std::string()) << e.message << "\n";
      return 1;
    }
    out << (result->repeated ? "already credited: " : "credited ") << core::format_usdc(result->amount) << " USDC to "
        << result->email << " (transaction " << result->transaction_id << "); balance "
        << core::format_usdc(result->balance) << " USDC\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gpunex::server::billing
