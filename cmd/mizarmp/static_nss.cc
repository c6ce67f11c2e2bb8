// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Linked into the static plugin only (MIZARMP_STATIC_PLUGIN). A static glibc still reads
// /etc/nsswitch.conf and dlopens the NSS module of every service named there that it does not
// carry (libnss_systemd, libnss_sss, libnss_mymachines, ...): the host's modules, built for the
// host's glibc, which need not be the one inside this binary and may crash it. The services
// "files" (/etc/hosts) and "dns" (/etc/resolv.conf) are built into glibc since 2.34, so host
// lookups are pinned to them before main() runs and before any lookup: no module is ever loaded,
// and a host name in mpurl resolves on any host (and in an empty root with only /etc/hosts).
#include <nss.h>

namespace {

[[gnu::constructor]] void UseOnlyBuiltInHostLookups() {
  __nss_configure_lookup("hosts", "files dns");
}

}  // namespace
