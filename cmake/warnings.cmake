# Warning flags applied to every dpushard target through dpushard_set_warnings().
function(dpushard_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wconversion -Wsign-conversion -Wnull-dereference -Wdouble-promotion
    -Wformat=2 -Wimplicit-fallthrough)
  # GCC 12 at -O3 reports impossible memcpy overlaps inside std::string's operator+
  # (GCC bug 105329) and null dereferences inside libstdc++'s streambuf whenever an
  # istreambuf_iterator is inlined: false positives in the standard library, not in our code;
  # keep them from burying real warnings and failing -Werror builds.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-null-dereference)
  endif()
  if(DPUSHARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
