# cni: the CNI protocol pieces (unit) and the plugin's commands run in-process against the
# in-process mock with its agent disabled (no root, no netns).
foreach(t config env version result errors records)
  mizarmp_add_test(NAME cni_${t}_test SOURCES unit/cni_${t}_test.cc
                   LIBS mizarmp_cni LABELS unit)
endforeach()
mizarmp_add_test(NAME cni_commands_test SOURCES unit/cni_commands_test.cc
                 LIBS mizarmp_cni mizarmp_mock LABELS unit)
