#include "extract.hpp"

#include "dpushard/graph/preprocessing.hpp"

#include <algorithm>
#include <unordered_set>

#include "dpushard/exec/backend.hpp"

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

// What every step of extract reads: the unit graph, the partition and each unit's fragment.
struct Cutting {
  const UnitGraph& ug;
  const Graph& g;
  const std::vector<Op>& ops;
  const OpClasses& cls;
  const Partition& partition;
  std::vector<int> of;  // fragment of each unit, -1 for model inputs

  Cutting(const UnitGraph& units, const Partition& p)
      : ug(units),
        g(units.graph()),
        ops(units.graph().ops()),
        cls(units.classes()),
        partition(p),
        of(fragment_of_units(units, p)) {}

  std::size_t size() const { return ops.size(); }
  int fragment_of_op(std::size_t op) const {
    const auto u = ug.unit_of(op);
    return u ? of[*u] : -1;
  }
  std::string fragment_name(int f) const {
    return f < 0 ? std::string("model") : partition.fragments[static_cast<std::size_t>(f)].name;
  }
  std::size_t index_of(const Op* op) const { return static_cast<std::size_t>(op - ops.data()); }
};

// The fixes a --no-output-fix split moves to their readers (naive boundaries), each noted.
std::vector<bool> naive_cuts(const Cutting& c, bool output_fix,
                             std::vector<PlanAdjustment>& adjustments) {
  std::vector<bool> naive(c.size(), false);
  for (const CrossTensor& t : c.ug.tensors()) {
    if (!naive_boundary(c.ug, c.of, t.fix, output_fix)) continue;
    naive[t.fix] = true;
    const Op& fix = c.ops[t.fix];
    const Op& p = c.g.op(fix.producers("input").front());
    adjustments.push_back(
        {"naive_cut", fix.name, p.name,
         "--no-output-fix: fragment '" + c.fragment_name(c.of[t.producer]) + "' ends at '" +
             p.name + "' (" + p.type + ") without its fix; '" + fix.name + "' (fix_point " +
             std::to_string(fix_point_of(c.g, fix.name).value_or(0)) +
             ") moves to the readers; the runtime fixes the float on the way out (" + p.name +
             "__wire), so int8 crosses"});
  }
  return naive;
}

// --no-output-fix: the boundaries that keep their fix all the same, each noted.
void note_kept_fixes(const Cutting& c, const std::vector<bool>& naive,
                     std::vector<PlanAdjustment>& adjustments) {
  for (const CrossTensor& t : c.ug.tensors()) {
    if (naive[t.fix] || c.ug.unit(t.producer).is_input) continue;
    bool crosses = false;
    for (UnitId r : t.readers) crosses = crosses || c.of[r] != c.of[t.producer];
    if (crosses)
      adjustments.push_back(
          {"kept_fix", c.ops[t.fix].name, "",
           "--no-output-fix: the boundary keeps its fix (its float value is also used "
           "elsewhere, or it is not a float op's output)"});
  }
}

// The ops of one fragment's graph, by op index: copied as they are, or a fixed input (data
// op plus a copy of the producer's fix), or a naive boundary's float input (a data op).
struct Selection {
  std::vector<bool> included, input_fix, float_input;
  bool any(std::size_t i) const { return included[i] || input_fix[i] || float_input[i]; }
};

