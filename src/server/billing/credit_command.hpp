#pragma once
// `gpunex-server admin credit --db URL --email E --amount 100.00 --reference R`: an operator adds
// customer credit from the shell, as one ledger transaction (server/billing/credits.hpp).

#include <iosfwd>
#include <string>

#include "server/billing/credits.hpp"

namespace gpunex::server::billing {

//! Posts the credit and prints the transaction and the new balance. Returns the exit code: 0 when
//! credited (or the same credit was already there), 1 on a refusal or a store failure, with the
//! reason on `err` naming the flag at fault.
int admin_credit(const std::string& db_url, const CreditRequest& request, const std::string& actor, std::ostream& out,
                 std::ostream& err);

}  // namespace gpunex::server::billing
