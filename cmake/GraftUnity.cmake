# Note [Unity build]
# The library's ~140 sources compile in batches of GRAFT_LIB_UNITY_BATCH, each batch one translation
# unit (CMake's UNITY_BUILD): the headers behind them (the standard library, tensor.h, the ops and
# kernels' headers) are parsed once per batch instead of once per source, and the optimiser inlines
# across the batch's files. It is what makes the README's first command fit in minutes on a fresh
# 2-core machine: configure and build of the `graft` command took 204 s one source per unit and
# 141 s in batches of 8 (AMD EPYC, 2 cores; 16 per batch: 223 s, one batch of five big op files
# the critical path; 140 s in the README's measurement from scratch). The rule it asks of the
# sources: names at file scope, anonymous namespaces included, must be unique across src/ and
# apps/ (two files' helpers of the same name would meet in one batch): shared helpers go to a
# header (ops_common.h, loss_checks.h), file-local constants carry the file's name (kRnnOp, not
# kOp). A build with GRAFT_LIB_UNITY_BATCH=0 (the whole library one unit) is the strictest check of
# that rule. GCC's -Wsubobject-linkage, -Wstringop-overflow, -Warray-bounds and -Wrestrict are off
# in this build: the first fires because a batched source is an #include of the batch file, not
# its main file (the same code gives no warning compiled alone); the other three are GCC 12's false
# positives on std::string concatenation ("(" + s) that the wider inlining exposes, in code that
# compiles clean alone. The sanitizer build (clang, its warnings kept) watches bounds at run time.
option(GRAFT_UNITY_BUILD "Compile the library and the graft command in batches of sources (Note [Unity build])" ON)
# Not GRAFT_UNITY_BATCH: that is the tests' batch (tests/CMakeLists.txt, 4 files per run), whose files
# hold their own file-scope helpers of the same names.
set(GRAFT_LIB_UNITY_BATCH 8 CACHE STRING "Library sources per batch of the unity build (0: all in one)")

# graft_unity_build(TARGET): TARGET's sources compile in batches, with the GCC warnings above off.
function(graft_unity_build target)
  if(GRAFT_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${GRAFT_LIB_UNITY_BATCH})
    target_compile_options(${target} PRIVATE
                           $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage -Wno-stringop-overflow -Wno-array-bounds -Wno-restrict>)
  endif()
endfunction()
