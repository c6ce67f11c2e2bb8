// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/clients.h"

#include "common/log.h"
#include "fence/cidrset.h"

namespace mizarmp::fence {

Cidr HostCidr(const IpAddress& ip) { return Cidr(ip, ip.bits()); }

Result<std::string> AskedNode(const google::protobuf::Map<std::string, std::string>& parameters) {
  auto it = parameters.find(kHostIdParameter);
  if (it == parameters.end()) return std::string();
  if (it->second.empty()) {
    return InvalidArgumentError(std::string("parameters[\"") + kHostIdParameter +
                                "\"]: must not be empty");
  }
  return it->second;
}

bool Wanted(const std::string& only, const std::string& host) {
  return only.empty() || host == only;
}

FenceClientSources::FenceClientSources(
    std::string state_dir, std::string host_id,
    std::map<std::string, std::vector<std::string>> node_addresses)
    : state_dir_(std::move(state_dir)),
      host_id_(std::move(host_id)),
      node_addresses_(std::move(node_addresses)) {}

Status FenceClientSources::AddRecorded(const std::string& only, NodeAddresses& by_node) {
  auto listed = records_.Snapshot();
  if (!listed.ok()) {
    return UnavailableError("reading the plugin's attachment records under \"" + state_dir_ +
                            "\": " + listed.status().message());
  }
  for (const auto& network : *listed) {
    for (const records::Record& r : *network) {
      const std::string& host = r.host_id.empty() ? host_id_ : r.host_id;
      if (host.empty()) {
        MZ_LOG(kDebug) << "record " << r.network << "/" << r.container_id
                       << " has no host id and no hostId is configured; skipped";
        continue;
      }
      if (!Wanted(only, host)) continue;
      for (const auto& ip : r.ips) {
        auto c = Cidr::Parse(ip.address, /*allow_bare=*/true);
        if (!c.ok()) continue;
        by_node[host].push_back(HostCidr(c->address()));
      }
      if (r.ips.empty()) by_node[host];  // the node exists even before its pod has an address
    }
  }
  return Status::Ok();
}

void FenceClientSources::AddConfigured(const std::string& only, NodeAddresses& by_node) const {
  for (const auto& [host, list] : node_addresses_) {
    if (!Wanted(only, host)) continue;
    for (const auto& text : list) {
      auto c = Cidr::Parse(text, /*allow_bare=*/true);
      if (!c.ok()) continue;  // validated with the config
      by_node[host].push_back(c->has_host_bits() ? HostCidr(c->address()) : *c);
    }
    by_node[host];
  }
}

std::vector<FenceClient> MergedClients(const NodeAddresses& by_node) {
  std::vector<FenceClient> out;
  for (const auto& [host, cidrs] : by_node) {
    FenceClient c;
    c.id = host;
    c.addresses = MergeCidrs(cidrs);
    if (c.addresses.empty()) continue;  // ClientDetails.addresses is required
    out.push_back(std::move(c));
  }
  return out;
}

void FillResponse(const std::vector<FenceClient>& clients,
                  ::fence::GetFenceClientsResponse* response) {
  for (const auto& c : clients) {
    auto* d = response->add_clients();
    d->set_id(c.id);
    for (const auto& a : c.addresses) d->add_addresses()->set_cidr(CanonicalCidr(a));
  }
}

}  // namespace mizarmp::fence
