// The content-addressed fragment cache on disk.

#include "fragment_cache.hpp"

#include <system_error>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/regular_file.hpp"
#include "dpushard/base/sha256.hpp"

namespace dpushard::net {

namespace {

[[noreturn]] void bad_fragment(const std::string& message) {
  throw ProtocolError(ErrorCode::kBadFragment, message);
}

std::string random_suffix() { return to_hex(random_nonce()).substr(0, 16); }

}  // namespace

FragmentCache::FragmentCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (dir_.empty()) {
    dir_ = std::filesystem::temp_directory_path(ec) / ("dpushard-cache-" + random_suffix());
    owned_ = true;
  }
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_))
    throw Error("fragment cache '" + dir_.string() + "': cannot create the folder" +
                (ec ? ": " + ec.message() : std::string()));
}

FragmentCache::~FragmentCache() {
  if (!owned_) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::filesystem::path FragmentCache::path_of(const Digest& sha) const {
  return dir_ / (to_hex(sha) + ".xmodel");
}

bool FragmentCache::has(const Digest& sha) const {
  std::error_code ec;
  return std::filesystem::is_regular_file(path_of(sha), ec);
}

std::string FragmentCache::read_verified(const Digest& sha) const {
  const auto path = path_of(sha);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    bad_fragment("fragment " + to_hex(sha) + " is not in the cache");
  std::string bytes;
  try {
    bytes = read_regular_file(path, "cached fragment " + path.string());
  } catch (const Error& e) {
    bad_fragment(e.what());
  }
  const Digest actual =
      sha256(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  if (!digests_equal(actual, sha)) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    bad_fragment("cached fragment " + to_hex(sha) + " is damaged (removed)");
  }
  return bytes;
}

void FragmentCache::remove(const Digest& sha) const {
  std::error_code ignored;
  std::filesystem::remove(path_of(sha), ignored);
}

FragmentCache::Upload::Upload(const FragmentCache& cache, const Digest& sha,
                              std::uint64_t total_bytes)
    : cache_(cache), sha_(sha), total_(total_bytes) {
  try {
    // Its temporary file is hidden (a leading dot): never mistaken for a cached fragment.
    file_ = std::make_unique<AtomicFile>(cache_.path_of(sha_));
  } catch (const Error& e) {
    bad_fragment(std::string("fragment cache: ") + e.what());
  }
}

FragmentCache::Upload::~Upload() = default;

bool FragmentCache::Upload::append(std::uint64_t offset, std::span<const std::int8_t> bytes) {
  if (committed_) bad_fragment("fragment " + to_hex(sha_) + " is already complete");
  if (offset != received_)
    throw ProtocolError(ErrorCode::kMalformed, "upload of " + to_hex(sha_) + ": chunk at offset " +
                                                   std::to_string(offset) + ", expected " +
                                                   std::to_string(received_));
  if (bytes.size() > total_ - received_)
    throw ProtocolError(ErrorCode::kMalformed,
                        "upload of " + to_hex(sha_) + " overruns its announced size");
  try {
    file_->write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const Error& e) {
    bad_fragment(std::string("fragment cache: ") + e.what());
  }
  hash_.update(bytes.data(), bytes.size());
  received_ += bytes.size();
  if (received_ < total_) return false;
  commit();
  return true;
}

void FragmentCache::Upload::commit() {
  const Digest actual = hash_.finish();
  if (!digests_equal(actual, sha_))
    bad_fragment("uploaded bytes hash to " + to_hex(actual) + ", not " + to_hex(sha_));
  try {
    file_->commit();
  } catch (const Error& e) {
    bad_fragment("cannot store fragment " + to_hex(sha_) + ": " + e.what());
  }
  committed_ = true;
}

}  // namespace dpushard::net
