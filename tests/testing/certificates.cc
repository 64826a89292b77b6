#include "tests/testing/certificates.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/core/mapped_file.h"

namespace arach::testing {

Certificates::Certificates() { ok_ = Make(""); }

bool Certificates::MakeOtherSet() { return Make("other-"); }

bool Certificates::Make(const std::string& prefix) {
  const std::string script = dir_.File(prefix + "make-certs.sh");
  std::ofstream(script) << "set -e\ncd \"$(dirname \"$0\")\"\np=" << prefix << "\n"
                        << "openssl req -x509 -newkey rsa:2048 -nodes -keyout ${p}ca.key -out ${p}ca.pem -days 2 -subj /CN=arach-test-${p}ca\n"
                        << "for who in server client; do\n"
                        << "  openssl req -newkey rsa:2048 -nodes -keyout $p$who.key -out $p$who.csr -subj /CN=$who\n"
                        << "  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > $p$who.ext\n"
                        << "  openssl x509 -req -in $p$who.csr -CA ${p}ca.pem -CAkey ${p}ca.key -CAcreateserial -out $p$who.pem -days 2 "
                           "-extfile $p$who.ext\n"
                        << "done\n";
  return std::system(("bash " + script + " > " + dir_.File(prefix + "openssl.log") + " 2>&1").c_str()) == 0 &&
         std::filesystem::exists(dir_.File(prefix + "client.pem"));
}

std::string Certificates::Read(const std::string& name) const {
  absl::StatusOr<std::string> text = ReadFileToString(File(name));
  return text.ok() ? *text : std::string();
}

}  // namespace arach::testing
