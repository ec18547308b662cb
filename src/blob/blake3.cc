#include "blob/blake3.h"

#include <cstring>

// blake3_impl.h is a C header without C++ guards; pull its SIMD headers in
// first so they are not declared inside extern "C".
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
extern "C" {
#include <blake3_impl.h>
}
#pragma GCC diagnostic pop

namespace tenzro::blob {

std::string Blake3Hash::ToHex() const { return tenzro::ToHex(span()); }

Result<Blake3Hash> Blake3Hash::FromHex(std::string_view hex) {
  Blake3Hash h;
  if (hex.size() != 2 * kHashSize)
    return Error::InvalidArgument("BLAKE3 hash must be 64 hex digits, got {} characters", hex.size());
  auto r = tenzro::FromHex(hex, h.bytes);
  if (!r) return Error::InvalidArgument("BLAKE3 hash is not hex: '{}'", hex);
  return h;
}

Blake3Hash Blake3(ByteSpan data) {
  Blake3Hasher h;
  h.Update(data);
  return h.Finalize();
}

Blake3Hasher::Blake3Hasher() { blake3_hasher_init(&h_); }
void Blake3Hasher::Update(ByteSpan data) { blake3_hasher_update(&h_, data.data(), data.size()); }
Blake3Hash Blake3Hasher::Finalize() const {
  Blake3Hash out;
  blake3_hasher_finalize(&h_, out.bytes.data(), kHashSize);
  return out;
}
void Blake3Hasher::FinalizeXof(std::span<uint8_t> out, uint64_t seek) const {
  blake3_hasher_finalize_seek(&h_, seek, out.data(), out.size());
}

namespace {

Blake3Hash FromWords(const uint32_t cv[8]) {
  Blake3Hash h;
  for (int i = 0; i < 8; ++i) std::memcpy(&h.bytes[4 * i], &cv[i], 4);  // little-endian host
  return h;
}

// CVs of n full 1 KiB chunks (n <= 16) starting at chunk `counter`, 32 bytes each.
void HashFullChunks(const uint8_t* data, size_t n, uint64_t counter, uint8_t* out) {
  const uint8_t* inputs[16];
  for (size_t i = 0; i < n; ++i) inputs[i] = data + i * kChunkSize;
  blake3_hash_many(inputs, n, kChunkSize / kBlockLen, IV, counter, true, 0, CHUNK_START, CHUNK_END, out);
}

// Merges CVs pairwise per the BLAKE3 tree of `n` chunk CVs; the result's
// is_root applies to the top parent only.
Blake3Hash MergeCvs(uint8_t* cvs, size_t n, bool is_root) {
  // n >= 2. Left subtree gets the largest power of two < n.
  while (n > 2) {
    // Full pairs can be compressed in parallel when n is a power of two;
    // otherwise recurse on the BLAKE3 split.
    if ((n & (n - 1)) == 0) {
      const uint8_t* inputs[8];
      size_t pairs = n / 2;
      for (size_t i = 0; i < pairs; ++i) inputs[i] = cvs + i * 64;
      uint8_t out[8 * 32];
      blake3_hash_many(inputs, pairs, 1, IV, 0, false, PARENT, 0, 0, out);
      std::memcpy(cvs, out, pairs * 32);
      n = pairs;
    } else {
      size_t left = size_t{1} << (63 - __builtin_clzll(n - 1));
      Blake3Hash l = left == 1 ? Blake3Hash{} : MergeCvs(cvs, left, false);
      if (left == 1) std::memcpy(l.bytes.data(), cvs, 32);
      Blake3Hash r;
      if (n - left == 1) std::memcpy(r.bytes.data(), cvs + left * 32, 32);
      else r = MergeCvs(cvs + left * 32, n - left, false);
      return ParentCv(l, r, is_root);
    }
  }
  Blake3Hash l, r;
  std::memcpy(l.bytes.data(), cvs, 32);
  std::memcpy(r.bytes.data(), cvs + 32, 32);
  return ParentCv(l, r, is_root);
}

// CV of a group of up to 16 chunks (data.size() <= 16 KiB).
Blake3Hash GroupCv(ByteSpan data, uint64_t start_chunk, bool is_root) {
  size_t nchunks = data.size() <= kChunkSize ? 1 : (data.size() + kChunkSize - 1) / kChunkSize;
  if (nchunks == 1) return ChunkCv(data, start_chunk, is_root);
  alignas(32) uint8_t cvs[16 * 32];
  size_t full = data.size() / kChunkSize;
  HashFullChunks(data.data(), full, start_chunk, cvs);
  if (full < nchunks) {
    Blake3Hash last = ChunkCv(data.subspan(full * kChunkSize), start_chunk + full, false);
    std::memcpy(cvs + full * 32, last.bytes.data(), 32);
  }
  return MergeCvs(cvs, nchunks, is_root);
}

}  // namespace

Blake3Hash ChunkCv(ByteSpan data, uint64_t chunk_index, bool is_root) {
  uint32_t cv[8];
  std::memcpy(cv, IV, sizeof(cv));
  size_t n = data.size();
  size_t blocks = n == 0 ? 1 : (n + kBlockLen - 1) / kBlockLen;
  for (size_t b = 0; b < blocks; ++b) {
    uint8_t block[kBlockLen] = {};
    size_t len = std::min(kBlockLen, n - b * kBlockLen);
    if (len) std::memcpy(block, data.data() + b * kBlockLen, len);
    uint8_t flags = 0;
    if (b == 0) flags |= CHUNK_START;
    if (b + 1 == blocks) flags |= CHUNK_END | (is_root ? ROOT : 0);
    blake3_compress_in_place(cv, block, static_cast<uint8_t>(len), chunk_index, flags);
  }
  return FromWords(cv);
}

Blake3Hash ParentCv(const Blake3Hash& left, const Blake3Hash& right, bool is_root) {
  uint8_t block[kBlockLen];
  std::memcpy(block, left.bytes.data(), 32);
  std::memcpy(block + 32, right.bytes.data(), 32);
  uint32_t cv[8];
  std::memcpy(cv, IV, sizeof(cv));
  blake3_compress_in_place(cv, block, kBlockLen, 0, PARENT | (is_root ? ROOT : 0));
  return FromWords(cv);
}

Blake3Hash SubtreeCv(ByteSpan data, uint64_t start_chunk, bool is_root) {
  constexpr size_t kGroup = 16 * kChunkSize;
  if (data.size() <= kGroup) return GroupCv(data, start_chunk, is_root);
  size_t nchunks = (data.size() + kChunkSize - 1) / kChunkSize;
  size_t left_chunks = size_t{1} << (63 - __builtin_clzll(nchunks - 1));
  size_t left_bytes = left_chunks * kChunkSize;
  Blake3Hash l = SubtreeCv(data.first(left_bytes), start_chunk, false);
  Blake3Hash r = SubtreeCv(data.subspan(left_bytes), start_chunk + left_chunks, false);
  return ParentCv(l, r, is_root);
}

}  // namespace tenzro::blob
