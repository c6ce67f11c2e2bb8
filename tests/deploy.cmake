# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# deploy/ validated offline as `kubectl apply -k` would send it (kubectl kustomize renders it):
# Kubernetes' kinds against the API schema of the release the pinned kubernetes-models carries
# (1.27.1), the CSI-Addons kinds against tests/deploy/schemas, plus what an API server, kubelet
# or the csi-addons sidecar would reject that a schema cannot see, and the bounds rolling updates
# and node drains keep (tests/deploy/validate.cjs).
# The npm packages come from the committed lock file (npm ci), once per build directory.
set(mizarmp_deploy_modules ${CMAKE_CURRENT_BINARY_DIR}/deploy-validate)
add_test(NAME DeployManifests.NpmCi
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/run.sh npm-ci ${mizarmp_deploy_modules})
add_test(NAME DeployManifests.Validate
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/run.sh valid ${mizarmp_deploy_modules})
add_test(NAME DeployManifests.RefusesBrokenManifests
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/run.sh broken ${mizarmp_deploy_modules})
set_tests_properties(DeployManifests.NpmCi PROPERTIES LABELS integration TIMEOUT 300
                     FIXTURES_SETUP deploy_npm)
set_tests_properties(DeployManifests.Validate DeployManifests.RefusesBrokenManifests PROPERTIES
                     LABELS integration TIMEOUT 60 FIXTURES_REQUIRED deploy_npm)
