# The engine (core/, parsers/, opening/) is the C++ standard library, nlohmann/json and zlib, so
# that the command line builds where Qt is not installed (a static binary for cluster nodes). Qt
# belongs to the front ends (views/, app/), which link the engine. This fails the configuration
# when an engine target links Qt, and tests/CMakeLists.txt adds engine/qt_free, which fails when
# an engine source includes a Qt header (cmake/CheckEngineQtFree.cmake).

# Every library `target` links, directly or through the project's own targets.
function(oomlens_linked_libraries target out)
    set(seen "")
    set(pending ${target})
    while(pending)
        list(POP_FRONT pending current)
        # A static library's private dependencies are listed as $<LINK_ONLY:...>; other generator
        # expressions stay as written, and naming Qt in one fails too.
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" current "${current}")
        if(current IN_LIST seen)
            continue()
        endif()
        list(APPEND seen ${current})
        if(NOT TARGET ${current})
            continue()
        endif()
        get_target_property(aliased ${current} ALIASED_TARGET)
        get_target_property(imported ${current} IMPORTED)
        if(imported AND NOT aliased)
            continue() # a third-party library: its own dependencies are not ours to judge
        endif()
        foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
            get_target_property(libraries ${current} ${property})
            if(libraries)
                list(APPEND pending ${libraries})
            endif()
        endforeach()
    endwhile()
    set(${out} ${seen} PARENT_SCOPE)
endfunction()

function(oomlens_assert_engine_qt_free)
    foreach(target ${ARGN})
        oomlens_linked_libraries(${target} libraries)
        foreach(library ${libraries})
            if(library MATCHES "Qt[0-9]*::|Qt[0-9]*Core|^Qt[0-9]*$")
                message(FATAL_ERROR "${target} links ${library}: the engine libraries (core, parsers, opening) "
                                    "must not use Qt; convert at the front end's call instead")
            endif()
        endforeach()
    endforeach()
endfunction()
