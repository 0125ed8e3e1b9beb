# ctest driver for one header release (tests/vart/CMakeLists.txt): configures and builds the
# compile-only project in this folder against HEADERS. Usage:
#   cmake -DHEADERS=... -DBINARY_DIR=... -DCXX=... -DLAUNCHER=... -P check.cmake
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${BINARY_DIR} -G Ninja
          -DDPUSHARD_VART_HEADERS=${HEADERS} -DCMAKE_CXX_COMPILER=${CXX}
          -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}
  RESULT_VARIABLE configured OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "configuring against ${HEADERS} failed:\n${log}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR}
                RESULT_VARIABLE built OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "the vart backend does not compile against ${HEADERS}:\n${log}")
endif()
message(STATUS "the vart backend compiles against ${HEADERS} with -Werror")
