// Snapshots of a search (--snapshot DIR, --resume DIR): at each completed layer, every rank
// writes what it holds (its part of the seen-set, the violation sets, the frontier to expand
// next, its first finds and row counts, and the layers so far) to a file of its own; once all
// have, rank 0 writes the manifest naming that layer and each file's checksum. Every file is
// written to a temporary name, flushed to disk and renamed, so a process killed at any moment
// leaves either the previous complete snapshot or the new one, never half of one: the files of
// layer d are removed only after the manifest of layer d + 1 is in place.
//
// A resumed run must be the same search: the same explorer (version, snapshot format), the same
// model (SearchModel::identity and its settings), the same engine options that decide states and
// verdicts, the same number of ranks. Anything else, a missing or truncated file, or a checksum that does not
// match is refused with SnapshotError, whose message says which and why.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "explorer/search/ranks.hpp"
#include "explorer/search/search_model.hpp"
#include "explorer/search/search_types.hpp"

namespace fp8sm::explorer {

class SnapshotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// 2: the options' text is the model's settings, then the engine's (depth, coverage).
// 3: a frontier entry is its key and a path of 48 codes (56 bytes).
// 4: paths of 96 codes; a fingerprint table is its homes, then its bytes (fingerprint_set.hpp).
// 5: a fingerprint table's bytes are a quotient filter's (occupied and run-end bits, offsets,
//    remainders) where they were slots with distances.
inline constexpr int kSnapshotFormat = 5;

// What a snapshot must agree on with the run that resumes it.
struct SnapshotIdentity {
  std::string version;  // "fp8sm 0.1.0, snapshot format 2"
  std::uint64_t model = 0;  // SearchModel::identity()
  std::string options;  // the options that decide the search's states and verdicts, as text
  int ranks = 1;
};
SnapshotIdentity snapshot_identity(const EngineOptions& options, const SearchModel& model, int ranks);
// Throws SnapshotError naming the first thing in which `found` (the snapshot's) differs from
// `expected` (this run's).
void check_identity(const SnapshotIdentity& found, const SnapshotIdentity& expected, const std::string& where);

// One rank's file of one layer, written atomically: checksummed (XXH64 of every byte), flushed
// to disk and renamed into place by commit(); left behind unrenamed (and removed) otherwise.
class SnapshotWriter {
 public:
  explicit SnapshotWriter(std::string path);
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  void write(const void* data, std::size_t n);
  template <class T>
  void put(const T& value) {
    write(&value, sizeof value);
  }
  void put_bytes(const Bytes& bytes);  // length first
  // Appends the checksum, flushes the file to disk, renames it into place; returns the checksum.
  std::uint64_t commit();

 private:
  struct Hash;
  std::string path_;
  std::string temporary_;
  std::FILE* file_ = nullptr;
  Hash* hash_;
};

class SnapshotReader {
 public:
  // `path`: a rank's file; a missing or unreadable one, or one that is no regular file (a
  // directory), is a SnapshotError.
  explicit SnapshotReader(std::string path);
  ~SnapshotReader();
  SnapshotReader(const SnapshotReader&) = delete;
  SnapshotReader& operator=(const SnapshotReader&) = delete;

  void read(void* data, std::size_t n);  // a short file is a SnapshotError ("truncated")
  template <class T>
  T get() {
    T value;
    read(&value, sizeof value);
    return value;
  }
  Bytes get_bytes(std::size_t at_most);
  // The bytes of the file not yet read, its checksum included.
  std::uint64_t remaining() const { return size_ - read_; }
  // Reads the checksum and checks it against every byte read; returns it. A file with bytes
  // left over, or whose checksum differs, is a SnapshotError ("corrupt").
  std::uint64_t finish();
  const std::string& path() const { return path_; }

 private:
  struct Hash;
  std::string path_;
  std::FILE* file_ = nullptr;
  Hash* hash_;
  std::uint64_t size_ = 0;
  std::uint64_t read_ = 0;
};

// The manifest: which layer is complete, for which identity, and each rank's file checksum.
struct Manifest {
  SnapshotIdentity identity;
  int layer = 0;
  std::vector<std::uint64_t> checksums;  // per rank
};
void write_manifest(const std::string& dir, const Manifest& manifest);
// nullopt when DIR holds no manifest; a manifest that does not parse or whose own checksum
// differs is a SnapshotError.
std::optional<Manifest> read_manifest(const std::string& dir);

// Where rank `rank` of `ranks` keeps layer `layer`.
std::string rank_file(const std::string& dir, int layer, int rank, int ranks);
// Makes DIR if it is missing and `make` (its parent must exist): a new search's; a resumed
// search's DIR must be there. SnapshotError if it is missing, cannot be made or written to.
void prepare_snapshot_dir(const std::string& dir, bool make);
void remove_file(const std::string& path);

}  // namespace fp8sm::explorer
