#include "statemachine/row_catalogue.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace fp8sm::statemachine {

std::string RowDescription::to_string() const {
  return fmt::format("{} + {}{} -> {} / {}", source, event, guard == "none" ? "" : fmt::format(" [{}]", guard),
                     target == "none" ? "(stays)" : target, action);
}

void RowCatalogue::add(std::type_index key, RowDescription description) {
  keys_.push_back(key);
  rows_.push_back(std::move(description));
}

int RowCatalogue::index_of(std::type_index key) const {
  auto it = std::find(keys_.begin(), keys_.end(), key);
  return it == keys_.end() ? -1 : static_cast<int>(it - keys_.begin());
}

namespace {
void erase_all(std::string& text, const std::string& what) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at)) {
    text.erase(at, what.size());
  }
}
void replace_all(std::string& text, const std::string& what, const std::string& with) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at)) {
    text.replace(at, what.size(), with);
    at += with.size();
  }
}
}  // namespace

std::string component_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 ? demangled.get() : type.name();
  for (const char* prefix :
       {"fp8sm::statemachine::guards::", "fp8sm::statemachine::actions::",
        "fp8sm::statemachine::states::", "fp8sm::statemachine::", "fp8sm::spec::",
        "boost::msm::front::euml::", "boost::msm::front::", "boost::mpl::"}) {
    erase_all(name, prefix);
  }
  erase_all(name, ", mpl_::na");
  erase_all(name, ", na");
  replace_all(name, "> >", ">>");
  replace_all(name, "> >", ">>");
  // An action sequence reads as Seq<A, B>.
  const std::string sequence = "ActionSequence_<vector<";
  if (name.rfind(sequence, 0) == 0 && name.size() > sequence.size() + 2) {
    name = fmt::format("Seq<{}>", name.substr(sequence.size(), name.size() - sequence.size() - 2));
  }
  return name;
}

}  // namespace fp8sm::statemachine
