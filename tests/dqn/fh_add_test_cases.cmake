# fh_add_test_cases.cmake — one test binary, one ctest entry per case (issue 18: each
# DQN/PQN check its own entry, without a file each; the C side is tests/dqn/test_cases.h).
#
# fh_add_test_cases(BINARY SOURCE [SRC] [LABELS label...] [CASES case...]
#                   [GPU_CASES case...] [DEPENDS target...] [TIMEOUT seconds])
# builds SOURCE once, as fh_add_test does, into the file BINARY, and registers an entry
# BINARY_<case> running `BINARY <case>` for every case, labelled LABELS; GPU_CASES (those
# that skip, exit 77, without a GPU) are labelled gpu too. SRC puts src/ on the include
# path; DEPENDS builds those targets first (the foxhunt binary a test runs). Without an
# argument BINARY runs every case, as scripts/gpu-check.sh does.
# fh_add_test names a target after its ctest entry, so the target is BINARY_<first case>;
# its OUTPUT_NAME keeps the file BINARY.
include_guard(GLOBAL)

function(fh_add_test_cases binary source)
  cmake_parse_arguments(T "SRC" "TIMEOUT" "LABELS;CASES;GPU_CASES;DEPENDS" ${ARGN})
  set(all ${T_CASES} ${T_GPU_CASES})
  list(LENGTH all n)
  if(n EQUAL 0)
    message(FATAL_ERROR "fh_add_test_cases(${binary}): no CASES")
  endif()
  list(GET all 0 first)
  set(target ${binary}_${first})
  fh_add_test(${target} ${source} ARGS ${first})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${binary})
  if(T_SRC)
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  endif()
  if(T_DEPENDS)
    add_dependencies(${target} ${T_DEPENDS})
  endif()
  foreach(case IN LISTS all)
    set(name ${binary}_${case})
    if(NOT case STREQUAL first)
      add_test(NAME ${name} COMMAND ${target} ${case})
    endif()
    set(labels ${T_LABELS})
    if(case IN_LIST T_GPU_CASES)
      list(APPEND labels gpu)
    endif()
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${labels}")
    if(T_TIMEOUT)
      set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
    endif()
  endforeach()
endfunction()
