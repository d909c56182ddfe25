# Runs `graft train --model MODEL --json` (the README's defaults otherwise) and fails unless its JSON
# line reaches TARGET: for the image models (on Debian's Fashion-MNIST) a test_accuracy of at least
# TARGET, for the text models gpt and lstm (on Debian's fortunes) a held-out test_loss (nats per
# byte) of at most TARGET. FLAGS (optional, split as a shell would) are added to the command line. Usage:
#   cmake -DGRAFT=path/to/graft -DMODEL=mlp -DTARGET=0.885 -P check_accuracy.cmake
#   cmake -DGRAFT=path/to/graft -DMODEL=gpt -DTARGET=2.15 "-DFLAGS=--epochs 1" -P check_accuracy.cmake
if(MODEL STREQUAL "gpt" OR MODEL STREQUAL "lstm")
  set(text ON)
  if(NOT EXISTS /usr/share/games/fortunes/fortunes)
    message(FATAL_ERROR "Debian's fortunes are missing: run tools/install-deps.sh (package fortunes)")
  endif()
elseif(NOT EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz AND
       NOT EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte)
  message(FATAL_ERROR "Fashion-MNIST is missing: run tools/install-deps.sh (package dataset-fashion-mnist)")
endif()
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(COMMAND ${GRAFT} train --model ${MODEL} ${flags} --json --progress lines
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "graft train --model ${MODEL} exited with ${rc}")
endif()
string(STRIP "${out}" out)
string(REGEX MATCH "[^\n]*$" last "${out}")
string(JSON epochs GET "${last}" epochs)
if(text)
  set(key test_loss)
  set(what "held-out loss")
else()
  set(key test_accuracy)
  set(what "test accuracy")
endif()
string(JSON value GET "${last}" ${key})
if((text AND value GREATER TARGET) OR (NOT text AND value LESS TARGET))
  message(FATAL_ERROR "--model ${MODEL} ${FLAGS}: ${what} ${value} after ${epochs} epochs, short of the target ${TARGET}")
endif()
message("--model ${MODEL} ${FLAGS}: ${what} ${value} after ${epochs} epochs (target ${TARGET})")
