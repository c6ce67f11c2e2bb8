// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// An empty program: bench/CMakeLists.txt links it against growing sets of the plugin's shared
// libraries, so exec'ing it measures what loading (mapping, relocating, initialising) them costs.
int main() { return 0; }
