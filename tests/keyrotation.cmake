# keyrotation/: LUKS2 key rotation on image files made with libcryptsetup (unit: the library
# and the service in-process), the real mizarmp-addons --mode node process killed after each
# rotation step (integration), and the independent Python gRPC client (python, registered in
# addons.cmake's interpreter check below).
mizarmp_add_test(NAME keyrot_test SOURCES unit/keyrot_test.cc
                 LIBS mizarmp_keyrotation LABELS unit TIMEOUT 180)
mizarmp_add_test(NAME keyrot_server_test SOURCES integration/keyrot_server_test.cc
                 LIBS mizarmp_keyrotation mizarmp_fence LABELS integration TIMEOUT 240)
add_dependencies(keyrot_server_test mizarmp-addons)

# The Python client (MIZARMP_PYTHON_GRPC is found by addons.cmake, included before this file).
if(MIZARMP_PYTHON_GRPC)
  add_test(NAME python_keyrotation
           COMMAND ${MIZARMP_PYTHON_GRPC} -m unittest -v test_keyrotation
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python_keyrotation PROPERTIES
    LABELS python TIMEOUT 180
    ENVIRONMENT "MIZARMP_BIN_DIR=${PROJECT_BINARY_DIR}/bin;MIZARMP_PROTO_DIR=${MIZARMP_PROTO_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()
