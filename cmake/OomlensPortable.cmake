# What the portable build leaves out or links in, decided before any find_package().
#
# OOMLENS_STATIC: one executable that runs on any Linux of its architecture with nothing
# installed (cluster nodes: no Qt, no Python headers, no root). glibc, libstdc++, libgcc and zlib
# are linked in. A static glibc still loads shared objects for the name service (getpwnam,
# getaddrinfo) and for character-set conversion: the command line calls no name-service
# function (the linker warns when one is linked, and with OOMLENS_WERROR the warning fails the
# link), and the conversion code (dlopen, iconv) is there only for libstdc++'s named locales,
# which nothing asks for: the program runs in the "C" locale whatever LANG says (the node test
# runs it with a LANG whose files are not in its root).
# OOMLENS_EMBED_PYTHON: the embedded-Python pickle decoder, a fallback for pickles the native
# decoder does not support. It needs libpython at run time, so the portable build leaves it out;
# the native decoder is the default everywhere.
option(OOMLENS_STATIC "Link the oomlens executable statically (the portable build)" OFF)
option(OOMLENS_EMBED_PYTHON "Build the embedded-Python pickle decoder (links libpython)" ON)

if(OOMLENS_STATIC)
    if(OOMLENS_BUILD_GUI)
        message(FATAL_ERROR "OOMLENS_STATIC builds the command line only: set OOMLENS_BUILD_GUI=OFF")
    endif()
    if(OOMLENS_EMBED_PYTHON)
        message(FATAL_ERROR "OOMLENS_STATIC cannot embed Python: set OOMLENS_EMBED_PYTHON=OFF")
    endif()
    # FindZLIB picks libz.a over libz.so (CMake 3.24+).
    set(ZLIB_USE_STATIC_LIBS ON)
    # -static pulls libstdc++ and libgcc in as archives too; -static-pie is not used because
    # older kernels' and qemu-user's loaders handle a plain static executable everywhere.
    add_link_options(-static)
    if(OOMLENS_WERROR)
        add_link_options(-Wl,--fatal-warnings)
    endif()
    # The same numbers on every architecture: aarch64 compilers fuse a*b+c into one rounding
    # by default, x86-64's baseline has no such instruction; the desktop build's JSON is the check.
    add_compile_options(-ffp-contract=off)
    # Keep only the functions the executable reaches: a smaller file to copy to every node.
    add_compile_options(-ffunction-sections -fdata-sections)
    add_link_options(-Wl,--gc-sections)
endif()
