#pragma once
// The text of the shipped oracle (core/src/split/oracle/kv260.yaml), compiled in.

namespace dpushard::split {

const char* builtin_oracle_yaml();

}  // namespace dpushard::split
