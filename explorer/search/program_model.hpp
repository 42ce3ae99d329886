// The programs of the scenario language as the engine's model (search_model.hpp): a state is a
// program prefix run on the transition table with the invariants' observers (model/model_state),
// a statement code is statement_code.hpp's byte, and the statements that may follow are the
// alphabet's (model/alphabet). Everything that decides which states are one (canonical ids,
// module-name symmetry, the invariants checked) is in ModelSettings and stays on this side of
// the interface.
#pragma once

#include "explorer/model/model_settings.hpp"
#include "explorer/search/search_model.hpp"

namespace fp8sm::explorer {

class ProgramModel : public SearchModel {
 public:
  explicit ProgramModel(const ModelSettings& settings);

  std::unique_ptr<ModelCursor> cursor() const override;
  StatementCode close_code() const override;
  spec::InvariantSet checked() const override;
  std::vector<std::string> carried() const override;
  std::size_t table_rows() const override;
  spec::Program program(const SearchPath& path) const override;
  std::uint64_t identity() const override;
  std::string settings() const override;

 private:
  ModelSettings settings_;
};

}  // namespace fp8sm::explorer