Selection select_ops(const Cutting& c, const FragmentPart& part, const std::vector<bool>& naive) {
  const std::size_t n = c.size();
  Selection s{std::vector<bool>(n, false), std::vector<bool>(n, false),
              std::vector<bool>(n, false)};
  for (UnitId u : part.units)
    for (std::size_t op : c.ug.unit(u).ops) s.included[op] = !naive[op];
  for (UnitId u : part.units)
    for (std::size_t src : c.ug.reads(u))
      if (naive[src]) s.included[src] = true;
  // Walk up from the owned ops: constants and free layout ops come along, fixed values
  // from elsewhere become inputs.
  std::vector<std::size_t> work;
  for (std::size_t i = 0; i < n; ++i)
    if (s.included[i]) work.push_back(i);
  while (!work.empty()) {
    const std::size_t i = work.back();
    work.pop_back();
    for (const auto& pn : c.ops[i].all_producers()) {
      const std::size_t q = op_index(c.g, pn);
      if (s.any(q)) continue;
      if (c.cls.constant[q] || c.cls.free_layout[q]) {
        s.included[q] = true;
        work.push_back(q);
      } else if (c.cls.activation_fix[q]) {
        s.input_fix[q] = true;
      } else if (naive[i]) {
        s.float_input[q] = true;
      } else {
        throw Error("split: internal: op '" + c.ops[i].name + "' reads the float value of '" + pn +
                    "' from another fragment");
      }
    }
  }
  return s;
}

// Outputs: owned tensors read by other fragments, model outputs, naive float values.
std::vector<bool> fragment_outputs(const Cutting& c, std::size_t f, const std::vector<bool>& naive,
                                   const Selection& s) {
  const int me = static_cast<int>(f);
  std::vector<bool> is_output(c.size(), false);
  for (const CrossTensor& t : c.ug.tensors()) {
    if (c.ug.unit(t.producer).is_input || c.of[t.producer] != me) continue;
    bool elsewhere = false;
    for (UnitId r : t.readers) elsewhere = elsewhere || c.of[r] != me;
    if (!elsewhere) continue;
    if (naive[t.fix]) {
      is_output[op_index(c.g, c.ops[t.fix].producers("input").front())] = true;
    } else {
      is_output[t.fix] = true;
    }
  }
  for (std::size_t o : c.ug.model_outputs())
    if (s.included[o] && c.fragment_of_op(o) == me) is_output[o] = true;
  return is_output;
}

// Names in one fragment: data ops take their fix's producer's name when free, else a
// fresh one that is no model op's name either.
class FragmentNames {
 public:
  FragmentNames(const Cutting& c, const Selection& s,
                const std::unordered_set<std::string>& model_names)
      : model_names_(model_names) {
    for (std::size_t i = 0; i < c.size(); ++i)
      if (s.any(i)) used_.insert(c.ops[i].name);
  }
  bool used(const std::string& name) const { return used_.count(name) != 0; }
  void use(const std::string& name) { used_.insert(name); }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; used_.count(name) || (name != base && model_names_.count(name)); ++k)
      name = base + "__in" + (k == 2 ? std::string() : std::to_string(k));
    used_.insert(name);
    return name;
  }

 private:
  const std::unordered_set<std::string>& model_names_;
  std::unordered_set<std::string> used_;
};

// Outputs also read inside: the original fix is renamed and a second fix keeps the name.
// Returns the new inner name by op index (empty for the others), each noted.
std::vector<std::string> inner_names(const Cutting& c, const FragmentPart& part, const Selection& s,
                                     const std::vector<bool>& is_output, FragmentNames& names,
                                     std::vector<PlanAdjustment>& adjustments) {
  std::vector<std::string> inner_name(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!is_output[i] || c.ops[i].type != "fix") continue;
    bool read_inside = false;
    for (const Op* r : c.g.consumers(c.ops[i].name))
      read_inside = read_inside || s.included[c.index_of(r)];
    if (!read_inside) continue;
    inner_name[i] = names.fresh(c.ops[i].name + "__inner");
    adjustments.push_back(
        {"output_ops", c.ops[i].name, part.name,
         "'" + c.ops[i].name + "' is also read inside fragment '" + part.name +
             "': a second fix of its value is the output (compile with output_ops, #809)"});
  }
  return inner_name;
}

// An op copied into a fragment: reading the renamed inner fixes, and without const data
// for Weights::LeftOut.
Op rewired(const Cutting& c, const Op& source, const std::vector<std::string>& inner_name,
           Weights weights) {
  Op op = weights == Weights::Copied || source.type != "const" ? source : without_data(source);
  for (auto& arg : op.args)
    for (auto& p : arg.producers) {
      const Op* q = c.g.find(p);
      if (q == nullptr) continue;
      const auto qi = c.index_of(q);
      if (!inner_name[qi].empty()) p = inner_name[qi];
    }
  return op;
}

