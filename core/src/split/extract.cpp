#include "extract.hpp"

#include "dpushard/preprocessing.hpp"

#include <algorithm>
#include <unordered_set>

#include "dpushard/backend.hpp"

namespace dpushard::split {
namespace {

std::vector<std::int32_t> to_i32(const std::vector<std::int64_t>& v) {
  std::vector<std::int32_t> out;
  for (auto x : v) out.push_back(static_cast<std::int32_t>(x));
  return out;
}

Op data_op(const std::string& name, const std::vector<std::int64_t>& shape) {
  Op op;
  op.name = name;
  op.type = "data";
  op.attrs = {{"shape", to_i32(shape)}, {"data_type", std::string("FLOAT32")}};
  op.output.name = name;
  op.output.shape = shape;
  op.output.data_type = DataType::Float;
  op.output.bit_width = 32;
  return op;
}

// A const op with everything but its values (Weights::LeftOut).
Op without_data(const Op& source) {
  Op op;
  op.name = source.name;
  op.type = source.type;
  for (const auto& [key, value] : source.attrs)
    if (key != "data") op.attrs.emplace(key, value);
  op.args = source.args;
  op.output = source.output;
  return op;
}

RoundMode round_mode_of(const Op& fix) {
  return parse_round_mode(string_attr(fix.attrs, "round_mode", "DPU_ROUND"));
}

PlanTensor tensor_of(const Graph& graph, const std::string& name, const std::string& context) {
  const Op& op = graph.op(name);
  const auto fp = fix_point_of(graph, name);
  if (!fp)
    throw Error("split: " + context + " '" + name + "' (" + op.type +
                ") is not a fixed-point tensor: it cannot cross a fragment boundary");
  PlanTensor t;
  t.name = name;
  t.shape = op.output.shape;
  t.fix_point = *fp;
  if (op.type == "fix") t.round_mode = round_mode_of(op);
  return t;
}

}  // namespace

std::vector<PlanTensor> model_inputs(const Graph& model) {
  std::vector<PlanTensor> out;
  for (const QTensor& spec : input_specs(model)) {
    PlanTensor t;
    t.name = spec.name;
    t.shape = spec.shape;
    t.fix_point = spec.fix_point;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<PlanTensor> model_outputs(const Graph& model) {
  const auto classes = classify_ops(model);
  std::vector<PlanTensor> out;
  for (std::size_t i : model_output_indices(model, classes))
    out.push_back(tensor_of(model, model.ops()[i].name, "model output"));
  return out;
}

Extraction extract(const UnitGraph& ug, const Partition& partition, bool output_fix,
                   Weights weights) {
  const Graph& g = ug.graph();
  const auto& ops = g.ops();
  const auto& cls = ug.classes();
  const std::size_t n = ops.size();
  const auto of = fragment_of_units(ug, partition);
  const std::size_t nf = partition.fragments.size();
  auto fragment_of_op = [&](std::size_t op) -> int {
    const auto u = ug.unit_of(op);
    return u ? of[*u] : -1;
  };
  auto fragment_name = [&](int f) {
    return f < 0 ? std::string("model") : partition.fragments[static_cast<std::size_t>(f)].name;
  };

  Extraction result;
  std::vector<bool> naive(n, false);
  for (const CrossTensor& t : ug.tensors()) {
    if (!naive_boundary(ug, of, t.fix, output_fix)) continue;
    naive[t.fix] = true;
    const Op& fix = ops[t.fix];
    const Op& p = g.op(fix.producers("input").front());
    result.adjustments.push_back(
        {"naive_cut", fix.name, p.name,
         "--no-output-fix: fragment '" + fragment_name(of[t.producer]) + "' ends at '" + p.name +
             "' (" + p.type + ") without its fix; '" + fix.name + "' (fix_point " +
             std::to_string(fix_point_of(g, fix.name).value_or(0)) +
             ") moves to the readers; the runtime fixes the float on the way out (" + p.name +
             "__wire), so int8 crosses"});
  }
  if (!output_fix) {
    for (const CrossTensor& t : ug.tensors()) {
      if (naive[t.fix] || ug.unit(t.producer).is_input) continue;
      bool crosses = false;
      for (UnitId r : t.readers) crosses = crosses || of[r] != of[t.producer];
      if (crosses)
        result.adjustments.push_back(
            {"kept_fix", ops[t.fix].name, "",
             "--no-output-fix: the boundary keeps its fix (its float value is also used "
             "elsewhere, or it is not a float op's output)"});
    }
  }

  std::unordered_set<std::string> model_names;
  for (const Op& op : ops) model_names.insert(op.name);
  std::vector<bool> is_model_output(n, false);
  for (std::size_t o : ug.model_outputs()) is_model_output[o] = true;

  for (std::size_t f = 0; f < nf; ++f) {
    const auto& part = partition.fragments[f];
    std::vector<bool> included(n, false), input_fix(n, false), float_input(n, false);
    for (UnitId u : part.units)
      for (std::size_t op : ug.unit(u).ops) included[op] = !naive[op];
    for (UnitId u : part.units)
      for (std::size_t src : ug.reads(u))
        if (naive[src]) included[src] = true;
    std::vector<std::size_t> work;
    for (std::size_t i = 0; i < n; ++i)
      if (included[i]) work.push_back(i);
    while (!work.empty()) {
      const std::size_t i = work.back();
      work.pop_back();
      for (const auto& pn : ops[i].all_producers()) {
        const std::size_t q = op_index(g, pn);
        if (included[q] || input_fix[q] || float_input[q]) continue;
        if (cls.constant[q] || cls.free_layout[q]) {
          included[q] = true;
          work.push_back(q);
        } else if (cls.activation_fix[q]) {
          input_fix[q] = true;
        } else if (naive[i]) {
          float_input[q] = true;
        } else {
          throw Error("split: internal: op '" + ops[i].name + "' reads the float value of '" + pn +
                      "' from another fragment");
        }
      }
    }

    // Outputs: owned tensors read by other fragments, model outputs, naive float values.
    std::vector<bool> is_output(n, false);
    for (const CrossTensor& t : ug.tensors()) {
      if (ug.unit(t.producer).is_input || of[t.producer] != static_cast<int>(f)) continue;
      bool elsewhere = false;
      for (UnitId r : t.readers) elsewhere = elsewhere || of[r] != static_cast<int>(f);
      if (!elsewhere) continue;
      if (naive[t.fix]) {
        is_output[op_index(g, ops[t.fix].producers("input").front())] = true;
      } else {
        is_output[t.fix] = true;
      }
    }
    for (std::size_t o : ug.model_outputs())
      if (included[o] && fragment_of_op(o) == static_cast<int>(f)) is_output[o] = true;

    // Names: data ops take their fix's producer's name when free, else a fresh one.
    std::unordered_set<std::string> used;
    for (std::size_t i = 0; i < n; ++i)
      if (included[i] || input_fix[i] || float_input[i]) used.insert(ops[i].name);
    auto fresh = [&](const std::string& base) {
      std::string name = base;
      for (int k = 2; used.count(name) || (name != base && model_names.count(name)); ++k)
        name = base + "__in" + (k == 2 ? std::string() : std::to_string(k));
      used.insert(name);
      return name;
    };
    // Outputs also read inside: the original fix is renamed and a second fix keeps the name.
    std::vector<std::string> inner_name(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!is_output[i] || ops[i].type != "fix") continue;
      bool read_inside = false;
      for (const Op* c : g.consumers(ops[i].name))
        read_inside = read_inside || included[static_cast<std::size_t>(c - ops.data())];
      if (!read_inside) continue;
      inner_name[i] = fresh(ops[i].name + "__inner");
      result.adjustments.push_back(
          {"output_ops", ops[i].name, part.name,
           "'" + ops[i].name + "' is also read inside fragment '" + part.name +
               "': a second fix of its value is the output (compile with output_ops, #809)"});
    }

    ExtractedFragment frag;
    frag.graph = Graph(g.name() + "__" + part.name);
    Graph& fg = frag.graph;
    if (weights_omitted(g)) mark_weights_omitted(fg);
    copy_preprocessing(g, fg);  // `run --local --input` images read it from the fragments
    std::vector<std::string> data_for(n);  // data op name feeding input fix i
    std::unordered_set<std::string> emitted_data;
    auto rewired = [&](const Op& source) {
      Op op = weights == Weights::Copied || source.type != "const" ? source : without_data(source);
      for (auto& arg : op.args)
        for (auto& p : arg.producers) {
          const Op* q = g.find(p);
          if (q == nullptr) continue;
          const auto qi = static_cast<std::size_t>(q - ops.data());
          if (!inner_name[qi].empty()) p = inner_name[qi];
        }
      return op;
    };
    for (std::size_t i = 0; i < n; ++i) {
      const Op& op = ops[i];
      if (input_fix[i]) {
        const Op& source = g.op(op.producers("input").front());
        std::string dname;
        if (source.type == "data") {
          dname = source.name;
          if (!emitted_data.count(dname)) fg.add_op(source);
        } else {
          dname = used.count(source.name) ? fresh(source.name) : source.name;
          used.insert(dname);
          fg.add_op(data_op(dname, op.output.shape));
        }
        emitted_data.insert(dname);
        Op fix = op;
        for (auto& arg : fix.args)
          if (arg.name == "input") arg.producers = {dname};
        fg.add_op(std::move(fix));
      } else if (float_input[i]) {
        fg.add_op(data_op(op.name, op.output.shape));
      } else if (included[i]) {
        if (inner_name[i].empty()) {
          fg.add_op(rewired(op));
          continue;
        }
        // Read inside too: the fix keeps working inside under a new name and a second fix
        // of its int8 value (same fix_point: an identity) is the output.
        Op inner = rewired(op);
        inner.name = inner_name[i];
        inner.output.name = inner.name;
        fg.add_op(std::move(inner));
        Op outer = op;
        outer.args = {{"input", {inner_name[i]}}};
        fg.add_op(std::move(outer));
      }
    }

    // The fragment's outputs must be exactly the tensors it hands on.
    std::vector<std::string> expected_outputs;
    for (std::size_t i = 0; i < n; ++i)
      if (is_output[i]) expected_outputs.push_back(ops[i].name);
    std::vector<std::string> actual_outputs;
    for (const Op* o : fg.outputs()) actual_outputs.push_back(o->name);
    std::vector<std::string> sorted = actual_outputs;
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected_outputs.begin(), expected_outputs.end());
    if (sorted != expected_outputs)
      throw Error("split: internal: fragment '" + part.name + "' would output " +
                  std::to_string(sorted.size()) + " tensors instead of " +
                  std::to_string(expected_outputs.size()));

    for (const QTensor& spec : input_specs(fg)) {
      PlanTensor t;
      t.name = spec.name;
      t.shape = spec.shape;
      t.fix_point = spec.fix_point;
      frag.inputs.push_back(std::move(t));
    }
    for (const auto& name : actual_outputs) {
      const std::size_t i = op_index(g, name);
      if (cls.activation_fix[i] || !is_output[i] || is_model_output[i] || fix_point_of(g, name)) {
        frag.outputs.push_back(tensor_of(fg, name, "fragment '" + part.name + "' output"));
        continue;
      }
      // A naive boundary: the float value before the fix the readers apply.
      const Op& fix = *g.consumers(name).front();
      PlanTensor t;
      t.name = name;
      t.shape = ops[i].output.shape;
      t.fix_point = *fix_point_of(g, fix.name);
      t.fixed = false;
      t.round_mode = round_mode_of(fix);
      frag.outputs.push_back(std::move(t));
    }
    result.fragments.push_back(std::move(frag));
  }

  // Edges: every fragment input from its producer; every model output to the model.
  for (std::size_t f = 0; f < nf; ++f) {
    const auto& part = partition.fragments[f];
    for (const PlanTensor& in : result.fragments[f].inputs) {
      const std::size_t fix = op_index(g, in.name);
      PlanEdge e;
      e.to = part.name;
      e.input = in.name;
      const auto producer_unit = ug.unit_of(fix);
      if (naive[fix]) {
        const std::string& value = ops[fix].producers("input").front();
        e.from = fragment_name(fragment_of_op(op_index(g, value)));
        e.output = value;
        e.bytes = in.element_count();  // int8: the runtime's NAME__wire fix
      } else {
        e.from = producer_unit && ug.unit(*producer_unit).is_input
                     ? "model"
                     : fragment_name(of[*producer_unit]);
        e.output = in.name;
        e.bytes = in.element_count();
      }
      result.edges.push_back(std::move(e));
    }
  }
  for (std::size_t o : ug.model_outputs()) {
    const int f = fragment_of_op(o);
    if (f < 0) throw Error("split: model output '" + ops[o].name + "' is a model input");
    result.edges.push_back(
        {fragment_name(f), ops[o].name, "model", ops[o].name, ops[o].output.element_count()});
  }
  return result;
}

}  // namespace dpushard::split
