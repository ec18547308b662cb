# Third-party dependencies, all from Debian 12 packages (scripts/setup; the
# arm64 ones for the cross build: scripts/setup-arm64). TENZRO_MODULE_SET=lower
# looks only for what the lower modules and their tests use.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
if(TENZRO_MODULE_SET STREQUAL "lower")
  if(TENZRO_TESTS)
    pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)  # tests/testutil (Sha256Hex)
    find_package(GTest REQUIRED)
  endif()
else()
  find_package(CLI11 REQUIRED)
  find_package(Boost 1.74 REQUIRED)
  pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
  # OpenDHT: Debian's CMake config for it is broken; pkg-config plus the
  # targets of what its headers include (msgpack, jsoncpp, OpenSSL).
  pkg_check_modules(OPENDHT REQUIRED IMPORTED_TARGET opendht)
  find_package(msgpack REQUIRED)
  find_package(jsoncpp REQUIRED)
  find_package(OpenSSL REQUIRED)
  # QUIC (src/quic): ngtcp2 + its GnuTLS crypto backend; no CMake config shipped.
  pkg_check_modules(NGTCP2 REQUIRED IMPORTED_TARGET libngtcp2 libngtcp2_crypto_gnutls gnutls)
  # ICU (src/tokenizer): Unicode classes for the pre-tokenizer and NFC.
  pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
  if(TENZRO_TESTS)
    find_package(GTest REQUIRED)
  endif()
  if(TENZRO_BENCH)
    find_package(benchmark REQUIRED)
  endif()
endif()  # TENZRO_MODULE_SET

# BLAKE3: the official C sources, as Debian ships them in librust-blake3-dev.
file(GLOB TENZRO_BLAKE3_DIRS LIST_DIRECTORIES true /usr/share/cargo/registry/blake3-*/c)
list(SORT TENZRO_BLAKE3_DIRS)
list(POP_BACK TENZRO_BLAKE3_DIRS TENZRO_BLAKE3_DIR)
if(NOT TENZRO_BLAKE3_DIR OR NOT EXISTS "${TENZRO_BLAKE3_DIR}/blake3.c")
  message(FATAL_ERROR "BLAKE3 C sources not found: install librust-blake3-dev (scripts/setup)")
endif()
message(STATUS "BLAKE3 C sources: ${TENZRO_BLAKE3_DIR}")
# x86-64: the portable code plus the hand-written SSE2/SSE4.1/AVX2/AVX-512
# assembly, chosen at run time by blake3_dispatch.c. aarch64: portable + NEON
# (every ARMv8-A core has NEON). Elsewhere: portable only. The BLAKE3_NO_* /
# BLAKE3_USE_NEON macros tell blake3_dispatch.c (and blake3_impl.h, which
# blob/blake3.cc includes, hence PUBLIC) which implementations exist.
set(TENZRO_BLAKE3_SRCS ${TENZRO_BLAKE3_DIR}/blake3.c ${TENZRO_BLAKE3_DIR}/blake3_dispatch.c
  ${TENZRO_BLAKE3_DIR}/blake3_portable.c)
if(TENZRO_ARCH STREQUAL "x86_64")
  list(APPEND TENZRO_BLAKE3_SRCS
    ${TENZRO_BLAKE3_DIR}/blake3_sse2_x86-64_unix.S
    ${TENZRO_BLAKE3_DIR}/blake3_sse41_x86-64_unix.S
    ${TENZRO_BLAKE3_DIR}/blake3_avx2_x86-64_unix.S
    ${TENZRO_BLAKE3_DIR}/blake3_avx512_x86-64_unix.S)
  set(TENZRO_BLAKE3_DEFS)
elseif(TENZRO_ARCH STREQUAL "aarch64")
  list(APPEND TENZRO_BLAKE3_SRCS ${TENZRO_BLAKE3_DIR}/blake3_neon.c)
  set(TENZRO_BLAKE3_DEFS BLAKE3_USE_NEON=1 BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
else()
  set(TENZRO_BLAKE3_DEFS BLAKE3_USE_NEON=0 BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
endif()
add_library(tenzro_blake3 STATIC ${TENZRO_BLAKE3_SRCS})
target_compile_definitions(tenzro_blake3 PUBLIC ${TENZRO_BLAKE3_DEFS})
target_include_directories(tenzro_blake3 SYSTEM PUBLIC ${TENZRO_BLAKE3_DIR})
set_target_properties(tenzro_blake3 PROPERTIES C_STANDARD 11)
# The sanitizer flags are not wanted in hand-written assembly.
target_compile_options(tenzro_blake3 PRIVATE -w)
