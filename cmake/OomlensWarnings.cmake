# Project-wide strictness, applied per target so third-party headers stay quiet.
function(oomlens_strict target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
    target_compile_definitions(${target} PRIVATE QT_NO_CAST_FROM_ASCII QT_USE_QSTRINGBUILDER
                                                )
endfunction()
