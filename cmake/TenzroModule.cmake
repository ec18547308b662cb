# tenzro_o0_if_requested(<target>): with TENZRO_O0_IO_AND_TESTS, compiles the
# target at -O0 (target options come after CMAKE_CXX_FLAGS_<CONFIG>, so this
# wins over its -O level). Used for I/O, CLI and test code only; the compute
# and parsing modules keep the build type's optimisation.
function(tenzro_o0_if_requested target)
  if(TENZRO_O0_IO_AND_TESTS)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

# Precompiled headers (TENZRO_PCH, default OFF, see CMakeLists.txt): the third-party headers that
# dominate parse time, one header set per group of targets compiled with the
# same flags. The group's first target compiles the PCH and the others reuse
# it (REUSE_FROM), so each group builds it once. Flags must match within a
# group (clang rejects a PCH built with another -O level, sanitizer set or
# target ISA), hence the groups:
#   io    net, quic, node              json + Asio + Beast  (-O0 under TENZRO_O0_IO_AND_TESTS)
#   json  format, catalog, prepare,    json                 (the build type's -O)
#         swarm, dispatch
#   cli   the tenzro binary            json + CLI11         (no fuzzer coverage flags)
#   test  every test executable        json + GoogleTest/GoogleMock
#         (not tenzro_testutil: a library is -fPIC, an executable -fPIE)
# Files with their own ISA flags (*_avx2.cc, *_avx512.cc) never use a PCH.
set(TENZRO_PCH_COMMON <algorithm> <atomic> <chrono> <cstdint> <cstring> <functional> <map> <memory>
  <mutex> <optional> <string> <string_view> <thread> <unordered_map> <vector>
  <nlohmann/json.hpp> <fmt/core.h> <spdlog/spdlog.h>)
set(TENZRO_PCH_io ${TENZRO_PCH_COMMON} <boost/asio.hpp> <boost/beast/core.hpp> <boost/beast/http.hpp>)
set(TENZRO_PCH_json ${TENZRO_PCH_COMMON})
set(TENZRO_PCH_cli ${TENZRO_PCH_COMMON} <CLI/CLI.hpp>)
set(TENZRO_PCH_test ${TENZRO_PCH_COMMON} <gtest/gtest.h> <gmock/gmock.h>)

# tenzro_pch(<target> <group>): compiles <target> with <group>'s PCH.
function(tenzro_pch target group)
  if(NOT TENZRO_PCH)
    return()
  endif()
  if(TENZRO_CCACHE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # ccache needs clang's PCH without its build timestamp.
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
  get_property(donor GLOBAL PROPERTY TENZRO_PCH_DONOR_${group})
  if(donor)
    target_precompile_headers(${target} REUSE_FROM ${donor})
  else()
    target_precompile_headers(${target} PRIVATE ${TENZRO_PCH_${group}})
    set_property(GLOBAL PROPERTY TENZRO_PCH_DONOR_${group} ${target})
  endif()
endfunction()

# tenzro_module(<name> [DEPS targets...])
#
# Builds src/<name>/*.cc into the static library tenzro_<name>. ISA files, by
# target processor (TENZRO_ARCH, CMakeLists.txt), each built only there:
#   x86_64   *_avx2.cc with AVX2/FMA/F16C, *_avx512.cc with AVX-512 (BW/VL/VNNI)
#   aarch64  *_neon.cc (baseline armv8-a), *_dotprod.cc (armv8.2-a+dotprod),
#            *_i8mm.cc (armv8.2-a+dotprod+i8mm)
# The module chooses between them at run time (core/cpu.h); code outside these
# files must compile for every target.
# net, quic, node and the json-using modules listed above get a precompiled
# header.
# Modules are added in TENZRO_MODULES order (src/CMakeLists.txt), so a module
# may only link modules added before it: a DEPS entry tenzro_<m> that is not
# a target yet (a module later in the order, or a typo) stops the configure.
# scripts/check-deps checks the same edges against the #includes and
# docs/architecture.md.
function(tenzro_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  foreach(dep ${M_DEPS})
    if(dep MATCHES "^tenzro_[A-Za-z0-9_]+$" AND NOT TARGET ${dep})
      string(REPLACE ";" " " order "${TENZRO_MODULES}")
      message(FATAL_ERROR "module ${name} links ${dep}, which is not defined yet: a module may only link "
        "modules before it in TENZRO_MODULES (${order}; CMakeLists.txt)")
    endif()
  endforeach()
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  if(NOT TENZRO_ARCH STREQUAL "x86_64")
    list(FILTER srcs EXCLUDE REGEX "_(avx2|avx512)\\.cc$")
  endif()
  if(NOT TENZRO_ARCH STREQUAL "aarch64")
    list(FILTER srcs EXCLUDE REGEX "_(neon|dotprod|i8mm)\\.cc$")
  endif()
  if(NOT srcs)
    return()
  endif()
  add_library(tenzro_${name} STATIC ${srcs})
  target_include_directories(tenzro_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(tenzro_${name} PUBLIC ${M_DEPS})
  foreach(s ${srcs})
    if(s MATCHES "_avx2\\.cc$")
      set_source_files_properties(${s} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c" SKIP_PRECOMPILE_HEADERS ON)
    elseif(s MATCHES "_avx512\\.cc$")
      set_source_files_properties(${s} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni"
        SKIP_PRECOMPILE_HEADERS ON)
    elseif(s MATCHES "_dotprod\\.cc$")
      set_source_files_properties(${s} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod" SKIP_PRECOMPILE_HEADERS ON)
    elseif(s MATCHES "_i8mm\\.cc$")
      set_source_files_properties(${s} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm" SKIP_PRECOMPILE_HEADERS ON)
    elseif(s MATCHES "_neon\\.cc$")
      set_source_files_properties(${s} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
  if(name MATCHES "^(net|quic|node)$")
    tenzro_o0_if_requested(tenzro_${name})
    tenzro_pch(tenzro_${name} io)
  elseif(name MATCHES "^(format|catalog|prepare|swarm|dispatch)$")
    tenzro_pch(tenzro_${name} json)
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
  if(NOT TARGET tenzro)
    # No CLI in this build (TENZRO_MODULE_SET=lower): leave out the tests
    # that start it, named cli_test.cc / *_cli_test.cc.
    list(FILTER srcs EXCLUDE REGEX "(^|/|_)cli_test\\.cc$")
  endif()
  if(NOT srcs)
    return()
  endif()
  add_executable(tenzro_${name}_tests ${srcs})
  target_link_libraries(tenzro_${name}_tests PRIVATE ${M_DEPS} tenzro_testutil GTest::gtest_main GTest::gmock)
  if(TARGET tenzro)
    add_dependencies(tenzro_${name}_tests tenzro)
  endif()
  set_property(GLOBAL APPEND PROPERTY TENZRO_TEST_TARGETS tenzro_${name}_tests)
  tenzro_o0_if_requested(tenzro_${name}_tests)
  tenzro_pch(tenzro_${name}_tests test)
  gtest_discover_tests(tenzro_${name}_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 300 LABELS ${name})
endfunction()
