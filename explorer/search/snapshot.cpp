#include "explorer/search/snapshot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <sstream>

namespace fp8sm::explorer {

namespace {

std::string system_error_text() { return std::strerror(errno); }

// Flushes a directory's entries (a rename into it) to disk.
void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the rename itself is atomic either way
  ::fsync(fd);
  ::close(fd);
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

// The text written, its checksum appended: a file becomes visible whole or not at all.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) throw SnapshotError(fmt::format("cannot write '{}': {}", temporary, system_error_text()));
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size() && std::fflush(file) == 0 &&
                       ::fsync(::fileno(file)) == 0;
  const std::string error = system_error_text();
  std::fclose(file);
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw SnapshotError(fmt::format("cannot write '{}': {}", path, written ? system_error_text() : error));
  }
  sync_directory(directory_of(path));
}

std::string hex(std::uint64_t value) { return fmt::format("{:016x}", value); }

// "key=value" tokens of an options text.
std::vector<std::string> tokens(const std::string& text) {
  std::istringstream in(text);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

}  // namespace

SnapshotIdentity snapshot_identity(const EngineOptions& options, const SearchModel& model, int ranks) {
  SnapshotIdentity identity;
  identity.version = fmt::format("fp8sm {}, snapshot format {}", FP8SM_VERSION, kSnapshotFormat);
  identity.model = model.identity();
  identity.options =
      fmt::format("{} depth={} coverage={}", model.settings(), options.depth, options.coverage ? "on" : "off");
  identity.ranks = ranks;
  return identity;
}

void check_identity(const SnapshotIdentity& found, const SnapshotIdentity& expected, const std::string& where) {
  if (found.version != expected.version) {
    throw SnapshotError(fmt::format("{} was written by {}; this is {}", where, found.version, expected.version));
  }
  if (found.options != expected.options) {
    const std::vector<std::string> theirs = tokens(found.options);
    const std::vector<std::string> ours = tokens(expected.options);
    for (std::size_t i = 0; i < std::max(theirs.size(), ours.size()); ++i) {
      const std::string a = i < theirs.size() ? theirs[i] : "(nothing)";
      const std::string b = i < ours.size() ? ours[i] : "(nothing)";
      if (a != b) throw SnapshotError(fmt::format("{} is of another search: it has {}, this run {}", where, a, b));
    }
  }
  if (found.ranks != expected.ranks) {
    throw SnapshotError(fmt::format("{} was written by {} rank{}; this run has {} (resume it with as many ranks)",
                                    where, found.ranks, found.ranks == 1 ? "" : "s", expected.ranks));
  }
  // The model's identity depends on the options too (what a state carries): compared last, it
  // means another build.
  if (found.model != expected.model) {
    throw SnapshotError(fmt::format(
        "{} was written by another build of the model (model {}, this explorer's is {}): its states are not this "
        "explorer's",
        where, hex(found.model), hex(expected.model)));
  }
}

struct SnapshotWriter::Hash {
  XXH64_state_t* state = XXH64_createState();
  ~Hash() { XXH64_freeState(state); }
};
struct SnapshotReader::Hash {
  XXH64_state_t* state = XXH64_createState();
  ~Hash() { XXH64_freeState(state); }
};

SnapshotWriter::SnapshotWriter(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp"), hash_(new Hash) {
  XXH64_reset(hash_->state, 0);
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (file_ == nullptr) {
    delete hash_;
    throw SnapshotError(fmt::format("cannot write '{}': {}", temporary_, system_error_text()));
  }
  std::setvbuf(file_, nullptr, _IOFBF, std::size_t{1} << 20);
}

SnapshotWriter::~SnapshotWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temporary_.c_str());
  }
  delete hash_;
}

void SnapshotWriter::write(const void* data, std::size_t n) {
  if (n == 0) return;
  XXH64_update(hash_->state, data, n);
  if (std::fwrite(data, 1, n, file_) != n) {
    throw SnapshotError(fmt::format("cannot write '{}': {}", temporary_, system_error_text()));
  }
}

void SnapshotWriter::put_bytes(const Bytes& bytes) {
  put<std::uint64_t>(bytes.size());
  write(bytes.data(), bytes.size());
}

