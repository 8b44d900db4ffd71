# Cross-building for 64-bit Arm Linux (Grace, GH200 nodes) with Debian's toolchain:
#   apt-get install g++-aarch64-linux-gnu
#   dpkg --add-architecture arm64 && apt-get update && apt-get install zlib1g-dev:arm64
# Used by the `portable-aarch64` preset. The compiler brings its own C library
# (/usr/aarch64-linux-gnu); zlib comes from Debian's multiarch directory.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# find_library() looks in /usr/lib/aarch64-linux-gnu (multiarch), never in the host's
# /usr/lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The host's libraries are x86_64: an aarch64 link must never see them.
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
# Built programs run under qemu-user when a command asks to run them (the tests use it by name).
find_program(OOMLENS_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64)
if(OOMLENS_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${OOMLENS_QEMU_AARCH64})
endif()
