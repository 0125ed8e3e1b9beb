#pragma once
// Boost.Asio for the net module.
// - Boost 1.74's awaitable.hpp uses std::exchange without including <utility>, which GCC 12
//   in C++20 mode rejects; including it first fixes that.
// - GCC 12 at -O2 reports a "potential null pointer dereference" inside Asio's epoll reactor
//   (scheduler.ipp, compensating_work_started) in every file that uses sockets; the warning
//   is about Boost's code, so it is silenced for Boost's headers only.

// clang-format off
#include <utility>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio.hpp>
#pragma GCC diagnostic pop
// clang-format on
