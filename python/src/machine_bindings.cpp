// fp8sm.Machine: one instance of the transition table, for Python. Each event is a method;
// what the table's actions did (statemachine/hooks.hpp) comes back as a list of actions, and
// the exception the table raises (spec/step_result.hpp's kinds) as the Python exception of
// that name, carrying the actions taken before it in its `actions` attribute: the state is
// then what the operation left behind, as in TE.
//
// Nothing here decides anything: every method fires one event and reports.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/src/bindings.hpp"
#include "spec/events.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"
#include "statemachine/hooks.hpp"
#include "statemachine/machine.hpp"

namespace nb = nanobind;

namespace fp8sm::python {
namespace {

using spec::CaptureId;
using spec::ModuleId;
using statemachine::CheckpointPhase;
using statemachine::Machine;
using statemachine::ModuleFlags;

// One call of a hook: its name (the Hooks method's) and its arguments, in order.
struct Action {
  const char* name = "";
  std::vector<long long> args;
};

// Keeps every hook call of the event being fired, in order.
class RecordingHooks final : public statemachine::Hooks {
 public:
  std::vector<Action> actions;
  // The owner bit of the last claim, for module_claim's answer.
  std::optional<bool> last_claim;

  void forward_update() override { add("forward_update"); }
  void backward_update() override { add("backward_update"); }
  void discard_forward_amax() override { add("discard_forward_amax"); }
  void registered(ModuleId m) override { add("registered", {m}); }
  void stash(ModuleId m) override { add("stash", {m}); }
  void save_for_restore(ModuleId m) override { add("save_for_restore", {m}); }
  void pop_stash(ModuleId m) override { add("pop_stash", {m}); }
  void restore(ModuleId m) override { add("restore", {m}); }
  void stash_for(ModuleId m, CaptureId c) override { add("stash_for", {m, c}); }
  void replay_stash(ModuleId m, CaptureId c, unsigned occurrence) override {
    add("replay_stash", {m, c, occurrence});
  }
  void release_stash(CaptureId c) override { add("release_stash", {c}); }
  void claimed(ModuleId m, bool owner) override {
    last_claim = owner;
    add("claimed", {m, owner ? 1 : 0});
  }
  void ownership_captured(CaptureId c) override { add("ownership_captured", {c}); }
  void ownership_installed(CaptureId c) override { add("ownership_installed", {c}); }

 private:
  void add(const char* name, std::vector<long long> args = {}) { actions.push_back(Action{name, std::move(args)}); }
};

const char* phase_name(CheckpointPhase phase) {
  switch (phase) {
    case CheckpointPhase::Outside: return "outside";
    case CheckpointPhase::OriginalForward: return "original_forward";
    case CheckpointPhase::Recompute: return "recompute";
  }
  return "outside";
}

// The Python builtin exception class of a kind the table raises.
nb::object exception_class(spec::ExceptionKind kind) {
  return nb::module_::import_("builtins").attr(spec::name(kind));
}

// A machine with its recording hooks (the hooks live as long as the machine: it points at them).
class PyMachine {
 public:
  explicit PyMachine(const std::string& semantics) : machine_(parse_semantics_or_throw(semantics), &hooks_) {
    machine_.record_rows(&rows_);
  }
  PyMachine(const PyMachine& other) : machine_(other.machine_) {
    machine_.set_hooks(&hooks_);
    machine_.record_rows(&rows_);
  }
  PyMachine& operator=(const PyMachine&) = delete;

  // Fires `event`; returns the actions as tuples, or raises what the table raised.
  template <class Event>
  nb::list fire(const Event& event) {
    hooks_.actions.clear();
    hooks_.last_claim.reset();
    rows_.clear();
    const std::optional<spec::RaisedException> raised = machine_.fire(event);
    nb::list actions = action_list();
    if (raised) {
      nb::object error = exception_class(raised->kind)(nb::str(raised->message.data(), raised->message.size()));
      error.attr("actions") = actions;
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
      throw nb::python_error();
    }
    return actions;
  }

  // The claim's answer: whether the node being recorded owns the backward update (None: the
  // table made no claim, e.g. no FP8 autocast), with the actions.
  nb::tuple claim(ModuleId m) {
    nb::list actions = fire(spec::ModuleClaim{m});
    return nb::make_tuple(hooks_.last_claim, actions);
  }

  Machine& machine() { return machine_; }
  const Machine& machine() const { return machine_; }
  std::vector<int> rows_taken() const { return std::vector<int>(rows_.begin(), rows_.end()); }

