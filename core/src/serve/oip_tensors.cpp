// Decoding infer requests (JSON and binary tensors) and encoding their responses.

#include "oip_tensors.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dpushard/graph/numerics.hpp"

namespace dpushard::serve {

namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "the binary extension's tensors are little-endian, as this host");

[[noreturn]] void bad(const std::string& message) { throw ProtocolError(400, message); }

std::string shape_text(const std::vector<std::int64_t>& shape) { return json(shape).dump(); }

std::int64_t count_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// Row-major values, flattening nested arrays as the spec allows.
void flatten(const json& data, std::vector<const json*>& out, int depth = 0) {
  if (depth > 16) bad("tensor data nested too deeply");
  if (data.is_array())
    for (const auto& v : data) flatten(v, out, depth + 1);
  else
    out.push_back(&data);
}

bool bool_parameter(const json& holder, const char* key) {
  if (!holder.is_object() || !holder.contains("parameters")) return false;
  const json& p = holder["parameters"];
  if (!p.is_object()) bad("'parameters' must be an object");
  if (!p.contains(key)) return false;
  if (!p[key].is_boolean()) bad(std::string("parameter '") + key + "' must be a boolean");
  return p[key].get<bool>();
}

std::optional<std::size_t> binary_size(const json& input) {
  if (!input.contains("parameters")) return std::nullopt;
  const json& p = input["parameters"];
  if (!p.is_object()) bad("'parameters' must be an object");
  if (!p.contains("binary_data_size")) return std::nullopt;
  if (!p["binary_data_size"].is_number_unsigned())
    bad("'binary_data_size' must be a non-negative integer");
  return p["binary_data_size"].get<std::size_t>();
}

std::int8_t int8_value(const json& v, const std::string& name) {
  if (!v.is_number_integer()) bad("input '" + name + "': INT8 data must be integers");
  const auto x = v.get<std::int64_t>();
  if (x < -128 || x > 127) bad("input '" + name + "': " + std::to_string(x) + " is not an INT8");
  return static_cast<std::int8_t>(x);
}

std::int8_t quantized(double x, const ServedTensor& spec) {
  if (!std::isfinite(x)) bad("input '" + spec.name + "': FP32 data must be finite");
  return quantize(x, spec.fix_point, spec.round_mode);
}

QTensor decode_input(const json& input, const ServedTensor& spec, std::string_view binary,
                     std::size_t& binary_used) {
  if (!input.contains("shape") || !input["shape"].is_array())
    bad("input '" + spec.name + "': 'shape' must be an array of integers");
  std::vector<std::int64_t> shape;
  for (const auto& d : input["shape"]) {
    if (!d.is_number_integer()) bad("input '" + spec.name + "': 'shape' must hold integers");
    shape.push_back(d.get<std::int64_t>());
  }
  if (shape != spec.shape)
    bad("input '" + spec.name + "': shape " + shape_text(shape) + ", the model takes " +
        shape_text(spec.shape));
  if (!input.contains("datatype") || !input["datatype"].is_string())
    bad("input '" + spec.name + "': 'datatype' must be a string");
  const std::string datatype = input["datatype"].get<std::string>();
  if (datatype != "INT8" && datatype != "FP32")
    bad("input '" + spec.name + "': datatype " + datatype + " (INT8 or FP32 are taken)");
  const auto n = static_cast<std::size_t>(count_of(shape));
  QTensor t{spec.name, spec.shape, spec.fix_point, {}, true};
  t.data.resize(n);
  if (const auto size = binary_size(input)) {
    if (input.contains("data")) bad("input '" + spec.name + "': both 'data' and binary data");
    const std::size_t element = datatype == "FP32" ? 4 : 1;
    if (*size != n * element)
      bad("input '" + spec.name + "': binary_data_size " + std::to_string(*size) + ", " +
          std::to_string(n) + " " + datatype + " values take " + std::to_string(n * element));
    if (binary.size() - binary_used < *size)
      bad("input '" + spec.name + "': the body holds fewer binary bytes than binary_data_size");
    const char* bytes = binary.data() + binary_used;
    binary_used += *size;
    if (datatype == "INT8") {
      std::memcpy(t.data.data(), bytes, n);
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        float x;
        std::memcpy(&x, bytes + 4 * i, 4);
        t.data[i] = quantized(x, spec);
      }
    }
    return t;
  }
  if (!input.contains("data")) bad("input '" + spec.name + "': no 'data' and no binary data");
  std::vector<const json*> values;
  flatten(input["data"], values);
  if (values.size() != n)
    bad("input '" + spec.name + "': " + std::to_string(values.size()) + " values, shape " +
        shape_text(shape) + " holds " + std::to_string(n));
  for (std::size_t i = 0; i < n; ++i) {
    if (datatype == "INT8") {
      t.data[i] = int8_value(*values[i], spec.name);
    } else {
      if (!values[i]->is_number()) bad("input '" + spec.name + "': FP32 data must be numbers");
      t.data[i] = quantized(values[i]->get<double>(), spec);
    }
  }
  return t;
}

std::size_t parse_header_length(std::string_view text, std::size_t body_size) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size())
    bad("Inference-Header-Content-Length must be a non-negative integer");
  if (n > body_size) bad("Inference-Header-Content-Length exceeds the body");
  return n;
}

