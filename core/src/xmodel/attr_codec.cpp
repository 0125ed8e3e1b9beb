#include "attr_codec.hpp"

#include <utility>
#include <variant>

namespace dpushard::xmodel {
namespace {

using xmodel::pb::AttrValue;

static_assert(std::variant_size_v<dpushard::AttrValue> ==
                  AttrValue::kMapString2StringVecValue - AttrValue::kBoolValue + 1,
              "dpushard::AttrValue and the schema's oneof must list the same kinds");

template <typename T>
dpushard::AttrValue make(T value) {
  return dpushard::AttrValue(std::in_place_type<T>, std::move(value));
}

template <typename T, typename Repeated>
std::vector<T> vector_of(const Repeated& values) {
  return std::vector<T>(values.begin(), values.end());
}

std::vector<Bytes> bytes_vector_of(const xmodel::pb::BytesVec& values) {
  std::vector<Bytes> out;
  out.reserve(static_cast<std::size_t>(values.value_size()));
  for (const auto& v : values.value()) out.push_back(Bytes{v.value()});
  return out;
}

template <typename T, typename ProtoMap>
StringMap<T> map_of(const ProtoMap& values) {
  StringMap<T> out;
  for (const auto& [key, value] : values) out.emplace(key, value);
  return out;
}

StringMap<Bytes> bytes_map_of(const xmodel::pb::MapString2Bytes& values) {
  StringMap<Bytes> out;
  for (const auto& [key, value] : values.value()) out.emplace(key, Bytes{value.value()});
  return out;
}

template <typename T, typename ProtoMap>
StringMap<std::vector<T>> vector_map_of(const ProtoMap& values) {
  StringMap<std::vector<T>> out;
  for (const auto& [key, value] : values) out.emplace(key, vector_of<T>(value.value()));
  return out;
}

// Why a value has no kind: a field this schema does not know (proto3 keeps it as an
// unknown field), or nothing at all.
std::string missing_kind_reason(const AttrValue& proto) {
  const auto& unknown = proto.GetReflection()->GetUnknownFields(proto);
  if (unknown.field_count() > 0)
    return "has an unknown kind (field " + std::to_string(unknown.field(0).number()) + ")";
  return "has no value";
}

template <typename Repeated, typename T>
void fill(Repeated& out, const std::vector<T>& values) {
  out.Add(values.begin(), values.end());
}

template <typename ProtoMap, typename T>
void fill_map(ProtoMap& out, const StringMap<T>& values) {
  for (const auto& [key, value] : values) out[key] = value;
}

template <typename ProtoMap, typename T>
void fill_vector_map(ProtoMap& out, const StringMap<std::vector<T>>& values) {
  for (const auto& [key, value] : values) fill(*out[key].mutable_value(), value);
}

// Writes each alternative into its oneof field.
struct ToProto {
  AttrValue& p;

