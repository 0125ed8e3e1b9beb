#pragma once
// Frames of a FrameSource read ahead of their use: while the cluster runs frame i, frames
// i+1.. are read (decoded, preprocessed) on other threads, at most `depth` at a time, so a
// slow image decoder does not leave the nodes idle.

#include <cstddef>
#include <deque>
#include <future>

#include "dpushard/frames/frame_source.hpp"

namespace dpushard::cli {

class FramePrefetch {
 public:
  // `source` must outlive this object; depth >= 1.
  FramePrefetch(const FrameSource& source, std::size_t depth);
  ~FramePrefetch();
  FramePrefetch(const FramePrefetch&) = delete;
  FramePrefetch& operator=(const FramePrefetch&) = delete;

  // Frame `index`, which must be the one after the last taken (frames are taken in order).
  // Rethrows that frame's read error (FrameSource::frame).
  Frame take(std::size_t index);

 private:
  void top_up();

  const FrameSource& source_;
  std::size_t depth_;
  std::size_t next_read_ = 0;  // the next frame to start reading
  std::size_t next_take_ = 0;  // the next frame take() hands out
  std::deque<std::future<Frame>> ahead_;
};

}  // namespace dpushard::cli