 private:
  nb::list action_list() const {
    nb::list list;
    for (const Action& a : hooks_.actions) {
      nb::list items;
      items.append(nb::str(a.name));
      for (long long arg : a.args) items.append(arg);
      list.append(nb::tuple(items));
    }
    return list;
  }

  RecordingHooks hooks_;
  std::vector<std::uint16_t> rows_;
  Machine machine_;
};

}  // namespace

void bind_machine(nb::module_& m) {
  nb::class_<ModuleFlags>(m, "ModuleFlags", "What the table keeps of one module (spec §2.3), its control part.")
      .def_ro("stash_depth", &ModuleFlags::stash_depth, "Entries in the module's recompute deque.")
      .def_ro("fp8", &ModuleFlags::fp8, "Whether its last normal-branch init made its meta FP8.")
      .def_ro("registered", &ModuleFlags::registered, "Whether it has joined the amax registry.")
      .def_ro("has_stash_pos", &ModuleFlags::has_stash_pos, "Whether its recompute position exists.")
      .def_ro("has_saved_for_restore", &ModuleFlags::has_saved_for_restore,
              "Whether the meta a restore puts back exists.")
      .def_ro("restore_pending", &ModuleFlags::restore_pending,
              "fp8sm: a recompute replaced its meta until its end_forward.");

  nb::class_<PyMachine>(m, "Machine",
                        "One instance of the transition table under a semantics ('upstream', 'pr3213' or "
                        "'fp8sm').\n\n"
                        "Each event method fires one event of spec §3 and returns the actions the table "
                        "took, in order, as tuples ('stash', module), ('forward_update',), ... (the hooks "
                        "of statemachine/hooks.hpp). An event the table raises at raises the Python "
                        "exception of the kind the spec names (KeyError, IndexError, RuntimeError), "
                        "whose `actions` attribute holds the actions taken before the raise; the machine "
                        "is left as the operation left it.")
      .def(nb::init<const std::string&>(), nb::arg("semantics") = "fp8sm")
      .def("__copy__", [](const PyMachine& self) { return PyMachine(self); })
      .def("__deepcopy__", [](const PyMachine& self, nb::handle) { return PyMachine(self); }, nb::arg("memo"))
      .def("copy", [](const PyMachine& self) { return PyMachine(self); },
           "An independent machine in the same state.")
      // ---- events (spec/events.hpp) ----
      .def("autocast_enter",
           [](PyMachine& self, bool enabled, bool recompute_internal) {
             return self.fire(spec::AutocastEnter{enabled, recompute_internal});
           },
           nb::arg("enabled") = true, nb::arg("recompute_internal") = false,
           "AC_ENTER (§3.1): a user autocast, or one a recompute opens (recompute_internal).")
      .def("autocast_exit", [](PyMachine& self) { return self.fire(spec::AutocastExit{}); },
           "AC_EXIT (§3.1) of the innermost autocast, normal or unwinding.")
      .def("grad_push",
           [](PyMachine& self, bool enabled, bool internal) { return self.fire(spec::GradPush{enabled, internal}); },
           nb::arg("enabled") = true, nb::arg("internal") = false,
           "torch's grad mode pushed (no_grad, enable_grad); internal: by a checkpoint or the engine.")
      .def("grad_pop", [](PyMachine& self) { return self.fire(spec::GradPop{}); }, "The last grad_push ends.")
      .def("checkpoint_forward_enter",
           [](PyMachine& self, CaptureId capture, bool reentrant) {
             return self.fire(spec::CheckpointForwardEnter{capture, reentrant});
           },
           nb::arg("capture"), nb::arg("reentrant") = false,
           "ARF_ENTER(fwd) (§3.4): checkpoint `capture`'s original forward begins.")
      .def("checkpoint_forward_exit",
           [](PyMachine& self, bool exceptional) { return self.fire(spec::CheckpointForwardExit{exceptional}); },
           nb::arg("exceptional") = false, "ARF_EXIT(fwd) (§3.4); exceptional: an exception unwinds through it.")
      .def("recompute_enter",
           [](PyMachine& self, CaptureId capture) { return self.fire(spec::RecomputeEnter{capture}); },
           nb::arg("capture"), "ARF_ENTER(rc) (§3.4): the recompute of checkpoint `capture` begins.")
      .def("recompute_exit", [](PyMachine& self) { return self.fire(spec::RecomputeExit{}); },
           "ARF_EXIT(rc) (§3.4).")
      .def("module_prepare", [](PyMachine& self, ModuleId module) { return self.fire(spec::ModulePrepare{module}); },
           nb::arg("module"), "prepare_forward (§3.2): branch, register, stash or pop.")
      .def("module_claim", &PyMachine::claim, nb::arg("module"),
           "The ownership claim (§3.2 CLAIM). Returns (owner, actions): owner is True or False as "
           "the table claimed, None where it made no claim.")
      .def("module_end_forward",
           [](PyMachine& self, ModuleId module) { return self.fire(spec::ModuleEndForward{module}); },
           nb::arg("module"), "end_forward (§3.2): restore.")
      .def("module_backward_begin",
           [](PyMachine& self, ModuleId module, bool ran_before) {
             return self.fire(spec::ModuleBackwardBegin{module, ran_before});
           },
           nb::arg("module"), nb::arg("ran_before") = false,
           "A module node's backward begins (§3.3); ran_before: its backward completed once already.")
      .def("saved_tensor_unpack",
           [](PyMachine& self, bool reached, bool taken) { return self.fire(spec::SavedTensorUnpack{reached, taken}); },
           nb::arg("reached") = true, nb::arg("taken") = false,
           "A node unpacks a saved tensor through a non-reentrant frame's hook (§3.5).")
      .def("module_backward",
           [](PyMachine& self, ModuleId module, bool owner, bool fp8) {
             return self.fire(spec::ModuleBackward{module, owner, fp8});
           },
           nb::arg("module"), nb::arg("owner"), nb::arg("fp8"),
           "A module's backward ends (§3.3): owner is the flag its node saved at the claim.")
      .def("backward_pass_begin", [](PyMachine& self) { return self.fire(spec::BackwardPassBegin{}); },
           "A backward pass begins.")
      .def("backward_pass_end",
           [](PyMachine& self, bool completed) { return self.fire(spec::BackwardPassEnd{completed}); },
           nb::arg("completed") = true, "A backward pass ends; completed: False when an exception left it.")
      .def("checkpoint_released",
           [](PyMachine& self, CaptureId capture) { return self.fire(spec::CheckpointReleased{capture}); },
           nb::arg("capture"), "Checkpoint `capture` can never be recomputed again.")
      // ---- what the guards see ----
      .def_prop_ro("semantics", [](const PyMachine& self) { return std::string(spec::name(self.machine().semantics())); })
      .def_prop_ro("ownership_available", [](const PyMachine& self) { return self.machine().ownership_available(); },
                   "F: whether the next claim under FP8 would own the update.")
      .def_prop_ro("checkpoint_phase",
                   [](const PyMachine& self) { return phase_name(self.machine().checkpoint_phase()); },
                   "'outside', 'original_forward' or 'recompute'.")
      .def_prop_ro("fp8_enabled", [](const PyMachine& self) { return self.machine().fp8_enabled(); })
      .def_prop_ro("grad_enabled", [](const PyMachine& self) { return self.machine().grad_enabled(); })
      .def_prop_ro("autocast_depth", [](const PyMachine& self) { return self.machine().autocast_depth(); })
      .def("checkpoint_call_is_plain", [](const PyMachine& self) { return self.machine().checkpoint_call_is_plain(); },
           "Whether a checkpoint called now runs its function as a plain call (§3.5 Dispatch).")
      .def("reentrant_forward_skips_arf",
           [](const PyMachine& self, bool input_requires_grad) {
             return self.machine().reentrant_forward_skips_arf(input_requires_grad);
           },
           nb::arg("input_requires_grad"),
           "Whether a reentrant checkpoint called now runs its forward without its ARF (§3.5 Dispatch).")
      .def_prop_ro("captured_bits",
                   [](const PyMachine& self) {
                     std::vector<bool> bits;
                     for (const auto& entry : self.machine().data().fifo) bits.push_back(entry.bit);
                     return bits;
                   },
                   "upstream's FIFO of captured ownership bits (spec §2.1), front first; empty in the "
                   "other semantics.")
      .def("module", [](const PyMachine& self, ModuleId module) { return self.machine().module(module); },
           nb::arg("module"), "The table's flags of one module.")
      .def_prop_ro("rows_taken", &PyMachine::rows_taken,
                   "The table rows (Machine.table() indices) the last event took, in order.")
      .def("snapshot", [](const PyMachine& self) { const std::string s = self.machine().snapshot(); return nb::bytes(s.data(), s.size()); },
           "The region states and data, packed: equal snapshots, equal futures.")
      .def("fingerprint", [](const PyMachine& self) { return self.machine().fingerprint(); },
           "A 64-bit hash of snapshot().")
      .def_static("table",
                  [] {
                    std::vector<std::string> rows;
                    for (const auto& row : Machine::rows().rows()) rows.push_back(row.to_string());
                    return rows;
                  },
                  "Every row of the transition table, in table order, as `explorer table` prints it.");
}

}  // namespace fp8sm::python
