#pragma once
// dpushard's stand-in for VART's util header vitis/ai/env_config.hpp, which is not among the
// shared sources: the two macros VART's tensor_buffer.cpp uses. DEF_ENV_PARAM(NAME, "0")
// declares an integer read once from the environment variable NAME; ENV_PARAM(NAME) reads it.
#include <cstdlib>

#define DEF_ENV_PARAM(name, default_value)                      \
  static int dpushard_env_param_##name() {                      \
    static const int value = [] {                               \
      const char* text = std::getenv(#name);                    \
      return std::atoi(text != nullptr ? text : default_value); \
    }();                                                        \
    return value;                                               \
  }
#define ENV_PARAM(name) dpushard_env_param_##name()
