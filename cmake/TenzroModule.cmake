# tenzro_o0_if_requested(<target>): with TENZRO_O0_IO_AND_TESTS, compiles the
# target at -O0 (target options come after CMAKE_CXX_FLAGS_<CONFIG>, so this
# wins over its -O level). Used for I/O, CLI and test code only; the compute
# and parsing modules keep the build type's optimisation.
function(tenzro_o0_if_requested target)
  if(TENZRO_O0_IO_AND_TESTS)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

# tenzro_module(<name> [DEPS targets...])
#
# Builds src/<name>/*.cc into the static library tenzro_<name>. Files named
# *_avx2.cc are compiled with AVX2/FMA/F16C, *_avx512.cc with AVX-512
# (BW/VL/VNNI); the module chooses between them at run time (core/cpu.h).
function(tenzro_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  if(NOT srcs)
    return()
  endif()
  add_library(tenzro_${name} STATIC ${srcs})
  target_include_directories(tenzro_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(tenzro_${name} PUBLIC ${M_DEPS})
  foreach(s ${srcs})
    if(s MATCHES "_avx2\\.cc$")
      set_source_files_properties(${s} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    elseif(s MATCHES "_avx512\\.cc$")
      set_source_files_properties(${s} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni")
    endif()
  endforeach()
  if(name MATCHES "^(net|quic|node)$")
    tenzro_o0_if_requested(tenzro_${name})
  endif()
endfunction()

# tenzro_test_module(<name> [DEPS targets...])
# Builds tests/<name>/*_test.cc into tenzro_<name>_tests (one of the targets
# the `tenzro_tests` target builds) and registers each
# GoogleTest case with CTest. Tests find golden data and the built CLI
# through tenzro_testutil (testutil::DataPath, TenzroBin): no absolute path is
# compiled into the test objects themselves (see tests/CMakeLists.txt).
function(tenzro_test_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(tenzro_${name}_tests ${srcs})
  target_link_libraries(tenzro_${name}_tests PRIVATE ${M_DEPS} tenzro_testutil GTest::gtest_main GTest::gmock)
  add_dependencies(tenzro_${name}_tests tenzro)
  set_property(GLOBAL APPEND PROPERTY TENZRO_TEST_TARGETS tenzro_${name}_tests)
  tenzro_o0_if_requested(tenzro_${name}_tests)
  gtest_discover_tests(tenzro_${name}_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 300 LABELS ${name})
endfunction()
