#pragma once
// Inference requests and responses of the Open Inference Protocol (KServe v2 REST), with
// the binary tensor data extension (Triton's `binary_tensor_data`): the JSON header is the
// first Inference-Header-Content-Length bytes of the body, the tensors' raw bytes follow in
// the order of the inputs that carry a `binary_data_size` parameter.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpushard/graph/tensor.hpp"
#include "dpushard/serve/inference_executor.hpp"

namespace dpushard::serve {

// A request the protocol refuses: the HTTP status and the message of {"error": ...}.
struct ProtocolError : std::runtime_error {
  ProtocolError(int http_status, const std::string& message)
      : std::runtime_error(message), status(http_status) {}
  int status;
};

struct RequestedOutput {
  std::size_t index = 0;    // in the model's output order
  bool binary = false;      // raw bytes after the JSON (binary_data)
  bool dequantize = false;  // FP32 values (q * 2^-fix_point) instead of INT8
};

struct InferRequest {
  nlohmann::json id;            // null when the request had none
  std::vector<QTensor> inputs;  // the model's input order, quantized
  std::vector<RequestedOutput> outputs;
};

// `body` and the Inference-Header-Content-Length header's value (absent: all JSON).
// Throws ProtocolError(400) for anything that is not a valid request for `model`.
InferRequest parse_infer_request(const ServedModel& model, std::string_view body,
                                 std::optional<std::string_view> header_length);

struct EncodedResponse {
  std::string body;
  std::optional<std::size_t> header_length;  // set when binary data follows the JSON
};

EncodedResponse encode_infer_response(const ServedModel& model, const InferRequest& request,
                                      const std::vector<QTensor>& outputs);

// GET /v2/models/{name}: name, platform, inputs and outputs (name, datatype, shape).
nlohmann::json model_metadata(const ServedModel& model);

}  // namespace dpushard::serve