std::uint64_t SnapshotWriter::commit() {
  const std::uint64_t checksum = XXH64_digest(hash_->state);
  const bool written = std::fwrite(&checksum, sizeof checksum, 1, file_) == 1 && std::fflush(file_) == 0 &&
                       ::fsync(::fileno(file_)) == 0;
  const std::string error = system_error_text();
  std::fclose(file_);
  file_ = nullptr;
  if (!written || std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    std::remove(temporary_.c_str());
    throw SnapshotError(fmt::format("cannot write '{}': {}", path_, written ? system_error_text() : error));
  }
  sync_directory(directory_of(path_));
  return checksum;
}

SnapshotReader::SnapshotReader(std::string path) : path_(std::move(path)), hash_(new Hash) {
  XXH64_reset(hash_->state, 0);
  file_ = std::fopen(path_.c_str(), "rb");
  if (file_ == nullptr) {
    delete hash_;
    throw SnapshotError(fmt::format("cannot read '{}': {}", path_, system_error_text()));
  }
  // fopen opens a directory too (its reads then fail): say what is there instead of "truncated".
  struct stat info {};
  const bool known = ::fstat(::fileno(file_), &info) == 0;
  if (known && !S_ISREG(info.st_mode)) {
    std::fclose(file_);
    delete hash_;
    throw SnapshotError(S_ISDIR(info.st_mode)
                            ? fmt::format("'{}' is a directory, not a snapshot file", path_)
                            : fmt::format("'{}' is not a regular file, so not a snapshot file", path_));
  }
  if (known) size_ = static_cast<std::uint64_t>(info.st_size);
  std::setvbuf(file_, nullptr, _IOFBF, std::size_t{1} << 20);
}

SnapshotReader::~SnapshotReader() {
  std::fclose(file_);
  delete hash_;
}

void SnapshotReader::read(void* data, std::size_t n) {
  if (n == 0) return;
  if (std::fread(data, 1, n, file_) != n) throw SnapshotError(fmt::format("'{}' is truncated", path_));
  read_ += n;
  XXH64_update(hash_->state, data, n);
}

Bytes SnapshotReader::get_bytes(std::size_t at_most) {
  const auto n = get<std::uint64_t>();
  if (n > at_most) {
    throw SnapshotError(fmt::format("'{}' is truncated (or corrupt): a section of {} bytes where at most {} can be", path_, n, at_most));
  }
  Bytes bytes(n);
  read(bytes.data(), bytes.size());
  return bytes;
}

std::uint64_t SnapshotReader::finish() {
  const std::uint64_t computed = XXH64_digest(hash_->state);
  std::uint64_t stored = 0;
  if (std::fread(&stored, sizeof stored, 1, file_) != 1) throw SnapshotError(fmt::format("'{}' is truncated", path_));
  if (std::fgetc(file_) != EOF) throw SnapshotError(fmt::format("'{}' is corrupt: bytes after its checksum", path_));
  if (stored != computed) {
    throw SnapshotError(fmt::format("'{}' is corrupt: its checksum is {}, its bytes hash to {}", path_, hex(stored),
                                    hex(computed)));
  }
  return computed;
}

std::string rank_file(const std::string& dir, int layer, int rank, int ranks) {
  return fmt::format("{}/layer-{}.rank-{}-of-{}.snapshot", dir, layer, rank, ranks);
}

namespace {
std::string manifest_path(const std::string& dir) { return dir + "/manifest"; }
}  // namespace

void write_manifest(const std::string& dir, const Manifest& manifest) {
  std::string text = "fp8sm search snapshot\n";
  auto to = std::back_inserter(text);
  fmt::format_to(to, "version {}\n", manifest.identity.version);
  fmt::format_to(to, "model {}\n", hex(manifest.identity.model));
  fmt::format_to(to, "options {}\n", manifest.identity.options);
  fmt::format_to(to, "ranks {}\n", manifest.identity.ranks);
  fmt::format_to(to, "layer {}\n", manifest.layer);
  for (std::size_t r = 0; r < manifest.checksums.size(); ++r) {
    fmt::format_to(to, "rank {} checksum {}\n", r, hex(manifest.checksums[r]));
  }
  fmt::format_to(to, "checksum {}\n", hex(XXH64(text.data(), text.size(), 0)));
  write_atomically(manifest_path(dir), text);
}

