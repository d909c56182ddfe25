// The translation unit that builds a precompiled header (GRAFT_PCH in CMakeLists.txt): it has no
// code of its own; CMake compiles the header through it, and the targets that reuse the header
// start from the result.