// A fixed input: the producer's data op (a model input) or a new one, then a copy of the fix.
void add_fixed_input(const Cutting& c, const Op& fix_op, Graph& fg, FragmentNames& names,
                     std::unordered_set<std::string>& emitted_data) {
  const Op& source = c.g.op(fix_op.producers("input").front());
  std::string dname;
  if (source.type == "data") {
    dname = source.name;
    if (!emitted_data.count(dname)) fg.add_op(source);
  } else {
    dname = names.used(source.name) ? names.fresh(source.name) : source.name;
    names.use(dname);
    fg.add_op(data_op(dname, fix_op.output.shape));
  }
  emitted_data.insert(dname);
  Op fix = fix_op;
  for (auto& arg : fix.args)
    if (arg.name == "input") arg.producers = {dname};
  fg.add_op(std::move(fix));
}

// The fragment's graph: its selected ops in model order.
Graph fragment_graph(const Cutting& c, const FragmentPart& part, const Selection& s,
                     const std::vector<std::string>& inner_name, FragmentNames& names,
                     Weights weights) {
  Graph fg(c.g.name() + "__" + part.name);
  if (weights_omitted(c.g)) mark_weights_omitted(fg);
  copy_preprocessing(c.g, fg);  // `run --local --input` images read it from the fragments
  std::unordered_set<std::string> emitted_data;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const Op& op = c.ops[i];
    if (s.input_fix[i]) {
      add_fixed_input(c, op, fg, names, emitted_data);
    } else if (s.float_input[i]) {
      fg.add_op(data_op(op.name, op.output.shape));
    } else if (s.included[i]) {
      if (inner_name[i].empty()) {
        fg.add_op(rewired(c, op, inner_name, weights));
        continue;
      }
      // Read inside too: the fix keeps working inside under a new name and a second fix
      // of its int8 value (same fix_point: an identity) is the output.
      Op inner = rewired(c, op, inner_name, weights);
      inner.name = inner_name[i];
      inner.output.name = inner.name;
      fg.add_op(std::move(inner));
      Op outer = op;
      outer.args = {{"input", {inner_name[i]}}};
      fg.add_op(std::move(outer));
    }
  }
  return fg;
}

// The fragment's outputs must be exactly the tensors it hands on. Returns them in the
// graph's output order.
std::vector<std::string> checked_outputs(const Cutting& c, const FragmentPart& part,
                                         const Graph& fg, const std::vector<bool>& is_output) {
  std::vector<std::string> expected_outputs;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (is_output[i]) expected_outputs.push_back(c.ops[i].name);
  std::vector<std::string> actual_outputs;
  for (const Op* o : fg.outputs()) actual_outputs.push_back(o->name);
  std::vector<std::string> sorted = actual_outputs;
  std::sort(sorted.begin(), sorted.end());
  std::sort(expected_outputs.begin(), expected_outputs.end());
  if (sorted != expected_outputs)
    throw Error("split: internal: fragment '" + part.name + "' would output " +
                std::to_string(sorted.size()) + " tensors instead of " +
                std::to_string(expected_outputs.size()));
  return actual_outputs;
}

// The plan tensors of a fragment's outputs; a naive boundary's is the float value before
// the fix its readers apply.
std::vector<PlanTensor> output_tensors(const Cutting& c, const FragmentPart& part, const Graph& fg,
                                       const std::vector<std::string>& outputs,
                                       const std::vector<bool>& is_output,
                                       const std::vector<bool>& is_model_output) {
  std::vector<PlanTensor> out;
  for (const auto& name : outputs) {
    const std::size_t i = op_index(c.g, name);
    if (c.cls.activation_fix[i] || !is_output[i] || is_model_output[i] || fix_point_of(c.g, name)) {
      out.push_back(tensor_of(fg, name, "fragment '" + part.name + "' output"));
      continue;
    }
    const Op& fix = *c.g.consumers(name).front();
    PlanTensor t;
    t.name = name;
    t.shape = c.ops[i].output.shape;
    t.fix_point = *fix_point_of(c.g, fix.name);
    t.fixed = false;
    t.round_mode = round_mode_of(fix);
    out.push_back(std::move(t));
  }
  return out;
}

