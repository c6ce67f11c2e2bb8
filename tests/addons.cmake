# mizarmp-addons: configuration (unit), the Identity service and the server over a real gRPC
# unix socket with the in-process mock (unit: loopback only, no root), and an independent
# Python gRPC client generating its stubs from proto/ at test time (python).
mizarmp_add_test(NAME addons_config_test SOURCES unit/addons_config_test.cc
                 LIBS mizarmp_fence LABELS unit)
mizarmp_add_test(NAME addons_identity_test SOURCES unit/addons_identity_test.cc
                 LIBS mizarmp_fence mizarmp_mock LABELS unit)
target_compile_definitions(addons_identity_test PRIVATE
  MIZARMP_VERSION="${PROJECT_VERSION}" MIZARMP_GIT_COMMIT="${MIZARMP_GIT_COMMIT}")
# The binary is what the subprocess tests run.
add_dependencies(addons_identity_test mizarmp-addons)
# grpc.health.v1.Health (fence/health.h): Check, Watch, shutdown with open watches, no
# callback-queue threads, in process and in the binary (unit: loopback only, no root).
mizarmp_add_test(NAME addons_health_test SOURCES unit/addons_health_test.cc
                 LIBS mizarmp_fence mizarmp_mock LABELS unit TIMEOUT 120)
add_dependencies(addons_health_test mizarmp-addons)

# The Python tests need Debian's python3-grpcio and python3-grpc-tools. The first python3 on
# PATH may be another interpreter (pyenv, venv) without them, so pick one that has both.
if(NOT MIZARMP_PYTHON_GRPC)
  foreach(candidate /usr/bin/python3 python3)
    find_program(mizarmp_py_candidate NAMES ${candidate} NO_CACHE)
    if(mizarmp_py_candidate)
      execute_process(COMMAND ${mizarmp_py_candidate} -c "import grpc, grpc_tools.protoc"
                      RESULT_VARIABLE mizarmp_py_rc OUTPUT_QUIET ERROR_QUIET)
      if(mizarmp_py_rc EQUAL 0)
        set(MIZARMP_PYTHON_GRPC ${mizarmp_py_candidate} CACHE FILEPATH
            "python3 with grpcio and grpc_tools, for the Python gRPC tests")
        break()
      endif()
    endif()
    unset(mizarmp_py_candidate)
  endforeach()
endif()
if(MIZARMP_PYTHON_GRPC)
  add_test(NAME python_identity
           COMMAND ${MIZARMP_PYTHON_GRPC} -m unittest -v test_identity
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python_identity PROPERTIES
    LABELS python TIMEOUT 180
    ENVIRONMENT "MIZARMP_BIN_DIR=${PROJECT_BINARY_DIR}/bin;MIZARMP_PROTO_DIR=${MIZARMP_PROTO_DIR};PYTHONDONTWRITEBYTECODE=1")
  # grpc.health.v1.Health with stubs from proto/health.proto: Check per mode, Watch, SIGTERM.
  add_test(NAME python_health
           COMMAND ${MIZARMP_PYTHON_GRPC} -m unittest -v test_health
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python_health PROPERTIES
    LABELS python TIMEOUT 180
    ENVIRONMENT "MIZARMP_BIN_DIR=${PROJECT_BINARY_DIR}/bin;MIZARMP_PROTO_DIR=${MIZARMP_PROTO_DIR};PYTHONDONTWRITEBYTECODE=1")
else()
  message(WARNING "No python3 with grpcio and grpc_tools (Debian: python3-grpcio "
                  "python3-grpc-tools): the Python gRPC tests are not registered")
endif()

# fence/: CIDR parsing and merging, the SQLite fence store across reopen (unit).
mizarmp_add_test(NAME fence_cidrset_test SOURCES unit/fence_cidrset_test.cc
                 LIBS mizarmp_fence LABELS unit)
mizarmp_add_test(NAME fence_store_test SOURCES unit/fence_store_test.cc
                 LIBS mizarmp_fence sqlite3 LABELS unit)
# The FenceController against the in-process mizarmp-mock (loopback HTTP, no agent, no root).
mizarmp_add_test(NAME fence_service_test SOURCES unit/fence_service_test.cc
                 LIBS mizarmp_fence mizarmp_fence_records mizarmp_mock LABELS unit TIMEOUT 180)

# The FenceController through the independent Python client: every RPC over the unix socket
# and over (mutual) TLS, the error scheme, kill -9 durability (mizarmp-mock without agent).
if(MIZARMP_PYTHON_GRPC)
  add_test(NAME python_fence
           COMMAND ${MIZARMP_PYTHON_GRPC} -m unittest -v test_fence
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python_fence PROPERTIES
    LABELS python TIMEOUT 300
    ENVIRONMENT "MIZARMP_BIN_DIR=${PROJECT_BINARY_DIR}/bin;MIZARMP_PROTO_DIR=${MIZARMP_PROTO_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()

# FenceController end to end (root, real netns): mizarmp-mock with its agent and mizarmp-addons
# as processes, the real plugin putting pods of two nodes into namespaces.
if(TARGET mizarmp AND NOT TARGET fence_e2e_test)
  mizarmp_add_test(NAME fence_e2e_test SOURCES integration/fence_e2e_test.cc
    LIBS mizarmp_client mizarmp_proto mizarmp_common nlohmann_json::nlohmann_json
    LABELS "netns;root" TIMEOUT 300)
  add_dependencies(fence_e2e_test mizarmp mizarmp-mock mizarmp-addons)
endif()
# GetFenceClients' cache of the plugin's records (a directory is re-read only when it changed).
mizarmp_add_test(NAME fence_record_cache_test SOURCES unit/fence_record_cache_test.cc
                 LIBS mizarmp_fence LABELS unit)
