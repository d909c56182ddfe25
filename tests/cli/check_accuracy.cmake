# Runs `graft train --model MODEL --json` (the README's defaults otherwise) on Debian's Fashion-MNIST
# and fails unless the JSON line's test_accuracy reaches TARGET. Usage:
#   cmake -DGRAFT=path/to/graft -DMODEL=mlp -DTARGET=0.885 -P check_accuracy.cmake
if(NOT EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz AND
   NOT EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte)
  message(FATAL_ERROR "Fashion-MNIST is missing: run tools/install-deps.sh (package dataset-fashion-mnist)")
endif()
execute_process(COMMAND ${GRAFT} train --model ${MODEL} --json --progress lines
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "graft train --model ${MODEL} exited with ${rc}")
endif()
string(STRIP "${out}" out)
string(REGEX MATCH "[^\n]*$" last "${out}")
string(JSON accuracy GET "${last}" test_accuracy)
string(JSON epochs GET "${last}" epochs)
if(accuracy LESS TARGET)
  message(FATAL_ERROR "--model ${MODEL}: test accuracy ${accuracy} after ${epochs} epochs, below the target ${TARGET}")
endif()
message("--model ${MODEL}: test accuracy ${accuracy} after ${epochs} epochs (target ${TARGET})")
