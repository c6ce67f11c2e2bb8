// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/attachment.h"

#include "common/uuid.h"

namespace mizarmp::cni {

std::string PortIdFor(std::string_view network, std::string_view container_id,
                      std::string_view ifname) {
  std::string name;
  name.reserve(network.size() + container_id.size() + ifname.size() + 2);
  name.append(network).append("/").append(container_id).append("/").append(ifname);
  auto id = UuidV5(kPortIdNamespace, name);
  // The namespace is a constant valid UUID, so this cannot fail.
  return id.ok() ? *id : std::string();
}

std::string PortDescription(std::string_view container_id, std::string_view netns,
                            std::string_view host_id, std::string_view network,
                            std::string_view ifname, std::string_view pod_namespace,
                            std::string_view pod_name) {
  std::string d = "cni ";
  d.append(container_id).append(", ns:").append(netns).append(", host:").append(host_id);
  d.append(", net:").append(network).append(", if:").append(ifname);
  if (!pod_namespace.empty() || !pod_name.empty()) {
    d.append(", pod:").append(pod_namespace).append("/").append(pod_name);
  }
  return d;
}

}  // namespace mizarmp::cni
