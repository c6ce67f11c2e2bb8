// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/tls_session.h"

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <string_view>

#include "common/fileutil.h"
#include "common/flags.h"
#include "common/hex.h"
#include "common/log.h"

namespace mizarmp::client {
namespace {

// "mizarmp-tls-session 1 <binding length>\n<binding><session DER>"
constexpr std::string_view kMagic = "mizarmp-tls-session 1 ";
// A session is a few hundred bytes plus the server's certificate.
constexpr size_t kMaxFileBytes = 64 * 1024;

// Sessions older than this are removed when a new one is kept: no server accepts them (TLS 1.3
// caps a ticket's lifetime at 7 days, RFC 8446 4.6.1), and files of bindings that no longer
// exist (a rotated CA) would otherwise stay.
constexpr std::chrono::hours kMaxSessionAge{7 * 24};

// "<host>_<port>-<16 hex digits of the binding's SHA-256>": one file per server and binding, so
// configurations that share a server (other CAs, other client certificates) do not replace each
// other's sessions. Everything in the server's name but letters, digits, '.' and '-' becomes '_'.
std::string FileNameFor(const std::string& server, const std::string& binding) {
  std::string name = server;
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '-') c = '_';
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(binding.data(), binding.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    ERR_clear_error();
    size = 0;
  }
  name += '-';
  name += HexEncoded(digest, std::min(size, 8u));
  return name;
}

// Removes the sessions in `dir` that are older than kMaxSessionAge.
void RemoveExpiredSessions(const std::string& dir) {
  auto names = ListDir(dir);
  if (!names.ok()) return;
  const auto now = std::chrono::system_clock::now();
  for (const std::string& name : *names) {
    const std::string path = dir + "/" + name;
    const FileVersion version = VersionOf(path);
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(version.mtime_ns)));
    if (version.ino != 0 && now - written > kMaxSessionAge) ::unlink(path.c_str());
  }
}

// The context tag of the server's certificate in OpenSSL's SSL_SESSION encoding (ssl/ssl_asn1.c:
// "peer [3] EXPLICIT X509 OPTIONAL", unchanged since OpenSSL 0.9.8).
constexpr int kPeerCertificateTag = 3;

// `der` (an encoded SSL_SESSION) without the server's certificate, or "" when it does not have
// the expected shape. A resumed handshake never looks at the certificate (it was checked when
// the session was made, and the file's binding keeps the session to that server and trust), yet
// decoding it set up OpenSSL 3's key decoders: a sixth of a resumed ADD's instructions.
std::string WithoutPeerCertificate(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  long length = 0;
  int tag = 0;
  int cls = 0;
  if (ASN1_get_object(&p, &length, &tag, &cls, static_cast<long>(der.size())) !=
          V_ASN1_CONSTRUCTED ||
      tag != V_ASN1_SEQUENCE || cls != V_ASN1_UNIVERSAL) {
    ERR_clear_error();
    return "";
  }
  const unsigned char* const end = p + length;
  std::string fields;
  while (p < end) {
    const unsigned char* field = p;
    if ((ASN1_get_object(&p, &length, &tag, &cls, end - p) & 0x80) != 0) {
      ERR_clear_error();
      return "";
    }
    p += length;
    if (cls == V_ASN1_CONTEXT_SPECIFIC && tag == kPeerCertificateTag) continue;
    fields.append(reinterpret_cast<const char*>(field), static_cast<size_t>(p - field));
  }
  const int body = static_cast<int>(fields.size());
  const int total = ASN1_object_size(1, body, V_ASN1_SEQUENCE);
  if (total <= body) return "";
  std::string out(static_cast<size_t>(total), '\0');
  auto* q = reinterpret_cast<unsigned char*>(out.data());
  ASN1_put_object(&q, 1, body, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
  std::copy(fields.begin(), fields.end(), q);
  return out;
}

}  // namespace

TlsSessionFile::TlsSessionFile(const std::string& dir, const std::string& server,
                               std::string binding)
    : dir_(dir), path_(dir + "/" + FileNameFor(server, binding)), binding_(std::move(binding)) {}

std::optional<std::string> TlsSessionFile::ReadKept() const {
  auto content = ReadFile(path_);
  if (!content.ok() || content->size() > kMaxFileBytes) return std::nullopt;
  std::string_view text = *content;
  if (text.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  text.remove_prefix(kMagic.size());
  const size_t eol = text.find('\n');
  if (eol == std::string_view::npos) return std::nullopt;
  const auto parsed = ParseInt(text.substr(0, eol), 0, kMaxFileBytes);
  if (!parsed.ok()) return std::nullopt;
  const auto length = static_cast<size_t>(*parsed);
  text.remove_prefix(eol + 1);
  if (text.size() < length || text.substr(0, length) != binding_) return std::nullopt;
  return std::string(text.substr(length));
}

SSL_SESSION* TlsSessionFile::Load() const {
  const std::optional<std::string> der = ReadKept();
  if (!der || der->empty()) return nullptr;
  const auto* p = reinterpret_cast<const unsigned char*>(der->data());
  SSL_SESSION* session = d2i_SSL_SESSION(nullptr, &p, static_cast<long>(der->size()));
  if (session == nullptr || SSL_SESSION_is_resumable(session) != 1) {
    SSL_SESSION_free(session);
    ERR_clear_error();
    return nullptr;
  }
  return session;
}

void TlsSessionFile::Save(SSL_SESSION* session) const {
  if (const auto kept = ReadKept(); kept && kept->empty()) return;
  const int size = i2d_SSL_SESSION(session, nullptr);
  if (size <= 0 || static_cast<size_t>(size) > kMaxFileBytes) return;
  std::string der(static_cast<size_t>(size), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_SSL_SESSION(session, &p) != size) {
    ERR_clear_error();
    return;
  }
  const std::string stripped = WithoutPeerCertificate(der);
  Write(stripped.empty() ? der : stripped);
}

void TlsSessionFile::Refuse() const { Write(""); }

void TlsSessionFile::Write(const std::string& der) const {
  std::string content(kMagic);
  content += std::to_string(binding_.size()) + "\n" + binding_ + der;
  Status saved = MakeDirs(dir_, 0700);
  if (saved.ok()) saved = WriteFileAtomic(path_, content, 0600, Durability::kCache);
  if (!saved.ok()) {
    MZ_LOG(kDebug) << "TLS session not kept in " << path_ << ": " << saved.message();
  }
  RemoveExpiredSessions(dir_);
}

}  // namespace mizarmp::client