std::optional<Manifest> read_manifest(const std::string& dir) {
  const std::string path = manifest_path(dir);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    if (errno == ENOENT) return std::nullopt;
    throw SnapshotError(fmt::format("cannot read '{}': {}", path, system_error_text()));
  }
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  const auto corrupt = [&](const std::string& why) { return SnapshotError(fmt::format("'{}' is corrupt: {}", path, why)); };
  const std::size_t last = text.rfind("checksum ");
  if (last == std::string::npos || (last > 0 && text[last - 1] != '\n')) throw corrupt("no checksum line");
  // The checksum line is the last: "checksum " and 16 hexadecimal digits, then the end of the file.
  constexpr std::size_t kDigits = 16;
  const std::size_t line_end = text.find('\n', last);
  if (line_end != std::string::npos && line_end + 1 < text.size()) throw corrupt("text after its checksum line");
  const std::string digits = text.substr(last + 9, line_end == std::string::npos ? std::string::npos : line_end - last - 9);
  if (line_end == std::string::npos || digits.size() != kDigits ||
      digits.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw corrupt("its checksum line does not parse");
  }
  const std::uint64_t stored = std::stoull(digits, nullptr, 16);
  if (stored != XXH64(text.data(), last, 0)) throw corrupt("its checksum does not match its text");
  Manifest manifest;
  std::istringstream lines(text.substr(0, last));
  std::string line;
  std::getline(lines, line);
  if (line != "fp8sm search snapshot") throw corrupt("not an fp8sm search snapshot");
  const auto value = [&](const char* key) {
    if (!std::getline(lines, line) || line.rfind(std::string(key) + " ", 0) != 0) {
      throw corrupt(fmt::format("no '{}' line where expected", key));
    }
    return line.substr(std::strlen(key) + 1);
  };
  const auto number = [&](const char* key) {
    const std::string text_value = value(key);
    try {
      return std::stoi(text_value);
    } catch (const std::exception&) {
      throw corrupt(fmt::format("'{}' is not a number", key));
    }
  };
  manifest.identity.version = value("version");
  try {
    manifest.identity.model = std::stoull(value("model"), nullptr, 16);
  } catch (const std::exception&) {
    throw corrupt("'model' is not a number");
  }
  manifest.identity.options = value("options");
  manifest.identity.ranks = number("ranks");
  manifest.layer = number("layer");
  if (manifest.identity.ranks < 1 || manifest.layer < 0) throw corrupt("ranks or layer out of range");
  for (int r = 0; r < manifest.identity.ranks; ++r) {
    const std::string entry = value("rank");
    const std::string prefix = fmt::format("{} checksum ", r);
    if (entry.rfind(prefix, 0) != 0) throw corrupt(fmt::format("no checksum for rank {}", r));
    try {
      manifest.checksums.push_back(std::stoull(entry.substr(prefix.size()), nullptr, 16));
    } catch (const std::exception&) {
      throw corrupt(fmt::format("the checksum of rank {} is not a number", r));
    }
  }
  if (std::getline(lines, line)) throw corrupt(fmt::format("a line after the ranks' checksums: '{}'", line));
  return manifest;
}

void prepare_snapshot_dir(const std::string& dir, bool make) {
  if (!make && ::access(dir.c_str(), F_OK) != 0 && errno == ENOENT) {
    throw SnapshotError(fmt::format("'{}' holds no snapshot to resume: there is no such directory", dir));
  }
  if (make && ::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    throw SnapshotError(fmt::format("cannot make the snapshot directory '{}': {}", dir, system_error_text()));
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw SnapshotError(fmt::format("'{}' is not a directory", dir));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw SnapshotError(fmt::format("cannot write to the snapshot directory '{}': {}", dir, system_error_text()));
  }
}

void remove_file(const std::string& path) { std::remove(path.c_str()); }

}  // namespace fp8sm::explorer
