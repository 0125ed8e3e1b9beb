#pragma once
// Fragments a job had loaded, kept for the next job of the same orchestrator connection:
// when a plan switch (docs/cluster.md "Losing a node") ends a job with UNLOAD and loads
// another that runs some of the same fragments, those skip parsing and preparing again
// (seconds for a 20M-parameter fragment). Io thread only; dropped when the connection
// closes or the next job has taken what it reuses.

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/net/protocol.hpp"

namespace dpushard::net {

struct PreparedFragment {
  std::unique_ptr<Backend> backend;  // loaded, idle
  std::vector<QTensor> input_specs;
  std::size_t output_count = 0;
  int threads = 1;  // the backend's threads: a job that wants another count prepares anew
};

class PreparedFragments {
 public:
  void keep(const Digest& sha, PreparedFragment fragment) {
    kept_.emplace(sha, std::move(fragment));
  }
  // One prepared copy of `sha` with `threads` threads, if kept.
  std::optional<PreparedFragment> take(const Digest& sha, int threads) {
    auto [first, last] = kept_.equal_range(sha);
    for (auto it = first; it != last; ++it) {
      if (it->second.threads != threads) continue;
      PreparedFragment fragment = std::move(it->second);
      kept_.erase(it);
      return fragment;
    }
    return std::nullopt;
  }
  void clear() { kept_.clear(); }
  std::size_t size() const { return kept_.size(); }

  // A fragment still computing its last frame when its job ended comes when it is done:
  // a LOAD waits (briefly) for those before it looks here.
  void expect() { ++pending_; }
  void deliver(const Digest& sha, PreparedFragment fragment) {
    if (pending_ > 0) --pending_;
    keep(sha, std::move(fragment));
  }
  std::size_t pending() const { return pending_; }

 private:
  std::multimap<Digest, PreparedFragment> kept_;
  std::size_t pending_ = 0;
};

}  // namespace dpushard::net
