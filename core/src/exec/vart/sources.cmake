# The vart backend's sources, in one place for the two builds that compile them: this
# folder's dpushard_exec_vart (a build on the board, against the installed Vitis AI runtime)
# and the board's command line cross-built here (tools/board/, docs/aarch64.md).
set(DPUSHARD_VART_BACKEND_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/vart_backend.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_tensor_buffer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dpu_child.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dpu_child_main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dpu_spawn.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dpu_log.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dpu_query_xdputil.cpp)
