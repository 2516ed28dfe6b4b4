#include "server/admin.hpp"

#include <iostream>

#include "server/accounts.hpp"
#include "store/store.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

int admin_create_user(const std::string& db_url, const std::string& email, const std::string& full_name,
                      const std::string& role, std::istream& in, std::ostream& out, std::ostream& err) {
  std::string password;
  std::getline(in, password);
  if (!password.empty() && password.back() == '\r') password.pop_back();
  try {
    auto store = store::open_store(db_url);
    store::migrate(*store);
    auto user = create_user(*store, NewUser{email, password, full_name.empty() ? email : full_name, role});
    if (!user) {
      err << "error: " << user.error().message << "\n";
      return 1;
    }
    out << "created " << user->email << " (" << user->id << ") with roles";
    for (const auto& r : user->roles) out << " " << r;
    out << "\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int admin_bootstrap(const std::string& db_url, std::ostream& out, std::ostream& err) {
  try {
    auto store = store::open_store(db_url);
    store::migrate(*store);
    bool has_admin = store->transact(
        [](store::Tx& tx) { return tx.query_one("SELECT user_id FROM user_roles WHERE role = 'admin'").has_value(); },
        store::TxMode::read);
    if (has_admin) return 0;
    const std::string password = util::random_token(12);
    auto user = create_user(*store, NewUser{"admin@localhost.localdomain", password, "Administrator", "admin"});
    if (!user) {
      err << "error: " << user.error().message << "\n";
      return 1;
    }
    out << "First admin account (shown once):\n  e-mail:   " << user->email << "\n  password: " << password << "\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gpunex::server
