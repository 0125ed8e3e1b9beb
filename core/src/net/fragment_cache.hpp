#pragma once
// Fragments on disk, named by the sha256 of their bytes: <dir>/<hex>.xmodel. Uploads are
// written to a temporary file in the same folder, verified and renamed, so the cache
// never holds a partial or wrong file under a hash name.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/net/auth.hpp"
#include "dpushard/net/protocol.hpp"

namespace dpushard::net {

class FragmentCache {
 public:
  // Uses `dir` (created when missing); an empty path makes a private temporary folder
  // that is removed by the destructor.
  explicit FragmentCache(std::filesystem::path dir);
  ~FragmentCache();
  FragmentCache(const FragmentCache&) = delete;
  FragmentCache& operator=(const FragmentCache&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  bool has(const Digest& sha) const;
  std::filesystem::path path_of(const Digest& sha) const;
  // The fragment's bytes, checked against `sha`; a damaged file is removed. Throws
  // ProtocolError(kBadFragment) naming the hash.
  std::string read_verified(const Digest& sha) const;
  // Drops a fragment the worker refused to load (thread-safe: one file removal).
  void remove(const Digest& sha) const;

  // One upload in progress: chunks arrive in order; the last one commits.
  class Upload {
   public:
    Upload(const FragmentCache& cache, const Digest& sha, std::uint64_t total_bytes);
    ~Upload();
    Upload(const Upload&) = delete;
    Upload& operator=(const Upload&) = delete;
    std::uint64_t total_bytes() const { return total_; }
    // Appends a chunk at `offset` (must be the next byte). Returns true once the upload
    // is complete, verified and in the cache. Throws ProtocolError.
    bool append(std::uint64_t offset, std::span<const std::int8_t> bytes);

   private:
    void commit();
    const FragmentCache& cache_;
    Digest sha_;
    std::uint64_t total_;
    std::uint64_t received_ = 0;
    std::unique_ptr<AtomicFile> file_;
    Sha256 hash_;
    bool committed_ = false;
  };

 private:
  std::filesystem::path dir_;
  bool owned_ = false;
};

}  // namespace dpushard::net
