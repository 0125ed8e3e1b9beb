// The one place that knows which backend libraries this build links: each one's
// DPUSHARD_HAVE_*_BACKEND is defined by this library's CMakeLists.txt only.

#include "dpushard/builtin_backends.hpp"

#include <iostream>
#include <string_view>

#include "dpushard/sim_backend.hpp"
#ifdef DPUSHARD_HAVE_CPU_BACKEND
#include "dpushard/cpu_backend.hpp"
#endif
#ifdef DPUSHARD_HAVE_VART_BACKEND
#include "dpushard/vart_backend.hpp"
#endif

namespace dpushard {

void register_builtin_backends() {
  register_sim_backend();  // exec + perf, so outside dpushard_exec (docs/perf.md)
#ifdef DPUSHARD_HAVE_CPU_BACKEND
  register_cpu_backend();  // needs oneDNN (docs/cpu_backend.md)
#endif
#ifdef DPUSHARD_HAVE_VART_BACKEND
  register_vart_backend();  // needs Vitis AI's runtime (docs/vart.md)
#endif
}

bool is_dpu_child_command(int argc, char** argv) {
  return argc >= 2 && std::string_view(argv[1]) == "dpu-child";
}

int run_dpu_child_command(int argc, char** argv) {
#ifdef DPUSHARD_HAVE_VART_BACKEND
  return run_dpu_child(argc, argv);
#else
  (void)argc;
  (void)argv;
  std::cerr << "dpushard: error: dpu-child: this build has no vart backend\n";
  return 2;
#endif
}

}  // namespace dpushard
