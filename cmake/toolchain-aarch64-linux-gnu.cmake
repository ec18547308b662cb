# Cross build for 64-bit ARM Linux from an x86-64 Debian 12 host
# (scripts/setup-arm64 installs what it names; scripts/test-arm64 uses it):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
#         -DTENZRO_MODULE_SET=lower
# Compiler: Debian's g++-aarch64-linux-gnu. Libraries: the :arm64 multiarch
# packages (/usr/lib/aarch64-linux-gnu) and, for linking, the cross libc
# (/usr/aarch64-linux-gnu). Test executables run under qemu user-mode
# emulation, so gtest_discover_tests and ctest work as on a native build;
# QEMU_CPU in the environment picks the emulated core (scripts/test-arm64).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)

# "/" for the multiarch packages (<root>/usr/lib/aarch64-linux-gnu, headers in
# /usr/include); the cross toolchain's own sysroot first.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (libsodium) must see the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# No "-L /usr/aarch64-linux-gnu": the :arm64 library packages pull in Debian's
# arm64 libc (libc6:arm64, /lib/aarch64-linux-gnu), which the binaries then
# load; with -L, qemu would pair the cross toolchain's ld.so (another Debian
# revision of glibc) with that libc.so, and the first pthread_create spins
# forever. Without it, ld.so and libc.so both come from libc6:arm64.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
