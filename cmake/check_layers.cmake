# check_layers.cmake — the include half of the layer check (docs/ARCHITECTURE.md, "The
# board of layers"): every #include "dir/file.h" of a file in src/<layer>/ or
# include/foxhunt/ must name a header of that layer or of one it may use. The other half,
# calls, is the link checks fh_check_<layer> (CMakeLists.txt, fh_add_layer).
# Run at build time by the target fh_check_includes: cmake -DROOT=<source dir>
# -DSTAMP=<file written on success> -P check_layers.cmake. A violation fails the build
# naming the file, the header and the layers involved.
cmake_minimum_required(VERSION 3.18) # IN_LIST

# What each layer may include besides its own headers (the closure of the board's
# "may use" column).
set(below_common "")
set(below_data common)
set(below_env data common)
set(below_nn common)
set(below_io nn data common)
set(below_cuda env nn data common)
set(below_dist cuda env nn data common)
set(below_rl dist cuda io env nn data common)
set(below_report rl dist cuda io env nn data common)
set(below_cli report rl dist cuda io env nn data common)
set(below_capi report rl dist cuda io env nn data common)

# The layer of each public header (include/foxhunt/NAME.h); a new header needs a line.
set(header_common error files format hash precision shapes text tfevents timing)
set(header_data data)
set(header_env env env_types)
set(header_nn nn)
set(header_io checkpoint safetensors)
set(header_cuda device)
set(header_rl baselines batch_file dqn evaluate iteration_metrics metrics ppo q_trainer rollout
    run_data run_dir run_record train_config trainer learner train_loop)
set(header_capi capi)
set(layers common data env nn io cuda dist rl report cli capi)

# Upward includes that predate the check (issue 33): the device layer uses types that
# live in rl's public headers (the batches, the update's stats and trace, the Q-learning
# settings), and dist reads the run's settings. Types only: the link checks prove no call
# goes up. Moving those types down empties this list; nothing may be added to it.
set(allowed_upward
  "src/cuda/gpu_ppo_collector.h|foxhunt/rollout.h"
  "src/cuda/gpu_ppo_update.h|foxhunt/ppo.h"
  "src/cuda/gpu_ppo_update.h|foxhunt/rollout.h"
  "src/cuda/gpu_q_update.h|foxhunt/dqn.h"
  "src/cuda/gpu_replay.h|foxhunt/dqn.h"
  "src/cuda/gpu_dqn_collector.h|foxhunt/dqn.h"
  "src/dist/dist_settings.h|foxhunt/train_config.h")

foreach(layer ${layers})
  foreach(h ${header_${layer}})
    set(layer_of_${h} ${layer})
  endforeach()
endforeach()

set(errors "")
# check_file(FILE LAYER): FILE's includes against LAYER's board (a macro: it appends to
# errors)
macro(check_file file_ layer_)
  file(RELATIVE_PATH rel ${ROOT} ${file_})
  file(STRINGS ${file_} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
  foreach(line ${lines})
    string(REGEX MATCH "\"([a-z_]+)/([a-z_0-9/]+)\\.[a-z]+\"" inc "${line}")
    set(dir "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    string(REPLACE "\"" "" inc "${inc}")
    set(to "")
    if(dir STREQUAL "foxhunt")
      set(to "${layer_of_${name}}")
      if(NOT to)
        string(APPEND errors "\n  ${rel}: includes ${inc}, a header of no layer: add it to "
                             "cmake/check_layers.cmake (header_<layer>)")
      endif()
    elseif(dir IN_LIST layers)
      set(to "${dir}")
    endif() # else a folder of no layer
    if(to AND NOT to STREQUAL "${layer_}" AND NOT to IN_LIST below_${layer_}
       AND NOT "${rel}|${inc}" IN_LIST allowed_upward)
      string(REPLACE ";" ", " may "${below_${layer_}}")
      string(APPEND errors "\n  ${rel}: includes ${inc} (layer ${to}); ${layer_} may use "
                           "only ${may}")
    endif()
  endforeach()
endmacro()

foreach(layer ${layers})
  file(GLOB_RECURSE sources ${ROOT}/src/${layer}/*.c ${ROOT}/src/${layer}/*.h
       ${ROOT}/src/${layer}/*.cuh ${ROOT}/src/${layer}/*.cu)
  foreach(f ${sources})
    check_file(${f} ${layer})
  endforeach()
  foreach(h ${header_${layer}})
    check_file(${ROOT}/include/foxhunt/${h}.h ${layer})
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "an include goes up the board of layers (docs/ARCHITECTURE.md):"
                      "${errors}")
endif()
file(WRITE ${STAMP} "layers checked\n")
