// Each event's name and fields, in declaration order, written once: spec/format.cpp writes an
// event from them ("ModuleBackward{module=1, owner=true, fp8=false}"), and `explorer run`'s
// pictures (explorer/report/run_sequence.cpp) describe one in words ("ModuleBackward L1, owner").
//
// A field is a flag, a module or a capture. In words a flag reads `on` or `off` ("enabled" /
// "disabled"); a flag with no `off` is a qualifier, said only when set and after a comma
// ("ModuleBackward L1, owner", "CheckpointForwardExit, exceptional"). A module reads as its
// name in the program, a capture as "C<n>". The other fields follow the event's name, the
// first after a space and the next after a comma: "CheckpointForwardEnter C0, reentrant".
#pragma once

#include <string_view>
#include <tuple>

#include "spec/events.hpp"

namespace fp8sm::spec {

template <class Event>
struct Flag {
  std::string_view name;
  bool Event::*member;
  std::string_view on, off;  // in words; off empty: a qualifier
  bool qualifier() const { return off.empty(); }
};
template <class Event>
struct ModuleField {
  std::string_view name;
  ModuleId Event::*member;
};
template <class Event>
struct CaptureField {
  std::string_view name;
  CaptureId Event::*member;
};

template <class Field>
inline constexpr bool is_flag_v = false;
template <class Event>
inline constexpr bool is_flag_v<Flag<Event>> = true;
template <class Field>
inline constexpr bool is_module_field_v = false;
template <class Event>
inline constexpr bool is_module_field_v<ModuleField<Event>> = true;

// EventFields<E>::name, and ::fields, a tuple of E's fields.
template <class Event>
struct EventFields;

#define FP8SM_EVENT_FIELDS(EVENT, ...)                           \
  template <>                                                    \
  struct EventFields<EVENT> {                                    \
    using E = EVENT;                                             \
    static constexpr std::string_view name = #EVENT;             \
    static constexpr auto fields = std::make_tuple(__VA_ARGS__); \
  };
#define FP8SM_EVENT_WITHOUT_FIELDS(EVENT)                \
  template <>                                            \
  struct EventFields<EVENT> {                            \
    static constexpr std::string_view name = #EVENT;     \
    static constexpr std::tuple<> fields{};              \
  };

FP8SM_EVENT_FIELDS(AutocastEnter, Flag<E>{"enabled", &E::enabled, "enabled", "disabled"},
                   Flag<E>{"recompute_internal", &E::recompute_internal, "the recompute's own", ""})
FP8SM_EVENT_WITHOUT_FIELDS(AutocastExit)
FP8SM_EVENT_FIELDS(GradPush, Flag<E>{"enabled", &E::enabled, "enable_grad", "no_grad"},
                   Flag<E>{"internal", &E::internal, "internal", ""})
FP8SM_EVENT_WITHOUT_FIELDS(GradPop)
FP8SM_EVENT_FIELDS(CheckpointForwardEnter, CaptureField<E>{"capture", &E::capture},
                   Flag<E>{"reentrant", &E::reentrant, "reentrant", "non-reentrant"})
FP8SM_EVENT_FIELDS(CheckpointForwardExit, Flag<E>{"exceptional", &E::exceptional, "exceptional", ""})
FP8SM_EVENT_FIELDS(RecomputeEnter, CaptureField<E>{"capture", &E::capture})
FP8SM_EVENT_WITHOUT_FIELDS(RecomputeExit)
FP8SM_EVENT_FIELDS(ModulePrepare, ModuleField<E>{"module", &E::module})
FP8SM_EVENT_FIELDS(ModuleClaim, ModuleField<E>{"module", &E::module})
FP8SM_EVENT_FIELDS(ModuleEndForward, ModuleField<E>{"module", &E::module})
FP8SM_EVENT_FIELDS(ModuleBackwardBegin, ModuleField<E>{"module", &E::module},
                   Flag<E>{"ran_before", &E::ran_before, "ran before", ""})
FP8SM_EVENT_FIELDS(SavedTensorUnpack, Flag<E>{"reached", &E::reached, "reached", "not reached"},
                   Flag<E>{"taken", &E::taken, "taken before", ""})
FP8SM_EVENT_FIELDS(ModuleBackward, ModuleField<E>{"module", &E::module}, Flag<E>{"owner", &E::owner, "owner", ""},
                   Flag<E>{"fp8", &E::fp8, "fp8", ""})
FP8SM_EVENT_WITHOUT_FIELDS(BackwardPassBegin)
FP8SM_EVENT_FIELDS(BackwardPassEnd, Flag<E>{"completed", &E::completed, "completed", "failed"})
FP8SM_EVENT_FIELDS(CheckpointReleased, CaptureField<E>{"capture", &E::capture})

#undef FP8SM_EVENT_FIELDS
#undef FP8SM_EVENT_WITHOUT_FIELDS

// f(field, value) for each field of `event`, in order.
template <class Event, class F>
void for_each_field(const Event& event, F&& f) {
  std::apply([&](const auto&... field) { (f(field, event.*field.member), ...); }, EventFields<Event>::fields);
}

}  // namespace fp8sm::spec
