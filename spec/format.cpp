// The events' text for spec/format.hpp: "Name{field=value, ...}", from each event's name and
// fields (spec/event_fields.hpp).
#include "spec/format.hpp"

#include <iterator>

#include "spec/event_fields.hpp"

namespace fp8sm::spec {

std::string event_text(const AnyEvent& event) {
  return std::visit(
      [](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        std::string out(EventFields<E>::name);
        if constexpr (std::tuple_size_v<decltype(EventFields<E>::fields)> > 0) {
          const char* separator = "{";
          for_each_field(e, [&](const auto& field, auto value) {
            fmt::format_to(std::back_inserter(out), "{}{}={}", separator, field.name, value);
            separator = ", ";
          });
          out += '}';
        }
        return out;
      },
      event);
}

}  // namespace fp8sm::spec
