// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// How the plugin names one attachment (network, container, interface) at the controller: the
// port id it chooses and the description it gives the port.
#pragma once

#include <string>
#include <string_view>

namespace mizarmp::cni {

// The port id of an attachment: UUIDv5(kPortIdNamespace, "<network>/<containerId>/<ifname>").
// Stable across invocations, distinct per network, container and interface.
std::string PortIdFor(std::string_view network, std::string_view container_id,
                      std::string_view ifname);

// "cni <containerId>, ns:<netns>, host:<hostId>, net:<network>, if:<ifname>[, pod:<ns>/<name>]"
// GC finds this network's ports at the controller by the "net:<network>," part.
std::string PortDescription(std::string_view container_id, std::string_view netns,
                            std::string_view host_id, std::string_view network,
                            std::string_view ifname, std::string_view pod_namespace = {},
                            std::string_view pod_name = {});

}  // namespace mizarmp::cni
