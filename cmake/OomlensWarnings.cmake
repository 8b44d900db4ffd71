# Project-wide strictness, applied per target so third-party headers stay quiet.
# CI turns warnings into errors (scripts/quickstart.sh passes OOMLENS_WERROR=ON when CI=true), so a
# new warning fails the build that introduced it instead of piling up.
option(OOMLENS_WERROR "Treat compiler warnings in oomlens's own targets as errors" OFF)

function(oomlens_strict target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
    if(OOMLENS_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
    # Qt strings only from explicit conversions (QStringLiteral, QLatin1String, fromUtf8): no
    # silent Latin-1/UTF-8 guesses; and `a + b + c` builds one QString instead of temporaries.
    target_compile_definitions(${target} PRIVATE QT_NO_CAST_FROM_ASCII QT_USE_QSTRINGBUILDER)
endfunction()