std::vector<RequestedOutput> requested_outputs(const ServedModel& model, const json& request) {
  const bool all_binary = bool_parameter(request, "binary_data_output");
  const bool all_float = bool_parameter(request, "dequantize");
  std::vector<RequestedOutput> outputs;
  if (!request.contains("outputs")) {
    for (std::size_t i = 0; i < model.outputs.size(); ++i)
      outputs.push_back({i, all_binary, all_float});
    return outputs;
  }
  if (!request["outputs"].is_array()) bad("'outputs' must be an array");
  for (const auto& o : request["outputs"]) {
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
      bad("each requested output needs a 'name'");
    const std::string name = o["name"].get<std::string>();
    std::size_t index = model.outputs.size();
    for (std::size_t i = 0; i < model.outputs.size(); ++i)
      if (model.outputs[i].name == name) index = i;
    if (index == model.outputs.size()) bad("unknown output '" + name + "'");
    outputs.push_back({index, all_binary || bool_parameter(o, "binary_data"),
                       all_float || bool_parameter(o, "dequantize")});
  }
  return outputs;
}

json tensor_metadata(const ServedTensor& t) {
  return {{"name", t.name},
          {"datatype", "INT8"},
          {"shape", t.shape},
          {"parameters", {{"fix_point", t.fix_point}}}};
}

}  // namespace

InferRequest parse_infer_request(const ServedModel& model, std::string_view body,
                                 std::optional<std::string_view> header_length) {
  const std::size_t json_size =
      header_length ? parse_header_length(*header_length, body.size()) : body.size();
  const std::string_view binary = body.substr(json_size);
  json request = json::parse(body.substr(0, json_size), nullptr, false);
  if (request.is_discarded()) bad("the request is not valid JSON");
  if (!request.is_object()) bad("the request must be a JSON object");
  InferRequest parsed;
  if (request.contains("id")) {
    if (!request["id"].is_string()) bad("'id' must be a string");
    parsed.id = request["id"];
  }
  if (!request.contains("inputs") || !request["inputs"].is_array())
    bad("'inputs' must be an array");
  std::vector<std::optional<QTensor>> by_index(model.inputs.size());
  std::size_t binary_used = 0;
  for (const auto& input : request["inputs"]) {
    if (!input.is_object() || !input.contains("name") || !input["name"].is_string())
      bad("each input needs a 'name'");
    const std::string name = input["name"].get<std::string>();
    std::size_t index = model.inputs.size();
    for (std::size_t i = 0; i < model.inputs.size(); ++i)
      if (model.inputs[i].name == name) index = i;
    if (index == model.inputs.size()) bad("unknown input '" + name + "'");
    if (by_index[index]) bad("input '" + name + "' given twice");
    by_index[index] = decode_input(input, model.inputs[index], binary, binary_used);
  }
  if (binary_used != binary.size())
    bad("the body holds " + std::to_string(binary.size() - binary_used) +
        " binary bytes no input claims");
  for (std::size_t i = 0; i < by_index.size(); ++i) {
    if (!by_index[i]) bad("missing input '" + model.inputs[i].name + "'");
    parsed.inputs.push_back(std::move(*by_index[i]));
  }
  parsed.outputs = requested_outputs(model, request);
  return parsed;
}

EncodedResponse encode_infer_response(const ServedModel& model, const InferRequest& request,
                                      const std::vector<QTensor>& outputs) {
  json response = {{"model_name", model.name}, {"outputs", json::array()}};
  if (!request.id.is_null()) response["id"] = request.id;
  std::string binary;
  for (const RequestedOutput& wanted : request.outputs) {
    const QTensor& t = outputs.at(wanted.index);
    json out = {{"name", model.outputs[wanted.index].name},
                {"datatype", wanted.dequantize ? "FP32" : "INT8"},
                {"shape", t.shape},
                {"parameters", {{"fix_point", t.fix_point}}}};
    // A timing-only node (sim, serve --timing-only) gave zeros, not the model's values.
    if (!t.computed) out["parameters"]["computed"] = false;
    if (wanted.binary) {
      const std::size_t before = binary.size();
      if (wanted.dequantize) {
        for (std::int8_t q : t.data) {
          const float x = static_cast<float>(dequantize(q, t.fix_point));
          binary.append(reinterpret_cast<const char*>(&x), 4);
        }
      } else {
        binary.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
      }
      out["parameters"]["binary_data_size"] = binary.size() - before;
    } else if (wanted.dequantize) {
      json data = json::array();
      for (std::int8_t q : t.data) data.push_back(dequantize(q, t.fix_point));
      out["data"] = std::move(data);
    } else {
      json data = json::array();
      for (std::int8_t q : t.data) data.push_back(int(q));
      out["data"] = std::move(data);
    }
    response["outputs"].push_back(std::move(out));
  }
  EncodedResponse encoded;
  encoded.body = response.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!binary.empty() || std::any_of(request.outputs.begin(), request.outputs.end(),
                                     [](const RequestedOutput& o) { return o.binary; })) {
    encoded.header_length = encoded.body.size();
    encoded.body += binary;
  }
  return encoded;
}

json model_metadata(const ServedModel& model) {
  json j = {{"name", model.name},
            {"versions", json::array({"1"})},
            {"platform", "dpushard"},
            {"inputs", json::array()},
            {"outputs", json::array()}};
  for (const auto& t : model.inputs) j["inputs"].push_back(tensor_metadata(t));
  for (const auto& t : model.outputs) j["outputs"].push_back(tensor_metadata(t));
  return j;
}

}  // namespace dpushard::serve