  void operator()(bool v) const { p.set_bool_value(v); }
  void operator()(std::int32_t v) const { p.set_int32_value(v); }
  void operator()(std::uint32_t v) const { p.set_uint32_value(v); }
  void operator()(std::int64_t v) const { p.set_int64_value(v); }
  void operator()(std::uint64_t v) const { p.set_uint64_value(v); }
  void operator()(float v) const { p.set_float_value(v); }
  void operator()(double v) const { p.set_double_value(v); }
  void operator()(const std::string& v) const { p.set_string_value(v); }
  void operator()(const Bytes& v) const { p.mutable_bytes_value()->set_value(v.data); }
  void operator()(const std::vector<bool>& v) const {
    fill(*p.mutable_bool_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<std::int32_t>& v) const {
    fill(*p.mutable_int32_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<std::uint32_t>& v) const {
    fill(*p.mutable_uint32_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<std::int64_t>& v) const {
    fill(*p.mutable_int64_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<std::uint64_t>& v) const {
    fill(*p.mutable_uint64_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<float>& v) const {
    fill(*p.mutable_float_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<double>& v) const {
    fill(*p.mutable_double_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<std::string>& v) const {
    fill(*p.mutable_string_vec_value()->mutable_value(), v);
  }
  void operator()(const std::vector<Bytes>& v) const {
    auto& out = *p.mutable_bytes_vec_value()->mutable_value();
    for (const auto& b : v) out.Add()->set_value(b.data);
  }
  void operator()(const StringMap<std::int32_t>& v) const {
    fill_map(*p.mutable_map_string_2_int32_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::uint32_t>& v) const {
    fill_map(*p.mutable_map_string_2_uint32_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::int64_t>& v) const {
    fill_map(*p.mutable_map_string_2_int64_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::uint64_t>& v) const {
    fill_map(*p.mutable_map_string_2_uint64_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::string>& v) const {
    fill_map(*p.mutable_map_string_2_string_value()->mutable_value(), v);
  }
  void operator()(const StringMap<Bytes>& v) const {
    auto& out = *p.mutable_map_string_2_bytes_value()->mutable_value();
    for (const auto& [key, value] : v) out[key].set_value(value.data);
  }
  void operator()(const StringMap<std::vector<std::int32_t>>& v) const {
    fill_vector_map(*p.mutable_map_string_2_int32_vec_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::vector<std::uint32_t>>& v) const {
    fill_vector_map(*p.mutable_map_string_2_uint32_vec_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::vector<std::int64_t>>& v) const {
    fill_vector_map(*p.mutable_map_string_2_int64_vec_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::vector<std::uint64_t>>& v) const {
    fill_vector_map(*p.mutable_map_string_2_uint64_vec_value()->mutable_value(), v);
  }
  void operator()(const StringMap<std::vector<std::string>>& v) const {
    fill_vector_map(*p.mutable_map_string_2_string_vec_value()->mutable_value(), v);
  }
};

}  // namespace

dpushard::AttrValue attr_from_proto(AttrValue& p, const std::string& owner,
                                    const std::string& key) {
  switch (p.value_case()) {
    case AttrValue::kBoolValue:
      return make<bool>(p.bool_value());
    case AttrValue::kInt32Value:
      return make<std::int32_t>(p.int32_value());
    case AttrValue::kUint32Value:
      return make<std::uint32_t>(p.uint32_value());
    case AttrValue::kInt64Value:
      return make<std::int64_t>(p.int64_value());
    case AttrValue::kUint64Value:
      return make<std::uint64_t>(p.uint64_value());
    case AttrValue::kFloatValue:
      return make<float>(p.float_value());
    case AttrValue::kDoubleValue:
      return make<double>(p.double_value());
    case AttrValue::kStringValue:
      return make<std::string>(std::move(*p.mutable_string_value()));
    case AttrValue::kBytesValue:
      return make<Bytes>(Bytes{std::move(*p.mutable_bytes_value()->mutable_value())});
    case AttrValue::kBoolVecValue:
      return make(vector_of<bool>(p.bool_vec_value().value()));
    case AttrValue::kInt32VecValue:
      return make(vector_of<std::int32_t>(p.int32_vec_value().value()));
    case AttrValue::kUint32VecValue:
      return make(vector_of<std::uint32_t>(p.uint32_vec_value().value()));
    case AttrValue::kInt64VecValue:
      return make(vector_of<std::int64_t>(p.int64_vec_value().value()));
    case AttrValue::kUint64VecValue:
      return make(vector_of<std::uint64_t>(p.uint64_vec_value().value()));
    case AttrValue::kFloatVecValue:
      return make(vector_of<float>(p.float_vec_value().value()));
    case AttrValue::kDoubleVecValue:
      return make(vector_of<double>(p.double_vec_value().value()));
    case AttrValue::kStringVecValue:
      return make(vector_of<std::string>(p.string_vec_value().value()));
    case AttrValue::kBytesVecValue:
      return make(bytes_vector_of(p.bytes_vec_value()));
    case AttrValue::kMapString2Int32Value:
      return make(map_of<std::int32_t>(p.map_string_2_int32_value().value()));
    case AttrValue::kMapString2Uint32Value:
      return make(map_of<std::uint32_t>(p.map_string_2_uint32_value().value()));
    case AttrValue::kMapString2Int64Value:
      return make(map_of<std::int64_t>(p.map_string_2_int64_value().value()));
    case AttrValue::kMapString2Uint64Value:
      return make(map_of<std::uint64_t>(p.map_string_2_uint64_value().value()));
    case AttrValue::kMapString2StringValue:
      return make(map_of<std::string>(p.map_string_2_string_value().value()));
    case AttrValue::kMapString2BytesValue:
      return make(bytes_map_of(p.map_string_2_bytes_value()));
    case AttrValue::kMapString2Int32VecValue:
      return make(vector_map_of<std::int32_t>(p.map_string_2_int32_vec_value().value()));
    case AttrValue::kMapString2Uint32VecValue:
      return make(vector_map_of<std::uint32_t>(p.map_string_2_uint32_vec_value().value()));
    case AttrValue::kMapString2Int64VecValue:
      return make(vector_map_of<std::int64_t>(p.map_string_2_int64_vec_value().value()));
    case AttrValue::kMapString2Uint64VecValue:
      return make(vector_map_of<std::uint64_t>(p.map_string_2_uint64_vec_value().value()));
    case AttrValue::kMapString2StringVecValue:
      return make(vector_map_of<std::string>(p.map_string_2_string_vec_value().value()));
    case AttrValue::VALUE_NOT_SET:
      break;
  }
  throw Error(owner + ": attribute '" + key + "' " + missing_kind_reason(p));
}

AttrMap attrs_from_proto(ProtoAttrMap& proto, const std::string& owner) {
  AttrMap out;
  for (auto& [key, value] : proto) out.emplace(key, attr_from_proto(value, owner, key));
  return out;
}

void attr_to_proto(const dpushard::AttrValue& value, AttrValue& proto) {
  std::visit(ToProto{proto}, value);
}

void attrs_to_proto(const AttrMap& attrs, ProtoAttrMap& proto) {
  for (const auto& [key, value] : attrs) attr_to_proto(value, proto[key]);
}

}  // namespace dpushard::xmodel
