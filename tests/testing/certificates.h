// A throwaway CA, and server (localhost, 127.0.0.1) and client certificates it signed, made with the openssl
// command in a temporary folder: server.pem/.key, client.pem/.key, ca.pem. A second set from another CA can be
// made beside it (prefix "other-"), e.g. to rotate the server's certificate.
#pragma once

#include <string>

#include "tests/testing/temp_dir.h"

namespace arach::testing {

class Certificates {
 public:
  Certificates();
  bool ok() const { return ok_; }
  // Makes other-ca.pem, other-server.pem/.key and other-client.pem/.key (a second, unrelated CA).
  bool MakeOtherSet();
  std::string File(const std::string& name) const { return dir_.File(name); }
  std::string Read(const std::string& name) const;

 private:
  bool Make(const std::string& prefix);
  ScopedTempDir dir_;
  bool ok_ = false;
};

}  // namespace arach::testing
