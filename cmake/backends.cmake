# Backends join a program by declaring themselves, not by edits elsewhere (docs/extending.md,
# "A backend").
#
# dpushard_backend(NAME name LIBRARY target REGISTER function HEADER header)
#   In a backend folder's CMakeLists.txt, first thing (before any return() for a missing
#   dependency): the backend `name` is the library `target`, and `function()` (declared in
#   `header`, a name inside namespace dpushard) adds it to the registry. Folders under
#   core/src/exec/ that call it are added by dpushard_add_backend_folders().
#
# dpushard_builtin_backends(TARGET target [LIKE other] [REPLACE name=library ...])
#   A static library `target` whose register_builtin_backends() (dpushard/exec/builtin_backends.hpp)
#   registers every declared backend whose library this build has, in declaration order: its
#   source is generated from core/src/exec/builtin/builtin_backends.cpp.in and it links those
#   libraries. LIKE: the backends `other` (made by this function) was given, not every backend
#   declared so far (a test-only backend declared in between stays out). REPLACE: backend
#   `name` from `library` instead of its own (tests/vart: vart on the VART double; tools/board:
#   vart against the board's runtime), also where its own was not built.

set(DPUSHARD_BUILTIN_BACKENDS_TEMPLATE
    ${CMAKE_CURRENT_LIST_DIR}/../core/src/exec/builtin/builtin_backends.cpp.in)

function(dpushard_backend)
  cmake_parse_arguments(ARG "" "NAME;LIBRARY;REGISTER;HEADER" "" ${ARGN})
  foreach(key NAME LIBRARY REGISTER HEADER)
    if(NOT ARG_${key})
      message(FATAL_ERROR "dpushard_backend: ${key} is missing (${CMAKE_CURRENT_LIST_FILE})")
    endif()
  endforeach()
  get_property(names GLOBAL PROPERTY DPUSHARD_BACKENDS)
  if(NOT ARG_NAME IN_LIST names)
    set_property(GLOBAL APPEND PROPERTY DPUSHARD_BACKENDS ${ARG_NAME})
  endif()
  foreach(key LIBRARY REGISTER HEADER)
    set_property(GLOBAL PROPERTY DPUSHARD_BACKEND_${ARG_NAME}_${key} ${ARG_${key}})
  endforeach()
endfunction()

# dpushard_add_backend_folders(DIR): add_subdirectory() for every folder of DIR whose
# CMakeLists.txt declares a backend, in name order; a new folder reconfigures the build.
function(dpushard_add_backend_folders dir)
  file(GLOB lists CONFIGURE_DEPENDS ${dir}/*/CMakeLists.txt)
  list(SORT lists)
  foreach(list_file ${lists})
    file(STRINGS ${list_file} declares REGEX "^dpushard_backend\\(")
    if(declares)
      get_filename_component(folder ${list_file} DIRECTORY)
      add_subdirectory(${folder})
    endif()
  endforeach()
endfunction()

function(dpushard_builtin_backends)
  cmake_parse_arguments(ARG "" "TARGET;LIKE" "REPLACE" ${ARGN})
  if(ARG_LIKE)
    get_target_property(names ${ARG_LIKE} DPUSHARD_BACKENDS)
  else()
    get_property(names GLOBAL PROPERTY DPUSHARD_BACKENDS)
  endif()
  set(includes "")
  set(calls "")
  set(libraries "")
  foreach(name ${names})
    get_property(library GLOBAL PROPERTY DPUSHARD_BACKEND_${name}_LIBRARY)
    foreach(replacement ${ARG_REPLACE})
      if(replacement MATCHES "^${name}=(.+)$")
        set(library ${CMAKE_MATCH_1})
      endif()
    endforeach()
    if(NOT TARGET ${library})
      continue()  # declared, not built here: the registry still knows its description
    endif()
    get_property(header GLOBAL PROPERTY DPUSHARD_BACKEND_${name}_HEADER)
    get_property(register GLOBAL PROPERTY DPUSHARD_BACKEND_${name}_REGISTER)
    string(APPEND includes "#include \"${header}\"\n")
    string(APPEND calls "  ${register}();  // ${name}, from ${library}\n")
    list(APPEND libraries ${library})
  endforeach()
  set(TARGET ${ARG_TARGET})
  set(INCLUDES ${includes})
  set(CALLS ${calls})
  set(source ${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}/builtin_backends.cpp)
  configure_file(${DPUSHARD_BUILTIN_BACKENDS_TEMPLATE} ${source} @ONLY)
  add_library(${ARG_TARGET} STATIC ${source})
  target_link_libraries(${ARG_TARGET} PUBLIC dpushard_exec ${libraries})
  set_target_properties(${ARG_TARGET} PROPERTIES DPUSHARD_BACKENDS "${names}")
  dpushard_set_warnings(${ARG_TARGET})
endfunction()