// What every fragment of one extraction shares: the naive cuts, the model's op names and
// outputs, and whether const data is copied.
struct ModelWide {
  std::vector<bool> naive;
  std::unordered_set<std::string> model_names;
  std::vector<bool> is_model_output;
  Weights weights;
};

// Fragment f: its ops, its outputs and their names, then its graph and plan tensors.
ExtractedFragment extract_fragment(const Cutting& c, std::size_t f, const ModelWide& shared,
                                   std::vector<PlanAdjustment>& adjustments) {
  const auto& part = c.partition.fragments[f];
  const Selection s = select_ops(c, part, shared.naive);
  const std::vector<bool> is_output = fragment_outputs(c, f, shared.naive, s);
  FragmentNames names(c, s, shared.model_names);
  const auto inner_name = inner_names(c, part, s, is_output, names, adjustments);

  ExtractedFragment frag;
  frag.graph = fragment_graph(c, part, s, inner_name, names, shared.weights);
  const auto outputs = checked_outputs(c, part, frag.graph, is_output);
  frag.inputs = model_inputs(frag.graph);
  frag.outputs = output_tensors(c, part, frag.graph, outputs, is_output, shared.is_model_output);
  return frag;
}

// Edges: every fragment input from its producer; every model output to the model.
std::vector<PlanEdge> plan_edges(const Cutting& c, const std::vector<bool>& naive,
                                 const std::vector<ExtractedFragment>& fragments) {
  std::vector<PlanEdge> edges;
  for (std::size_t f = 0; f < fragments.size(); ++f) {
    for (const PlanTensor& in : fragments[f].inputs) {
      const std::size_t fix = op_index(c.g, in.name);
      PlanEdge e;
      e.to = c.partition.fragments[f].name;
      e.input = in.name;
      const auto producer_unit = c.ug.unit_of(fix);
      if (naive[fix]) {
        const std::string& value = c.ops[fix].producers("input").front();
        e.from = c.fragment_name(c.fragment_of_op(op_index(c.g, value)));
        e.output = value;
        e.bytes = in.element_count();  // int8: the runtime's NAME__wire fix
      } else {
        e.from = producer_unit && c.ug.unit(*producer_unit).is_input
                     ? "model"
                     : c.fragment_name(c.of[*producer_unit]);
        e.output = in.name;
        e.bytes = in.element_count();
      }
      edges.push_back(std::move(e));
    }
  }
  for (std::size_t o : c.ug.model_outputs()) {
    const int f = c.fragment_of_op(o);
    if (f < 0) throw Error("split: model output '" + c.ops[o].name + "' is a model input");
    edges.push_back({c.fragment_name(f), c.ops[o].name, "model", c.ops[o].name,
                     c.ops[o].output.element_count()});
  }
  return edges;
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
  const Cutting c(ug, partition);
  Extraction result;
  ModelWide shared;
  shared.naive = naive_cuts(c, output_fix, result.adjustments);
  if (!output_fix) note_kept_fixes(c, shared.naive, result.adjustments);
  for (const Op& op : c.ops) shared.model_names.insert(op.name);
  shared.is_model_output.assign(c.size(), false);
  for (std::size_t o : ug.model_outputs()) shared.is_model_output[o] = true;
  shared.weights = weights;

  for (std::size_t f = 0; f < partition.fragments.size(); ++f)
    result.fragments.push_back(extract_fragment(c, f, shared, result.adjustments));
  result.edges = plan_edges(c, shared.naive, result.fragments);
  return result;
}

}  // namespace dpushard::split
