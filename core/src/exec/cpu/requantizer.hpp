#pragma once
// The end of a oneDNN chain in dpushard's arithmetic: rows x channels s32 sums -> int8 with
// exactly the ref kernels' steps (sum << acc_align + bias[c] << bias_align, the nonlinear,
// DPU_ROUND shift to fp_out, saturation). The integer nonlinears run in a vectorised loop
// (AVX-512 / AVX2 clones picked at run time) split across the OpenMP threads; float
// activations and scaling-up shifts fall back to ref's Epilogue element by element.

#include <cstdint>
#include <vector>

#include "../lowering/epilogue.hpp"
#include "../lowering/program.hpp"

namespace dpushard::cpu {

class Requantizer {
 public:
  // `bias`: the chain's quantized bias (channels values) or null.
  Requantizer(const lowering::Chain& chain, int acc_exp, int acc_align, int bias_align,
              const QTensor* bias, std::int64_t channels);

  // lo (and hi for split weights: sum = lo + 16 * hi) hold rows x channels sums.
  void run(const std::int32_t* lo, const std::int32_t* hi, std::int64_t rows,
           std::int8_t* out) const;

 private:
  void run_rows(const std::int32_t* lo, const std::int32_t* hi, std::int64_t first,
                std::int64_t count, std::int8_t* out) const;

  lowering::Epilogue epilogue_;
  bool vectorised_;  // an integer nonlinear and a right shift (cut >= 0)
  int acc_align_;
  std::vector<std::int64_t> bias_;  // bias[c] << bias_align, zeros without bias
  std::int64_t channels_;
};

}  // namespace dpushard::cpu
