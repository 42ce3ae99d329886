// fmt formatters for the vocabulary's types, so that reports and errors write them with
// fmt::format("{}", x) and nothing spells them a second time:
//
//   Statement       "linear #0", "backward #1 retain", "checkpoint reentrant {": the statement
//                   as print_scenario writes it, with the module or tape index in place of the
//                   name (a statement alone does not know its program's names)
//   Program         print_scenario(program); "{:l}" print_scenario_one_line(program)
//   the events      "ModuleBackward{module=1, owner=true, fp8=false}", "AutocastExit"; AnyEvent
//                   the same for the event it holds
//   Invariant       its id, "I4";  InvariantSet  its to_string(), "I1 I3" or "none"
//   Semantics       its name, "pr3213";  ExceptionKind  its Python name, "KeyError"
//
// The formatters of the one-word types take a string's format spec ("{:>6}"). Each one calls
// the function that already writes the type's text (scenario_printer.cpp, invariants.cpp, ...):
// that function stays the one implementation.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "spec/events.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::spec {

// One event: its type's name, and its fields in declaration order with their values
// (spec/event_fields.hpp).
std::string event_text(const AnyEvent& event);

// Whether T is one of AnyEvent's alternatives (the formatter below serves exactly those).
template <class T, class Variant>
struct is_alternative_of : std::false_type {};
template <class T, class... Alternatives>
struct is_alternative_of<T, std::variant<Alternatives...>> : std::disjunction<std::is_same<T, Alternatives>...> {};
template <class T>
inline constexpr bool is_event_v = is_alternative_of<T, AnyEvent>::value;

}  // namespace fp8sm::spec

template <>
struct fmt::formatter<fp8sm::spec::Invariant> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(fp8sm::spec::Invariant invariant, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(fp8sm::spec::id(invariant), ctx);
  }
};

template <>
struct fmt::formatter<fp8sm::spec::InvariantSet> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const fp8sm::spec::InvariantSet& set, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(set.to_string(), ctx);
  }
};

template <>
struct fmt::formatter<fp8sm::spec::Semantics> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(fp8sm::spec::Semantics semantics, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(fp8sm::spec::name(semantics), ctx);
  }
};

template <>
struct fmt::formatter<fp8sm::spec::ExceptionKind> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(fp8sm::spec::ExceptionKind kind, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(fp8sm::spec::name(kind), ctx);
  }
};

template <>
struct fmt::formatter<fp8sm::spec::Statement> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const fp8sm::spec::Statement& statement, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(fp8sm::spec::print_statement(statement), ctx);
  }
};

// "{}" the canonical multi-line form, "{:l}" the one-line form.
template <>
struct fmt::formatter<fp8sm::spec::Program> {
  bool one_line = false;

  template <class ParseContext>
  constexpr auto parse(ParseContext& ctx) {
    auto it = ctx.begin();
    if (it != ctx.end() && *it == 'l') {
      one_line = true;
      ++it;
    }
    if (it != ctx.end() && *it != '}') throw fmt::format_error("a Program's format is {} or {:l}");
    return it;
  }
  template <class FormatContext>
  auto format(const fp8sm::spec::Program& program, FormatContext& ctx) const {
    return fmt::format_to(ctx.out(), "{}",
                          one_line ? fp8sm::spec::print_scenario_one_line(program) : fp8sm::spec::print_scenario(program));
  }
};

template <class Event>
struct fmt::formatter<Event, char, std::enable_if_t<fp8sm::spec::is_event_v<Event>>> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const Event& event, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(fp8sm::spec::event_text(fp8sm::spec::AnyEvent(event)), ctx);
  }
};

template <>
struct fmt::formatter<fp8sm::spec::AnyEvent> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const fp8sm::spec::AnyEvent& event, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(fp8sm::spec::event_text(event), ctx);
  }
};
