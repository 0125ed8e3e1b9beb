# Warning flags applied to every dpushard target through dpushard_set_warnings().
function(dpushard_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wconversion -Wsign-conversion -Wnull-dereference -Wdouble-promotion
    -Wformat=2 -Wimplicit-fallthrough)
  if(DPUSHARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
