# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# relay/: the node's Mizar-MP relay over its unix socket, in front of the in-process mock served
# over TLS (loopback, agent disabled, no root): relaying, refusals, hostile clients, Stop().
mizarmp_add_test(NAME relay_test SOURCES integration/relay_test.cc
                 LIBS mizarmp_relay mizarmp_client mizarmp_mock Boost::headers
                 LABELS "integration;concurrency" TIMEOUT 120)
# The Mizar-MP client through the relay, as a plugin process sees it: no TLS of its own through
# a relay, and directly (its own TLS) without one, past one for another controller or one that
# cannot verify the controller; and mizarmp-addons' node mode serving it.
mizarmp_add_test(NAME client_relay_test SOURCES integration/client_relay_test.cc
                 LIBS mizarmp_relay mizarmp_client mizarmp_mock
                 LABELS "integration;concurrency" TIMEOUT 120)
add_dependencies(client_relay_test mizarmp-addons)
# What the relay's options refuse (RelayOptions::Validate), as Relay::Start and the server's
# configuration see it: no socket, no server, no root.
mizarmp_add_test(NAME relay_options_test SOURCES unit/relay_options_test.cc
                 LIBS mizarmp_relay LABELS unit)
