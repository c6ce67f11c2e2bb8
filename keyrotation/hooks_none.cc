// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// RotationHooksFromEnvironment() of the production binary: no hooks, whatever the environment
// holds, so no variable can make mizarmp-addons crash itself or weaken a keyslot.
#include "keyrotation/hooks.h"

namespace mizarmp::keyrotation {

Result<std::unique_ptr<RotationHooks>> RotationHooksFromEnvironment() {
  return std::unique_ptr<RotationHooks>();
}

}  // namespace mizarmp::keyrotation
