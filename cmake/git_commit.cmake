# cmake -DSRC=<source dir> -DOUT=<header> -P git_commit.cmake: writes OUT, one line
# #define FH_GIT_COMMIT "<git describe --always --dirty of SRC>", or "unknown" when SRC is
# not the top of a git checkout (a tarball; a tarball unpacked inside another repository
# must not take that one's commit). Rewritten only when it changes, so only the file
# that includes it is recompiled after a commit (src/rl/run_record.c).
set(commit unknown)
find_program(FH_GIT git)
if(FH_GIT)
  execute_process(COMMAND ${FH_GIT} -C ${SRC} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  get_filename_component(src_real ${SRC} REALPATH)
  if(rc EQUAL 0 AND top)
    get_filename_component(top_real ${top} REALPATH)
  endif()
  if(rc EQUAL 0 AND top_real STREQUAL src_real)
    execute_process(COMMAND ${FH_GIT} -C ${SRC} describe --always --dirty --abbrev=12
                    OUTPUT_VARIABLE described RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(rc EQUAL 0 AND described MATCHES "^[A-Za-z0-9._+-]+$")
      set(commit ${described})
    endif()
  endif()
endif()
set(text "/* written by cmake/git_commit.cmake at build time */\n#define FH_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
