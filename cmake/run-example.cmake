# Runs one C example as a ctest test (see CMakeLists.txt, "examples"):
#   cmake -DEXAMPLE=<exe> -DARGS=<args> -DSOURCE_DIR=<repo> [-DEMULATOR=qemu|-cpu|max...] -P run-example.cmake
# ARGS is one string split like a shell command line; @TESTDATA@ becomes $EDGELLM_TESTDATA
# (default: shared/ next to the repository), read when the test runs, not when it is configured.
if(DEFINED ENV{EDGELLM_TESTDATA} AND NOT "$ENV{EDGELLM_TESTDATA}" STREQUAL "")
  set(testdata "$ENV{EDGELLM_TESTDATA}")
else()
  get_filename_component(testdata "${SOURCE_DIR}/../shared" ABSOLUTE)
endif()
string(REPLACE "@TESTDATA@" "${testdata}" args "${ARGS}")
separate_arguments(args UNIX_COMMAND "${args}")
string(REPLACE ";" " " shown "${args}")
message(STATUS "run: ${EXAMPLE} ${shown}")
set(emulator "")
if(EMULATOR)
  string(REPLACE "|" ";" emulator "${EMULATOR}")
endif()
execute_process(COMMAND ${emulator} "${EXAMPLE}" ${args} RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${EXAMPLE} exited with ${rc}")
endif()
