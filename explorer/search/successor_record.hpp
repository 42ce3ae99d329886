// What the search learns of one successor, and how it travels to the rank that owns it.
//
// Expanding a state runs every statement of the alphabet on it and, after each, closes the
// blocks it leaves open one by one (closing is free): a chain of links, each a state one
// statement or closing brace past the previous one, ending at top level. A worker keeps a
// parent's chains compactly (Links: fingerprints, verdicts, statement codes). Each link becomes
// a SuccessorRecord, with the discovery key and path that name its state (search_path.hpp), for
// the rank that owns the state: the merge there stores it if it is new and counts what it did.
//
// A rank packs the records for other ranks into messages (successor_messages.hpp).
//
// Counting needs one fact the expanding rank cannot know: whether a link's state is new. The
// one-process search counts a link's transition only if the links before it in its chain were
// all new (a state seen before had its closing chain counted when first seen). So a record
// also carries the next link's transition (its table rows, for --coverage), and the owner of a
// state counts that next transition when it finds the state new.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "explorer/model/fingerprint.hpp"
#include "explorer/search/search_path.hpp"
#include "spec/invariants.hpp"

namespace fp8sm::explorer {

// A worker's view of one link of a chain.
struct Link {
  Fingerprint fingerprint;
  spec::InvariantSet violations;      // of the statement
  spec::InvariantSet end_violations;  // of ending the program there (top level only)
  std::uint8_t via = 0;               // pack_statement's code of the statement or closing brace
  bool top_level = false;             // the chain ends here
  std::uint32_t rows_end = 0;         // with --coverage: where its transition's rows end in Links::rows
};

// The chains of one parent, one after the other, and with --coverage the table rows each
// link's transition took, link after link.
struct Links {
  std::vector<Link> links;
  std::vector<std::uint16_t> rows;
  void clear() {
    links.clear();
    rows.clear();
  }
};

// Table rows (--coverage), read from bytes that need not be aligned.
class RowSpan {
 public:
  RowSpan() = default;
  RowSpan(const void* bytes, std::uint16_t count) : bytes_(static_cast<const std::uint8_t*>(bytes)), count_(count) {}
  std::uint16_t size() const { return count_; }
  std::uint16_t operator[](std::size_t i) const {
    std::uint16_t row;
    std::memcpy(&row, bytes_ + 2 * i, sizeof row);
    return row;
  }

 private:
  const std::uint8_t* bytes_ = nullptr;
  std::uint16_t count_ = 0;
};

struct SuccessorRecord {
  Fingerprint fingerprint;
  std::uint64_t key = 0;              // the discovery key, in the layer being built
  SearchPath path;                    // from the root to this state: the parent's, `statement`, `closes` closing braces
  std::uint8_t link = 0;              // its index among the parent's links (the key's last byte)
  std::uint8_t statement = 0;         // the code of the statement that started its chain
  std::uint8_t closes = 0;            // closing braces after it
  spec::InvariantSet violations;      // of the transition that reached it
  spec::InvariantSet end_violations;  // of ending the program here (top level only)
  bool first_of_chain = false;        // reached by a statement, not a closing brace after one
  bool top_level = false;             // no block open: nothing follows in the chain
  RowSpan rows;                       // --coverage: this transition's rows (first of a chain only)
  RowSpan next_rows;                  // --coverage: the next link's transition's rows (not top level)
};

// Calls `visit(record)` for every link of `links`, the chains of the parent `parent_key` /
// `parent_path` of depth `parent_depth`, in link order (their keys ascending). Throws
// statemachine::CapacityError if a parent has more links than a key counts.
template <class Visit>
void for_each_record(std::uint64_t parent_key, const SearchPath& parent_path, int parent_depth, const Links& links,
                     bool coverage, Visit&& visit) {
  SuccessorRecord record;
  const int parent_length = parent_path.size();
  int length = parent_length;
  bool chain_start = true;
  for (std::size_t i = 0; i < links.links.size(); ++i) {
    const Link& link = links.links[i];
    if (chain_start) {
      record.path = parent_path;
      length = parent_length;
      record.statement = link.via;
      record.closes = 0;
    } else {
      ++record.closes;
    }
    record.path.put(length++, link.via);
    record.fingerprint = link.fingerprint;
    record.key = child_key(parent_key, parent_depth, static_cast<unsigned>(i));
    record.link = static_cast<std::uint8_t>(i);
    record.violations = link.violations;
    record.end_violations = link.end_violations;
    record.first_of_chain = chain_start;
    record.top_level = link.top_level;
    if (coverage) {
      const std::uint32_t begin = i == 0 ? 0 : links.links[i - 1].rows_end;
      record.rows = chain_start ? RowSpan(links.rows.data() + begin, static_cast<std::uint16_t>(link.rows_end - begin))
                                : RowSpan();
      record.next_rows = link.top_level ? RowSpan()
                                        : RowSpan(links.rows.data() + link.rows_end,
                                                  static_cast<std::uint16_t>(links.links[i + 1].rows_end - link.rows_end));
    }
    visit(static_cast<const SuccessorRecord&>(record));
    chain_start = link.top_level;
  }
}

}  // namespace fp8sm::explorer
