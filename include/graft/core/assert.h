// AT_ASSERT(cond): LibTorch's assertion macro. Its name has no namespace, so it survives the renaming
// of a LibTorch program (docs/porting.md) unchanged; graft defines it to throw graft::Error naming the
// condition and where it failed, as LibTorch throws c10::Error.
#pragma once

#include <string>

#include "graft/core/error.h"

#define AT_ASSERT(cond)                                                                               \
  do {                                                                                                \
    if (!(cond)) [[unlikely]] {                                                                       \
      throw ::graft::Error("AT_ASSERT", std::string(#cond) + " to be true", "false",                 \
                           std::string("the assertion at ") + __FILE__ + ":" + std::to_string(__LINE__) + \
                               " failed");                                                            \
    }                                                                                                 \
  } while (false)
