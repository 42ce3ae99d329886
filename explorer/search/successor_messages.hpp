// How the successors of a round travel to their owners: one message per owner, a group per
// parent that has successors there. A group is the parent's key and path, then its records,
// each a fingerprint, the link's index and how it was reached (the chain's statement and the
// closing braces after it), its verdicts when it has any, and with --coverage its rows; the
// owner rebuilds a record's key and path from its group's. Groups are in the order the sender
// expanded its parents (key order), and a parent's records in link order; a parent's links all
// come from the rank that expanded it, so merging the messages of all ranks in key order is
// merging whole groups by their parents' keys.
//
//   group  := parent key (8) | group bytes after this field (4) | path length (1) | path | records (2) | record*
//   record := fingerprint (16: high, low) | link (1) | statement (1) | closes (1) | flags (1)
//             [violations (2) | end violations (2)]   when flags say it has verdicts
//             [rows (2) | row*  | next rows (2) | row*] with --coverage
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "explorer/search/frontier.hpp"
#include "explorer/search/ranks.hpp"
#include "explorer/search/successor_record.hpp"

namespace fp8sm::explorer {

// Packs one parent's records after another into the messages for their owners.
class SuccessorPacker {
 public:
  // `messages[r]` is the message for rank r (appended to).
  SuccessorPacker(std::vector<Bytes>& messages, bool coverage);
  void begin_parent(const FrontierEntry& parent);
  void add(int owner, const SuccessorRecord& record);
  // Closes the parent's groups (their lengths and record counts).
  void end_parent();

 private:
  std::vector<Bytes>& messages_;
  bool coverage_;
  const FrontierEntry* parent_ = nullptr;
  std::vector<std::size_t> open_;       // per owner: where the parent's open group starts, or npos
  std::vector<std::uint16_t> records_;  // per owner: records in it
};

// Reads the groups of one message in order. Every read checks the message's bounds: a message
// that ends inside a group, or claims more than it holds, throws std::runtime_error.
class SuccessorGroups {
 public:
  // The message's groups from byte `at`; its records' parents have depth `parent_depth`; a
  // record's closes are the model's `close` code.
  SuccessorGroups(const Bytes& message, std::size_t at, int parent_depth, bool coverage, std::uint8_t close);
  bool done() const { return at_ == message_.size(); }
  std::size_t position() const { return at_; }
  void seek(std::size_t at) { at_ = at; }
  // The parent key of the group at hand.
  std::uint64_t parent_key() const;
  void skip_group();
  // Reads the group at hand, calling visit(record) for each of its records in order (their rows
  // point into the message), and moves to the next group.
  template <class Visit>
  void read_group(Visit&& visit) {
    const std::size_t count = begin_group();
    for (std::size_t i = 0; i < count; ++i) {
      read_record();
      visit(static_cast<const SuccessorRecord&>(record_));
    }
  }

 private:
  std::size_t begin_group();  // returns the group's record count
  void read_record();
  const std::uint8_t* take(std::size_t n);

  const Bytes& message_;
  std::size_t at_;
  int parent_depth_;
  bool coverage_;
  std::uint8_t close_;
  std::uint64_t parent_key_ = 0;
  SearchPath parent_path_;
  int parent_length_ = 0;
  SuccessorRecord record_;
};

}  // namespace fp8sm::explorer
