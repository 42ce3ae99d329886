// The snapshot encoder's canonical ids (statemachine/encoder.hpp): ids renamed by rank, entries
// of ids nothing mentions dropped. Every state the explorer stores goes through it, and a bug
// here merges states whose futures differ (or keeps apart equal ones) without any other test
// seeing it directly.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "statemachine/encoder.hpp"

namespace fp8sm {
namespace {

using statemachine::Encoder;
using statemachine::IdKind;

// A small description of an encoding: plain values, id mentions and keyed entries, written
// through an Encoder with every id passed through `rename`.
struct Mention {
  IdKind kind;
  std::uint32_t id;
};
struct Entry {
  IdKind kind;
  std::uint32_t id;
  std::vector<Mention> mentions;
  std::uint8_t payload;
};
struct Shape {
  std::vector<Mention> mentions;
  std::vector<Entry> entries;
};

template <class Rename>
std::string encode(const Shape& shape, bool canonical, Rename rename) {
  Encoder encoder(canonical);
  encoder.put(0xAB, 1);
  for (const Mention& m : shape.mentions) encoder.put_id(m.kind, rename(m.id));
  for (const Entry& e : shape.entries) {
    encoder.begin_keyed(e.kind, rename(e.id));
    encoder.put(e.payload, 1);
    for (const Mention& m : e.mentions) encoder.put_id(m.kind, rename(m.id));
    encoder.end_keyed();
  }
  std::string out;
  encoder.finish(out);
  return out;
}

std::string encode(const Shape& shape, bool canonical) {
  return encode(shape, canonical, [](std::uint32_t id) { return id; });
}

TEST(Encoder, CanonicalIdsAreRanks) {
  const Shape sparse{{{IdKind::Capture, 5}, {IdKind::Capture, 9}, {IdKind::Node, 40}}, {}};
  const Shape dense{{{IdKind::Capture, 0}, {IdKind::Capture, 1}, {IdKind::Node, 0}}, {}};
  EXPECT_EQ(encode(sparse, true), encode(dense, true));
  EXPECT_NE(encode(sparse, false), encode(dense, false));
  // Order is kept: swapping the two captures is another state.
  const Shape swapped{{{IdKind::Capture, 9}, {IdKind::Capture, 5}, {IdKind::Node, 40}}, {}};
  EXPECT_NE(encode(swapped, true), encode(sparse, true));
}

TEST(Encoder, EntriesNothingMentionsAreDroppedAndMentionsCloseOverKeptEntries) {
  // Capture 3 is mentioned; its entry mentions frame 7, whose entry is therefore kept; the
  // entry of capture 4 is named by nothing.
  const Shape with_dead{{{IdKind::Capture, 3}},
                        {{IdKind::Capture, 3, {{IdKind::Frame, 7}}, 1},
                         {IdKind::Capture, 4, {}, 2},
                         {IdKind::Frame, 7, {}, 3}}};
  const Shape without{{{IdKind::Capture, 3}},
                      {{IdKind::Capture, 3, {{IdKind::Frame, 7}}, 1}, {IdKind::Frame, 7, {}, 3}}};
  EXPECT_EQ(encode(with_dead, true), encode(without, true));
  EXPECT_NE(encode(with_dead, false), encode(without, false));
  const Shape frame_dropped{{{IdKind::Capture, 3}}, {{IdKind::Capture, 3, {{IdKind::Frame, 7}}, 1}}};
  EXPECT_NE(encode(with_dead, true), encode(frame_dropped, true));  // the frame's entry was kept
}

Shape random_shape(std::mt19937& rng) {
  auto pick = [&rng](int n) { return static_cast<std::uint32_t>(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  auto mention = [&] { return Mention{static_cast<IdKind>(pick(statemachine::kIdKinds)), pick(12)}; };
  Shape shape;
  for (std::uint32_t i = pick(6); i > 0; --i) shape.mentions.push_back(mention());
  for (std::uint32_t i = pick(6); i > 0; --i) {
    Entry entry{static_cast<IdKind>(pick(statemachine::kIdKinds)), pick(12), {}, static_cast<std::uint8_t>(pick(256))};
    for (std::uint32_t j = pick(3); j > 0; --j) entry.mentions.push_back(mention());
    shape.entries.push_back(entry);
  }
  return shape;
}

// Any strictly increasing renaming of the ids gives the same canonical encoding: ids are only
// ever compared. Small, large and mixed renamings, over random shapes with entries that name
// each other.
TEST(Encoder, CanonicalEncodingIgnoresAnyOrderKeepingRenaming) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const Shape shape = random_shape(rng);
    const std::string expected = encode(shape, true);
    EXPECT_EQ(encode(shape, true, [](std::uint32_t id) { return 3 * id + 2; }), expected);
    EXPECT_EQ(encode(shape, true, [](std::uint32_t id) { return 1000 + id * id; }), expected);
    EXPECT_EQ(encode(shape, true, [](std::uint32_t id) { return id == 0 ? 0 : 60 + id; }), expected);
  }
}

}  // namespace
}  // namespace fp8sm
